/* coalesce.h - small device-to-host reads served from windows
 * (GPUACCEL_COALESCE). The hooks themselves are declared in hooks.h. */
#ifndef GA_COALESCE_H
#define GA_COALESCE_H

#include "core/runtime.h"

/* Taken just before the driver's sync call: which window fills it will cover
 * (those whose copies were enqueued by then, in any thread). */
uint64_t ga_coalesce_sync_begins(const ga_rt_t *rt);

/* The program synchronized stream h (pt: through a per-thread entry point), or
 * the whole of context ctx, in a sync that began at `began`: install the
 * window fills enqueued on it before then, if they are still good. */
void ga_coalesce_stream_synced(const ga_rt_t *rt, CUstream h, bool pt, uint64_t began);
void ga_coalesce_ctx_synced(const ga_rt_t *rt, CUcontext ctx, uint64_t began);

/* Memory another process may write (IPC exported or imported): never cached. */
void ga_coalesce_note_shared(CUdeviceptr base);

void ga_coalesce_ctx_gone(CUcontext ctx);

/* Stream h was destroyed (its tracker record not yet forgotten). */
void ga_coalesce_stream_gone(const ga_rt_t *rt, CUstream h);

typedef struct ga_coalesce_stats {
    uint64_t hits, misses, fills, fill_bytes;
} ga_coalesce_stats_t;
void ga_coalesce_stats(ga_coalesce_stats_t *s);
void ga_coalesce_report(void);

extern const ga_fork_ops_t ga_coalesce_fork;

#endif
