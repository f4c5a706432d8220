/*
 * A fake CUDA driver (libcuda.so.1) for the CUDA plugin's lifecycle tests.
 *
 * It implements, on host memory, the driver calls the plugin makes; it
 * cannot run PTX (a launch is recorded and succeeds). Every call is
 * appended to the file named by FAKE_CUDA_LOG, one line each, and CUDA's
 * ordering rules are checked as the calls come:
 *
 *   - no call on a context after its last release (the context is gone);
 *   - no free after the context is gone, no free of an unknown pointer;
 *   - every allocation freed, every module unloaded and every stream and
 *     event destroyed before the last release of its context;
 *   - copies touch only live allocations or module globals.
 *
 * The kernels nvptx$device$init and nvptx$device$fini are run as LLVM's
 * device code runs them: each pointer of the array their start and end
 * globals name is logged as DEVICE_CTOR/DEVICE_DTOR, in call order.
 *
 * A broken rule is logged as a line starting with "VIOLATION". At process
 * exit one "EXIT ..." line says what is still alive.
 *
 * Settings (environment):
 *   FAKE_CUDA_LOG         the log file (appended to)
 *   FAKE_CUDA_DEVICES     number of devices (default 1)
 *   FAKE_CUDA_SM          compute capability as a number (default 90)
 *   FAKE_CUDA_INIT_ERROR  cuInit returns this code
 *   FAKE_CUDA_MEM_LIMIT   device memory (cuMemAlloc_v2) in bytes
 * Modules, their symbols and launches are in fake_cuda_module.c; the
 * declarations both files share in fake_cuda.h.
 * Built with -DFAKE_OMIT_MODULE_UNLOAD it lacks cuModuleUnload (the
 * missing-symbol test). fake_cuda_shutdown() makes every later call
 * return CUDA_ERROR_DEINITIALIZED, as a driver torn down at exit does.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "fake_cuda.h"

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
struct ctx ctxs[MAX_DEVICES];
struct alloc allocs[MAX_ALLOCS];
struct stream streams[MAX_STREAMS];
struct module modules[MAX_MODULES];
struct event events[MAX_EVENTS];
__thread struct ctx *current;
static int initialised;
int shut_down;
static size_t device_bytes;

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

void logf_(const char *fmt, ...) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, n);
        (void)w;
        close(fd);
    }
}



/* The current context must be alive; under the lock. */
CUresult need_ctx(const char *call) {
    if (!current) {
        VIOLATION("%s with no current context", call);
        return INVALID_CONTEXT;
    }
    if (current->refs <= 0) {
        VIOLATION("%s on context of device %d after its last release", call, current->device);
        return INVALID_CONTEXT;
    }
    return SUCCESS;
}

