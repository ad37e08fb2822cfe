/* crew.c - helper threads that split a memcpy with their owner (crew.h).
 *
 * A job is cut into pieces of at least 16 KiB (about four per thread, so a
 * slow thread is made up for by the others); the owner posts it by bumping the
 * generation in `claim`, then takes pieces itself, then waits (spinning: the
 * last pieces end within microseconds of each other) until `done` counts them
 * all. Its acquire load of `done` orders every helper's stores before
 * whatever the owner does next (a DMA from the bytes they wrote).
 *
 * Waking: helpers spin for SPIN_NS after their last piece or wake-up, then
 * sleep on the futex word `epoch`. Sleeping and posting follow one pattern:
 * the sleeper reads `epoch`, counts itself in `sleepers` and then re-reads
 * what it waits on; the poster stores what it posts, then reads `sleepers`
 * and, when someone sleeps, bumps `epoch` and wakes them (all sequentially
 * consistent), so at least one of them sees the other, and a sleeper whose
 * `epoch` moved on returns from FUTEX_WAIT at once: no wake-up is lost.
 *
 * Why a futex and not a condition variable: pthread_cond_broadcast wakes
 * every helper, and each must take the mutex again before it returns from
 * pthread_cond_wait, so a dozen of them wake one after another, each woken
 * by the last one's unlock: tens of microseconds before the last helper
 * copies, in copies whose helpers slept (a program that copies 1 MiB, then
 * works on it for a millisecond). A futex wake has no lock to queue on; the
 * futex is Linux's own primitive, which the library requires anyway (C11 has
 * no atomic wait).
 *
 * Owns: the helper threads (never stopped: they sleep between copies; a fork
 * child has none and starts again from ga_crew_init).
 * Must never: call the driver or the program from a helper. */
#define _GNU_SOURCE
#include "features/staging/crew.h"
#include "features/staging/ntcopy.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"

enum { MIN_PIECE = 16 << 10, PIECES_PER_THREAD = 4 };
#define SPIN_NS 300000u /* a helper spins this long for the next job before sleeping */

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void ga_crew_init(ga_crew_t *c)
{
    memset(c, 0, sizeof *c);
}

/* Sleep while *w is v (returns at once when it is not; or on a wake-up or a
 * signal, spuriously: callers check again). */
