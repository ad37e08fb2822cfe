/* door_dlsym.c - a program that finds the driver the way cudarc and ctypes do:
 * dlopen("libcuda.so.1") and dlsym of exact ELF names.
 * usage: door_dlsym KERNELS.PTX [pt]   ("pt": the per-thread-stream launch) */
#include <dlfcn.h>

#include "workload.h"

#define LOAD(field, name)                                                                   \
    if (!(*(void **)&d.field = dlsym(lib, name))) {                                         \
        fprintf(stderr, "dlsym(%s) failed\n", name);                                        \
        return 2;                                                                           \
    }

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s KERNELS.PTX [pt]\n", argv[0]), 2;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()), 77;
    drv_t d;
    LOAD(init, "cuInit");
    LOAD(device_get, "cuDeviceGet");
    LOAD(primary_retain, "cuDevicePrimaryCtxRetain");
    LOAD(ctx_set_current, "cuCtxSetCurrent");
    LOAD(ctx_sync, "cuCtxSynchronize");
    LOAD(module_load_data, "cuModuleLoadData");
    LOAD(module_get_function, "cuModuleGetFunction");
    LOAD(module_unload, "cuModuleUnload");
    LOAD(mem_alloc, "cuMemAlloc_v2");
    LOAD(mem_free, "cuMemFree_v2");
    LOAD(memcpy_htod, "cuMemcpyHtoD_v2");
    LOAD(memcpy_dtoh, "cuMemcpyDtoH_v2");
    LOAD(memcpy_unified, "cuMemcpy");
    LOAD(launch, argc > 2 ? "cuLaunchKernel_ptsz" : "cuLaunchKernel");
    LOAD(stream_create, "cuStreamCreate");
    LOAD(stream_sync, "cuStreamSynchronize");
    LOAD(stream_destroy, "cuStreamDestroy_v2");
    return run_workload(&d, argv[1]);
}
