// The same ol* calls on LLVM 22's libLLVMOffload.so.22.1 and on ours,
// for what LLVM's library serves on a machine without a GPU: its only
// device is its host device (ours is the initial device), which copies
// host memory and answers queries; it allocates nothing and makes no
// queue (LLVM 22 crashes on both there). Prints one line per call: the
// call, its error code, and the value where both libraries must agree
// (strings are the libraries' own: only their codes are compared).
// tests/offload_api.rs runs it on both and compares the output.
#include "offload_checks.h"
#include <string.h>

#define SHOW(call) printf("%s -> %d\n", #call, code(call))

// The first device of type `want`.
struct wanted {
  ol_device_type_t type;
  ol_device_handle_t device;
};

static bool find_type(ol_device_handle_t d, void *data) {
  struct wanted *w = data;
  ol_device_type_t type;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type) == NULL &&
      type == w->type && !w->device) {
    w->device = d;
    return false;
  }
  return true;
}

static bool is_string(ol_device_info_t key) {
  return key == OL_DEVICE_INFO_NAME || key == OL_DEVICE_INFO_PRODUCT_NAME ||
         key == OL_DEVICE_INFO_UID || key == OL_DEVICE_INFO_VENDOR ||
         key == OL_DEVICE_INFO_DRIVER_VERSION;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  // Before olInit.
  struct wanted host = {OL_DEVICE_TYPE_HOST, NULL};
  SHOW(olIterateDevices(find_type, &host));
  SHOW(olShutDown());
  SHOW(olInit());
  SHOW(olInit()); // counted

  SHOW(olIterateDevices(NULL, NULL));
  SHOW(olIterateDevices(find_type, &host));
  printf("host device found: %d\n", host.device != NULL);
  if (!host.device)
    return 1;
  ol_device_handle_t d = host.device;

  // Every device query: its code, and the value of each number.
  for (int key = 0; key <= OL_DEVICE_INFO_LAST; key++) {
    size_t size = 0;
    int size_code = code(olGetDeviceInfoSize(d, (ol_device_info_t)key, &size));
    unsigned char value[256] = {0};
    int value_code =
        size_code || size > sizeof value
            ? -1
            : code(olGetDeviceInfo(d, (ol_device_info_t)key, size, value));
    printf("device info %d: size %d", key, size_code);
    if (!size_code && !is_string((ol_device_info_t)key) &&
        key != OL_DEVICE_INFO_PLATFORM) {
      printf(" (%zu bytes:", size);
      for (size_t i = 0; i < size; i++)
        printf(" %02x", value[i]);
      printf(")");
    }
    printf(", value %d\n", value_code);
  }
  ol_device_type_t type;
  SHOW(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  SHOW(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, 0, &type));
  SHOW(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, NULL));
  SHOW(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, 1, &type));
  SHOW(olGetDeviceInfo(d, (ol_device_info_t)0x7fff, sizeof type, &type));
  SHOW(olGetDeviceInfoSize(d, OL_DEVICE_INFO_TYPE, NULL));
  char small[2];
  SHOW(olGetDeviceInfo(d, OL_DEVICE_INFO_NAME, sizeof small, small));

  // The host device's platform.
  ol_platform_handle_t platform = NULL;
  SHOW(olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform));
  for (int key = 0; key <= OL_PLATFORM_INFO_LAST; key++) {
    size_t size = 0;
    int size_code =
        code(olGetPlatformInfoSize(platform, (ol_platform_info_t)key, &size));
    printf("platform info %d: size %d", key, size_code);
    if (key == OL_PLATFORM_INFO_BACKEND && !size_code) {
      ol_platform_backend_t backend = 0;
      int value_code = code(olGetPlatformInfo(
          platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
      printf(", value %d, backend %d", value_code, (int)backend);
    }
    printf("\n");
  }
  ol_platform_backend_t backend;
  SHOW(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_BACKEND, sizeof backend,
                         &backend));
  SHOW(olGetPlatformInfo(platform, (ol_platform_info_t)0x7fff,
                         sizeof backend, &backend));
  SHOW(olGetPlatformInfoSize(platform, OL_PLATFORM_INFO_BACKEND, NULL));

  // Host to host copies, and their checks.
  char from[16] = "fifteen bytes..", to[16] = {0};
  SHOW(olMemcpy(NULL, to, d, from, d, sizeof from));
  printf("copied: %s\n", to);
  SHOW(olMemcpy(NULL, NULL, d, from, d, sizeof from));
  SHOW(olMemcpy(NULL, to, d, NULL, d, sizeof from));
  SHOW(olMemcpy(NULL, to, NULL, from, d, sizeof from));
  SHOW(olMemcpy(NULL, to, d, from, NULL, sizeof from));
  SHOW(olMemcpy(NULL, to, d, from, d, 0));

  // Handles and pointers checked before anything else.
  SHOW(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 64, NULL));
  SHOW(olMemAlloc(d, OL_ALLOC_TYPE_HOST, 0, NULL));
  SHOW(olMemFree(NULL));
  SHOW(olCreateQueue(NULL, NULL));
  SHOW(olCreateQueue(d, NULL));
  SHOW(olSyncQueue(NULL));
  SHOW(olDestroyQueue(NULL));
  SHOW(olCreateEvent(NULL, NULL));
  SHOW(olSyncEvent(NULL));
  SHOW(olDestroyEvent(NULL));
  SHOW(olCreateProgram(NULL, from, sizeof from, NULL));
  SHOW(olCreateProgram(d, NULL, sizeof from, NULL));
  SHOW(olDestroyProgram(NULL));
  SHOW(olGetSymbol(NULL, "k", OL_SYMBOL_KIND_KERNEL, NULL));
  SHOW(olLaunchKernel(NULL, NULL, NULL, NULL, 0, NULL));
  SHOW(olLaunchHostFunction(NULL, NULL, NULL));
  SHOW(olWaitEvents(NULL, NULL, 0));
  SHOW(olGetQueueInfo(NULL, OL_QUEUE_INFO_DEVICE, 0, NULL));
  SHOW(olGetEventInfo(NULL, OL_EVENT_INFO_QUEUE, 0, NULL));

  SHOW(olShutDown());
  SHOW(olIterateDevices(find_type, &host)); // still one olInit
  SHOW(olShutDown());
  SHOW(olShutDown());
  SHOW(olIterateDevices(find_type, &host));
  SHOW(olMemcpy(NULL, to, d, from, d, sizeof from));
  return 0;
}
