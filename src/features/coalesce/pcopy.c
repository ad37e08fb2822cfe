/* pcopy.c - large host copies split over helper threads (see pcopy.h).
 *
 * A copy is cut into one contiguous part for the caller and one for each
 * helper; each claims its own part first, then any part left unclaimed (a
 * sleeping helper's), from one word that carries the copy's generation and
 * a bit a part (a helper late for one copy can claim nothing of the next);
 * the caller returns once every part is counted done. Parts stay with their
 * owners from copy to copy: parts handed out in turn moved the destination's
 * cache lines between processors on every copy, and four threads took as long
 * as one (H100 host, 256 KiB). (Before a new copy's job is written the claim
 * word is closed, so a helper that reads any of it half-written claims
 * nothing.) A helper spins a while
 * after each copy (a column accessor reads column after column) and then
 * sleeps on a condition variable; the caller wakes sleepers but does not wait
 * for them: whatever they have not claimed, it copies itself. Helpers are made
 * at the first large copy, with every signal blocked (the program's handlers
 * never run on them): as many as the caller asks (GPUACCEL_COALESCE_THREADS),
 * else one for every four processors, at most MAX_HELPERS.
 *
 * A copy has a part for every PART bytes, at least four (a 256 KiB column
 * keeps the split measured above), at most one a thread: four threads copied
 * 4 MiB in 110 us on an H100 host, one in 359, so a stwo decommitment's 4 MiB
 * columns, read whole 12-15 times a round, were bound by the copy's threads.
 *
 * Written by hand: glibc's memcpy is one thread's, and a thread pool library
 * would be a dependency for forty lines.
 *
 * Owns: the helpers and the job they share, `job_lock` (one copy at a time:
 * a second thread's copy meanwhile is its own memcpy).
 * Must never: call the driver; block the caller on a helper that has not
 * claimed work. */
#define _GNU_SOURCE
#include "features/coalesce/pcopy.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    MIN_SPLIT = 128 << 10, /* smaller copies are one memcpy */
    PART = 128 << 10,      /* a part a PART bytes, */
    MIN_PARTS = 4,         /* at least this many (threads permitting) */
    MAX_HELPERS = GA_PCOPY_MAX_THREADS - 1,
    CLOSED = (1u << (MAX_HELPERS + 1)) - 1, /* every part's bit */
    SPIN_NS = 200000, /* a helper's spin after a copy, before it sleeps */
};

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static unsigned helpers; /* guarded by job_lock: started */

/* The copy under way: written by the caller (holding job_lock) before it
 * publishes `gen`; a helper reads it after seeing gen move. Atomics: a helper
 * late by a whole copy may read it while the next is written (and then can
 * claim nothing: the claim counter has moved to another generation). */
static struct {
    _Atomic(char *) dst;
    _Atomic(const char *) src;
    _Atomic size_t n;
    _Atomic uint32_t parts;
} job;
/* One cache line each: spinning helpers read `gen` while the copiers hammer
 * `claim` and `done`. */
static _Alignas(64) _Atomic uint32_t gen;      /* copies begun */
static _Alignas(64) _Atomic uint64_t claim;    /* generation << 32 | parts claimed (bits) */
static _Alignas(64) _Atomic uint32_t done;     /* parts of this copy copied */
static _Alignas(64) _Atomic unsigned sleeping; /* helpers waiting on `wake` */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copy parts of generation g, participant me's own first, until none is
 * left unclaimed. */
static void work(uint32_t g, unsigned me)
{
    uint32_t parts = atomic_load_explicit(&job.parts, memory_order_acquire);
    /* A helper without a part of its own takes none: parts handed to whoever
     * comes first move the destination's lines between processors (with
     * seven helpers and four parts, 256 KiB columns read 2.5x slower on an
     * H200 host); an owner late for its part leaves it to the caller. */
    if (me >= parts)
        return;
    char *dst = atomic_load_explicit(&job.dst, memory_order_acquire);
    const char *src = atomic_load_explicit(&job.src, memory_order_acquire);
    size_t n = atomic_load_explicit(&job.n, memory_order_acquire);
    size_t per = ((n + parts - 1) / parts + 63) & ~(size_t)63; /* parts * per >= n */
    uint64_t v = atomic_load(&claim);
    for (;;) {
        uint32_t taken = (uint32_t)v, all = (1u << parts) - 1;
        if ((uint32_t)(v >> 32) != g || (taken & all) == all || parts > MAX_HELPERS + 1)
            return;
        unsigned k = me < parts && !(taken & (1u << me)) ? me
                                                          : (unsigned)__builtin_ctz(~taken & all);
        if (!atomic_compare_exchange_weak(&claim, &v, v | (1u << k)))
            continue;
        size_t off = per * k;
        if (off < n)
            memcpy(dst + off, src + off, n - off < per ? n - off : per);
        atomic_fetch_add_explicit(&done, 1, memory_order_release);
        v = atomic_load(&claim);
    }
}

