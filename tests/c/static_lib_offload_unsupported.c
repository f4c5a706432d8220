// EXIT-19: 0
// EXIT-22: 0
// (clang 19 and 22 compile this differently; the program runs to its end.)
// CHECK-STDERR
// EXIT: SIGABRT
// EXTRA-BUILD: {cc} {offload} {debug} -c lib/offload_in_archive.c -o {out}/offload_in_archive.o
// EXTRA-BUILD: ar rcs {out}/liboffload_in_archive.a {out}/offload_in_archive.o
// LDFLAGS: -L{out} -loffload_in_archive
// A target region that lives in a static archive: clang 14 links the host
// code and its offload entry but not the device code (archives are not
// unbundled), so the device image lacks the entry. libomptarget 14 fails with
// "Unable to generate entries table for device id 0." and aborts (SIGABRT) at
// the first target construct.
#include <stdio.h>

int archive_square_sum(int n);

int main(void) {
  printf("calling into the archive\n");
  fflush(stdout);
  int s = archive_square_sum(10);
  printf("not reached: %d\n", s);
  return 0;
}
