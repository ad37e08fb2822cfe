/* hooks.h - the feature hooks that entries.def routes hooked entry points to.
 *
 * Each hook has its entry points' own parameters, preceded by the runtime and
 * the entry id (so one hook serves the _v2/_ptsz/_ptds variants of a family and
 * knows which was called). A hook returns exactly what the driver returned for
 * the call it stands for. Which module implements which hook:
 *   doors.c      getproc4 getproc5
 *   lifecycle.c  stream_create stream_create_prio stream_destroy module_unload
 *                library_unload ctx_destroy primary_reset
 *   sync.c       stream_sync stream_query ctx_sync ctx_sync_v2 event_sync
 *                capture_begin capture_begin_v1 capture_begin_graph capture_end
 *   pool.c       alloc alloc_pitch free free_async meminfo addr_range ipc_get
 *   coalesce.c   dtoh dtoh_async memcpy memcpy_async
 *   launch.c     launch launch_ex */
#ifndef GA_HOOKS_H
#define GA_HOOKS_H

#include "core/runtime.h"

#define GA_ENTRY(name, cls, pt, stream, params, args)
#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams) CUresult ga_hook_##fam hparams;
#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED

#endif
