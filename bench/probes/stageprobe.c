/* stageprobe.c - what a mid-size pageable copy could cost, by the way it is
 * served: where the time of a 64 KiB - 4 MiB copy between pageable host memory
 * and the device goes, to decide how staging should serve those sizes. For
 * each size and direction, each way below runs ITERATIONS times after 20
 * warm-up runs, the ways alternating; it prints the median microseconds a copy
 * and how many copies left wrong bytes (must be 0):
 *   driver   cuMemcpyHtoD / cuMemcpyDtoH on the pageable buffer (the program)
 *   dma      the same copy from / to page-locked memory (the link's floor)
 *   api      a 4-byte asynchronous copy from page-locked memory, an event
 *            recorded and waited for: a staged chunk's fixed driver cost
 *   checks   staging's admission checks alone (cuMemGetAddressRange,
 *            cuPointerGetAttributes, msync of the host range), no copy
 *   memcpy   the host side alone, one thread (pageable <-> page-locked)
 *   one      memcpy and one DMA in turn, one thread (one chunk)
 *   pipe-1   chunks of 64 KiB, one thread: each chunk's memcpy overlaps the
 *            DMA of the one before (upload) or after (download)
 *   par-T    the memcpy split over T spinning threads, then one DMA (or the
 *            DMA, then the split memcpy)
 *   pipe-T   chunks of a quarter of the copy (64 KiB at least), each chunk's
 *            memcpy split over T threads, the DMAs overlapping
 *   early-T  uploads only: the stream found idle (cuStreamQuery), the memcpy
 *            split over T threads, one DMA and its event recorded, and back
 *            without waiting for the DMA: what a synchronous pageable upload
 *            may cost by its documented contract ("the DMA to final
 *            destination may not have completed"); the event is waited for
 *            after the timing, before the buffer is used again
 *   host-T   the host side alone split over T threads (a cached copy's serve)
 * and with non-temporal stores (spincopy.h stream_copy: the bytes written
 * around the caches, so an upload's DMA finds no dirty line to snoop):
 *   ntcopy   the host side alone, one thread
 *   nthost-T the host side alone split over T threads
 *   nt-1     as one;  ntpar-T as par-T;  ntpipe-T as pipe-T;  ntearly-T as early-T
 * usage: stageprobe [THREADS] [ITERATIONS]   (THREADS 2-16, default 4)
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include -o stp
 *   bench/probes/stageprobe.c -lcuda -lpthread */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"
#include "spincopy.h"

enum { MAXT = 16, CHUNK = 64 << 10, WARM = 20 };
enum { DRIVER, DMA, API, CHECKS, MEMCPY, ONE, PIPE1, PAR, PIPE, EARLY,
       HOST, NTCOPY, NTHOST, NT1, NTPAR, NTPIPE, NTEARLY, NW };
static const char *const way[NW] = {
    "driver", "dma",    "api",      "checks", "memcpy",  "one",     "pipe-1",   "par-T",    "pipe-T",
    "early-T", "host-T", "ntcopy", "nthost-T", "nt-1",   "ntpar-T", "ntpipe-T", "ntearly-T"};

/* Uploads only: the early returns (a download cannot return before its bytes). */
static int up_only(int w)
{
    return w == EARLY || w == NTEARLY;
}

/* Ways that move no whole copy to where wrong() checks it. */
static int unchecked(int w, int up)
{
    return w == API || w == CHECKS ||
           (up && (w == MEMCPY || w == HOST || w == NTCOPY || w == NTHOST));
}

typedef struct {
    CUdeviceptr dev;
    char *user, *pin; /* pageable, page-locked (a slot per chunk) */
    size_t n;
    unsigned nt;
    CUstream s;
    CUevent ev[64];
} probe_t;

static size_t quarter(size_t n)
{
    size_t q = n / 4;
    return q < CHUNK ? CHUNK : q;
}

