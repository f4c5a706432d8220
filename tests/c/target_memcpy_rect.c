// CHECK-STDERR
// omp_target_memcpy_rect: copy a 2-D and a 3-D sub-block between host and
// device buffers; a NULL dst and src asks for the number of supported
// dimensions.
#include <limits.h>
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  int max_dims = omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL,
                                        NULL, NULL, host, dev);
  printf("max dims is INT_MAX=%d\n", max_dims == INT_MAX);
  enum { R = 5, C = 6 };
  double h[R][C], back[R][C];
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      h[i][j] = i * 10 + j;
      back[i][j] = -1;
    }
  double *d = omp_target_alloc(sizeof h, dev);
  size_t vol[2] = {3, 2}, dst_off[2] = {1, 3}, src_off[2] = {2, 1};
  size_t dims[2] = {R, C};
  // Device buffer starts zeroed by a full copy of a zero matrix.
  double zero[R][C] = {{0}};
  omp_target_memcpy(d, zero, sizeof zero, 0, 0, dev, host);
  int rc = omp_target_memcpy_rect(d, h, sizeof(double), 2, vol, dst_off,
                                  src_off, dims, dims, dev, host);
  printf("h2d rect rc=%d\n", rc);
  rc = omp_target_memcpy_rect(back, d, sizeof(double), 2, (size_t[]){R, C},
                              (size_t[]){0, 0}, (size_t[]){0, 0}, dims, dims,
                              host, dev);
  printf("d2h full rc=%d\n", rc);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++)
      printf("%g%c", back[i][j], j == C - 1 ? '\n' : ' ');
  // 3-D: take a 2x2x2 cube out of a 3x3x4 array into a 2x2x2 one.
  int a3[3][3][4], c3[2][2][2];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        a3[i][j][k] = 100 * i + 10 * j + k;
  int *d3 = omp_target_alloc(sizeof a3, dev);
  omp_target_memcpy(d3, a3, sizeof a3, 0, 0, dev, host);
  rc = omp_target_memcpy_rect(c3, d3, sizeof(int), 3, (size_t[]){2, 2, 2},
                              (size_t[]){0, 0, 0}, (size_t[]){1, 1, 2},
                              (size_t[]){2, 2, 2}, (size_t[]){3, 3, 4}, host,
                              dev);
  printf("3-D rc=%d: %d %d %d %d %d %d %d %d\n", rc, c3[0][0][0], c3[0][0][1],
         c3[0][1][0], c3[0][1][1], c3[1][0][0], c3[1][0][1], c3[1][1][0],
         c3[1][1][1]);
  // Invalid arguments: element size 0 / num_dims 0.
  printf("bad element size rc=%d\n",
         omp_target_memcpy_rect(c3, d3, 0, 3, (size_t[]){1, 1, 1},
                                (size_t[]){0, 0, 0}, (size_t[]){0, 0, 0},
                                (size_t[]){2, 2, 2}, (size_t[]){3, 3, 4}, host,
                                dev));
  fflush(stdout);
  omp_target_free(d3, dev);
  omp_target_free(d, dev);
  return (back[1][3] == 21 && c3[1][1][1] == 223) ? 0 : 1;
}
