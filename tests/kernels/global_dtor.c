/* An image with a global constructor and destructor: each appends one line
 * ("image_ctor", "image_dtor") to the file named by
 * $OMPTARGET_TEST_IMAGE_LOG, in one write to a file opened for appending,
 * so that a test sees where they ran among the test plugin's logged calls
 * (tests/runtime_image_dtors.rs). */
#include "offload_entry.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note(const char *line) {
  const char *path = getenv("OMPTARGET_TEST_IMAGE_LOG");
  if (!path)
    return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0)
    return;
  if (write(fd, line, strlen(line)) < 0) {
  }
  close(fd);
}

__attribute__((constructor)) static void image_ctor(void) { note("image_ctor\n"); }
__attribute__((destructor)) static void image_dtor(void) { note("image_dtor\n"); }

void touch(intptr_t *x) { *x = 1; }

OFFLOAD_ENTRY(touch)
