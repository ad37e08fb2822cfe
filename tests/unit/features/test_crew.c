/* test_crew.c - staging's copy crew (crew.h) on its own, with real threads:
 *   - helpers that went to sleep get up when work is announced (ga_crew_wake)
 *     and when a job is posted: every one of them, each time (a lost or a
 *     partial wake-up leaves some asleep, counted in `sleepers`);
 *   - copies of every size, across the piece size and odd tails, are
 *     bit-exact and write nothing past their end, whether the helpers were
 *     spinning or asleep when the job came, stored through the caches or
 *     around them (unaligned heads and tails of the non-temporal copy);
 *   - many copies with gaps around the helpers' spin time (where a sleeper
 *     and a poster race) are all right and all end. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "core/clock.h"
#include "features/staging/crew.h"

enum { HELPERS = 3, MAX_N = (3 << 20) + 4099, GUARD = 4096 };

static ga_crew_t crew;
static unsigned char *src, *dst;
static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

static void pause_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

/* Wait up to a second for `sleepers` to be `want`. */
static bool sleepers_become(unsigned want)
{
    uint64_t end = ga_now_ns() + 1000000000u;
    while (atomic_load(&crew.sleepers) != want) {
        if (ga_now_ns() > end)
            return false;
        pause_us(100);
    }
    return true;
}

/* Wait up to a second for `wakes` to reach `want`. */
static bool wakes_reach(unsigned long want)
{
    uint64_t end = ga_now_ns() + 1000000000u;
    while (atomic_load(&crew.wakes) < want) {
        if (ga_now_ns() > end)
            return false;
        pause_us(100);
    }
    return true;
}

/* One copy of n bytes at offset off, fresh random bytes, stored `how`,
 * checked with the bytes around it. With `awake`, the helpers are woken just
 * before (they spin then: the bytes' preparation can outlast their spin). */
static bool copy_ok(size_t n, size_t off, bool awake, ga_crew_store_t how)
{
    for (size_t i = 0; i < n; i++)
        src[off + i] = (unsigned char)rnd();
    memset(dst, 0xA5, off + n + GUARD);
    if (awake)
        ga_crew_wake(&crew);
    ga_crew_copy(&crew, dst + off, src + off, n, how);
    if (memcmp(dst + off, src + off, n) != 0)
        return false;
    for (size_t i = 0; i < off; i++)
        if (dst[i] != 0xA5)
            return false;
    for (size_t i = off + n; i < off + n + GUARD; i++)
        if (dst[i] != 0xA5)
            return false;
    return true;
}

TEST_CASE(wake_ups)
{
    CHECK(ga_crew_start(&crew, HELPERS) == HELPERS);
    CHECK(sleepers_become(HELPERS)); /* asleep after their spin */
    unsigned long w = atomic_load(&crew.wakes);
    ga_crew_wake(&crew);
    CHECK(wakes_reach(w + HELPERS)); /* every one up */
    CHECK(sleepers_become(HELPERS));
    w = atomic_load(&crew.wakes);
    CHECK(copy_ok(1 << 20, 0, false, GA_CREW_CACHED)); /* a job wakes them too */
    CHECK(wakes_reach(w + HELPERS));
    for (int i = 0; i < 20; i++) { /* and again, each time */
        CHECK(sleepers_become(HELPERS));
        w = atomic_load(&crew.wakes);
        ga_crew_wake(&crew);
        CHECK(wakes_reach(w + HELPERS));
    }
    CHECK(sleepers_become(HELPERS));
}

TEST_CASE(copies_exact)
{
    static const size_t sizes[] = {0, 1, 4095, 16 << 10, (32 << 10) - 1, 32 << 10,
                                   (32 << 10) + 1, 100003, 1 << 20, (1 << 20) + 7,
                                   3 << 20, MAX_N - 64};
    for (int how = GA_CREW_CACHED; how <= GA_CREW_AROUND; how++)
        for (int asleep = 0; asleep < 2; asleep++)
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
                if (asleep)
                    CHECK(sleepers_become(HELPERS));
                size_t off = sizes[k] + 64 <= MAX_N ? rnd() % 64 : 0;
                CHECK(copy_ok(sizes[k], off, !asleep, (ga_crew_store_t)how));
            }
}

TEST_CASE(racing_gaps)
{
    /* gaps from none to past the spin time (300 us): posts meet helpers
     * spinning, going to sleep and asleep. Every copy exact; a post (a copy
     * of 64 KiB or more is split) that found them all asleep wakes them (a
     * helper that misses a wake in the race to sleep costs time, not bytes:
     * the owner takes the pieces left, and the next post wakes it) */
    bool all = true, woke = true;
    for (int i = 0; i < 400; i++) {
        if (rnd() % 3 == 0)
            ga_crew_wake(&crew);
        pause_us((unsigned)(rnd() % 450));
        size_t n = (size_t)(rnd() % (1 << 20)) + 1;
        bool asleep = n >= (64 << 10) && atomic_load(&crew.sleepers) == HELPERS;
        unsigned long w = atomic_load(&crew.wakes);
        all &= copy_ok(n, (size_t)(rnd() % 64), false, (ga_crew_store_t)(rnd() % 2));
        if (asleep)
            woke &= wakes_reach(w + 1);
    }
    CHECK(all && woke);
    CHECK(sleepers_become(HELPERS)); /* every helper back asleep: none stuck awake */
}

int main(void)
{
    rng_state = (uint64_t)ga_now_ns() | 1;
    fprintf(stderr, "test_crew: seed %llu\n", (unsigned long long)rng_state);
    src = malloc(MAX_N + GUARD), dst = malloc(MAX_N + GUARD);
    if (!src || !dst)
        return 99;
    ga_crew_init(&crew);
    RUN_CASE(wake_ups);
    RUN_CASE(copies_exact);
    RUN_CASE(racing_gaps);
    return check_done("test_crew");
}
