/* kernels.h - replacement kernels (GPUACCEL_KERNELS): see kernels.c. */
#ifndef GA_KERNELS_H
#define GA_KERNELS_H

#include "core/runtime.h"

/* Read the shipped table and GPUACCEL_KERNELS_EXTRA (once, at init). */
void ga_kernels_init(const ga_rt_t *rt);

/* Before a launch: replace *f (and, for grid=any replacements, grid and
 * block) when a verified replacement exists. True if it did. */
bool ga_kernels_choose(const ga_rt_t *rt, CUfunction *f, unsigned grid[3], unsigned block[3],
                    unsigned shmem);

/* After the launch: `original` as the program named it; whether the
 * replacement was launched, and the driver's answer. */
void ga_kernels_launched(const ga_rt_t *rt, CUfunction original, bool was_swapped, CUresult r);

/* Parse a replacement table: one rule per line, "<original> <replacement>
 * grid=program|grid=any code=<16 hex digits>... writes=P:Q*S..." (at most
 * GA_KERNELS_MAX_CODES code words; a rule with none is well formed and never
 * applies; at most GA_KERNELS_MAX_WRITES writes words: parameter P is a
 * pointer to memory the kernel writes, parameter Q's value times S bytes of
 * it, for GPUACCEL_KERNELS_VERIFY), '#' comments. Calls add() per good rule, warns with the line number for a bad
 * one; returns the number of good rules (-1: no memory). Exposed for tests and
 * the fuzzer. */
enum { GA_KERNELS_MAX_CODES = 16, GA_KERNELS_MAX_WRITES = 4 };
typedef struct ga_kernels_write {
    unsigned ptr, count; /* parameter indices */
    uint32_t scale;      /* bytes per unit of count */
} ga_kernels_write_t;
typedef struct ga_kernels_rule {
    const char *original, *replacement;
    bool any_grid;
    const uint64_t *codes; /* the code identities (tracking/codeid.h) it was verified against */
    unsigned ncodes;
    const ga_kernels_write_t *writes; /* what it writes, for the shadow check */
    unsigned nwrites;
} ga_kernels_rule_t;
typedef void (*ga_kernels_rule_fn)(void *arg, const ga_kernels_rule_t *rule);
int ga_kernels_parse_table(const char *text, size_t len, const char *source_name,
                        ga_kernels_rule_fn add, void *arg);


#endif
