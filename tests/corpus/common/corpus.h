// corpus.h - what every corpus driver shares: a fixed-seed generator, the
// digest of the outputs (64-bit FNV-1a over 8-byte words), the size argument,
// checks of runtime and driver return codes (exit 2 with the call and the
// error), the proving phase's clock (`phase_ms: <float>`) and the closing lines:
// `digest: <hex>` and `check: ok`, or `check: FAILED <why>` and exit 1.
#ifndef GA_CORPUS_H
#define GA_CORPUS_H

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "error: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(e_));                                              \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

#define CU(call)                                                                          \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            const char *s_ = nullptr;                                                     \
            cuGetErrorString(r_, &s_);                                                    \
            fprintf(stderr, "error: %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,     \
                    s_ ? s_ : "unknown", (int)r_);                                        \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

// splitmix64: the same stream on every run from the same seed.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }
};

// 64-bit FNV-1a taken over 8-byte words (a tail shorter than 8 is zero-padded).
struct Digest {
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t bytes = 0;
    void add(const void *p, size_t n)
    {
        const unsigned char *b = (const unsigned char *)p;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, b + i, 8);
            h = (h ^ w) * 0x100000001b3ULL;
        }
        if (i < n) {
            uint64_t w = 0;
            memcpy(&w, b + i, n - i);
            h = (h ^ w) * 0x100000001b3ULL;
        }
        bytes += n;
    }
    void add_u64(uint64_t v) { add(&v, sizeof v); }
};

// The log2 size argument: argv[i] when given, else the default; 16..22 unless wider
// limits are passed.
static inline int arg_log(int argc, char **argv, int i, int dflt, int lo, int hi)
{
    if (argc <= i)
        return dflt;
    char *end = nullptr;
    long v = strtol(argv[i], &end, 10);
    if (!end || *end || v < lo || v > hi) {
        fprintf(stderr, "usage: %s [LOG2_SIZE %d..%d] ...\n", argv[0], lo, hi);
        exit(64);
    }
    return (int)v;
}

// Failed checks are collected and reported together at the end.
struct Checks {
    int failed = 0;
    int passed = 0;
    char first[256] = {0};
    void expect(bool ok, const char *fmt, ...)
    {
        if (ok) {
            passed++;
            return;
        }
        if (!failed++) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(first, sizeof first, fmt, ap);
            va_end(ap);
        }
    }
};

// The proving phase by the program's own clock: the sum of the spans between
// begin() and end(), each begun and ended with the device idle (the sync given:
// cudaDeviceSynchronize unless the driver works through the driver API). Set-up,
// the CPU reference and the checks stay outside. Printed as `phase_ms: <float>`
// (tests/corpus/corpus.sh times a run by it). Each span is also marked in the
// output, outside the timed interval: `phase: begin` before its clock starts and
// `phase: end` after it stops, flushed at once, so that `gpuaccel profile --phase
// '^phase: begin' '^phase: end'` counts what the clock times (every span).
static inline void phase_sync_runtime() { CK(cudaDeviceSynchronize()); }
static inline void phase_sync_driver() { CU(cuCtxSynchronize()); }
struct Phase {
    double ms = 0;
    std::chrono::steady_clock::time_point t0;
    void (*sync)() = phase_sync_runtime;
    void begin()
    {
        sync();
        printf("phase: begin\n");
        fflush(stdout);
        t0 = std::chrono::steady_clock::now();
    }
    void end()
    {
        sync();
        ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        printf("phase: end\n");
        fflush(stdout);
    }
    void print() const
    {
        printf("phase_ms: %.3f\n", ms);
        fflush(stdout);
    }
};

static inline int finish(const Digest &d, const Checks &c)
{
    printf("digest: %016llx\n", (unsigned long long)d.h);
    if (c.failed) {
        printf("check: FAILED %d of %d: %s\n", c.failed, c.failed + c.passed, c.first);
        fflush(stdout);
        return 1;
    }
    printf("check: ok\n");
    fflush(stdout);
    return 0;
}

#endif
