/* tuner.h - the tuner (GPUACCEL_TUNER=FILE): see tuner.c. */
#ifndef GA_TUNER_H
#define GA_TUNER_H

#include "core/runtime.h"

void ga_tuner_init(const ga_rt_t *rt);

/* The program's allocations, tracked so they can be restored. */
void ga_tuner_alloc(const ga_rt_t *rt, CUdeviceptr p, size_t size);
void ga_tuner_free(CUdeviceptr p); /* device or page-locked (tuner_host_free_done) */

/* Before a launch the program asked for (after kernels and tune are off): may run
 * the experiment for this configuration, leaving the program's memory as it was. */
void ga_tuner_before_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shmem, CUstream s, void **params,
                            void **extra);

/* Around every intercepted call while the tuner runs (wrappers.c). */
void ga_tuner_enter(void);
void ga_tuner_leave(void);

/* Write the table (at exit). */
void ga_tuner_write(void);


#endif
