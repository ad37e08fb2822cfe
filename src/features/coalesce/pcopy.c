/* pcopy.c - large host copies split over helper threads (see pcopy.h).
 *
 * A copy is cut into chunks; the caller and up to MAX_HELPERS helpers claim
 * them one at a time from one counter that also carries the copy's
 * generation (a helper late for one copy can claim nothing of the next), and
 * the caller returns once every chunk is counted done. (Before a new copy's
 * job is written the counter is closed, so a helper that reads any of it
 * half-written claims nothing.) A helper spins a while
 * after each copy (a column accessor reads column after column) and then
 * sleeps on a condition variable; the caller wakes sleepers but does not wait
 * for them: whatever they have not claimed, it copies itself. Helpers are made
 * at the first large copy, at most one for every four processors, with every
 * signal blocked (the program's handlers never run on them).
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
    CHUNK = 64 << 10,
    MAX_HELPERS = 3,
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
    _Atomic uint32_t chunks;
} job;
/* One cache line each: spinning helpers read `gen` while the copiers hammer
 * `claim` and `done`. */
static _Alignas(64) _Atomic uint32_t gen;      /* copies begun */
static _Alignas(64) _Atomic uint64_t claim;    /* generation << 32 | next chunk */
static _Alignas(64) _Atomic uint32_t done;     /* chunks of this copy copied */
static _Alignas(64) _Atomic unsigned sleeping; /* helpers waiting on `wake` */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copy chunks of generation g until none is left. */
static void work(uint32_t g)
{
    char *dst = atomic_load_explicit(&job.dst, memory_order_acquire);
    const char *src = atomic_load_explicit(&job.src, memory_order_acquire);
    size_t n = atomic_load_explicit(&job.n, memory_order_acquire);
    uint32_t chunks = atomic_load_explicit(&job.chunks, memory_order_acquire);
    uint64_t v = atomic_load(&claim);
    for (;;) {
        if ((uint32_t)(v >> 32) != g || (uint32_t)v >= chunks)
            return;
        if (!atomic_compare_exchange_weak(&claim, &v, v + 1))
            continue;
        size_t off = (size_t)(uint32_t)v * CHUNK;
        memcpy(dst + off, src + off, n - off < CHUNK ? n - off : CHUNK);
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
    (void)arg;
    uint32_t seen = atomic_load(&gen);
    for (;;)
        work(seen = next_gen(seen));
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
        int e = pthread_create(&t, &a, helper, NULL);
        pthread_attr_destroy(&a);
        if (e)
            break;
        pthread_setname_np(t, "gpuaccel-copy");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The helpers this machine affords: one for every four processors. */
static void start_helpers_locked(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    start_locked(cpus > 4 ? (unsigned)(cpus / 4) : 0);
}

unsigned ga_pcopy_start(unsigned n)
{
    pthread_mutex_lock(&job_lock);
    start_locked(n);
    unsigned h = helpers;
    pthread_mutex_unlock(&job_lock);
    return h;
}

void ga_pcopy(void *dst, const void *src, size_t n)
{
    if (n < MIN_SPLIT || pthread_mutex_trylock(&job_lock)) {
        memcpy(dst, src, n);
        return;
    }
    start_helpers_locked();
    if (!helpers) {
        pthread_mutex_unlock(&job_lock);
        memcpy(dst, src, n);
        return;
    }
    uint32_t chunks = (uint32_t)((n + CHUNK - 1) / CHUNK);
    uint32_t g = atomic_load(&gen) + 1;
    /* Closed first: a helper that reads any field written below then sees
     * (release, acquire) a claim counter of another generation, and claims
     * nothing with a half-written job. */
    atomic_store(&claim, (uint64_t)g << 32 | UINT32_MAX);
    atomic_store_explicit(&job.dst, (char *)dst, memory_order_release);
    atomic_store_explicit(&job.src, (const char *)src, memory_order_release);
    atomic_store_explicit(&job.n, n, memory_order_release);
    atomic_store_explicit(&job.chunks, chunks, memory_order_release);
    atomic_store(&done, 0);
    atomic_store(&claim, (uint64_t)g << 32);
    atomic_store(&gen, g); /* seq_cst: a helper going to sleep sees it, or is seen */
    if (atomic_load(&sleeping)) {
        pthread_mutex_lock(&wake_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&wake_lock);
    }
    work(g);
    /* A helper finishing the chunk it claimed: one chunk's copy, unless it
     * was preempted (then the processor is given up now and then). */
    for (unsigned i = 1; atomic_load_explicit(&done, memory_order_acquire) < chunks; i++)
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
