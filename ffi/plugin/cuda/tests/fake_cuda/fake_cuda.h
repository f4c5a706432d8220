/*
 * The fake CUDA driver's shared declarations: its types, its state (one
 * copy, in fake_cuda.c) and the helpers both of its files use. The driver
 * is fake_cuda.c (devices, contexts, memory, streams, events) and
 * fake_cuda_module.c (modules, their symbols and launches); fake_cuda.c
 * says what it checks.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

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

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    DEINITIALIZED = 4,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
};

#define MAX_DEVICES 8
#define MAX_ALLOCS 4096
#define MAX_STREAMS 256
#define MAX_MODULES 64
#define MAX_SYMBOLS 64
#define MAX_EVENTS 256

struct ctx {
    int device;
    int refs;       /* primary-context retains */
    int generation; /* how many times it was created */
};

struct alloc {
    void *ptr;
    size_t size;
    struct ctx *ctx;
    int kind; /* 0 device, 1 host, 2 managed */
    int live;
};

struct stream {
    struct ctx *ctx;
    int live;
};

struct event {
    struct ctx *ctx;
    int live;
    unsigned flags;  /* CU_EVENT_DISABLE_TIMING is 2 */
    double recorded; /* seconds, at the last cuEventRecord; 0: never */
};

struct symbol {
    char name[128];
    int is_function;
    size_t size;
    unsigned char *data; /* globals: their device memory */
    struct module *module;
};

struct module {
    struct ctx *ctx;
    int live;
    int nsymbols;
    struct symbol symbols[MAX_SYMBOLS];
};

/* Shared state and helpers: hidden, so the library exports only the
 * driver's own functions. */
#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN extern pthread_mutex_t lock;
HIDDEN extern struct ctx ctxs[MAX_DEVICES];
HIDDEN extern struct alloc allocs[MAX_ALLOCS];
HIDDEN extern struct stream streams[MAX_STREAMS];
HIDDEN extern struct module modules[MAX_MODULES];
HIDDEN extern struct event events[MAX_EVENTS];
HIDDEN extern __thread struct ctx *current;
HIDDEN extern int shut_down;

HIDDEN void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
HIDDEN CUresult need_ctx(const char *call);
HIDDEN CUresult need_stream(const char *call, void *stream);

#define VIOLATION(...) logf_("VIOLATION " __VA_ARGS__)

/* Entry: log the call; refuse everything once shut down. */
#define ENTER(name, fmt, ...)                                                  \
    do {                                                                       \
        if (shut_down) {                                                       \
            logf_("DEINITIALIZED " name);                                      \
            return DEINITIALIZED;                                              \
        }                                                                      \
        logf_(name " " fmt, ##__VA_ARGS__);                                    \
    } while (0)

#endif
