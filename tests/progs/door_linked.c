/* door_linked.c - a program linked with -lcuda and built for the per-thread
 * default stream, so it calls cuLaunchKernel_ptsz, cuMemcpyDtoH_v2_ptds and
 * friends directly by their exported names (the third door).
 * usage: door_linked KERNELS.PTX */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "workload.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s KERNELS.PTX\n", argv[0]), 2;
    drv_t d = {
        cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuCtxSynchronize,
        cuModuleLoadData, cuModuleGetFunction, cuModuleUnload, cuMemAlloc, cuMemFree,
        cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpy, cuLaunchKernel, cuStreamCreate, cuStreamSynchronize,
        cuStreamDestroy,
    };
    return run_workload(&d, argv[1]);
}