static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void copy_as(ga_crew_store_t how, char *dst, const char *src, size_t n)
{
    if (how == GA_CREW_AROUND)
        ga_stream_copy(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* Take pieces of the posted job until none is left; returns the claim word
 * last seen, the one with no piece left to take. */
static uint64_t take_pieces(ga_crew_t *c)
{
    for (;;) {
        uint64_t cl = atomic_load_explicit(&c->claim, memory_order_acquire);
        uint64_t lim = atomic_load_explicit(&c->limit, memory_order_acquire);
        /* The piece count must be this job's: the owner writes the next job's
         * count before its claim word, so a count read beside an older claim
         * word can be the next job's (and a claim on the old word would then
         * succeed, for a piece of no job). */
        if (lim >> 32 != cl >> 32)
            continue;
        unsigned i = (unsigned)cl;
        if (i >= (unsigned)lim)
            return cl;
        if (!atomic_compare_exchange_weak_explicit(&c->claim, &cl, cl + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        /* Piece i of this job is ours and not done: the owner cannot post
         * another job before we count it, so these fields are this job's. */
        size_t piece = atomic_load_explicit(&c->piece, memory_order_relaxed);
        size_t len = atomic_load_explicit(&c->len, memory_order_relaxed);
        size_t off = (size_t)i * piece, n = len - off < piece ? len - off : piece;
        char *dst = (char *)atomic_load_explicit(&c->dst, memory_order_relaxed);
        const char *src = (const char *)atomic_load_explicit(&c->src, memory_order_relaxed);
        copy_as((ga_crew_store_t)atomic_load_explicit(&c->how, memory_order_relaxed), dst + off,
                src + off, n);
        atomic_fetch_add_explicit(&c->done, 1, memory_order_release);
    }
}

/* Wait until the job or the alarm changes from what was seen: spin, then sleep. */
static void await_change(ga_crew_t *c, uint64_t cl, uint64_t alarm)
{
    uint64_t deadline = ga_now_ns() + SPIN_NS;
    for (unsigned k = 1;; k++) {
        if (atomic_load(&c->claim) != cl || atomic_load(&c->alarm) != alarm)
            return;
        relax();
        if (k % 256 == 0 && ga_now_ns() > deadline)
            break;
    }
    for (bool same = true; same;) {
        uint32_t e = atomic_load(&c->epoch);
        atomic_fetch_add(&c->sleepers, 1);
        same = atomic_load(&c->claim) == cl && atomic_load(&c->alarm) == alarm;
        if (same)
            futex_wait(&c->epoch, e);
        atomic_fetch_sub(&c->sleepers, 1);
    }
    /* up from the sleeping side, whether or not it got as far as the futex:
     * once per post for every helper `sleepers` counted when it came */
    atomic_fetch_add_explicit(&c->wakes, 1, memory_order_relaxed);
}

static void *helper(void *arg)
{
    ga_crew_t *c = arg;
    for (;;) {
        uint64_t alarm = atomic_load(&c->alarm);
        /* Nothing left to take: wait for the next job (or an alarm), from
         * the word that said so (a job posted since then changed it). */
        await_change(c, take_pieces(c), alarm);
    }
    return NULL;
}

static void wake_sleepers(ga_crew_t *c)
{
    if (atomic_load(&c->sleepers) == 0)
        return;
    atomic_fetch_add(&c->epoch, 1);
    futex_wake_all(&c->epoch);
}

unsigned ga_crew_start(ga_crew_t *c, unsigned helpers)
{
    if (helpers > GA_CREW_MAX)
        helpers = GA_CREW_MAX;
    if (c->started >= helpers)
        return c->started;
    /* Helpers inherit a full signal mask: no handler of the program ever
     * runs on them. A small stack: they run memcpy and nothing else. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return c->started;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN + (128u << 10));
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (c->started < helpers) {
        pthread_t t;
        if (pthread_create(&t, &attr, helper, c) != 0)
            break; /* fewer helpers: the copies are only slower */
        pthread_setname_np(t, "gpuaccel-stage");
        c->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return c->started;
}

void ga_crew_wake(ga_crew_t *c)
{
    if (!c->started)
        return;
    atomic_fetch_add(&c->alarm, 1);
    wake_sleepers(c);
}

void ga_crew_copy(ga_crew_t *c, void *dst, const void *src, size_t n, ga_crew_store_t how)
{
    if (!c->started || n < 2 * MIN_PIECE) {
        copy_as(how, dst, src, n);
        return;
    }
    size_t threads = c->started + 1;
    size_t piece = (n + threads * PIECES_PER_THREAD - 1) / (threads * PIECES_PER_THREAD);
    piece = (piece + 4095) & ~(size_t)4095;
    if (piece < MIN_PIECE)
        piece = MIN_PIECE;
    unsigned np = (unsigned)((n + piece - 1) / piece);
    atomic_store_explicit(&c->dst, (uintptr_t)dst, memory_order_relaxed);
    atomic_store_explicit(&c->src, (uintptr_t)src, memory_order_relaxed);
    atomic_store_explicit(&c->len, n, memory_order_relaxed);
    atomic_store_explicit(&c->piece, piece, memory_order_relaxed);
    atomic_store_explicit(&c->how, (int)how, memory_order_relaxed);
    atomic_store_explicit(&c->done, 0, memory_order_relaxed);
    uint64_t gen = (atomic_load(&c->claim) >> 32) + 1;
    atomic_store(&c->limit, gen << 32 | np);
    atomic_store(&c->claim, gen << 32); /* posted: the fields above go with it */
    wake_sleepers(c);
    (void)take_pieces(c);
    /* The last pieces end within microseconds of each other, unless a helper
     * lost its CPU: then give ours away rather than spin it out. */
    for (unsigned k = 1; atomic_load_explicit(&c->done, memory_order_acquire) < np; k++)
        if (k < 4096)
            relax();
        else
            sched_yield();
}
