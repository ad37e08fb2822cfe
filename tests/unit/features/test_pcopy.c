/* test_pcopy.c - coalesce's large copies split over helper threads
 * (features/coalesce/pcopy.c): in forked children, the helpers a first copy
 * starts for 1, 3 and 0 threads asked (0: one for every four processors, at
 * most seven); then, with seven helpers started, copies of random
 * lengths (below the split, multiples of 256 and a few bytes, any) at random
 * offsets equal memcpy's, the bytes around the destination untouched; four
 * threads copying at once (one shares the helpers, the others copy alone)
 * each get their own bytes. */
#include <pthread.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "features/coalesce/pcopy.h"

enum { MAXN = 3 << 20, GUARD = 64, THREADS = 4, ROUNDS = 40 };

static uint64_t rng_state;
static uint32_t next_u32(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (uint32_t)(*s >> 16);
}

static void fill(unsigned char *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)next_u32(s);
}

/* ROUNDS copies of random lengths; false at the first wrong byte. */
static bool rounds(uint64_t seed)
{
    unsigned char *src = malloc(MAXN + GUARD), *dst = malloc(MAXN + 2 * GUARD);
    bool ok = src && dst;
    uint64_t s = seed;
    for (int r = 0; ok && r < ROUNDS; r++) {
        /* Below the split; a multiple of 256 and a few bytes (parts whose
         * sum falls short of it by rounding: a bug once); any length. */
        size_t n = r % 4 == 0   ? next_u32(&s) % 4096
                   : r % 4 == 1 ? (next_u32(&s) % (MAXN / 256)) * 256 + next_u32(&s) % 4
                                : next_u32(&s) % MAXN;
        size_t off = next_u32(&s) % GUARD;
        fill(src, MAXN + GUARD, &s);
        memset(dst, 0x5a, MAXN + 2 * GUARD);
        ga_pcopy(dst + GUARD, src + off, n, 0);
        ok = !memcmp(dst + GUARD, src + off, n);
        for (size_t i = 0; ok && i < GUARD; i++)
            ok = dst[i] == 0x5a && dst[GUARD + n + i] == 0x5a;
    }
    free(src), free(dst);
    return ok;
}

static void *thread_main(void *arg)
{
    return rounds((uint64_t)(uintptr_t)arg) ? arg : NULL;
}

/* In a child: the helpers there after a first large copy asked for `threads`
 * (and the copy right); exits 0 when they are `want`. */
static bool helpers_started(unsigned threads, unsigned want)
{
    pid_t pid = fork();
    if (pid == 0) {
        size_t n = 1 << 20;
        unsigned char *a = malloc(n), *b = calloc(1, n);
        uint64_t s = rng_state;
        fill(a, n, &s);
        ga_pcopy(b, a, n, threads);
        _exit(ga_pcopy_start(0) == want && !memcmp(a, b, n) ? 0 : 1);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
    rng_state = (uint64_t)time(NULL) | 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned rule = cpus > 4 ? (unsigned)(cpus / 4) : 0;
    CHECK(helpers_started(1, 0));
    CHECK(helpers_started(3, 2));
    CHECK(helpers_started(0, rule < GA_PCOPY_MAX_THREADS ? rule : GA_PCOPY_MAX_THREADS - 1));
    CHECK(ga_pcopy_start(GA_PCOPY_MAX_THREADS - 1) == GA_PCOPY_MAX_THREADS - 1);
    CHECK(rounds(rng_state));
    pthread_t t[THREADS];
    uintptr_t seeds[THREADS];
    for (int i = 0; i < THREADS; i++) {
        seeds[i] = (uintptr_t)(rng_state + 7919u * (uint64_t)(i + 1)) | 1;
        CHECK(pthread_create(&t[i], NULL, thread_main, (void *)seeds[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *res = NULL;
        pthread_join(t[i], &res);
        CHECK(res == (void *)seeds[i]);
    }
    return check_done("test_pcopy");
}
