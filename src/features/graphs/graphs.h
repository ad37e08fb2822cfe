/* graphs.h - repeated launch sequences replayed as CUDA graphs (GPUACCEL_GRAPHS). */
#ifndef GA_GRAPHS_H
#define GA_GRAPHS_H

#include <stdatomic.h>

#include "core/runtime.h"

/* True while launches are held: every flush point must call ga_graphs_flush. */
extern _Atomic bool ga_graphs_held;

typedef enum {
    GA_GRAPH_LAUNCH, /* launch it now, as the program asked */
    GA_GRAPH_HELD,   /* held (or replayed as part of a graph): it is taken care of */
} ga_graph_verdict_t;

/* Before a launch: hold it as part of a known sequence, or not. */
ga_graph_verdict_t ga_graphs_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                                    const unsigned block[3], unsigned shmem, CUstream s,
                                    bool per_thread, void **kernelParams, void **extra);

/* A flush point: issue held launches (learning is the sequence detector's:
 * tracking/sequence.h). */
void ga_graphs_flush(const ga_rt_t *rt);

void ga_graphs_init(const ga_rt_t *rt);
void ga_graphs_unload(const ga_rt_t *rt, const void *owner);
void ga_graphs_ctx_gone(const ga_rt_t *rt, CUcontext ctx);

typedef struct ga_graphs_stats {
    uint64_t segments, built, replays, fallbacks, fallback_mismatch, fallback_flush,
        fallback_timeout, long_skipped;
} ga_graphs_stats_t;
void ga_graphs_stats(ga_graphs_stats_t *s);

#endif
