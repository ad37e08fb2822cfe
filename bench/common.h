/*
 * common.h - small helpers shared by the libgpuaccel benchmark programs.
 *
 * CK(call)        check a CUDA runtime call, exit 1 with a message on error
 * require_gpu()   exit 77 with "SKIP: no CUDA device" when there is no GPU
 * timer_sync()    wait for the device before a timer starts or stops (see below)
 * now_us()        host monotonic clock in microseconds (clock.h)
 * digest_bytes()  64-bit FNV-style hash; print_digest() prints "digest: <16 hex>"
 *                 (digest.h)
 * mix32()         integer hash used (host and device) to make seeded test data
 * Argument helpers: ARG_IS, arg_value, arg_ll, arg_either, and parse_args (a
 * whole command line from a table of options).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "digest.h"

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t ck_err_ = (call);                                         \
        if (ck_err_ != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, \
                    #call, cudaGetErrorString(ck_err_), (int)ck_err_);        \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Exit 77 (the "skipped" status) when no usable GPU/driver is present.
 * Any other failure is a real error (e.g. a broken LD_PRELOAD library). */
static inline void require_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
        e == cudaErrorStubLibrary || (e == cudaSuccess && n == 0)) {
        fprintf(stderr, "SKIP: no CUDA device\n");
        exit(77);
    }
    CK(e);
    CK(cudaFree(0)); /* create the primary context outside any timing */
}

/* Wait for everything issued, before a timer starts and before it stops: a
 * timed region opens and closes with the same wait. cudaDeviceSynchronize
 * alone may return early under GPUACCEL_LAZY_SYNC (the wait then comes at the
 * next call that observes the device), or be answered without the driver
 * under GPUACCEL_COALESCE when nothing is in flight; a stream query reaches
 * the driver, so the timer sees the whole wait, as it does natively (where the
 * query costs one call on an idle device). At the start too: the first call
 * that reaches the driver after page-locking pays the driver's own deferred
 * work (H200, driver 580: 20-30 us after a 64 MiB cudaMallocHost), and a
 * warm-up ending in an answered sync moved that into the timed loop. */
static inline cudaError_t timer_sync(void)
{
    cudaError_t e = cudaDeviceSynchronize();
    return e != cudaSuccess ? e : cudaStreamQuery(0);
}

__host__ __device__ static inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* The copy path's first-use costs, paid before a timer starts: reads of
 * `bytes` each into `to`, from distinct slices of a scratch buffer (no two
 * alike: a cache of repeated reads leaves first reads to the driver), until
 * WARM_READ_BYTES have been read. A single read is not enough: the library's
 * staging sets up its page-locked ring and copy threads once pageable traffic
 * passes 4 MiB (about a millisecond, once a process), which a short benchmark
 * would otherwise time in its first round. Returns the first error. */
#define WARM_READ_BYTES ((size_t)8 << 20)
static inline cudaError_t warm_reads(void *to, size_t bytes)
{
    size_t pieces = (WARM_READ_BYTES + bytes - 1) / bytes;
    unsigned char *scratch;
    if (pieces < 2)
        pieces = 2;
    cudaError_t e = cudaMalloc((void **)&scratch, pieces * bytes);
    if (e != cudaSuccess)
        return e;
    e = cudaMemset(scratch, 0x5a, pieces * bytes);
    for (size_t i = 0; i < pieces && e == cudaSuccess; i++)
        e = cudaMemcpy(to, scratch + i * bytes, bytes, cudaMemcpyDeviceToHost);
    cudaError_t f = cudaFree(scratch);
    return e != cudaSuccess ? e : f;
}

/* ---- command-line helpers ---- */
static const char *g_usage = "";

static inline void usage_exit(const char *prog)
{
    fprintf(stderr, "usage: %s %s\n", prog, g_usage);
    exit(2);
}

#define ARG_IS(s) (strcmp(argv[i], (s)) == 0)

/* Value following option argv[*i]; advances *i. */
static inline const char *arg_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        usage_exit(argv[0]);
    return argv[++*i];
}

static inline long long arg_ll(int argc, char **argv, int *i, long long min)
{
    const char *s = arg_value(argc, argv, i);
    char *end;
    long long v = strtoll(s, &end, 0);
    if (end == s || *end != '\0' || v < min) {
        fprintf(stderr, "%s: bad value '%s' for %s\n", argv[0], s, argv[*i - 1]);
        usage_exit(argv[0]);
    }
    return v;
}

/* An option with two values: 0 for `no`, 1 for `yes`, else a usage error. */
static inline int arg_either(int argc, char **argv, int *i, const char *no, const char *yes)
{
    const char *s = arg_value(argc, argv, i);
    if (strcmp(s, yes) == 0)
        return 1;
    if (strcmp(s, no) != 0)
        usage_exit(argv[0]);
    return 0;
}

/* A numeric option, --name VALUE (at least min), for parse_args. */
typedef struct bench_opt {
    const char *name;
    long long *value;
    long long min;
} bench_opt_t;

/* The whole command line from one table: the numeric options and, when
 * reference is not NULL, --mode native|reference; anything else is a usage
 * error (exit 2, with g_usage). */
static inline void parse_args(int argc, char **argv, const bench_opt_t *opts, int n,
                              int *reference)
{
    for (int i = 1; i < argc; i++) {
        int k = 0;
        while (k < n && !ARG_IS(opts[k].name))
            k++;
        if (k < n)
            *opts[k].value = arg_ll(argc, argv, &i, opts[k].min);
        else if (reference && ARG_IS("--mode"))
            *reference = arg_either(argc, argv, &i, "native", "reference");
        else
            usage_exit(argv[0]);
    }
}

#endif /* BENCH_COMMON_H */
