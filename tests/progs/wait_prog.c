/* wait_prog.c - a CUDA program that does some work, says so, then waits:
 * what `gpuaccel profile` must pass a signal on to (and wait for), and what a
 * crash after CUDA work looks like.
 *   wait_prog SECONDS        allocate, copy, free; print "ready pid=PID";
 *                            sleep SECONDS (a signal ends it)
 *   wait_prog crash          the same work, then a SIGSEGV */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    char host[64] = "payload";
    if (argc < 2 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuMemAlloc(&d, sizeof host) != CUDA_SUCCESS ||
        cuMemcpyHtoD(d, host, sizeof host) != CUDA_SUCCESS || cuMemFree(d) != CUDA_SUCCESS) {
        fprintf(stderr, "usage: wait_prog SECONDS|crash (and a CUDA driver)\n");
        return 2;
    }
    printf("ready pid=%d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(argv[1], "crash"))
        raise(SIGSEGV);
    for (int left = atoi(argv[1]); left > 0;)
        left = (int)sleep((unsigned)left);
    return 0;
}
