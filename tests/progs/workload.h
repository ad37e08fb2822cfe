/* workload.h - the driver-level workload every door test program runs, over
 * whatever function pointers its door obtained.
 *
 * It allocates, fills and updates a buffer with the two PTX kernels of
 * kernels.ptx on the default and on a created stream, reads it back element
 * by element and in bulk, then makes a set of bad calls. It prints the results
 * and the bad calls' error codes on stdout, so a run with the library and one
 * without can be compared line by line (error parity). */
#ifndef GA_TEST_WORKLOAD_H
#define GA_TEST_WORKLOAD_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct drv {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) primary_retain;
    __typeof__(&cuCtxSetCurrent) ctx_set_current;
    __typeof__(&cuCtxSynchronize) ctx_sync;
    __typeof__(&cuModuleLoadData) module_load_data;
    __typeof__(&cuModuleGetFunction) module_get_function;
    __typeof__(&cuModuleUnload) module_unload;
    __typeof__(&cuMemAlloc) mem_alloc;
    __typeof__(&cuMemFree) mem_free;
    __typeof__(&cuMemcpyHtoD) memcpy_htod;
    __typeof__(&cuMemcpyDtoH) memcpy_dtoh;
    __typeof__(&cuMemcpy) memcpy_unified; /* unified addressing, either direction */
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuStreamSynchronize) stream_sync;
    __typeof__(&cuStreamDestroy) stream_destroy;
} drv_t;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)r_);   \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static int launch1(const drv_t *d, CUfunction f, CUstream s, CUdeviceptr p, uint32_t n,
                   uint32_t v, unsigned block)
{
    void *args[] = {&p, &n, &v};
    return (int)d->launch(f, (n + block - 1) / block, 1, 1, block, 1, 1, 0, s, args, NULL);
}

/* Returns the process exit status. */
static int run_workload(const drv_t *d, const char *ptx_path)
{
    enum { N = 4096, ADDS = 20 };
    char *ptx = read_file(ptx_path);
    if (!ptx) {
        fprintf(stderr, "cannot read %s\n", ptx_path);
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill, add;
    CUdeviceptr buf;
    CUstream s;
    CHECK(d->init(0));
    CHECK(d->device_get(&dev, 0));
    CHECK(d->primary_retain(&ctx, dev));
    CHECK(d->ctx_set_current(ctx));
    CHECK(d->module_load_data(&mod, ptx));
    CHECK(d->module_get_function(&fill, mod, "fill"));
    CHECK(d->module_get_function(&add, mod, "add"));
    CHECK(d->mem_alloc(&buf, N * sizeof(uint32_t)));
    /* A blocking stream: the adds alternate between it and the legacy
     * stream on one buffer, so they must be ordered. (A non-blocking one let
     * them overlap and lose updates: door_dlsym read a wrong first value with
     * the library on a busy H200, where other processes' work made the
     * kernels queue up and run together.) */
    CHECK(d->stream_create(&s, CU_STREAM_DEFAULT));

    CHECK((CUresult)launch1(d, fill, NULL, buf, N, 7, 256));
    CHECK(d->ctx_sync());
    for (int i = 0; i < ADDS; i++)
        CHECK((CUresult)launch1(d, add, i % 2 ? s : NULL, buf, N, 5, 128));
    CHECK(d->stream_sync(s));
    CHECK(d->ctx_sync());

    uint32_t expect = 7 + 5 * ADDS, one, *all = malloc(N * sizeof *all);
    int ok = all != NULL;
    for (int i = 0; ok && i < 256; i++) {
        CHECK(d->memcpy_dtoh(&one, buf + 4 * (CUdeviceptr)i, sizeof one));
        ok = one == expect;
    }
    for (int i = 256; ok && i < 320; i++) { /* small reads through cuMemcpy */
        CHECK(d->memcpy_unified((CUdeviceptr)(uintptr_t)&one, buf + 4 * (CUdeviceptr)i, 4));
        ok = one == expect;
    }
    CHECK(d->memcpy_dtoh(all, buf, N * sizeof *all));
    for (int i = 0; ok && i < N; i++)
        ok = all[i] == expect;
    uint32_t zero[16] = {0};
    CHECK(d->memcpy_htod(buf, zero, sizeof zero)); /* a write the next read must see */
    CHECK(d->memcpy_dtoh(&one, buf + 4, sizeof one));
    ok = ok && one == 0;
    CHECK(d->memcpy_unified((CUdeviceptr)(uintptr_t)&one, buf + 8, 4));
    ok = ok && one == 0;
    printf("result ok=%d value=%u launches=%d\n", ok, (unsigned)expect, 1 + ADDS);

    /* Error parity: these must fail exactly as they do without the library. */
    CUdeviceptr huge = 0;
    int oversized = launch1(d, fill, NULL, buf, N, 1, 2048);
    int huge_alloc = (int)d->mem_alloc(&huge, (size_t)1 << 50);
    CHECK(d->mem_free(buf));
    int double_free = (int)d->mem_free(buf);
    int bad_ptr = (int)d->mem_free((CUdeviceptr)0x1234);
    printf("codes oversized_block=%d huge_alloc=%d double_free=%d bad_pointer=%d\n", oversized,
           huge_alloc, double_free, bad_ptr);
    CHECK(d->stream_destroy(s));
    CHECK(d->module_unload(mod));
    free(all);
    free(ptx);
    return ok ? 0 : 1;
}

#endif
