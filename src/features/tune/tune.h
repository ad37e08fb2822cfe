/* tune.h - launch configurations rewritten from a verified table (GPUACCEL_TUNE).
 *
 * Table format (GPUACCEL_TUNE_TABLE, and the tuner's output), one entry a line,
 * '#' starts a comment:
 *
 *   <mangled name> <device> <grid> <block> <shmem> -> <grid'> <block'> <kind>
 *
 * device  sm_XY (compute capability X.Y) or * (any device)
 * grid, block  x,y,z (or x for x,1,1)
 * kind    threads: a bounds-checked 1-D kernel; grid' must be ceil(grid*block/block')
 *         stride:  a grid-stride kernel; any grid' and block'
 * Entries come from the tuner, which proves each one bit-identical on a real
 * launch before writing it. */
#ifndef GA_TUNE_H
#define GA_TUNE_H

#include "core/runtime.h"

typedef struct ga_tune_entry {
    const char *name;
    int cc;             /* compute capability as 10*major+minor; 0: any device */
    unsigned grid[3], block[3], shmem;
    unsigned new_grid[3], new_block[3];
    bool stride;        /* kind: stride (else threads) */
} ga_tune_entry_t;

/* Parse a table; add() gets every valid entry (strings valid during the
 * call). A malformed line is reported with its line number and skipped.
 * Returns the number of valid entries, -1 without memory. */
typedef void (*ga_tune_entry_fn)(void *arg, const ga_tune_entry_t *e);
int ga_tune_parse(const char *text, size_t len, const char *source_name, ga_tune_entry_fn add,
                  void *arg);

/* Write one entry as a table line (no newline); returns its length. */
int ga_tune_format(const ga_tune_entry_t *e, char *out, size_t cap);

void ga_tune_init(const ga_rt_t *rt);

/* Before a launch of f: rewrite grid and block from the table. True if it did. */
bool ga_tune_choose(const ga_rt_t *rt, CUfunction f, unsigned grid[3], unsigned block[3],
                    unsigned shmem);


#endif
