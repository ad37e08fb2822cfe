/* streams.h - what the library knows about streams, device writes and
 * completion, shared by pool, coalesce and graphs.
 *
 *  - The write epoch: a counter bumped by every call that can write device
 *    memory (default-deny: any entry point not known to be read-only).
 *  - The stream tracker: per context, every stream seen, whether it is
 *    non-blocking, and whether work was enqueued since it was last known idle.
 *  - Fences: events on the legacy stream and on every busy non-blocking stream;
 *    once all have completed, everything enqueued before the fence is done
 *    (and those streams are known idle). On an idle context a fence is empty. */
#ifndef GA_STREAMS_H
#define GA_STREAMS_H

#include <stdatomic.h>

#include "core/fault.h"
#include "tracking/capture.h"
#include "tracking/device.h"
#include "core/runtime.h"

extern _Atomic uint64_t ga_epoch;
extern _Atomic uint64_t ga_work_seq; /* calls that enqueued work on any stream */
/* Calls that may map or unmap memory: every call that writes memory but a
 * launch or a copy, which map none (memkind.c's cache of host ranges lives
 * across them). Moved while ga_map_epoch_kept. */
extern _Atomic uint64_t ga_map_epoch;

static inline void ga_epoch_bump(void)
{
    atomic_fetch_add_explicit(&ga_epoch, 1, memory_order_acq_rel);
}

static inline void ga_map_epoch_bump(void)
{
    atomic_fetch_add_explicit(&ga_map_epoch, 1, memory_order_acq_rel);
}

/* Whether the map epoch moves: epochs kept (coalescing) or streams tracked
 * (the copy hooks ask memkind.c about a read's destination). */
static inline bool ga_map_epoch_kept(const ga_rt_t *rt)
{
    return rt->epochs || rt->track;
}

static inline uint64_t ga_map_epoch_read(void)
{
    return atomic_load_explicit(&ga_map_epoch, memory_order_acquire);
}

static inline uint64_t ga_epoch_read(void)
{
    return atomic_load_explicit(&ga_epoch, memory_order_acquire);
}

static inline uint64_t ga_work_seq_read(void)
{
    return atomic_load_explicit(&ga_work_seq, memory_order_acquire);
}

/* A process-wide order of events, for telling what was enqueued before a
 * wait began: next() when enqueuing, now() just before the wait. */
extern _Atomic uint64_t ga_order;
static inline uint64_t ga_order_next(void)
{
    return atomic_fetch_add(&ga_order, 1) + 1;
}
static inline uint64_t ga_order_now(void)
{
    return atomic_load(&ga_order);
}

typedef struct ga_stream ga_stream_t;

void ga_stream_note_work(const ga_rt_t *rt, CUstream h, bool per_thread);

/* Around a call that enqueues work on stream `s` (GA_NOSTREAM: none) and may
 * write device memory. The bump before the call stops readers trusting data
 * it may overwrite; the one after invalidates anything a reader filled while
 * the call was being enqueued, before its stream was marked busy. Nothing is
 * kept when no feature reads it (rt->epochs, rt->track). */
static inline void ga_writes_bump(const ga_rt_t *rt, bool writes, bool maps)
{
    if (rt->epochs && writes)
        ga_epoch_bump();
    if (writes && maps && ga_map_epoch_kept(rt))
        ga_map_epoch_bump();
}

static inline void ga_work_end_as(const ga_rt_t *rt, CUresult r, CUstream s, bool per_thread,
                                  bool writes, bool maps)
{
    if (!rt->track)
        return;
    if (s != GA_NOSTREAM && r == CUDA_SUCCESS)
        ga_stream_note_work(rt, s, per_thread);
    ga_writes_bump(rt, writes, maps);
}

/* A call that may write memory may also map or unmap it (default-deny). */
static inline void ga_work_begin(const ga_rt_t *rt, bool writes)
{
    ga_writes_bump(rt, writes, true);
}

static inline void ga_work_end(const ga_rt_t *rt, CUresult r, CUstream s, bool per_thread,
                               bool writes)
{
    ga_work_end_as(rt, r, s, per_thread, writes, true);
}

