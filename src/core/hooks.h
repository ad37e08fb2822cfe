/* hooks.h - the core's one way up: what the entry table and the runtime call
 * in the hooks layer. Declared here, in core, so that core includes nothing
 * above it; implemented in src/hooks/ (and doors.c for cuGetProcAddress).
 *
 * Hooked entry points: each hook has its entry points' own parameters,
 * preceded by the runtime and the entry id (so one hook serves the
 * _v2/_ptsz/_ptds variants of a family and knows which was called). A hook
 * returns exactly what the driver returned for the call it stands for.
 * entries.def's GA_HOOKED rows name them (ga_hook_<family>); by the file
 * that defines each (tools/gen-docs writes the list; make check compares):
 * begin: hooks
 *   core/doors.c      getproc4 getproc5
 *   hooks/copies.c    dtoh dtoh_async memcpy memcpy_async htod htod_async
 *   hooks/hostmem.c   host_alloc host_alloc_v2 host_free
 *   hooks/launch.c    launch launch_ex
 *   hooks/lifecycle.c stream_create stream_create_prio stream_destroy stream_attach
 *                     stream_set_attr module_unload library_unload ctx_destroy
 *                     primary_reset
 *   hooks/memory.c    alloc alloc_pitch free free_async meminfo addr_range ipc_get
 *                     range_export ipc_open alloc_async alloc_pool_async pool_set_attr
 *                     pool_get_attr
 *   hooks/modules.c   module_load module_load_ex module_load_fatbin library_load
 *   hooks/sync.c      stream_sync stream_query ctx_sync ctx_sync_v2 event_sync
 *                     capture_begin capture_begin_v1 capture_begin_graph capture_end
 * end: hooks */
#ifndef GA_HOOKS_H
#define GA_HOOKS_H

#include "core/runtime.h"

#define GA_ENTRY(name, cls, pt, stream, params, args)
#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams) CUresult ga_hook_##fam hparams;
#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED

/* Start the features for rt (once, from init, before rt is published):
 * switch off, with a warning, each one this driver is too old for, build the
 * dispatch, and set rt->track, epochs, calls and per_call (hooks/dispatch.c). */
void ga_hooks_start(ga_rt_t *rt);

/* At exit: the features' files and reports. */
void ga_hooks_exit(void);

/* Every stateful module's fork handlers, in lock order; returns how many. */
unsigned ga_hooks_fork_ops(const ga_fork_ops_t **out, unsigned max);

/* Around every intercepted call, when rt->calls. */
void ga_hooks_call_enter(void);
void ga_hooks_call_leave(void);

/* Around a plain entry point's driver call, when rt->per_call: s is its
 * stream (GA_NOSTREAM: none), writes whether it may write device memory, maps
 * whether it may also map or unmap memory (its class in entries.def). */
void ga_hooks_plain_before(const ga_rt_t *rt, bool writes, bool maps, CUstream s);
void ga_hooks_plain_after(const ga_rt_t *rt, CUresult r, CUstream s, bool pt, bool writes,
                          bool maps);

/* Before every intercepted call, when rt->gated: false to go on (*token for
 * ga_hooks_gate_done after the call); true when the call is answered with *r
 * and the driver is not called (a feature's owed wait failed). */
bool ga_hooks_gate(const ga_rt_t *rt, ga_id_t id, CUresult *r, unsigned *token);
void ga_hooks_gate_done(const ga_rt_t *rt, ga_id_t id, unsigned token);

/* A driver call timed by stats.c. */
void ga_hooks_span(ga_id_t id, uint64_t t0, uint64_t t1);

#endif
