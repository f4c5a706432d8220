// declare target global variables: each device has its own copy, initialised
// from the static initialiser; target update moves it explicitly.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int counter = 100;
double table[4] = {0.5, 1.5, 2.5, 3.5};
#pragma omp end declare target

int main(void) {
  int dev = omp_get_default_device();
  int seen = 0;
#pragma omp target map(from : seen)
  {
    counter += 1;
    seen = counter;
  }
  printf("device counter=%d host counter=%d\n", seen, counter);
#pragma omp target update from(counter)
  printf("after update from: host counter=%d\n", counter);
  counter = 7;
#pragma omp target update to(counter)
  double tsum = 0;
#pragma omp target map(from : seen, tsum)
  {
    seen = counter * 2;
    tsum = table[0] + table[3];
  }
  printf("seen=%d tsum=%g present(counter)=%d\n", seen, tsum,
         omp_target_is_present(&counter, dev));
  return (seen == 14 && tsum == 4.0) ? 0 : 1;
}
