// What the ol* test programs (and benches/liboffload) share: counting
// failed checks (CHECK, EXPECT on an ol_result_t), reading a kernel
// object's bytes, finding the initial device and the first host CPU one.
#ifndef OFFLOAD_CHECKS_H
#define OFFLOAD_CHECKS_H
#include <stdbool.h> // OffloadAPI.h uses bool without including it
#include <stdint.h>
#include <offload/OffloadAPI.h>
#include <stdio.h>
#include <stdlib.h>

static int failures __attribute__((unused));

#define CHECK(cond, what)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED: %s (line %d)\n", what, __LINE__);               \
      failures++;                                                              \
    }                                                                          \
  } while (0)

// The result's code: 0 for success.
__attribute__((unused)) static int code(ol_result_t r) { return r ? (int)r->Code : 0; }

// The result must be `want` (0: success); on an error, its details must
// be a non-empty string.
#define EXPECT(call, want)                                                     \
  do {                                                                         \
    ol_result_t r_ = (call);                                                   \
    if (code(r_) != (want)) {                                                  \
      fprintf(stderr, "FAILED: %s gave %d (%s), expected %d (line %d)\n",     \
              #call, code(r_), r_ && r_->Details ? r_->Details : "", want,     \
              __LINE__);                                                       \
      failures++;                                                              \
    } else if (r_ && (!r_->Details || !r_->Details[0])) {                      \
      fprintf(stderr, "FAILED: %s has no details (line %d)\n", #call,         \
              __LINE__);                                                       \
      failures++;                                                              \
    }                                                                          \
  } while (0)

// The bytes of the file at `path` (NULL if it cannot be read); its
// length in `*length`.
__attribute__((unused)) static char *read_file(const char *path,
                                                long *length) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  fseek(file, 0, SEEK_END);
  *length = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *bytes = malloc(*length);
  if (fread(bytes, 1, *length, file) != (size_t)*length) {
    free(bytes);
    bytes = NULL;
  }
  fclose(file);
  return bytes;
}

struct devices {
  ol_device_handle_t host; // the initial device (backend HOST)
  ol_device_handle_t cpu;  // the first host CPU device
};

// olIterateDevices' callback: fills a `struct devices`.
__attribute__((unused)) static bool find_devices(ol_device_handle_t d,
                                                 void *data) {
  struct devices *found = data;
  ol_device_type_t type;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type) != NULL)
    return true;
  if (type == OL_DEVICE_TYPE_HOST && !found->host)
    found->host = d;
  if (type == OL_DEVICE_TYPE_CPU && !found->cpu)
    found->cpu = d;
  return true;
}

#endif
