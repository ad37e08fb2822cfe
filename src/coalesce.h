/* coalesce.h - small device-to-host reads served from windows
 * (GPUACCEL_COALESCE). The hooks themselves are declared in hooks.h. */
#ifndef GA_COALESCE_H
#define GA_COALESCE_H

#include "runtime.h"

/* The program synchronized stream h (pt: through a per-thread entry point; or,
 * with all, the whole context): install the window fills enqueued on it if
 * they are still good. */
void ga_coalesce_stream_synced(const ga_rt_t *rt, CUstream h, bool pt, bool all);

/* Memory another process may write (IPC exported or imported): never cached. */
void ga_coalesce_note_shared(CUdeviceptr base);

void ga_coalesce_ctx_gone(CUcontext ctx);

typedef struct ga_coalesce_stats {
    uint64_t hits, misses, fills, fill_bytes;
} ga_coalesce_stats_t;
void ga_coalesce_stats(ga_coalesce_stats_t *s);
void ga_coalesce_report(void);

extern const ga_fork_ops_t ga_coalesce_fork;

#endif
