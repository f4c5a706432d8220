/*
 * The fake CUDA driver's modules: loading an image (its ELF symbol table:
 * functions and globals), unloading, symbol lookups and launches, with
 * LLVM's constructor and destructor kernels run on host memory. See
 * fake_cuda.c for what the driver checks.
 */
#define _GNU_SOURCE
#include "fake_cuda.h"

/* Read the image's symbol table: functions and objects; an object's
 * device memory starts as its bytes in the file (PROGBITS) or zeros. */
static CUresult parse_image(const unsigned char *img, struct module *m) {
    const Elf64_Ehdr *eh = (const void *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_machine != 190)
        return INVALID_IMAGE;
    const Elf64_Shdr *sh = (const void *)(img + eh->e_shoff);
    for (int i = 0; eh->e_shoff && i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const Elf64_Sym *syms = (const void *)(img + sh[i].sh_offset);
        const char *strtab = (const char *)(img + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n && m->nsymbols < MAX_SYMBOLS; k++) {
            int type = ELF64_ST_TYPE(syms[k].st_info);
            if (type != STT_FUNC && type != STT_OBJECT)
                continue;
            struct symbol *s = &m->symbols[m->nsymbols++];
            memset(s, 0, sizeof *s);
            snprintf(s->name, sizeof s->name, "%s", strtab + syms[k].st_name);
            s->is_function = type == STT_FUNC;
            s->module = m;
            if (!s->is_function) {
                s->size = syms[k].st_size;
                s->data = calloc(1, s->size ? s->size : 1);
                int shndx = syms[k].st_shndx;
                if (shndx > 0 && shndx < eh->e_shnum && sh[shndx].sh_type == SHT_PROGBITS)
                    memcpy(s->data, img + sh[shndx].sh_offset + syms[k].st_value, s->size);
            }
        }
    }
    return SUCCESS;
}

CUresult cuModuleLoadData(void **out, const void *image) {
    ENTER("cuModuleLoadData", "");
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuModuleLoadData");
    if (!r) {
        r = OUT_OF_MEMORY;
        for (int i = 0; i < MAX_MODULES; i++)
            if (!modules[i].live) {
                struct module *m = &modules[i];
                memset(m, 0, sizeof *m);
                r = parse_image(image, m);
                if (!r) {
                    m->ctx = current;
                    m->live = 1;
                    *out = m;
                    logf_("MODULE_LOADED %d symbols=%d", i, m->nsymbols);
                }
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult need_module(const char *call, struct module *m) {
    if (m < modules || m >= modules + MAX_MODULES || !m->live) {
        VIOLATION("%s on a module that is not loaded", call);
        return INVALID_HANDLE;
    }
    if (m->ctx->refs <= 0) {
        VIOLATION("%s on a module of a destroyed context", call);
        return INVALID_CONTEXT;
    }
    return SUCCESS;
}

#ifndef FAKE_OMIT_MODULE_UNLOAD
CUresult cuModuleUnload(void *module) {
    ENTER("cuModuleUnload", "");
    pthread_mutex_lock(&lock);
    struct module *m = module;
    CUresult r = need_ctx("cuModuleUnload");
    if (!r)
        r = need_module("cuModuleUnload", m);
    if (!r) {
        for (int s = 0; s < m->nsymbols; s++)
            free(m->symbols[s].data);
        m->live = 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}
#endif

static struct symbol *find(struct module *m, const char *name, int function) {
    for (int s = 0; s < m->nsymbols; s++)
        if (m->symbols[s].is_function == function && !strcmp(m->symbols[s].name, name))
            return &m->symbols[s];
    return NULL;
}

CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
    ENTER("cuModuleGetFunction", "%s", name);
    pthread_mutex_lock(&lock);
    CUresult r = need_module("cuModuleGetFunction", module);
    if (!r) {
        struct symbol *s = find(module, name, 1);
        if (s)
            *f = s;
        else
            r = NOT_FOUND;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *ptr, size_t *size, void *module, const char *name) {
    ENTER("cuModuleGetGlobal_v2", "%s", name);
    pthread_mutex_lock(&lock);
    CUresult r = need_module("cuModuleGetGlobal_v2", module);
    if (!r) {
        struct symbol *s = find(module, name, 0);
        if (s) {
            *ptr = (CUdeviceptr)(uintptr_t)s->data;
            *size = s->size;
        } else {
            r = NOT_FOUND;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
    ENTER("cuFuncGetAttribute", "%d", attr);
    *v = attr == 0 ? 1024 : 0;
    return SUCCESS;
}

/* Whether [start, end) lies inside one live device allocation of the
 * current context. */
static int in_device_allocation(uintptr_t start, uintptr_t end) {
    for (int i = 0; i < MAX_ALLOCS; i++) {
        uintptr_t base = (uintptr_t)allocs[i].ptr;
        if (allocs[i].live && allocs[i].kind == 0 && allocs[i].ctx == current && start >= base &&
            end <= base + allocs[i].size)
            return 1;
    }
    return 0;
}

/* What LLVM's nvptx-lower-ctor-dtor kernels do, on host memory: call each
 * pointer between __init_array_start and __init_array_end (destructors:
 * __fini_array_*, last to first). The fake cannot call device code, so
 * each call is a line "DEVICE_CTOR <pointer>" (DEVICE_DTOR). */
static CUresult run_ctor_dtor_kernel(struct module *m, int ctor) {
    struct symbol *start = find(m, ctor ? "__init_array_start" : "__fini_array_start", 0);
    struct symbol *end = find(m, ctor ? "__init_array_end" : "__fini_array_end", 0);
    if (!start || !end || start->size != 8 || end->size != 8) {
        VIOLATION("%s without 8-byte start and end globals", ctor ? "init" : "fini");
        return INVALID_VALUE;
    }
    uintptr_t first, stop;
    memcpy(&first, start->data, 8);
    memcpy(&stop, end->data, 8);
    if (stop < first || (stop - first) % 8 || (stop > first && !in_device_allocation(first, stop))) {
        VIOLATION("%s array [%p, %p) is not inside a live device allocation",
                  ctor ? "init" : "fini", (void *)first, (void *)stop);
        return INVALID_VALUE;
    }
    size_t n = (stop - first) / 8;
    for (size_t k = 0; k < n; k++) {
        uint64_t fn;
        memcpy(&fn, (void *)(first + 8 * (ctor ? k : n - 1 - k)), 8);
        logf_("%s %#llx", ctor ? "DEVICE_CTOR" : "DEVICE_DTOR", (unsigned long long)fn);
    }
    return SUCCESS;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    struct symbol *s = f;
    if (shut_down) {
        logf_("DEINITIALIZED cuLaunchKernel");
        return DEINITIALIZED;
    }
    /* The first argument's value, so tests see what reached the kernel. */
    logf_("cuLaunchKernel %s grid=%u,%u,%u block=%u,%u,%u shared=%u arg0=%p", s->name, gx, gy, gz,
          bx, by, bz, shared, params && params[0] ? *(void **)params[0] : NULL);
    pthread_mutex_lock(&lock);
    CUresult r = need_ctx("cuLaunchKernel");
    if (!r)
        r = need_stream("cuLaunchKernel", stream);
    if (!r)
        r = need_module("cuLaunchKernel", s->module);
    if (!r && (!strcmp(s->name, "nvptx$device$init") || !strcmp(s->name, "nvptx$device$fini")))
        r = run_ctor_dtor_kernel(s->module, !strcmp(s->name, "nvptx$device$init"));
    pthread_mutex_unlock(&lock);
    return r;
}
