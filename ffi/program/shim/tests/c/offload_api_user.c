// A library that uses liboffload (`ol*`) on its own: offload_api_edges.c
// dlopens it, calls `use_offload`, and dlcloses it, more than once.
#include <stdbool.h> // OffloadAPI.h uses bool without including it
#include <stdint.h>
#include <offload/OffloadAPI.h>
#include <string.h>

struct devices {
  ol_device_handle_t host;   // the initial device
  ol_device_handle_t device; // the first other device
};

static bool visit(ol_device_handle_t d, void *data) {
  struct devices *found = data;
  ol_platform_handle_t platform;
  ol_platform_backend_t backend;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform) ||
      olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend,
                        &backend))
    return false;
  if (backend == OL_PLATFORM_BACKEND_HOST)
    found->host = d;
  else if (!found->device)
    found->device = d;
  return true;
}

// Init, a round trip of 256 bytes through the first device, a block left
// for olShutDown to free, shut down. 0 on success, else the failed step.
int use_offload(void) {
  if (olInit())
    return 1;
  struct devices found = {NULL, NULL};
  if (olIterateDevices(visit, &found) || !found.host || !found.device)
    return 2;
  unsigned char in[256], out[256];
  for (int i = 0; i < 256; i++)
    in[i] = (unsigned char)(i ^ 0x5a);
  memset(out, 0, sizeof out);
  void *block = NULL, *left = NULL;
  if (olMemAlloc(found.device, OL_ALLOC_TYPE_DEVICE, sizeof in, &block) ||
      olMemAlloc(found.device, OL_ALLOC_TYPE_DEVICE, 32, &left))
    return 3;
  if (olMemcpy(NULL, block, found.device, in, found.host, sizeof in) ||
      olMemcpy(NULL, out, found.host, block, found.device, sizeof out))
    return 4;
  if (memcmp(in, out, sizeof in) != 0)
    return 5;
  if (olMemFree(block))
    return 6;
  return olShutDown() ? 7 : 0;
}