static void checks(const probe_t *p)
{
    CUdeviceptr base;
    size_t size;
    CK(cuMemGetAddressRange(&base, &size, p->dev));
    CUpointer_attribute a[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned type = 0, managed = 0;
    void *v[2] = {&type, &managed};
    CK(cuPointerGetAttributes(2, a, v, (CUdeviceptr)(uintptr_t)p->user));
    CK(cuPointerGetAttributes(2, a, v, (CUdeviceptr)(uintptr_t)(p->user + p->n - 1)));
    uintptr_t lo = (uintptr_t)p->user & ~(uintptr_t)4095;
    if (msync((void *)lo, (uintptr_t)p->user + p->n - lo, MS_ASYNC) != 0)
        exit(1);
}

/* Chunked upload: chunk k's copy (fn, by nt threads) then its DMA, every DMA
 * on p->s; waits for the last. */
static void up_chunks(probe_t *p, size_t chunk, unsigned nt, spin_fn *fn)
{
    unsigned k = 0;
    for (size_t off = 0; off < p->n; off += chunk, k++) {
        size_t len = p->n - off < chunk ? p->n - off : chunk;
        spin_copy_by(fn, p->pin + off, p->user + off, len, nt);
        CK(cuMemcpyHtoDAsync(p->dev + off, p->pin + off, len, p->s));
    }
    CK(cuEventRecord(p->ev[0], p->s));
    CK(cuEventSynchronize(p->ev[0]));
}

/* Chunked download: every DMA issued with its event, then each chunk copied
 * out (fn, by nt threads) once its event completes. */
static void down_chunks(probe_t *p, size_t chunk, unsigned nt, spin_fn *fn)
{
    unsigned k = 0;
    for (size_t off = 0; off < p->n; off += chunk, k++) {
        size_t len = p->n - off < chunk ? p->n - off : chunk;
        CK(cuMemcpyDtoHAsync(p->pin + off, p->dev + off, len, p->s));
        CK(cuEventRecord(p->ev[k], p->s));
    }
    k = 0;
    for (size_t off = 0; off < p->n; off += chunk, k++) {
        size_t len = p->n - off < chunk ? p->n - off : chunk;
        CK(cuEventSynchronize(p->ev[k]));
        spin_copy_by(fn, p->user + off, p->pin + off, len, nt);
    }
}

/* The host side alone: page-locked <-> pageable, by nt threads. */
static void host_side(probe_t *p, int up, unsigned nt, spin_fn *fn)
{
    up ? spin_copy_by(fn, p->pin, p->user, p->n, nt) : spin_copy_by(fn, p->user, p->pin, p->n, nt);
}

static void chunks(probe_t *p, int up, size_t chunk, unsigned nt, spin_fn *fn)
{
    up ? up_chunks(p, chunk, nt, fn) : down_chunks(p, chunk, nt, fn);
}

/* Back once the bytes are in page-locked memory and their DMA is queued. */
static void early(probe_t *p, spin_fn *fn)
{
    if (cuStreamQuery(p->s) != CUDA_SUCCESS)
        CK(cuStreamSynchronize(p->s));
    spin_copy_by(fn, p->pin, p->user, p->n, p->nt);
    CK(cuMemcpyHtoDAsync(p->dev, p->pin, p->n, p->s));
    CK(cuEventRecord(p->ev[0], p->s));
}

static void run(probe_t *p, int w, int up)
{
    switch (w) {
    case DRIVER:
        CK(up ? cuMemcpyHtoD(p->dev, p->user, p->n) : cuMemcpyDtoH(p->user, p->dev, p->n));
        break;
    case DMA:
        CK(up ? cuMemcpyHtoD(p->dev, p->pin, p->n) : cuMemcpyDtoH(p->pin, p->dev, p->n));
        break;
    case API:
        CK(up ? cuMemcpyHtoDAsync(p->dev, p->pin, 4, p->s)
              : cuMemcpyDtoHAsync(p->pin, p->dev, 4, p->s));
        CK(cuEventRecord(p->ev[0], p->s));
        CK(cuEventSynchronize(p->ev[0]));
        break;
    case CHECKS: checks(p); break;
    case MEMCPY: host_side(p, up, 1, plain_copy); break;
    case ONE: chunks(p, up, p->n, 1, plain_copy); break;
    case PIPE1: chunks(p, up, CHUNK, 1, plain_copy); break;
    case PAR: chunks(p, up, p->n, p->nt, plain_copy); break;
    case PIPE: chunks(p, up, quarter(p->n), p->nt, plain_copy); break;
    case EARLY: early(p, plain_copy); break;
    case HOST: host_side(p, up, p->nt, plain_copy); break;
    case NTCOPY: host_side(p, up, 1, stream_copy); break;
    case NTHOST: host_side(p, up, p->nt, stream_copy); break;
    case NT1: chunks(p, up, p->n, 1, stream_copy); break;
    case NTPAR: chunks(p, up, p->n, p->nt, stream_copy); break;
    case NTPIPE: chunks(p, up, quarter(p->n), p->nt, stream_copy); break;
    case NTEARLY: early(p, stream_copy); break;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Wrong bytes after way w: an upload read back through the page-locked
 * buffer, a download compared with the pattern. */
static long wrong(probe_t *p, int w, int up, const char *want)
{
    if (unchecked(w, up))
        return 0;
    if (up) {
        char *back = malloc(p->n);
        CK(cuMemcpyDtoH(back, p->dev, p->n));
        long bad = memcmp(back, want, p->n) != 0;
        free(back);
        CK(cuMemsetD32(p->dev, 0, p->n / 4));
        CK(cuCtxSynchronize()); /* landed before the next way's DMAs on p->s */
        return bad;
    }
    long bad = w != DMA && memcmp(p->user, want, p->n) != 0;
    memset(p->user, 0, p->n);
    return bad;
}

int main(int argc, char **argv)
{
    unsigned nt = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
    int iters = argc > 2 ? atoi(argv[2]) : 200;
    if (nt < 2 || nt > MAXT || iters < 1)
        return 2;
    CUdevice d;
    CUcontext c;
    linked_context(&d, &c);
    spin_start(nt - 1);
    static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
    double *ts = malloc(sizeof(double) * (size_t)iters);
    for (unsigned si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        probe_t p = {.n = sizes[si], .nt = nt};
        CK(cuMemAlloc(&p.dev, p.n));
        CK(cuMemHostAlloc((void **)&p.pin, p.n, 0));
        CK(cuStreamCreate(&p.s, CU_STREAM_NON_BLOCKING));
        for (unsigned k = 0; k < 64; k++)
            CK(cuEventCreate(&p.ev[k], CU_EVENT_DISABLE_TIMING));
        p.user = malloc(p.n);
        char *want = malloc(p.n);
        for (size_t i = 0; i < p.n; i++)
            want[i] = (char)(rand() >> 7);
        for (int up = 1; up >= 0; up--) {
            double *all = malloc(sizeof(double) * NW * (size_t)iters);
            long bad[NW] = {0};
            for (int it = -WARM; it < iters; it++)
                for (int w = 0; w < NW; w++) {
                    if (!up && up_only(w))
                        continue;
                    if (up)
                        memcpy(p.user, want, p.n);
                    else { /* a pageable upload's last DMA may still run: wait */
                        CK(cuMemcpyHtoD(p.dev, want, p.n));
                        CK(cuCtxSynchronize());
                    }
                    double t0 = now_us();
                    run(&p, w, up);
                    double t1 = now_us();
                    if (up_only(w)) /* its DMA, not timed: the buffer is used next */
                        CK(cuEventSynchronize(p.ev[0]));
                    if (it >= 0)
                        all[w * iters + it] = t1 - t0;
                    if (it >= 0 && it < 3)
                        bad[w] += wrong(&p, w, up, want);
                }
            for (int w = 0; w < NW; w++) {
                if (!up && up_only(w))
                    continue;
                memcpy(ts, all + w * iters, sizeof(double) * (size_t)iters);
                qsort(ts, (size_t)iters, sizeof *ts, cmp);
                printf("stageprobe %s %5zu KiB %-9s %9.2f us (%.1f GB/s) T=%u bad=%ld\n",
                       up ? "htod" : "dtoh", p.n >> 10, way[w], ts[iters / 2],
                       (double)p.n / ts[iters / 2] / 1e3, nt, bad[w]);
            }
            free(all);
        }
        for (unsigned k = 0; k < 64; k++)
            CK(cuEventDestroy(p.ev[k]));
        CK(cuStreamDestroy(p.s));
        CK(cuMemFreeHost(p.pin));
        CK(cuMemFree(p.dev));
        free(p.user);
        free(want);
    }
    free(ts);
    return 0;
}
