/*
 * The seed scenario of the project, on the CUDA plugin: a program that
 * registers an nvptx image with libomptarget.so, maps data and allocates
 * device memory, then calls exit() with all of it still live. LLVM 14
 * freed such memory from a global destructor through a CUDA context that
 * was already destroyed; here the shim's teardown at exit must release
 * everything, in order, before the context goes.
 *
 * usage: seed IMAGE [driver-gone]
 *   IMAGE        a cubin (the tests build it) holding spmd_kernel and counter
 *   driver-gone  the fake driver shuts down before exit (fake_cuda_shutdown)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t reserved;
};
struct device_image {
    void *start, *end;
    struct entry *entries_begin, *entries_end;
};
struct bin_desc {
    int32_t num_images;
    struct device_image *images;
    struct entry *host_begin, *host_end;
};

void __tgt_register_lib(struct bin_desc *);
void __tgt_target_data_begin_mapper(void *loc, int64_t device, int32_t n, void **bases, void **args,
                                    int64_t *sizes, int64_t *types, void **names, void **mappers);
void *omp_target_alloc(size_t size, int device);
void omp_target_free(void *ptr, int device);
int omp_get_num_devices(void);

static char region_id;
static int counter = 7;

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    static unsigned char image[1 << 16];
    size_t len = fread(image, 1, sizeof image, f);
    fclose(f);

    static struct entry entries[] = {
        {&region_id, "spmd_kernel", 0, 0, 0},
        {&counter, "counter", sizeof counter, 0, 0},
    };
    static struct device_image images[1];
    images[0] = (struct device_image){image, image + len, entries, entries + 2};
    static struct bin_desc desc = {1, images, entries, entries + 2};
    __tgt_register_lib(&desc);
    printf("devices %d\n", omp_get_num_devices());

    /* A mapping (loads the image on device 0), a live block and a cached one. */
    static int data[256];
    void *bases[] = {data}, *args[] = {data};
    int64_t sizes[] = {sizeof data}, types[] = {3 /* to | from */};
    __tgt_target_data_begin_mapper(NULL, 0, 1, bases, args, sizes, types, NULL, NULL);
    void *live = omp_target_alloc(1024, 0);
    void *cached = omp_target_alloc(100, 0);
    omp_target_free(cached, 0);
    printf("live %s\n", live ? "yes" : "no");

    if (argc > 2 && !strcmp(argv[2], "driver-gone")) {
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        void (*shutdown)(void) = cuda ? (void (*)(void))dlsym(cuda, "fake_cuda_shutdown") : NULL;
        if (!shutdown)
            return 3;
        shutdown();
    }
    fflush(stdout);
    exit(0); /* everything above still live */
}
