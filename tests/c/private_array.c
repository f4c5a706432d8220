// private and firstprivate arrays: a private array starts uninitialised on the
// device (the program writes it before reading), a firstprivate array starts
// as a copy of the host array; neither is copied back.
#include <stdio.h>

int main(void) {
  int pa[6] = {9, 9, 9, 9, 9, 9};
  int fa[6] = {1, 2, 3, 4, 5, 6};
  int r_private = 0, r_first = 0;
#pragma omp target private(pa) firstprivate(fa) map(from : r_private, r_first)
  {
    for (int i = 0; i < 6; i++)
      pa[i] = i * i;
    r_private = 0;
    r_first = 0;
    for (int i = 0; i < 6; i++) {
      r_private += pa[i];
      fa[i] *= 2;
      r_first += fa[i];
    }
  }
  printf("r_private=%d r_first=%d host pa[5]=%d fa[5]=%d\n", r_private,
         r_first, pa[5], fa[5]);
  return (r_private == 55 && r_first == 42 && pa[5] == 9 && fa[5] == 6) ? 0
                                                                         : 1;
}
