// The always modifier forces a transfer even when the data is already present
// (without it, a nested map of present data transfers nothing).
#include <stdio.h>

int main(void) {
  int x = 1, seen_plain = 0, seen_always = 0;
#pragma omp target data map(to : x)
  {
    x = 2; // host-only change
#pragma omp target map(to : x) map(from : seen_plain)
    seen_plain = x;
#pragma omp target map(always, to : x) map(from : seen_always)
    {
      seen_always = x;
      x = 3;
    }
#pragma omp target map(from : x)
    x = x + 10; // not copied back here: still mapped by the outer region
    printf("inner: host x=%d\n", x);
#pragma omp target map(always, from : x)
    x = x + 100;
    printf("after always from: host x=%d\n", x);
  }
  printf("seen_plain=%d seen_always=%d final x=%d\n", seen_plain, seen_always,
         x);
  return (seen_plain == 1 && seen_always == 2 && x == 113) ? 0 : 1;
}
