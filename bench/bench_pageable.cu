/*
 * bench_pageable.cu - copies between pageable host memory and the device
 * (feature: GPUACCEL_STAGING), from 64 KiB to hundreds of MiB.
 *
 * A device buffer and a host buffer of SIZE bytes; the host buffer comes from
 * malloc and is touched once before the timing, as a program's buffers are.
 * ITERS copies of the whole buffer in one direction, each timed on its own:
 *   --dir htod        host -> device
 *   --dir dtoh        device -> host
 *   --async           cudaMemcpyAsync on a created stream and that stream's
 *                     cudaStreamSynchronize (a program that copies, then waits
 *                     for its stream), instead of a synchronous cudaMemcpy
 *   --mode reference  the same copies from/to cudaMallocHost memory (what a program
 *                     gets by pinning its buffers itself)
 * The data is seeded and differs per element. Before each copy (untimed) the
 * source changes: one word in every 4 KiB page takes a value of this
 * iteration (htod: written by the host; dtoh: by a kernel), so no copy moves
 * what the copy before it moved, and nothing a library kept of an earlier copy
 * is valid. The timer covers the copy and a wait for the device (timer_sync:
 * a synchronous copy from pageable memory may return before its DMA ends).
 * After each copy (untimed) the destination is checked: dtoh: a digest of the
 * host buffer; htod: a kernel's checksum of the device buffer. The digest
 * printed is over those per-copy checks, so it covers every copy.
 * Untimed warm-up copies first, of data that then changes: two, and as many
 * more as make 8 MiB (first-use costs: the driver's, or the library's
 * staging buffers, which it makes once a process has copied 4 MiB of
 * pageable memory and grows with an eighth of what it copied).
 * Prints "result pageable <us per copy> dir=... size=... GBps=... mode=...";
 * with --each, also "copy K US" on stderr for every copy, the warm-up's
 * included (K < 0): where a mean's time went (first-use costs, outliers).
 *
 * usage: bench_pageable --dir htod|dtoh --size BYTES [--iters N] [--async]
 *                       [--mode native|reference] [--seed S] [--each]
 */
#include "common.h"

#define PAGE_WORDS 1024 /* 4 KiB */

__global__ void fill(uint32_t *d, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = mix32(seed * 0x9e3779b9u + (uint32_t)i);
}

/* The word the change of iteration k writes in page p, and its value. */
__host__ __device__ static inline size_t mark_at(size_t p, long long k, size_t words)
{
    size_t i = p * PAGE_WORDS + (size_t)(mix32((uint32_t)p ^ (uint32_t)k) % PAGE_WORDS);
    return i < words ? i : words - 1;
}
__host__ __device__ static inline uint32_t mark_value(uint32_t seed, size_t p, long long k)
{
    return mix32(seed ^ mix32((uint32_t)k * 0x85ebca6bu + (uint32_t)p));
}

__global__ void mark(uint32_t *d, size_t words, size_t pages, uint32_t seed, long long k)
{
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < pages;
         p += (size_t)gridDim.x * blockDim.x)
        d[mark_at(p, k, words)] = mark_value(seed, p, k);
}

/* sum over i of mix32(d[i] + mix32(i)), into *out: the device buffer's checksum. */
__global__ void checksum(const uint32_t *d, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += mix32(d[i] + mix32((uint32_t)i)) | (unsigned long long)(i & 0xffff) << 32;
    atomicAdd(out, s);
}

int main(int argc, char **argv)
{
    long long size = 64ll << 20, iters = 20, seed = 1;
    int dtoh = -1, reference = 0, async = 0, each = 0;
    g_usage = "--dir htod|dtoh --size BYTES [--iters N] [--async] [--mode native|reference] "
              "[--seed S] [--each]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--dir"))
            dtoh = arg_either(argc, argv, &i, "htod", "dtoh");
        else if (ARG_IS("--size"))
            size = arg_ll(argc, argv, &i, 4);
        else if (ARG_IS("--iters"))
            iters = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--async"))
            async = 1;
        else if (ARG_IS("--each"))
            each = 1;
        else if (ARG_IS("--mode"))
            reference = arg_either(argc, argv, &i, "native", "reference");
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else
            usage_exit(argv[0]);
    }
    if (dtoh < 0 || size % 4)
        usage_exit(argv[0]);
    require_gpu();

    size_t n = (size_t)size, words = n / 4, pages = (words + PAGE_WORDS - 1) / PAGE_WORDS;
    uint32_t *host, *dev;
    unsigned long long *dsum, hsum;
    uint64_t *checks = (uint64_t *)calloc((size_t)iters, sizeof(uint64_t));
    if (reference) {
        CK(cudaMallocHost((void **)&host, n));
    } else {
        host = (uint32_t *)malloc(n);
        if (!host) {
            fprintf(stderr, "out of host memory\n");
            return 1;
        }
    }
    if (!checks) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    memset(host, 0, n); /* touched once: every page mapped before the timing */
    CK(cudaMalloc((void **)&dev, n));
    CK(cudaMalloc((void **)&dsum, sizeof *dsum));
    cudaStream_t st = 0;
    if (async)
        CK(cudaStreamCreate(&st));
    if (dtoh) {
        fill<<<1024, 256>>>(dev, words, (uint32_t)seed);
        CK(cudaGetLastError());
    } else {
        for (size_t i = 0; i < words; i++)
            host[i] = mix32((uint32_t)seed * 0x9e3779b9u + (uint32_t)i);
    }
    CK(cudaDeviceSynchronize());

    double total = 0;
    long long warm = 2 + (long long)((8ll << 20) / size);
    for (long long k = -warm; k < iters; k++) { /* k < 0: the warm-up copies */
        if (dtoh) {
            mark<<<256, 256>>>(dev, words, pages, (uint32_t)seed, k);
            CK(cudaGetLastError());
        } else {
            for (size_t p = 0; p < pages; p++)
                host[mark_at(p, k, words)] = mark_value((uint32_t)seed, p, k);
        }
        CK(timer_sync());
        double t0 = now_us();
        if (async) {
            CK(dtoh ? cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, st)
                    : cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, st));
            CK(cudaStreamSynchronize(st));
        } else {
            CK(dtoh ? cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost)
                    : cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
        }
        CK(timer_sync());
        double t1 = now_us();
        if (each)
            fprintf(stderr, "copy %lld %.3f\n", k, t1 - t0);
        if (k < 0)
            continue;
        total += t1 - t0;
        if (dtoh) {
            checks[k] = digest_bytes(host, n);
        } else {
            CK(cudaMemset(dsum, 0, sizeof *dsum));
            checksum<<<1024, 256>>>(dev, words, dsum);
            CK(cudaGetLastError());
            CK(cudaMemcpy(&hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost));
            checks[k] = hsum;
        }
    }

    double us = total / (double)iters;
    printf("result pageable %.3f dir=%s size=%lld GBps=%.2f copy=%s mode=%s\n", us,
           dtoh ? "dtoh" : "htod", size, (double)n / (us * 1e3), async ? "async" : "sync",
           reference ? "reference" : "native");
    print_digest(checks, (size_t)iters * sizeof(uint64_t));
    CK(cudaFree(dev));
    CK(cudaFree(dsum));
    if (st)
        CK(cudaStreamDestroy(st));
    if (reference)
        CK(cudaFreeHost(host));
    else
        free(host);
    free(checks);
    return 0;
}
