/* door_getproc.c - a program that fetches entry points the way cudart does:
 * cuGetProcAddress_v2 with base names, a CUDA version, and (with "pt") the
 * per-thread-default-stream flag that selects _ptsz/_ptds variants.
 * usage: door_getproc KERNELS.PTX [pt] */
#include <dlfcn.h>

#include "workload.h"

static __typeof__(&cuGetProcAddress_v2) getproc;
static cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT;

static int load(void **slot, const char *base)
{
    CUdriverProcAddressQueryResult status;
    CUresult r = getproc(base, slot, 12000, flags, &status);
    if (r != CUDA_SUCCESS || !*slot) {
        fprintf(stderr, "cuGetProcAddress(%s) failed: %d\n", base, (int)r);
        return 0;
    }
    return 1;
}

#define LOAD(field, base) if (!load((void **)&d.field, base)) return 2

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s KERNELS.PTX [pt]\n", argv[0]), 2;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()), 77;
    *(void **)&getproc = dlsym(lib, "cuGetProcAddress_v2");
    if (!getproc)
        return fprintf(stderr, "no cuGetProcAddress_v2\n"), 2;
    if (argc > 2)
        flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    drv_t d;
    LOAD(init, "cuInit");
    LOAD(device_get, "cuDeviceGet");
    LOAD(primary_retain, "cuDevicePrimaryCtxRetain");
    LOAD(ctx_set_current, "cuCtxSetCurrent");
    LOAD(ctx_sync, "cuCtxSynchronize");
    LOAD(module_load_data, "cuModuleLoadData");
    LOAD(module_get_function, "cuModuleGetFunction");
    LOAD(module_unload, "cuModuleUnload");
    LOAD(mem_alloc, "cuMemAlloc");
    LOAD(mem_free, "cuMemFree");
    LOAD(memcpy_htod, "cuMemcpyHtoD");
    LOAD(memcpy_dtoh, "cuMemcpyDtoH");
    LOAD(memcpy_unified, "cuMemcpy");
    LOAD(launch, "cuLaunchKernel");
    LOAD(stream_create, "cuStreamCreate");
    LOAD(stream_sync, "cuStreamSynchronize");
    LOAD(stream_destroy, "cuStreamDestroy");
    return run_workload(&d, argv[1]);
}
