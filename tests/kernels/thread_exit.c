/* Kernels for the launch path's edges (tests/rust_user): a kernel that ends
 * its thread, and one that calls back into the host program. */
#include <pthread.h>
#include <stdint.h>

/* Ends the calling thread, as a kernel may (pthread_exit's forced unwind). */
void end_thread(int64_t value) { pthread_exit((void *)(intptr_t)value); }

/* Calls `f` (passed as an integer): a host function that runs inside a
 * launch, to look at the frames between the launch and the kernel. */
void call_back(uint64_t f) { ((void (*)(void))(uintptr_t)f)(); }
