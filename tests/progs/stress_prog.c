/* stress_prog.c - many host threads at once through every feature's paths,
 * each result checked against a host model: allocations of random sizes (some
 * kept alive across rounds, so the pool reuses blocks), fill and add kernels
 * in short repeated sequences (graphs learn them), 4-byte reads synchronous
 * and asynchronous on the thread's stream or the default one (coalescing
 * serves them), host-to-device updates between reads (which must be seen),
 * then a full read-back. Runs against tests/fake (the CPU-side twin of
 * tests/gpu/stress.cu, which does the same on a GPU); the output does not
 * depend on timing, so a run under the library can be compared with a native
 * one. Each thread's inputs come from the seed, printed so a failure can be
 * replayed.
 * usage: stress_prog KERNELS.PTX [SECONDS [THREADS [SEED]]]
 *        -> "stress ok=0|1 threads=N" (a mismatch: details on stderr) */
#include "linked.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

enum { MAXN = 1 << 16, KEEP = 4, MAXT = 64 };

static CUcontext ctx;
static CUfunction fill_fn, add_fn;
static double deadline;
static uint64_t seed;
static _Atomic unsigned failures;

typedef struct block {
    CUdeviceptr d;
    uint32_t n;
    uint32_t *model;
} block_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fail(int t, const char *what, uint32_t k, uint32_t got, uint32_t want)
{
    if (atomic_fetch_add(&failures, 1) < 5)
        fprintf(stderr, "thread %d: %s word %u: got %u, want %u\n", t, what, k, got, want);
}

static void launch(CUfunction f, CUstream s, block_t *b, uint32_t v)
{
    uint32_t n = b->n;
    void *args[] = {&b->d, &n, &v};
    CK(cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
    for (uint32_t i = 0; i < n; i++)
        b->model[i] = f == fill_fn ? v : b->model[i] + v;
}

/* Before work on the default stream: a non-blocking stream's kernels are
 * not ordered before it, so the thread waits for them (a blocking stream's
 * are, by the legacy stream's rule). */
static void order_default(CUstream s)
{
    unsigned flags = 0;
    CK(cuStreamGetFlags(s, &flags));
    if (flags & CU_STREAM_NON_BLOCKING)
        CK(cuStreamSynchronize(s));
}

/* A few 4-byte reads, each checked; the way of reading changes with r. */
static void small_reads(int t, CUstream s, const block_t *b, uint64_t *rng)
{
    for (int i = 0, reads = 1 + (int)(next(rng) % 24); i < reads; i++) {
        uint32_t k = (uint32_t)(next(rng) % b->n), v = 0;
        CUdeviceptr at = b->d + 4 * (CUdeviceptr)k;
        switch (next(rng) % 3) {
        case 0:
            order_default(s);
            CK(cuMemcpyDtoH(&v, at, 4));
            break;
        case 1:
            CK(cuMemcpyDtoHAsync(&v, at, 4, s));
            CK(cuStreamSynchronize(s));
            break;
        default:
            order_default(s);
            CK(cuMemcpyDtoHAsync(&v, at, 4, NULL));
            CK(cuStreamSynchronize(NULL));
        }
        if (v != b->model[k])
            fail(t, "read", k, v, b->model[k]);
    }
}

static void full_check(int t, const block_t *b, uint32_t *buf)
{
    CK(cuMemcpyDtoH(buf, b->d, 4 * (size_t)b->n));
    for (uint32_t k = 0; k < b->n; k++)
        if (buf[k] != b->model[k]) {
            fail(t, "read-back", k, buf[k], b->model[k]);
            return;
        }
}

static void one_round(int t, CUstream s, block_t *b, uint64_t *rng, uint32_t *buf)
{
    launch(fill_fn, s, b, (uint32_t)next(rng));
    int len = 1 + (int)(next(rng) % 6), reps = 1 + (int)(next(rng) % 5);
    uint32_t v = (uint32_t)next(rng) % 100;
    for (int r = 0; r < reps; r++) { /* the same sequence, repeated: graphs' case */
        for (int i = 0; i < len; i++)
            launch(add_fn, s, b, v + (uint32_t)i);
        small_reads(t, s, b, rng);
    }
    if (next(rng) % 2) { /* the host writes a stretch; reads after it must see it */
        uint32_t at = (uint32_t)(next(rng) % b->n), cnt = 1 + (uint32_t)(next(rng) % (b->n - at));
        for (uint32_t i = 0; i < cnt; i++)
            b->model[at + i] = buf[i] = (uint32_t)next(rng);
        order_default(s);
        CK(cuMemcpyHtoD(b->d + 4 * (CUdeviceptr)at, buf, 4 * (size_t)cnt));
        small_reads(t, s, b, rng);
    }
    order_default(s);
    full_check(t, b, buf);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t rng = seed ^ (0x100000001b3ull * (uint64_t)(t + 1));
    static _Thread_local uint32_t buf[MAXN];
    block_t kept[KEEP] = {{0}};
    CUstream s;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, t % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    while (now_s() < deadline) {
        block_t *b = &kept[next(&rng) % KEEP];
        if (b->d && next(&rng) % 3 == 0) { /* freed and replaced by another size */
            CK(cuMemFree(b->d));
            free(b->model);
            b->d = 0;
        }
        if (!b->d) {
            b->n = 1 + (uint32_t)(next(&rng) % MAXN);
            b->model = calloc(b->n, 4);
            if (!b->model) {
                fprintf(stderr, "out of host memory\n");
                exit(1);
            }
            CK(cuMemAlloc(&b->d, 4 * (size_t)b->n));
        }
        one_round(t, s, b, &rng, buf);
    }
    for (int i = 0; i < KEEP; i++)
        if (kept[i].d) {
            CK(cuMemFree(kept[i].d));
            free(kept[i].model);
        }
    CK(cuStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    double secs = argc > 2 ? atof(argv[2]) : 3;
    int threads = argc > 3 ? atoi(argv[3]) : 16;
    seed = argc > 4 ? strtoull(argv[4], NULL, 0) : (uint64_t)time(NULL);
    if (threads < 1 || threads > MAXT) {
        fprintf(stderr, "threads: 1 to %d\n", MAXT);
        return 2;
    }
    CK(cuModuleGetFunction(&fill_fn, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    deadline = now_s() + secs;
    pthread_t tid[MAXT];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t)) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    printf("stress ok=%d threads=%d\n", failures == 0, threads);
    return failures == 0 ? 0 : 1;
}