/* The next generation after `seen`: spun for, then slept for. */
static uint32_t next_gen(uint32_t seen)
{
    uint64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
        uint32_t g = atomic_load(&gen);
        if (g != seen)
            return g;
        if (i % 256 == 0 && now_ns() - t0 > SPIN_NS)
            break;
    }
    pthread_mutex_lock(&wake_lock);
    atomic_fetch_add(&sleeping, 1);
    uint32_t g;
    while ((g = atomic_load(&gen)) == seen)
        pthread_cond_wait(&wake, &wake_lock);
    atomic_fetch_sub(&sleeping, 1);
    pthread_mutex_unlock(&wake_lock);
    return g;
}

static void *helper(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg; /* 1..MAX_HELPERS; the caller is 0 */
    uint32_t seen = atomic_load(&gen);
    for (;;)
        work(seen = next_gen(seen), me);
    return NULL;
}

static bool tried; /* guarded by job_lock: helpers were started */

/* Start `want` helpers (at most MAX_HELPERS), once. */
static void start_locked(unsigned want)
{
    if (tried)
        return;
    tried = true;
    if (want > MAX_HELPERS)
        want = MAX_HELPERS;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; helpers < want; helpers++) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &a, helper, (void *)(uintptr_t)(helpers + 1));
        pthread_attr_destroy(&a);
        if (e)
            break;
        pthread_setname_np(t, "gpuaccel-copy");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The helpers asked for (threads, the caller included), else those this
 * machine affords: one for every four processors. */
static void start_helpers_locked(unsigned threads)
{
    if (tried) /* (sysconf reads a file: not on every copy) */
        return;
    if (threads) {
        start_locked(threads - 1);
        return;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    start_locked(cpus > 4 ? (unsigned)(cpus / 4) : 0);
}

/* The parts of an n-byte copy among `threads` threads. */
static uint32_t parts_for(size_t n, unsigned threads)
{
    size_t p = n / PART;
    if (p < MIN_PARTS)
        p = MIN_PARTS;
    return p < threads ? (uint32_t)p : threads;
}

unsigned ga_pcopy_start(unsigned n)
{
    pthread_mutex_lock(&job_lock);
    start_locked(n);
    unsigned h = helpers;
    pthread_mutex_unlock(&job_lock);
    return h;
}

void ga_pcopy(void *dst, const void *src, size_t n, unsigned threads)
{
    if (n < MIN_SPLIT || pthread_mutex_trylock(&job_lock)) {
        memcpy(dst, src, n);
        return;
    }
    start_helpers_locked(threads);
    if (!helpers) {
        pthread_mutex_unlock(&job_lock);
        memcpy(dst, src, n);
        return;
    }
    uint32_t parts = parts_for(n, helpers + 1);
    uint32_t g = atomic_load(&gen) + 1;
    /* Closed first: a helper that reads any field written below then sees
     * (release, acquire) a claim counter of another generation, and claims
     * nothing with a half-written job. */
    atomic_store(&claim, (uint64_t)g << 32 | CLOSED);
    atomic_store_explicit(&job.dst, (char *)dst, memory_order_release);
    atomic_store_explicit(&job.src, (const char *)src, memory_order_release);
    atomic_store_explicit(&job.n, n, memory_order_release);
    atomic_store_explicit(&job.parts, parts, memory_order_release);
    atomic_store(&done, 0);
    atomic_store(&claim, (uint64_t)g << 32);
    atomic_store(&gen, g); /* seq_cst: a helper going to sleep sees it, or is seen */
    if (atomic_load(&sleeping)) {
        pthread_mutex_lock(&wake_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&wake_lock);
    }
    work(g, 0);
    /* A helper finishing the part it claimed: one part's copy, unless it was
     * preempted (then the processor is given up now and then). */
    for (unsigned i = 1; atomic_load_explicit(&done, memory_order_acquire) < parts; i++)
        if (i % 4096 == 0)
            sched_yield();
    pthread_mutex_unlock(&job_lock);
}

void ga_pcopy_fork_child(void)
{
    pthread_mutex_init(&job_lock, NULL);
    pthread_mutex_init(&wake_lock, NULL);
    pthread_cond_init(&wake, NULL);
    helpers = 0;
    atomic_store(&sleeping, 0);
    /* `tried` stays set: the child copies alone (a forked child that reads
     * columns is rare; a thread made behind the parent's back rarer still
     * wanted). */
}
