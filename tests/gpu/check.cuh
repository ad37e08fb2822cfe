// check.cuh - what every GPU test program shares: CK() checks a runtime call,
// CU() a driver call, each exiting 1 with where and why; skip_without_gpu()
// exits 77 (Automake's SKIP) when the machine has no usable device, saying
// why; verdict() and verdicts() state the program's own checks (one "NAME ...
// ok=0|1" line each, and a non-zero exit when any failed: ../progs/verdict.h).
#ifndef GA_GPU_CHECK_CUH
#define GA_GPU_CHECK_CUH

#include <cstdio>
#include <cstdlib>

#include "../progs/verdict.h"

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                    cudaGetErrorString(e_));                                              \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CU(call)                                                                          \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #call, (int)r_);       \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static inline void skip_without_gpu()
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        // The runtime's own words: no device, no driver, or a driver too old.
        fprintf(stderr, "SKIP: no CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
                cudaGetErrorString(e), count);
        exit(77);
    }
}

#endif
