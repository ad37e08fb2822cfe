/* spincopy.h - the probes' threaded memcpy (colprobe.c, stageprobe.c): worker
 * threads that spin for the next copy, each copying its share (a probe asks
 * what a copy could cost, not what waking a thread costs). spin_start(W)
 * makes W workers; spin_copy(dst, src, len, nt) splits a copy over the caller
 * and nt - 1 of them (nt <= W + 1) and returns when every worker has seen it;
 * spin_copy_by(fn, ...) the same with fn doing each part (stream_copy: stores
 * that bypass the caches). */
#ifndef BENCH_SPINCOPY_H
#define BENCH_SPINCOPY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef void spin_fn(char *dst, const char *src, size_t len);

static void plain_copy(char *dst, const char *src, size_t len)
{
    memcpy(dst, src, len);
}

/* memcpy with non-temporal stores: the bytes go to memory, not to this core's
 * caches, so a device that reads them next (a DMA out of page-locked memory)
 * finds no dirty line to snoop, and no store first reads its line for
 * ownership. glibc's memcpy uses such stores only above a share of the last
 * level cache (__x86_shared_non_temporal_threshold, megabytes), never for a
 * staged chunk. The sfence makes them visible before the caller goes on (to
 * a doorbell, or to a flag another thread reads). Elsewhere: memcpy. */
static void stream_copy(char *dst, const char *src, size_t len)
{
#ifdef __SSE2__
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > len)
        head = len;
    memcpy(dst, src, head);
    dst += head, src += head, len -= head;
    size_t body = len & ~(size_t)63;
    for (size_t i = 0; i < body; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i)),
                b = _mm_loadu_si128((const __m128i *)(src + i + 16)),
                c = _mm_loadu_si128((const __m128i *)(src + i + 32)),
                d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + body, src + body, len - body);
    _mm_sfence();
#else
    memcpy(dst, src, len);
#endif
}

static struct {
    _Atomic unsigned gen, done;
    spin_fn *fn;
    char *dst;
    const char *src;
    size_t len;
    unsigned nt, workers;
} spin_job;

static void spin_part(unsigned t)
{
    /* parts of a whole number of cache lines covering len: nt * per >= len */
    size_t per = ((spin_job.len + spin_job.nt - 1) / spin_job.nt + 63) & ~(size_t)63,
           off = per * t;
    if (t < spin_job.nt && off < spin_job.len)
        spin_job.fn(spin_job.dst + off, spin_job.src + off,
                    off + per > spin_job.len ? spin_job.len - off : per);
}

static void *spin_worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg, seen = 0;
    for (;;) {
        unsigned g;
        while ((g = atomic_load(&spin_job.gen)) == seen)
            ;
        seen = g;
        spin_part(t);
        atomic_fetch_add(&spin_job.done, 1);
    }
    return NULL;
}

static void spin_start(unsigned workers)
{
    pthread_t th;
    spin_job.workers = 0;
    for (unsigned t = 1; t <= workers; t++)
        if (pthread_create(&th, NULL, spin_worker, (void *)(uintptr_t)t) == 0)
            spin_job.workers++;
}

static void spin_copy_by(spin_fn *fn, char *dst, const char *src, size_t len, unsigned nt)
{
    if (nt > spin_job.workers + 1)
        nt = spin_job.workers + 1;
    if (nt == 0)
        nt = 1;
    spin_job.fn = fn;
    spin_job.dst = dst, spin_job.src = src, spin_job.len = len, spin_job.nt = nt;
    atomic_store(&spin_job.done, 0);
    atomic_fetch_add(&spin_job.gen, 1);
    spin_part(0);
    while (atomic_load(&spin_job.done) < spin_job.workers)
        ;
}

static inline void spin_copy(char *dst, const char *src, size_t len, unsigned nt)
{
    spin_copy_by(plain_copy, dst, src, len, nt);
}

#endif
