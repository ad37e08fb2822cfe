/* table.h - a replacement table's text, parsed (table.c): the library reads
 * its shipped table and GPUACCEL_KERNELS_EXTRA's with it, and `gpuaccel
 * kernels list --program` the same tables, so both read a row alike. Needs
 * no driver: the command links it. */
#ifndef GA_KERNELS_TABLE_H
#define GA_KERNELS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse a replacement table: one rule per line, "<original> <replacement>
 * grid=program|grid=any code=<16 hex digits>... writes=P:Q*S..." (at most
 * GA_KERNELS_MAX_CODES code words; a rule with none is well formed and never
 * applies; at most GA_KERNELS_MAX_WRITES writes words: parameter P is a
 * pointer to memory the kernel writes, parameter Q's value times S bytes of
 * it, for GPUACCEL_KERNELS_VERIFY), '#' comments. Calls add() per good
 * rule, warns with the line number for a bad one; returns the number of good
 * rules (-1: no memory). */
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
