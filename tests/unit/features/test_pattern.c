/* test_pattern.c - coalesce's read-pattern learner (features/coalesce/pattern.h)
 * on fresh random query phases: a query of column reads (one buffer each, or
 * all in one), Merkle siblings and fold neighbours is learned after GA_PAT_PERIODS queries, each later query's
 * reads are predicted exactly from its first read, whichever read the watching
 * began at; a transform learned wrong (an index bit that never varied) is
 * corrected by the first period that contradicts it; a buffer replaced by
 * another in the queries is learned again; random reads, one buffer
 * read at random, and a pattern that is not a function of one index teach
 * nothing; predictions stay inside allocations. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "features/coalesce/pattern.h"

enum { COLS = 5, LAYERS = 14, FOLDS = 7 };

static uint64_t rng;
static uint64_t next(void) /* splitmix64: every bit random from the first draw */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The reads of one query at idx (as bench/bench_query.cu makes them). */
static unsigned query(uint64_t idx, unsigned log_n, ga_pat_read_t *out)
{
    unsigned k = 0;
    uint64_t n = 1ull << log_n;
    for (unsigned c = 0; c < COLS; c++)
        out[k++] = (ga_pat_read_t){0x100000000ull * (c + 1), 4 * n, 4 * idx, 4};
    /* Columns kept in one buffer, one after another (the bundled prover's LDE),
     * and a sibling in a tree whose layers share one buffer. */
    for (unsigned c = 0; c < 3; c++)
        out[k++] = (ga_pat_read_t){0xa000000000ull, 4 * 3 * n, 4 * (c * n + idx), 4};
    out[k++] = (ga_pat_read_t){0xb000000000ull, 64 * n, 4 * ((n + n / 2 + ((idx >> 2) ^ 1)) * 8), 4};
    for (unsigned l = 0; l < LAYERS; l++)
        out[k++] = (ga_pat_read_t){0x7000000000ull + 0x100000000ull * l, 32 * (n >> l),
                                   4 * (((idx >> l) ^ 1) * 8), 4};
    for (unsigned m = 0; m < FOLDS; m++) {
        uint64_t pair = (idx >> (m + 1)) & ~1ull & ((n >> (m + 1)) - 1);
        uint64_t base = 0x9000000000ull + 0x100000000ull * m, size = 4 * (n >> (m + 1));
        out[k++] = (ga_pat_read_t){base, size, 4 * pair, 4};
        out[k++] = (ga_pat_read_t){base, size, 4 * (pair | 1), 4};
    }
    return k;
}

