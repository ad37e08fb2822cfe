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
 * from which the others follow (the anchor: the query's first read), each
 * from the anchor or from an earlier read of the period (its parent) by
 *     j = (((((i & m) >> s) & ~c) ^ x) << u) + k   (c, x in {0, 1}, u <= 8),
 * with m all ones or, from the anchor, a low mask alone (a fold layer's
 * position, pos & (half - 1), in the bundled prover and FRI provers), or a
 * constant, where i and j are the element indices (offset / size) of the
 * parent and the read, proven on the earlier periods, and checked again on
 * every later period (a transform that a new period contradicts is fitted
 * anew on the latest periods, or dropped). Parents let a Merkle path be read
 * from a fold position (its sibling at ((j >> l) ^ 1)) and a digest's eight
 * words one after another. Then a miss at the anchor predicts the whole
 * query: where every learned read will be.
 *
 * Pure computation, no locking, no CUDA calls: the caller serializes (coalesce
 * holds its lock). Unit-tested (tests/unit/features/test_pattern.c). */
#ifndef GA_COALESCE_PATTERN_H
#define GA_COALESCE_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

/* The longest period learned (the bundled prover reads about 1,600 words a
 * query at its default size); periods watched before learning (each
 * transform is proven on all but the last of them: one ambiguous bit, such as
 * a sibling's flipped low bit, then fools the fit with odds of 1 in 32); the
 * history, a power of two holding that many of the longest periods. */
enum { GA_PAT_MAX = 2048, GA_PAT_PERIODS = 6, GA_PAT_HIST = 16384 };
_Static_assert(GA_PAT_HIST >= GA_PAT_PERIODS * GA_PAT_MAX && !(GA_PAT_HIST & (GA_PAT_HIST - 1)),
               "the history holds GA_PAT_PERIODS of the longest periods, a power of two");

/* One read: its allocation (base and size), offset in it, and length. */
typedef struct ga_pat_read {
    uint64_t base, alloc_size, off;
    uint32_t n;
} ga_pat_read_t;

/* How one read of the period follows from its parent's element index. */
typedef struct ga_pat_xform {
    bool known, constant;
    uint8_t m, s, c, x, u; /* m: bits of the low mask applied first, 0 for none */
    uint16_t parent;       /* the read of the period it follows from; 0: the anchor */
    uint64_t k;            /* the offset added; constant: the index itself */
} ga_pat_xform_t;

typedef struct ga_pattern {
    ga_pat_read_t hist[GA_PAT_HIST]; /* the last reads, a ring */
    unsigned hpos, hlen;
    unsigned period;                 /* 0: nothing learned */
    unsigned learned;                /* reads of the period that follow from the anchor */
    ga_pat_read_t slot[GA_PAT_MAX];  /* slot 0 is the anchor; offsets unused */
    ga_pat_xform_t xf[GA_PAT_MAX];
    ga_pat_xform_t trial[GA_PAT_MAX]; /* learning's scratch */
    uint64_t cur[GA_PAT_MAX];        /* this period's element indices by phase, as read
                                      * (UINT64_MAX: unaligned or not read yet) */
    uint64_t pidx[GA_PAT_MAX];       /* prediction's scratch: the predicted indices */
    unsigned since_try;              /* reads since the last attempt to learn */
    unsigned look_every;             /* reads between looks for a period (doubles while
                                      * none shows: a look costs up to GA_PAT_MAX steps) */
    unsigned same_run;               /* the newest reads at one site, in a row */
    unsigned fits;                   /* fits tried by the last learning */
    uint64_t debt;                   /* reads before learning is tried again */
    unsigned phase;                  /* reads since the last anchor (GA_PAT_MAX: out of step) */
    unsigned periods;                /* periods begun since learning (paces the refits of
                                      * unknown transforms) */
    unsigned lost_at, lost_count;    /* the read where the last periods fell out of step,
                                      * and in how many in a row */
    uint64_t attempts, successes;    /* learnings tried, and those that learned (reports) */
    uint64_t lost;                   /* patterns forgotten for falling out of step (reports) */
    uint64_t fits_total;             /* fits tried in all, learning and checking (reports) */
} ga_pattern_t;

/* A read that went to the device: remember it, and learn when a period shows. */
void ga_pat_note(ga_pattern_t *p, const ga_pat_read_t *r);

/* Was the read noted last the first of a period (where a query begins)? */
bool ga_pat_at_anchor(const ga_pattern_t *p);

/* If r is a read at the anchor of a learned pattern, fill out[] with the
 * reads the query will make (r itself first) and return how many (at most
 * max); else 0. Only reads that lie inside their allocation are returned.
 * Uses p's scratch: serialized with ga_pat_note like it. */
unsigned ga_pat_predict(ga_pattern_t *p, const ga_pat_read_t *r, ga_pat_read_t *out,
                        unsigned max);

/* Forget what was learned (the prediction kept failing), keep the history. */
void ga_pat_forget(ga_pattern_t *p);

#endif
