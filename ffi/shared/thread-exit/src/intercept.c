/* Intercept glibc's thread exit (pthread_exit, or cancellation acted upon)
 * inside a callback, the way C's pthread_cleanup_push does without
 * exceptions: register a cancellation buffer; glibc's forced unwind ends
 * by longjmp'ing to the innermost registered buffer once it has unwound
 * the frames below it. The caller then returns normally through its own
 * frames (whose panic boundaries would otherwise catch the forced unwind
 * and abort) and resumes the thread's exit with __pthread_unwind_next. */
#include <pthread.h>
#include <setjmp.h>

/* glibc's cancellation-buffer ABI (what pthread_cleanup_push expands to in
 * C compiled without exceptions; pthread.h declares these only then). */
extern void __pthread_register_cancel(__pthread_unwind_buf_t *buf);
extern void __pthread_unregister_cancel(__pthread_unwind_buf_t *buf);
extern void __pthread_unwind_next(__pthread_unwind_buf_t *buf) __attribute__((__noreturn__));

/* 0: the callback returned. 1: the thread is exiting; `buf` holds what
 * omptarget_resume_thread_exit needs, and is unregistered already. */
int omptarget_call_intercepting_exit(void (*callback)(void *), void *data,
                                     __pthread_unwind_buf_t *buf) {
  /* As glibc's __sigsetjmp_cancel: the cancellation jmp_buf is shorter
   * than a jmp_buf because the signal mask is never saved (savemask 0). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
  int exiting = __sigsetjmp((struct __jmp_buf_tag *)(void *)buf->__cancel_jmp_buf, 0);
#pragma GCC diagnostic pop
  if (__builtin_expect(exiting, 0)) {
    /* Restore the thread's previous buffer: our frame is about to go. */
    __pthread_unregister_cancel(buf);
    return 1;
  }
  __pthread_register_cancel(buf);
  callback(data);
  __pthread_unregister_cancel(buf);
  return 0;
}

/* Undo the registration after the callback unwound with a Rust panic
 * (its frames, this one included, are gone). */
void omptarget_unregister_intercept(__pthread_unwind_buf_t *buf) {
  __pthread_unregister_cancel(buf);
}

/* Continue the thread's exit towards the buffer registered before ours
 * (glibc's own at the thread's start, or the program's). Never returns. */
void omptarget_resume_thread_exit(__pthread_unwind_buf_t *buf) {
  __pthread_unwind_next(buf);
}

unsigned long omptarget_unwind_buf_size(void) { return sizeof(__pthread_unwind_buf_t); }