static void learns_queries(unsigned skip)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    ga_pat_read_t q[64], pred[128];
    unsigned log_n = 16, len = 0;
    /* Watching begins `skip` reads into a query. */
    for (unsigned i = 0; i < GA_PAT_PERIODS + 2; i++) {
        len = query(next() & ((1u << log_n) - 1), log_n, q);
        for (unsigned k = i ? 0 : skip; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(p.period == len);
    CHECK(p.learned == len - 1);
    /* Five periods leave some one-bit ambiguities (a sibling's flip against a
     * clear, each 1 in 32): the first queries that contradict them fix them
     * (each query does with odds of 1 in 2), so from the twentieth on every
     * read is predicted (an ambiguity outlives 25 queries 1 time in 2^25). */
    unsigned right = 0, total = 0;
    for (unsigned t = 0; t < 40; t++) {
        len = query(next() & ((1u << log_n) - 1), log_n, q);
        unsigned got = ga_pat_predict(&p, &q[0], pred, 128);
        if (t >= 20) /* (before, a wrong transform may put a read outside its buffer) */
            CHECK(got == len);
        for (unsigned k = 0; k < got && k < len; k++) {
            bool ok = pred[k].base == q[k].base && pred[k].off == q[k].off && pred[k].n == q[k].n;
            right += ok, total++;
            if (t >= 20)
                CHECK(ok);
        }
        CHECK(ga_pat_predict(&p, &q[1], pred, 128) == 0); /* not the anchor */
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(right * 10 >= total * 9);
    ga_pat_forget(&p);
    CHECK(p.period == 0 && ga_pat_predict(&p, &q[0], pred, 128) == 0);
}

/* Learned from queries whose index had one bit always set (a sibling's flip
 * and a clear then agree), the pattern is corrected by the first query that
 * tells them apart, and predicts right from the next one on. */
static void corrects_itself(void)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    ga_pat_read_t q[64], pred[128];
    unsigned log_n = 16, len = 0;
    for (unsigned i = 0; i < GA_PAT_PERIODS + 2; i++) {
        len = query((next() & ((1u << log_n) - 1)) | 2, log_n, q); /* bit 1 set */
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(p.period == len);
    for (unsigned t = 0; t < 3; t++) { /* bit 1 clear: the ambiguity shows, and is fixed */
        len = query(next() & ((1u << log_n) - 1) & ~2u, log_n, q);
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    /* Other bits may still be ambiguous (1 in 32 each): fixed as they show. */
    for (unsigned t = 0; t < 40; t++) {
        len = query(next() & ((1u << log_n) - 1), log_n, q);
        unsigned got = ga_pat_predict(&p, &q[0], pred, 128);
        CHECK(t < 20 || got == len);
        for (unsigned k = 0; k < got && k < len; k++) {
            bool ok = pred[k].base == q[k].base && pred[k].off == q[k].off;
            CHECK(t < 20 || ok);
        }
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
}

/* The bundled prover's query (tests/apps/prover/prover.cu, at its default
 * size): its W columns in one buffer at c * N + pos, a Merkle path of 8-word
 * digests in one buffer holding every level, then in each FRI layer i the
 * pair j, j + half with j = pos & (half - 1) (a mask, not a shift) and that
 * layer's path from j: about 1,600 reads a query. */
enum { PV_LOG = 20, PV_W = 8, PV_LAYERS = 14, PV_READS = 1596 };
static unsigned path(uint64_t base, unsigned log_leaves, uint64_t idx, ga_pat_read_t *out)
{
    uint64_t off = 0, count = 1ull << log_leaves, size = 32 * (2 * count - 1);
    unsigned k = 0;
    for (unsigned l = 0; l < log_leaves; l++) {
        for (unsigned e = 0; e < 8; e++)
            out[k++] = (ga_pat_read_t){base, size, 4 * ((off + (idx ^ 1)) * 8 + e), 4};
        off += count, count >>= 1, idx >>= 1;
    }
    return k;
}

static unsigned prover_query(uint64_t pos, ga_pat_read_t *out)
{
    uint64_t n = 1ull << PV_LOG, idx = pos;
    unsigned k = 0;
    for (unsigned c = 0; c < PV_W; c++)
        out[k++] = (ga_pat_read_t){0x10000000000ull, 4 * PV_W * n, 4 * (c * n + pos), 4};
    k += path(0x20000000000ull, PV_LOG, pos, out + k);
    for (unsigned i = 0; i < PV_LAYERS; i++) {
        uint64_t half = (n >> i) / 2, j = idx & (half - 1);
        uint64_t codes = 0x30000000000ull + 0x100000000ull * i;
        out[k++] = (ga_pat_read_t){codes, 4 * 2 * half, 4 * j, 4};
        out[k++] = (ga_pat_read_t){codes, 4 * 2 * half, 4 * (j + half), 4};
        k += path(0x40000000000ull + 0x100000000ull * i, PV_LOG - i - 1, j, out + k);
        idx = j;
    }
    return k;
}

static void learns_the_prover(void)
{
    static ga_pattern_t p;
    static ga_pat_read_t q[PV_READS], pred[PV_READS];
    memset(&p, 0, sizeof p);
    unsigned len = 0, skip = (unsigned)(next() % PV_READS);
    for (unsigned i = 0; i < GA_PAT_PERIODS + 2; i++) {
        len = prover_query(next() & ((1u << PV_LOG) - 1), q);
        for (unsigned k = i ? 0 : skip; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(len == PV_READS);
    CHECK(p.period == len);
    CHECK(p.learned == len - 1);
    for (unsigned t = 0; t < 40; t++) {
        len = prover_query(next() & ((1u << PV_LOG) - 1), q);
        unsigned got = ga_pat_predict(&p, &q[0], pred, PV_READS);
        CHECK(t < 20 || got == len);
        for (unsigned k = 0; t >= 20 && k < got && k < len; k++)
            CHECK(pred[k].base == q[k].base && pred[k].off == q[k].off && pred[k].n == q[k].n);
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
}

/* A buffer the queries read is freed and another takes its place in them
 * (another address): the pattern falls out of step there period after
 * period, is forgotten, and is learned again with the new buffer. */
static void relearns_a_replaced_buffer(void)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    ga_pat_read_t q[64], pred[128];
    unsigned len = 0, moved = COLS + 3 + 1 + 4; /* a Merkle layer's buffer */
    for (unsigned t = 0; t < 2 * GA_PAT_PERIODS; t++) {
        len = query(next() & 0xffff, 16, q);
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(p.period == len);
    unsigned right_at = 0;
    for (unsigned t = 0; t < 60 && !right_at; t++) {
        len = query(next() & 0xffff, 16, q);
        q[moved].base += 0x80000000ull; /* the new buffer */
        unsigned got = ga_pat_predict(&p, &q[0], pred, 128);
        bool all = got == len;
        for (unsigned k = 0; all && k < len; k++)
            all = pred[k].base == q[k].base && pred[k].off == q[k].off;
        if (all)
            right_at = t + 1;
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
    }
    CHECK(p.lost == 1);
    CHECK(right_at > 0 && right_at <= 40);
}

/* A query phase after other reads (as tests/gpu/coalesce_test.cu runs it): a
 * long scan of one buffer, four buffers read in turn at unrelated places (no
 * function: learning fails), then the queries, learned all the same. */
static void learns_after_other_reads(void)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    ga_pat_read_t q[64], pred[128];
    for (unsigned i = 0; i < 20000; i++) {
        ga_pat_read_t r = {0x100000000ull, 1 << 20, 4 * (i % (1 << 18)), 4};
        ga_pat_note(&p, &r);
    }
    for (unsigned i = 0; i < 20000; i++) {
        ga_pat_read_t r = {0x200000000ull * (i % 4 + 1), 1 << 20, 4 * (next() % (1 << 18)), 4};
        ga_pat_note(&p, &r);
    }
    CHECK(p.period == 0);
    unsigned len = 0, learned_at = 0;
    for (unsigned t = 0; t < 40 && !learned_at; t++) {
        len = query(next() & 0xffff, 16, q);
        for (unsigned k = 0; k < len; k++)
            ga_pat_note(&p, &q[k]);
        if (p.period == len && ga_pat_predict(&p, &q[0], pred, 128) >= len / 2)
            learned_at = t + 1;
    }
    CHECK(learned_at && learned_at <= 2 * GA_PAT_PERIODS);
}

static void learns_nothing_from_noise(void)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    /* Random buffers and offsets: no period. */
    for (unsigned i = 0; i < 1000; i++) {
        ga_pat_read_t r = {0x100000000ull * (next() % 7 + 1), 1 << 20, 4 * (next() % (1 << 18)), 4};
        ga_pat_note(&p, &r);
    }
    CHECK(p.period == 0);
    /* One buffer read at random: one site, nothing to predict. */
    memset(&p, 0, sizeof p);
    for (unsigned i = 0; i < 1000; i++) {
        ga_pat_read_t r = {0x100000000ull, 1 << 20, 4 * (next() % (1 << 18)), 4};
        ga_pat_note(&p, &r);
    }
    CHECK(p.period == 0);
    /* Two buffers in turn, at unrelated random places: a period, no function. */
    memset(&p, 0, sizeof p);
    for (unsigned i = 0; i < 1000; i++) {
        ga_pat_read_t r = {0x100000000ull * (i % 2 + 1), 1 << 20, 4 * (next() % (1 << 18)), 4};
        ga_pat_note(&p, &r);
    }
    CHECK(p.period == 0);
}

static void stays_inside(void)
{
    static ga_pattern_t p;
    memset(&p, 0, sizeof p);
    /* The second read is at 2*i in a buffer half the size: beyond it for large i. */
    ga_pat_read_t pred[4];
    for (unsigned i = 0; i < 12; i++) {
        uint64_t idx = next() % 1000;
        ga_pat_read_t a = {0x100000000ull, 4000, 4 * idx, 4};
        ga_pat_read_t b = {0x200000000ull, 4000, 4 * (2 * idx), 4};
        ga_pat_note(&p, &a);
        ga_pat_note(&p, &b);
    }
    CHECK(p.period == 2);
    ga_pat_read_t lo = {0x100000000ull, 4000, 4 * 100, 4}, hi = {0x100000000ull, 4000, 4 * 900, 4};
    CHECK(ga_pat_predict(&p, &lo, pred, 4) == 2 && pred[1].off == 4 * 200);
    CHECK(ga_pat_predict(&p, &hi, pred, 4) == 1); /* 1800 words is past 1000 */
    ga_pat_read_t odd = {0x100000000ull, 4000, 4 * 100 + 2, 4}; /* unaligned: no index */
    CHECK(ga_pat_predict(&p, &odd, pred, 4) == 0);
}

int main(void)
{
    rng = (uint64_t)time(NULL) * 2654435761u | 1;
    printf("seed %llu\n", (unsigned long long)rng);
    for (unsigned skip = 0; skip < 40; skip += 7)
        learns_queries(skip);
    corrects_itself();
    learns_the_prover();
    relearns_a_replaced_buffer();
    learns_after_other_reads();
    learns_nothing_from_noise();
    stays_inside();
    return check_done("test_pattern");
}
