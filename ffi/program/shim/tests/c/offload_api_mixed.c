// OpenMP offload (clang's target regions) and liboffload (ol*) in one
// process, linked as LLVM 22's release links both (-fopenmp's
// libomptarget.so.22, -lLLVMOffload) and run on ours, where both names are
// one library: one runtime, one device list, one memory manager.
//   * a target region before olInit, and after the last olShutDown;
//   * OpenMP's device 0 is the first ol* CPU device (same UID);
//   * olMemAlloc's memory used by a target region (is_device_ptr);
//   * omp_target_alloc's memory filled by olMemcpy on a queue and read by
//     a target region.
// Prints mixed=ok; status 1 if a check failed.
#include <omp.h>
#include <string.h>

#include "offload_checks.h"

int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  CHECK(x == 2, "a target region before olInit");

  EXPECT(olInit(), 0);
  struct devices found = {NULL, NULL};
  EXPECT(olIterateDevices(find_devices, &found), 0);
  if (!found.cpu || !found.host) {
    fprintf(stderr, "FAILED: no host CPU device\n");
    return 1;
  }
  char uid[64] = "";
  EXPECT(olGetDeviceInfo(found.cpu, OL_DEVICE_INFO_UID, sizeof uid, uid), 0);
  const char *omp_uid = omp_get_uid_from_device(0);
  CHECK(omp_uid && strcmp(uid, omp_uid) == 0,
        "OpenMP's device 0 is the first ol* CPU device");

  int in[4] = {1, 2, 3, 4}, out[4] = {0};
  int *ol_block = NULL;
  EXPECT(olMemAlloc(found.cpu, OL_ALLOC_TYPE_DEVICE, sizeof in,
                    (void **)&ol_block),
         0);
  EXPECT(olMemcpy(NULL, ol_block, found.cpu, in, found.host, sizeof in), 0);
#pragma omp target is_device_ptr(ol_block) device(0)
  for (int i = 0; i < 4; i++)
    ol_block[i] *= 10;
  EXPECT(olMemcpy(NULL, out, found.host, ol_block, found.cpu, sizeof out), 0);
  CHECK(out[0] == 10 && out[3] == 40, "a target region on olMemAlloc's block");

  int *omp_block = omp_target_alloc(sizeof in, 0);
  CHECK(omp_block != NULL, "omp_target_alloc");
  ol_queue_handle_t queue = NULL;
  EXPECT(olCreateQueue(found.cpu, &queue), 0);
  EXPECT(olMemcpy(queue, omp_block, found.cpu, in, found.host, sizeof in), 0);
  EXPECT(olSyncQueue(queue), 0);
  int sum = 0;
#pragma omp target is_device_ptr(omp_block) map(tofrom : sum) device(0)
  for (int i = 0; i < 4; i++)
    sum += omp_block[i];
  CHECK(sum == 10, "a queued olMemcpy into omp_target_alloc's block");
  omp_target_free(omp_block, 0);
  EXPECT(olDestroyQueue(queue), 0);
  EXPECT(olMemFree(ol_block), 0);
  EXPECT(olShutDown(), 0);

  x = 5;
#pragma omp target map(tofrom : x)
  x *= 2;
  CHECK(x == 10, "a target region after the last olShutDown");
  printf("mixed=%s\n", failures ? "failed" : "ok");
  return failures ? 1 : 0;
}
