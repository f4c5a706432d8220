// firstprivate scalars: each target region starts from the host value and
// device-side writes are discarded.
#include <stdio.h>

int main(void) {
  int i32 = -3;
  long long i64 = 1LL << 40;
  double d = 2.5;
  char c = 'q';
  long long out = 0;
#pragma omp target firstprivate(i32, i64, d, c) map(from : out)
  {
    i32 *= 2;
    i64 += i32;
    d *= 4;
    c = (char)(c + 1);
    out = i64 + (long long)d + c;
  }
  printf("out=%lld host: i32=%d i64=%lld d=%g c=%c\n", out, i32, i64, d, c);
  return (out == (1LL << 40) - 6 + 10 + 'r' && i32 == -3) ? 0 : 1;
}