static int ndevices(void) {
    int n = env_int("FAKE_CUDA_DEVICES", 1);
    return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

void fake_cuda_shutdown(void) {
    logf_("SHUTDOWN");
    shut_down = 1;
}

CUresult cuInit(unsigned flags) {
    ENTER("cuInit", "%u", flags);
    int code = env_int("FAKE_CUDA_INIT_ERROR", 0);
    if (code)
        return code;
    initialised = 1;
    return SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
    ENTER("cuDriverGetVersion", "");
    *v = 12080;
    return SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
    ENTER("cuDeviceGetCount", "");
    if (!initialised)
        return 3; /* CUDA_ERROR_NOT_INITIALIZED */
    *n = ndevices();
    return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    ENTER("cuDeviceGet", "%d", ordinal);
    if (ordinal < 0 || ordinal >= ndevices())
        return INVALID_DEVICE;
    *d = ordinal;
    return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    ENTER("cuDeviceGetName", "%d", d);
    snprintf(name, len, "Fake GPU %d", d);
    return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    ENTER("cuDeviceTotalMem_v2", "%d", d);
    *bytes = (size_t)1 << 30;
    return SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    ENTER("cuDeviceGetAttribute", "%d %d", attr, d);
    int sm = env_int("FAKE_CUDA_SM", 90);
    switch (attr) {
    case 1: case 2: *v = 1024; break;          /* threads per block, block dim x */
    case 5: *v = 2147483647; break;            /* grid dim x */
    case 10: *v = 32; break;                   /* warp size */
    case 13: *v = 1980000; break;              /* clock, kHz */
    case 16: *v = 132; break;                  /* SMs */
    case 39: *v = 2048; break;                 /* threads per SM */
    case 75: *v = sm / 10; break;
    case 76: *v = sm % 10; break;
    default: *v = 0;
    }
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice d) {
    ENTER("cuDevicePrimaryCtxRetain", "%d", d);
    if (d < 0 || d >= ndevices())
        return INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    struct ctx *c = &ctxs[d];
    c->device = d;
    if (c->refs++ == 0)
        c->generation++;
    *pctx = c;
    pthread_mutex_unlock(&lock);
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    ENTER("cuDevicePrimaryCtxRelease_v2", "%d", d);
    if (d < 0 || d >= ndevices())
        return INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    struct ctx *c = &ctxs[d];
    CUresult r = SUCCESS;
    if (c->refs <= 0) {
        VIOLATION("cuDevicePrimaryCtxRelease_v2 of device %d without a retain", d);
        r = INVALID_CONTEXT;
    } else if (--c->refs == 0) {
        logf_("CONTEXT_DESTROYED %d", d);
        for (int i = 0; i < MAX_ALLOCS; i++)
            if (allocs[i].live && allocs[i].ctx == c) {
                VIOLATION("allocation %p (%zu bytes) still live when the context of device %d was destroyed",
                          allocs[i].ptr, allocs[i].size, d);
                allocs[i].live = 0;
                free(allocs[i].ptr);
            }
        for (int i = 0; i < MAX_MODULES; i++)
            if (modules[i].live && modules[i].ctx == c) {
                VIOLATION("module %d still loaded when the context of device %d was destroyed", i, d);
                modules[i].live = 0;
            }
        for (int i = 0; i < MAX_STREAMS; i++)
            if (streams[i].live && streams[i].ctx == c) {
                VIOLATION("stream %d not destroyed when the context of device %d was destroyed", i, d);
                streams[i].live = 0;
            }
        for (int i = 0; i < MAX_EVENTS; i++)
            if (events[i].live && events[i].ctx == c) {
                VIOLATION("event %d not destroyed when the context of device %d was destroyed", i, d);
                events[i].live = 0;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuCtxSetCurrent(void *ctx) {
    ENTER("cuCtxSetCurrent", "%d", ctx ? ((struct ctx *)ctx)->device : -1);
    if (ctx && ((struct ctx *)ctx)->refs <= 0) {
        VIOLATION("cuCtxSetCurrent on the context of device %d after its last release",
                  ((struct ctx *)ctx)->device);
        return INVALID_CONTEXT;
    }
    current = ctx;
    return SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    ENTER("cuCtxSynchronize", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuCtxSynchronize");
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult do_alloc(const char *call, void **out, size_t size, int kind) {
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx(call);
    if (r)
        goto out;
    if (kind == 0) {
        long limit = env_int("FAKE_CUDA_MEM_LIMIT", 0);
        if (limit > 0 && device_bytes + size > (size_t)limit) {
            logf_("OOM %s %zu", call, size);
            r = OUT_OF_MEMORY;
            goto out;
        }
    }
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].live) {
            void *p = calloc(1, size ? size : 1);
            allocs[i] = (struct alloc){p, size, current, kind, 1};
            if (kind == 0)
                device_bytes += size;
            *out = p;
            logf_("ALLOCATED %p %zu", p, size);
            goto out;
        }
    r = OUT_OF_MEMORY;
out:
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
    ENTER("cuMemAlloc_v2", "%zu", size);
    void *p = NULL;
    CUresult r = do_alloc("cuMemAlloc_v2", &p, size, 0);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

/* Free and total device memory of the current context's device: 1 GiB
 * (cuDeviceTotalMem_v2), less what cuMemAlloc_v2 holds on any device (host and managed
 * blocks are not device memory). */
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    ENTER("cuMemGetInfo_v2", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuMemGetInfo_v2");
    if (!r) {
        size_t total = (size_t)1 << 30;
        *total_bytes = total;
        *free_bytes = device_bytes < total ? total - device_bytes : 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemAllocHost_v2(void **p, size_t size) {
    ENTER("cuMemAllocHost_v2", "%zu", size);
    return do_alloc("cuMemAllocHost_v2", p, size, 1);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags) {
    ENTER("cuMemAllocManaged", "%zu %u", size, flags);
    void *p = NULL;
    CUresult r = do_alloc("cuMemAllocManaged", &p, size, 2);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

static CUresult do_free(const char *call, void *p, int host) {
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx(call);
    if (r)
        goto out;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].live && allocs[i].ptr == p) {
            if ((allocs[i].kind == 1) != host)
                VIOLATION("%s of %p, allocated with the other kind", call, p);
            if (allocs[i].ctx->refs <= 0)
                VIOLATION("%s of %p after its context was destroyed", call, p);
            if (allocs[i].kind == 0)
                device_bytes -= allocs[i].size;
            allocs[i].live = 0;
            logf_("FREED %p", p);
            free(p);
            goto out;
        }
    VIOLATION("%s of %p, which is not a live allocation", call, p);
    r = INVALID_VALUE;
out:
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    ENTER("cuMemFree_v2", "%p", (void *)(uintptr_t)p);
    return do_free("cuMemFree_v2", (void *)(uintptr_t)p, 0);
}

CUresult cuMemFreeHost(void *p) {
    ENTER("cuMemFreeHost", "%p", p);
    return do_free("cuMemFreeHost", p, 1);
}

/* Whether [p, p+n) is inside a live allocation or a global of a live module. */
static int known_range(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].live && a >= (uintptr_t)allocs[i].ptr &&
            a + n <= (uintptr_t)allocs[i].ptr + allocs[i].size)
            return 1;
    for (int m = 0; m < MAX_MODULES; m++)
        if (modules[m].live)
            for (int s = 0; s < modules[m].nsymbols; s++) {
                struct symbol *sym = &modules[m].symbols[s];
                if (sym->data && a >= (uintptr_t)sym->data &&
                    a + n <= (uintptr_t)sym->data + sym->size)
                    return 1;
            }
    return 0;
}

CUresult need_stream(const char *call, void *stream) {
    if (!stream)
        return SUCCESS;
    struct stream *s = stream;
    if (s < streams || s >= streams + MAX_STREAMS || !s->live) {
        VIOLATION("%s on a stream that does not exist", call);
        return INVALID_HANDLE;
    }
    return SUCCESS;
}

static CUresult do_copy(const char *call, void *dst, int dst_dev, const void *src, int src_dev,
                        size_t n, void *stream) {
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx(call);
    if (!r)
        r = need_stream(call, stream);
    if (!r && dst_dev && !known_range(dst, n)) {
        VIOLATION("%s writes %zu bytes at %p, outside every allocation", call, n, dst);
        r = INVALID_VALUE;
    }
    if (!r && src_dev && !known_range(src, n)) {
        VIOLATION("%s reads %zu bytes at %p, outside every allocation", call, n, src);
        r = INVALID_VALUE;
    }
    if (!r)
        memmove(dst, src, n);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
    ENTER("cuMemcpyHtoDAsync_v2", "%zu", n);
    return do_copy("cuMemcpyHtoDAsync_v2", (void *)(uintptr_t)dst, 1, src, 0, n, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
    ENTER("cuMemcpyDtoHAsync_v2", "%zu", n);
    return do_copy("cuMemcpyDtoHAsync_v2", dst, 0, (void *)(uintptr_t)src, 1, n, stream);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream) {
    ENTER("cuMemcpyDtoDAsync_v2", "%zu", n);
    return do_copy("cuMemcpyDtoDAsync_v2", (void *)(uintptr_t)dst, 1, (void *)(uintptr_t)src, 1, n,
                   stream);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n,
                           void *stream) {
    ENTER("cuMemcpyPeerAsync", "%zu", n);
    if (((struct ctx *)dctx)->refs <= 0 || ((struct ctx *)sctx)->refs <= 0) {
        VIOLATION("cuMemcpyPeerAsync with a released context");
        return INVALID_CONTEXT;
    }
    return do_copy("cuMemcpyPeerAsync", (void *)(uintptr_t)dst, 1, (void *)(uintptr_t)src, 1, n,
                   stream);
}

CUresult cuStreamCreate(void **out, unsigned flags) {
    ENTER("cuStreamCreate", "%u", flags);
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuStreamCreate");
    if (!r) {
        r = OUT_OF_MEMORY;
        for (int i = 0; i < MAX_STREAMS; i++)
            if (!streams[i].live) {
                streams[i] = (struct stream){current, 1};
                *out = &streams[i];
                r = SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamSynchronize(void *stream) {
    ENTER("cuStreamSynchronize", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuStreamSynchronize");
    if (!r)
        r = need_stream("cuStreamSynchronize", stream);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamDestroy_v2(void *stream) {
    ENTER("cuStreamDestroy_v2", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuStreamDestroy_v2");
    if (!r)
        r = need_stream("cuStreamDestroy_v2", stream);
    if (!r)
        ((struct stream *)stream)->live = 0;
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult need_event(const char *call, void *event) {
    struct event *e = event;
    if (e < events || e >= events + MAX_EVENTS || !e->live) {
        VIOLATION("%s on an event that does not exist", call);
        return INVALID_HANDLE;
    }
    if (e->ctx->refs <= 0) {
        VIOLATION("%s on an event of a destroyed context", call);
        return INVALID_CONTEXT;
    }
    return SUCCESS;
}

CUresult cuEventCreate(void **out, unsigned flags) {
    ENTER("cuEventCreate", "%u", flags);
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuEventCreate");
    if (!r) {
        r = OUT_OF_MEMORY;
        for (int i = 0; i < MAX_EVENTS; i++)
            if (!events[i].live) {
                events[i] = (struct event){current, 1, flags, 0};
                *out = &events[i];
                r = SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventRecord(void *event, void *stream) {
    ENTER("cuEventRecord", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuEventRecord");
    if (!r)
        r = need_stream("cuEventRecord", stream);
    if (!r)
        r = need_event("cuEventRecord", event);
    if (!r) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ((struct event *)event)->recorded = now.tv_sec + now.tv_nsec / 1e9;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* As CUDA: both recorded, both with timing, same context. */
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    ENTER("cuEventElapsedTime", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_event("cuEventElapsedTime", start);
    if (!r)
        r = need_event("cuEventElapsedTime", end);
    struct event *a = start, *b = end;
    if (!r && ((a->flags | b->flags) & 2))
        r = INVALID_HANDLE;
    else if (!r && (!a->recorded || !b->recorded))
        r = INVALID_VALUE; /* CUDA_ERROR_NOT_READY in truth; close enough */
    else if (!r)
        *ms = (float)((b->recorded - a->recorded) * 1000.0);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
    ENTER("cuStreamWaitEvent", "%u", flags);
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuStreamWaitEvent");
    if (!r)
        r = need_stream("cuStreamWaitEvent", stream);
    if (!r)
        r = need_event("cuStreamWaitEvent", event);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventSynchronize(void *event) {
    ENTER("cuEventSynchronize", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_event("cuEventSynchronize", event);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventDestroy_v2(void *event) {
    ENTER("cuEventDestroy_v2", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuEventDestroy_v2");
    if (!r)
        r = need_event("cuEventDestroy_v2", event);
    if (!r)
        ((struct event *)event)->live = 0;
    pthread_mutex_unlock(&lock);
    return r;
}

__attribute__((destructor)) static void at_exit_summary(void) {
    int contexts = 0, blocks = 0, mods = 0, strs = 0, evs = 0;
    for (int i = 0; i < MAX_DEVICES; i++)
        contexts += ctxs[i].refs > 0;
    for (int i = 0; i < MAX_ALLOCS; i++)
        blocks += allocs[i].live;
    for (int i = 0; i < MAX_MODULES; i++)
        mods += modules[i].live;
    for (int i = 0; i < MAX_STREAMS; i++)
        strs += streams[i].live;
    for (int i = 0; i < MAX_EVENTS; i++)
        evs += events[i].live;
    logf_("EXIT contexts=%d allocations=%d modules=%d streams=%d events=%d", contexts, blocks, mods,
          strs, evs);
}
