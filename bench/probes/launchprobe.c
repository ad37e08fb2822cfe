/* launchprobe.c - what a gather's launch and wait cost, by the size of the
 * kernel's parameter and by the way the host learns the kernel ran. One
 * kernel per parameter size (16 bytes to 4 KiB; the gather's is 1,560) stores
 * a value from its parameter into page-locked memory mapped into the device:
 *   launch   the host time of cuLaunchKernel alone
 *   sync     launch, then cuStreamSynchronize of the legacy stream
 *   poll     launch, then spin until the stored value shows in host memory
 *   poll+q   the same, then one cuStreamQuery (the stream known idle)
 * Prints the mean microseconds of each, alternating, after a warm-up.
 * usage: launchprobe [ITERATIONS]
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include launchprobe.c -lcuda */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"

enum { NSIZES = 5, MODES = 4 };
static const unsigned sizes[NSIZES] = {16, 256, 768, 1560, 4096};

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    CUdevice d;
    CUcontext c;
    linked_context(&d, &c);
    static char ptx[16384];
    int n = snprintf(ptx, sizeof ptx, ".version 8.0\n.target sm_80\n.address_size 64\n");
    for (int s = 0; s < NSIZES; s++)
        n += snprintf(ptx + n, sizeof ptx - (size_t)n,
                      ".visible .entry k%u(.param .align 8 .b8 a[%u])\n{\n"
                      " .reg .b64 %%rd<3>;\n .reg .b32 %%r<2>;\n"
                      " ld.param.u64 %%rd1, [a];\n ld.param.u32 %%r1, [a+8];\n"
                      " cvta.to.global.u64 %%rd2, %%rd1;\n st.volatile.global.u32 [%%rd2], %%r1;\n"
                      " membar.sys;\n ret;\n}\n",
                      sizes[s], sizes[s]);
    CUmodule m;
    CK(cuModuleLoadData(&m, ptx));
    CUfunction f[NSIZES];
    for (int s = 0; s < NSIZES; s++) {
        char name[16];
        snprintf(name, sizeof name, "k%u", sizes[s]);
        CK(cuModuleGetFunction(&f[s], m, name));
    }
    volatile uint32_t *flag;
    CUdeviceptr flag_dev;
    CK(cuMemHostAlloc((void **)&flag, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuMemHostGetDevicePointer(&flag_dev, (void *)flag, 0));
    static unsigned char param[4096];
    double total[NSIZES][MODES] = {{0}};
    uint32_t stamp = 0;
    for (int it = -100; it < iters; it++)
        for (int s = 0; s < NSIZES; s++)
            for (int mode = 0; mode < MODES; mode++) {
                stamp++;
                memcpy(param, &flag_dev, 8);
                memcpy(param + 8, &stamp, 4);
                void *params[] = {param};
                double t0 = now_us();
                CK(cuLaunchKernel(f[s], 1, 1, 1, 32, 1, 1, 0, CU_STREAM_LEGACY, params, NULL));
                double t1 = now_us();
                if (mode == 1)
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                if (mode >= 2)
                    while (*flag != stamp)
                        ;
                if (mode == 3) {
                    CUresult q = cuStreamQuery(CU_STREAM_LEGACY);
                    if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
                        CK(q);
                }
                double t2 = now_us();
                if (mode != 1 && mode != 3) /* the rest waits untimed */
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                if (it >= 0)
                    total[s][mode] += mode == 0 ? t1 - t0 : t2 - t0;
            }
    static const char *const names[MODES] = {"launch", "sync", "poll", "poll+q"};
    for (int s = 0; s < NSIZES; s++)
        for (int mode = 0; mode < MODES; mode++)
            printf("launchprobe param %4u bytes %-7s %7.2f us\n", sizes[s], names[mode],
                   total[s][mode] / iters);
    return 0;
}
