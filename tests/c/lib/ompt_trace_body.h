// The constructs and calls the OMPT tracing programs trace (one concept:
// what the runtime reports to a tool, in order). Included after
// lib/ompt_tool.h.
#include <omp.h>
#include <stdlib.h>

struct node {
  int *data;
  int n;
};

#pragma omp declare target
int counter = 1;
#pragma omp end declare target

int main(void) {
  enum { N = 8, BIG = 512 };
  int a[N], b[N], x = 3;
  int big[BIG], small1[2] = {1, 2}, small2[3] = {3, 4, 5};
  int payload[4] = {0, 0, 0, 0};
  struct node node = {payload, 4};
  int sum = 0;
  tool_initial_device = omp_get_initial_device();
  for (int i = 0; i < N; i++)
    a[i] = i, b[i] = 0;
  for (int i = 0; i < BIG; i++)
    big[i] = i;
  tool_name(a, sizeof a, "a");
  tool_name(b, sizeof b, "b");
  tool_name(&x, sizeof x, "x");
  tool_name(big, sizeof big, "big");
  tool_name(small1, sizeof small1, "small1");
  tool_name(small2, sizeof small2, "small2");
  tool_name(payload, sizeof payload, "payload");
  tool_name(&node, sizeof node, "node");
  tool_name(&sum, sizeof sum, "sum");

  printf("-- target: map(to) map(from) firstprivate scalar\n");
#pragma omp target map(to : a) map(from : b) firstprivate(x)
  for (int i = 0; i < N; i++)
    b[i] = a[i] + x + counter;

  printf("-- target data, a teams region inside, update from\n");
#pragma omp target data map(tofrom : a)
  {
#pragma omp target teams num_teams(2)
    a[0]++;
#pragma omp target update from(a[0 : 2])
  }

  printf("-- enter and exit data, update to\n");
#pragma omp target enter data map(to : b[0 : 4])
  b[0] = 42;
#pragma omp target update to(b[0 : 1])
#pragma omp target exit data map(from : b[0 : 4])

  printf("-- first-private arrays: one large, two packed\n");
#pragma omp target firstprivate(big, small1, small2) map(tofrom : sum)
  sum = big[BIG - 1] + small1[1] + small2[2];

  printf("-- a pointer member attached\n");
#pragma omp target map(to : node) map(tofrom : node.data[0 : 4])
  for (int i = 0; i < node.n; i++)
    node.data[i] = i + 10;

  printf("-- teams without num_teams\n");
#pragma omp target teams map(tofrom : sum)
  sum += 1;

  printf("-- device memory API\n");
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int *d = omp_target_alloc(N * sizeof(int), dev);
  if (!d)
    return 2;
  omp_target_memcpy(d, a, N * sizeof(int), 0, 0, dev, host);
  omp_target_memcpy(b, d, N * sizeof(int), 0, 0, host, dev);
  omp_target_memcpy(b, a, N * sizeof(int), 0, 0, host, host);
  size_t volume[2] = {2, 2}, offsets[2] = {0, 0}, dims[2] = {2, 4};
  omp_target_memcpy_rect(d, a, sizeof(int), 2, volume, offsets, offsets, dims,
                         dims, dev, host);
  omp_target_associate_ptr(a, d, N * sizeof(int), 0, dev);
  omp_target_disassociate_ptr(a, dev);
  omp_target_free(d, dev);
  if (omp_target_alloc(0, dev) != NULL)
    return 3;

  printf("-- host fallback: no callbacks\n");
#pragma omp target if (0) map(tofrom : a)
  a[1]++;
#pragma omp target device(host) map(tofrom : a)
  a[1]++;

  printf("-- another device, nowait\n");
#pragma omp target device(1) map(tofrom : a) nowait
  a[2]++;
#pragma omp taskwait

  printf("results: b[0]=%d a[0..2]=%d,%d,%d sum=%d payload[3]=%d\n", b[0], a[0],
         a[1], a[2], sum, payload[3]);
  return 0;
}