/* The driver's page-locked allocation (cuMemAllocHost when `legacy`, else
 * cuMemHostAlloc with `flags`) and free, with the epochs moved around them:
 * they map and unmap memory, and a free waits for the device. The one way the
 * hooks and the pinned cache make these calls; a block the cache hands out or
 * takes back moves no epoch. */
CUresult ga_host_alloc_driver(const ga_rt_t *rt, void **pp, size_t bytes, bool legacy,
                              unsigned flags);
CUresult ga_host_free_driver(const ga_rt_t *rt, void *p);

/* The same for device memory: the driver's cuMemAlloc (entry point `id`, the
 * program's or the pool's) and cuMemFree. The one way the hooks and the pool
 * make these calls; a block the pool hands out or takes back maps nothing and
 * writes nothing, and moves no epoch (four atomic increments on the shared
 * counters were most of what every feature on added to a served
 * cuMemAlloc/cuMemFree pair). */
CUresult ga_dev_alloc_driver(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytes);
CUresult ga_dev_free_driver(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr);

/* The same around a launch or a copy: it writes memory and maps none, so the
 * map epoch stands. */
static inline void ga_data_begin(const ga_rt_t *rt)
{
    ga_writes_bump(rt, true, false);
}

static inline void ga_data_end(const ga_rt_t *rt, CUresult r, CUstream s, bool per_thread)
{
    ga_work_end_as(rt, r, s, per_thread, true, false);
}

/* The tracker's record for a stream as the program named it (NULL, the legacy
 * or per-thread handles, or a created stream), in the current context. NULL if
 * the handle is unusable (no context, or the driver rejects it). */
ga_stream_t *ga_stream_get(const ga_rt_t *rt, CUstream h, bool per_thread);

/* The record of created stream h if the tracker has one; never asks the
 * driver (h may already be destroyed). */
ga_stream_t *ga_stream_lookup(CUstream h);


/* Around a call that waits for a stream: take the mark before, and after the
 * call succeeded declare everything enqueued before the mark finished. Both
 * do nothing when no feature reads the tracker. */
typedef struct ga_stream_mark {
    ga_stream_t *st;
    uint64_t work;
} ga_stream_mark_t;
ga_stream_mark_t ga_stream_mark(const ga_rt_t *rt, CUstream h, bool per_thread);
void ga_stream_mark_idle(ga_stream_mark_t m);

/* Same for a whole context (cuCtxSynchronize): marks every stream of `ctx`. */
typedef struct ga_ctx_mark {
    CUcontext ctx;
    unsigned n;
    ga_stream_mark_t *marks;
} ga_ctx_mark_t;
ga_ctx_mark_t ga_ctx_mark(const ga_rt_t *rt, CUcontext ctx);
void ga_ctx_mark_idle(ga_ctx_mark_t *m, bool succeeded);

bool ga_stream_busy(const ga_stream_t *st);

/* The library's own copy enqueued on st (a window fill behind the program's
 * read): counted on the stream alone, not in ga_work_seq (which the fill reads
 * to tell whether the program issued anything since). Returns the count that
 * says it finished: ga_stream_done(st, that) once any successful wait that
 * began after it marked the stream idle, whoever waited (the program, a
 * deferred synchronization paid later, a fence). */
uint64_t ga_stream_note_own(ga_stream_t *st);
bool ga_stream_done(const ga_stream_t *st, uint64_t work);
bool ga_stream_nonblocking(const ga_stream_t *st);

/* The non-blocking streams of `ctx` (up to max; returns how many there are).
 * Call between ga_stream_use_begin/end to use the handles. */
unsigned ga_ctx_nonblocking(CUcontext ctx, CUstream *out, unsigned max);

/* How many contexts the tracker has seen streams of (counting stops at 2). */
unsigned ga_streams_contexts(void);

/* Is every known stream of `ctx` idle? */
bool ga_ctx_idle(CUcontext ctx);

/* Is the context of the stream the program named (the current one for the
 * default streams; GA_NOSTREAM: the current context) one with nothing in
 * flight that the tracker knows of? False for a handle it does not know. */
bool ga_stream_ctx_idle(const ga_rt_t *rt, CUstream h, bool per_thread);

/* Ask the driver about every busy stream of `ctx` (the current context) and
 * mark those that finished idle. True if all are idle now. */
