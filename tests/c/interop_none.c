// RELEASES: 14 22
// (LLVM 19's host plugin crashes in interop init, SIGSEGV: nothing to compare.)
// CFLAGS: -fopenmp-version=51
// The interop construct and API (OpenMP 5.1) on the x86_64 plugin, which has
// no foreign runtime: "interop init" yields omp_interop_none, destroy of
// none is a no-op, and the query functions reject out-of-range property ids
// with omp_irc_out_of_range without touching the object.
// (libomptarget 14 dereferences the interop object for in-range properties,
// so querying omp_interop_none with e.g. omp_ipr_fr_id crashes: not tested.)
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

int main(void) {
  omp_interop_t obj = omp_interop_none;
#pragma omp interop init(targetsync : obj) device(0)
  printf("after init targetsync: is none=%d\n", obj == omp_interop_none);
  omp_interop_t obj2 = omp_interop_none;
#pragma omp interop init(target : obj2)
  printf("after init target: is none=%d\n", obj2 == omp_interop_none);
  int err = 12345;
  intptr_t v = omp_get_interop_int(obj, 3, &err);
  printf("int(prop 3)=%ld err=%d (out_of_range=%d)\n", (long)v, err,
         omp_irc_out_of_range);
  err = 12345;
  const char *s = omp_get_interop_str(obj, (omp_interop_property_t)-10, &err);
  printf("str(prop -10)=%s err=%d\n", s ? s : "(null)", err);
  err = 12345;
  void *p = omp_get_interop_ptr(obj, 0, &err);
  printf("ptr(prop 0)=%s err=%d\n", p ? "non-null" : "null", err);
  printf("name(fr_id)=%s\n", omp_get_interop_name(obj, omp_ipr_fr_id) ? "set"
                                                                       : "null");
  printf("type_desc(vendor)=%s\n",
         omp_get_interop_type_desc(obj, omp_ipr_vendor) ? "set" : "null");
  printf("rc_desc(5)=%s\n",
         omp_get_interop_rc_desc(obj, (omp_interop_rc_t)5) ? "set" : "null");
#pragma omp interop destroy(obj)
#pragma omp interop destroy(obj2)
  printf("after destroy: is none=%d %d\n", obj == omp_interop_none,
         obj2 == omp_interop_none);
  return 0;
}
