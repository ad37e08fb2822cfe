/* pool.h - the block cache behind cuMemAlloc/cuMemFree (GPUACCEL_POOL).
 * The feature is its descriptor, ga_feature_pool (features/feature.h); this is
 * what tests and reports read of it. */
#ifndef GA_POOL_H
#define GA_POOL_H

#include "core/runtime.h"

/* Size classes: 256 B, then 8 per power of two. -1 for requests too large to
 * cache (2^48 bytes and up). */
int ga_pool_class(size_t bytes);
size_t ga_pool_class_bytes(int cls);

/* The context is gone and the driver freed its memory: forget its blocks. */
void ga_pool_ctx_gone(CUcontext ctx);

/* A stream was created: it waits for the fences of blocks handed out early. */
void ga_pool_stream_created(const ga_rt_t *rt, CUstream s);

typedef struct ga_pool_stats {
    uint64_t hits, early, misses, trims, releases;
    size_t cached_bytes;
} ga_pool_stats_t;
void ga_pool_stats(ga_pool_stats_t *s);

#endif
