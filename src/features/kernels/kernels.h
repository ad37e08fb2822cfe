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

/* After the launch: `original` as the program named it; whether the
 * replacement was launched, and the driver's answer. */
void ga_kernels_launched(const ga_rt_t *rt, CUfunction original, bool was_swapped, CUresult r);

#endif
