/* coalesce.h - small device-to-host reads served from windows
 * (GPUACCEL_COALESCE): what tests and reports read of it. The feature itself
 * is its descriptor, ga_feature_coalesce (features/feature.h). */
#ifndef GA_COALESCE_H
#define GA_COALESCE_H

#include "core/runtime.h"

/* Memory another process may write (IPC exported or imported): never cached. */
void ga_coalesce_note_shared(CUdeviceptr base);

typedef struct ga_coalesce_stats {
    uint64_t hits, misses, fills, fill_bytes, mirrors, mirror_bytes;
    uint64_t gathers, gathered, gather_hits; /* gathers made, reads they fetched, served */
    uint64_t learn_tries, learned, fits, forgotten; /* the read-pattern learner (pattern.h) */
    uint64_t idle_syncs; /* synchronizations answered: their context had nothing in flight */
    uint64_t kept;       /* large copies not made: the slot they needed held one read more */
} ga_coalesce_stats_t;
void ga_coalesce_stats(ga_coalesce_stats_t *s);

/* For tests: set the cost model (a fill's round trip, large fills' bandwidth)
 * and, with frozen, stop measuring it. */
void ga_coalesce_set_model(uint64_t rtt_ns, uint64_t bw_bytes_per_us, bool frozen);

#endif
