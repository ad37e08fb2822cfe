/* pattern.h - learning a query phase's read pattern, to fetch a query's reads
 * together (coalesce's gathers).
 *
 * A STARK prover's query phase reads, per query, one word of each committed
 * column at the query's position, a sibling in each Merkle layer (the position
 * shifted right by the layer, the low bit flipped) and two neighbours in each
 * FRI fold layer (RISC Zero's get_at per layer, risc0/zkp/src/prove/fri.rs;
 * stwo's column openings). The buffers read repeat in the same order from one
 * query to the next, and every position is a function of the first one. The
 * learner watches the reads; once the sequence of (allocation, size) repeats
 * GA_PAT_PERIODS times with period P, it looks for the read of the period
 * from which most others follow, each by
 *     j = ((((i >> s) & ~c) ^ x) << u) + k      (c, x in {0, 1}, u <= 8),
 * or a constant, where i and j are the element indices (offset / size) of the
 * anchor and the other read, proven on the earlier periods, and checked
 * again on every later period (a transform that a new period contradicts is
 * fitted anew on the latest periods, or dropped). Then a miss
 * at the anchor predicts the whole query: where every learned read will be.
 *
 * Pure computation, no locking, no CUDA calls: the caller serializes (coalesce
 * holds its lock). Unit-tested (tests/unit/features/test_pattern.c). */
#ifndef GA_COALESCE_PATTERN_H
#define GA_COALESCE_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

/* The longest period learned; periods watched before learning (each
 * transform is proven on all but the last of them: one ambiguous bit, such as
 * a sibling's flipped low bit, then fools the fit with odds of 1 in 32). */
enum { GA_PAT_MAX = 128, GA_PAT_PERIODS = 6, GA_PAT_HIST = GA_PAT_PERIODS * GA_PAT_MAX };

/* One read: its allocation (base and size), offset in it, and length. */
typedef struct ga_pat_read {
    uint64_t base, alloc_size, off;
    uint32_t n;
} ga_pat_read_t;

/* How one read of the period follows from the anchor's element index. */
typedef struct ga_pat_xform {
    bool known, constant;
    uint8_t s, c, x, u;
    uint64_t k; /* the offset added; constant: the index itself */
} ga_pat_xform_t;

typedef struct ga_pattern {
    ga_pat_read_t hist[GA_PAT_HIST]; /* the last misses, a ring */
    unsigned hpos, hlen;
    unsigned period;                 /* 0: nothing learned */
    unsigned learned;                /* reads of the period that follow from the anchor */
    ga_pat_read_t slot[GA_PAT_MAX];  /* slot 0 is the anchor; offsets unused */
    ga_pat_xform_t xf[GA_PAT_MAX];
    ga_pat_xform_t trial[GA_PAT_MAX]; /* learning's scratch */
    unsigned since_try;              /* reads since the last attempt to learn */
    unsigned same_run;               /* the newest reads at one site, in a row */
    unsigned learn_wait;             /* looks that found a period since the last learning */
    unsigned backoff;                /* periods to wait before learning again (doubles on
                                      * each failure: a period that no function explains
                                      * is tried ever more rarely) */
    unsigned phase;                  /* reads since the last at the anchor's site */
    uint64_t anchor_index;           /* that read's element index */
} ga_pattern_t;

/* A read that went to the device: remember it, and learn when a period shows. */
void ga_pat_note(ga_pattern_t *p, const ga_pat_read_t *r);

/* If r is a read at the anchor of a learned pattern, fill out[] with the
 * reads the query will make (r itself first) and return how many (at most
 * max); else 0. Only reads that lie inside their allocation are returned. */
unsigned ga_pat_predict(const ga_pattern_t *p, const ga_pat_read_t *r, ga_pat_read_t *out,
                        unsigned max);

/* Forget what was learned (the prediction kept failing), keep the history. */
void ga_pat_forget(ga_pattern_t *p);

#endif
