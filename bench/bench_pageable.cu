/*
 * bench_pageable.cu - large copies between pageable host memory and the device
 * (feature: GPUACCEL_STAGING).
 *
 * A device buffer and a host buffer of SIZE bytes; the host buffer comes from
 * malloc and is touched once before the timing, as a program's buffers are.
 * ITERS synchronous cudaMemcpy of the whole buffer in one direction:
 *   --dir htod        host -> device; the host buffer holds seeded data
 *   --dir dtoh        device -> host; a kernel fills the device buffer from the seed
 *   --mode reference  the same copies from/to cudaMallocHost memory (what a program
 *                     gets by pinning its buffers itself)
 * Prints "result pageable <us per copy> dir=... size=... GBps=... mode=..." and a
 * digest over the data moved (htod: the device buffer read back through pinned
 * memory after the timing; dtoh: the host buffer).
 *
 * usage: bench_pageable --dir htod|dtoh --size BYTES [--iters N] [--mode native|reference]
 *                       [--seed S]
 */
#include "common.h"

__global__ void fill(uint32_t *d, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = mix32(seed * 0x9e3779b9u + (uint32_t)i);
}

int main(int argc, char **argv)
{
    long long size = 64ll << 20, iters = 20, seed = 1;
    int dtoh = -1, reference = 0;
    g_usage = "--dir htod|dtoh --size BYTES [--iters N] [--mode native|reference] [--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--dir"))
            dtoh = arg_either(argc, argv, &i, "htod", "dtoh");
        else if (ARG_IS("--size"))
            size = arg_ll(argc, argv, &i, 4);
        else if (ARG_IS("--iters"))
            iters = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--mode"))
            reference = arg_either(argc, argv, &i, "native", "reference");
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else
            usage_exit(argv[0]);
    }
    if (dtoh < 0)
        usage_exit(argv[0]);
    require_gpu();

    size_t n = (size_t)size, words = n / 4;
    uint32_t *host, *dev, *check;
    if (reference) {
        CK(cudaMallocHost((void **)&host, n));
    } else {
        host = (uint32_t *)malloc(n);
        if (!host) {
            fprintf(stderr, "out of host memory\n");
            return 1;
        }
    }
    memset(host, 0, n); /* touched once: every page mapped before the timing */
    CK(cudaMalloc((void **)&dev, n));
    if (dtoh) {
        fill<<<1024, 256>>>(dev, words, (uint32_t)seed);
        CK(cudaGetLastError());
    } else {
        for (size_t i = 0; i < words; i++)
            host[i] = mix32((uint32_t)seed * 0x9e3779b9u + (uint32_t)i);
    }
    CK(cudaDeviceSynchronize());

    for (int w = 0; w < 2; w++) /* warm-up: first-use costs (the library's staging ring) */
        CK(dtoh ? cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost)
                : cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    double t0 = now_us();
    for (long long k = 0; k < iters; k++)
        CK(dtoh ? cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost)
                : cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    CK(timer_sync());
    double t1 = now_us();

    double us = (t1 - t0) / (double)iters;
    printf("result pageable %.3f dir=%s size=%lld GBps=%.2f mode=%s\n", us, dtoh ? "dtoh" : "htod",
           size, (double)n / (us * 1e3), reference ? "reference" : "native");
    if (dtoh) {
        print_digest(host, n);
    } else {
        CK(cudaMallocHost((void **)&check, n));
        CK(cudaMemcpy(check, dev, n, cudaMemcpyDeviceToHost));
        print_digest(check, n);
        CK(cudaFreeHost(check));
    }
    CK(cudaFree(dev));
    if (reference)
        CK(cudaFreeHost(host));
    else
        free(host);
    return 0;
}
