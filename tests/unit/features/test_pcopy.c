/* test_pcopy.c - coalesce's large copies split over helper threads
 * (features/coalesce/pcopy.c): with three helpers started, copies of random
 * lengths (below the split, multiples of 256 and a few bytes, any) at random
 * offsets equal memcpy's, the bytes around the destination untouched; four
 * threads copying at once (one shares the helpers, the others copy alone)
 * each get their own bytes. */
#include <pthread.h>
#include <stdbool.h>
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
        ga_pcopy(dst + GUARD, src + off, n);
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

int main(void)
{
    rng_state = (uint64_t)time(NULL) | 1;
    CHECK(ga_pcopy_start(3) == 3);
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
