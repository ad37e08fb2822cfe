/* kernels.h - replacement kernels (GPUACCEL_KERNELS): see kernels.c. */
#ifndef GA_KERNELS_H
#define GA_KERNELS_H

#include "core/runtime.h"
#include "features/kernels/table.h"

/* Read the shipped table and GPUACCEL_KERNELS_EXTRA (once, at init). */
void ga_kernels_init(const ga_rt_t *rt);

/* Before a launch: replace *f (and, for grid=any replacements, grid and
 * block) when a verified replacement exists. True if it did. */
bool ga_kernels_choose(const ga_rt_t *rt, CUfunction *f, unsigned grid[3], unsigned block[3],
                    unsigned shmem);

/* After a launch of the replacement: `original` as the program named it, and
 * the driver's answer (an error retires the replacement). */
void ga_kernels_launched(const ga_rt_t *rt, CUfunction original, CUresult r);

#endif
