// Scalars of pointer size or less are passed to the kernel by value (LITERAL
// map type, no device allocation): check a mix of types survives the trip.
#include <stdint.h>
#include <stdio.h>

int main(void) {
  int8_t b = -8;
  uint16_t h = 65000;
  int32_t w = -123456;
  uint64_t q = 0xfedcba9876543210ULL;
  float f = 1.25f;
  double d = -3.5;
  uint64_t r_int = 0;
  double r_fp = 0;
#pragma omp target map(from : r_int, r_fp)
  {
    r_int = (uint64_t)(int64_t)b + h + (uint64_t)(int64_t)w + (q >> 32);
    r_fp = f * d;
  }
  printf("r_int=%llu r_fp=%g\n", (unsigned long long)r_int, r_fp);
  return (r_int == 4275820088ULL && r_fp == -4.375) ? 0 : 1;
}
