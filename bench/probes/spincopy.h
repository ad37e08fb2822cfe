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

#include "../../src/features/staging/ntcopy.h"

typedef void spin_fn(char *dst, const char *src, size_t len);

static void plain_copy(char *dst, const char *src, size_t len)
{
    memcpy(dst, src, len);
}

/* memcpy with non-temporal stores: the library's own loop (the copy crew's,
 * for uploads into its ring), so that the probe measures what staging runs. */
static void stream_copy(char *dst, const char *src, size_t len)
{
    ga_stream_copy(dst, src, len);
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