bool ga_ctx_settle(const ga_rt_t *rt, CUcontext ctx);

/* The same before a copy on stream `own` (its tracker record; legacy: it is
 * the legacy default stream) whose data is to be kept: true if no stream the
 * copy does not wait for has work in flight (asked of the driver, as above).
 * Asked only after the copy, a kernel of another stream that wrote the
 * memory after the copy read it and ended before the question would leave a
 * stale copy kept. */
bool ga_ctx_settle_for(const ga_rt_t *rt, CUcontext ctx, const ga_stream_t *own, bool legacy);

/* Around the library's own calls on the program's streams (shared), and around
 * the program's cuStreamDestroy (exclusive): the driver need not survive a
 * call on a destroyed stream. */
void ga_stream_use_begin(void);
void ga_stream_use_end(void);
void ga_stream_destroy_begin(void);
void ga_stream_destroy_end(void);

/* Before the program destroys a stream: keep its queued work covered. False
 * when that cannot be done now (a capture is open and the stream is a busy
 * non-blocking one): after the destroy, bury the record instead of forgetting
 * it, and its context counts as busy until a context synchronization. */
bool ga_stream_outlive(const ga_rt_t *rt, CUstream h);

/* Forget a destroyed stream, or every stream of a destroyed context. */
void ga_stream_forget(CUstream h);
void ga_stream_bury(CUstream h);
void ga_ctx_forget(CUcontext ctx);



/* True while the library must not answer a call itself: under stream capture
 * (the call must reach the graph) or after a sticky error (the driver's error
 * must reach the program). */
static inline bool ga_serving_off(void)
{
    return ga_capture_active() || ga_faulted();
}

typedef struct ga_fence {
    CUcontext ctx;
    unsigned n;                /* events not yet seen complete */
    CUevent *ev;               /* NULL with n == 0: the context was idle */
    unsigned nmarks;
    ga_stream_mark_t *marks;   /* the busy streams the events cover */
    /* When event 0 (the legacy stream's) was recorded, on a process-wide
     * clock that ticks as each such record returns: read before the record
     * (rec_begin) and ticked after it (rec_end). */
    uint64_t rec_begin, rec_end;
} ga_fence_t;

/* Record a fence in `ctx`, which the caller has made current (none at all
 * when the tracker knows every stream of it idle). The caller passes the
 * context it already holds: asking the driver again costs a call on the
 * pool's free path. False if events could not be recorded (the caller must
 * then treat the fence as never complete). */
bool ga_fence_init(const ga_rt_t *rt, CUcontext ctx, ga_fence_t *f);
/* The same when every stream of `ctx` is idle, else false with `f` untouched:
 * never calls the driver, so it may be called under another module's lock
 * (the pool's, taken before this module's: the fork handlers' order). */
bool ga_fence_idle(CUcontext ctx, ga_fence_t *f);
/* True once every event has completed; errors count as not complete. */
bool ga_fence_done(const ga_rt_t *rt, ga_fence_t *f);
void ga_fence_release(const ga_rt_t *rt, ga_fence_t *f);

/* A fence that waits on nothing and holds nothing (recorded while every
 * stream of its context was idle): done, with nothing to release, known
 * without a call. */
static inline bool ga_fence_empty(const ga_fence_t *f)
{
    return f->n == 0 && f->nmarks == 0 && !f->ev && !f->marks;
}

/* True when `later` completing implies `earlier` complete, known without
 * asking the driver: both of one context, `earlier` waits only on its legacy
 * stream event, and that record returned before `later`'s legacy record began
 * (the legacy stream runs its work in order). `later` must still hold its
 * event 0 (n > 0). Why: a query that finds an event newly completed costs the
 * driver 1.5-1.7 us on an H200 (bench/probes/evprobe.c), per event. */
static inline bool ga_fence_implies(const ga_fence_t *later, const ga_fence_t *earlier)
{
    return later->ctx == earlier->ctx && later->n > 0 && earlier->n == 1 &&
           earlier->rec_end != 0 && earlier->rec_end <= later->rec_begin;
}
/* Forget a fence whose context is gone (its events went with it). */
void ga_fence_drop(ga_fence_t *f);


extern const ga_fork_ops_t ga_streams_fork;

#endif
