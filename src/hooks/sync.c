/* sync.c - hooks for calls that wait for the device: a feature may answer a
 * synchronization without the wait (sync: it owes the wait, and pays it at
 * the next call that could observe the device, through the gate); otherwise
 * they flush whatever the library holds back, then tell the stream tracker
 * what is now known idle. */
#include "core/hooks.h"
#include "hooks/dispatch.h"
#include "tracking/streams.h"

/* Taken just before the driver's wait: what the features enqueued by then
 * (in any thread) the wait covers. Read only when someone asks. */
static uint64_t sync_begins(void)
{
    return ga_dispatch.n_synced ? ga_order_now() : 0;
}

static CUresult waited(CUresult r, ga_stream_mark_t m)
{
    if (r == CUDA_SUCCESS)
        ga_stream_mark_idle(m);
    return r;
}

/* A wait for one stream (synchronize, or a query that finds it done): what
 * features hold goes first, and on success the stream is known idle. */
static CUresult stream_wait(const ga_rt_t *rt, ga_id_t id, CUstream h,
                            CUresult (*call)(CUstream))
{
    bool pt = ga_entries[id].per_thread;
    ga_flush(rt, GA_FLUSH_STREAM, h);
    ga_stream_mark_t m = ga_stream_mark(rt, h, pt);
    uint64_t began = sync_begins();
    CUresult r = waited(call(h), m);
    if (r == CUDA_SUCCESS) /* everything on it finished */
        GA_EACH(synced, rt, h, pt, NULL, began);
    return r;
}

/* A synchronization is a flush point whoever answers it: what features hold
 * goes out first, so a launch sequence ends where the program's wait is, also
 * when a feature defers or answers the wait (graphs then see the same
 * sequences as without it). */
CUresult ga_hook_stream_sync(const ga_rt_t *rt, ga_id_t id, CUstream hStream)
{
    CUresult r;
    ga_flush(rt, GA_FLUSH_STREAM, hStream);
    if (GA_SERVE(sync, rt, hStream, ga_entries[id].per_thread, &r))
        return r;
    return stream_wait(rt, id, hStream, GA_REAL(rt, id, cuStreamSynchronize));
}

CUresult ga_hook_stream_query(const ga_rt_t *rt, ga_id_t id, CUstream hStream)
{
    return stream_wait(rt, id, hStream, GA_REAL(rt, id, cuStreamQuery));
}

static ga_ctx_mark_t begin_ctx_wait(const ga_rt_t *rt, CUcontext ctx)
{
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    return ga_ctx_mark(rt, ctx);
}

CUresult ga_hook_ctx_sync(const ga_rt_t *rt, ga_id_t id)
{
    CUresult r0;
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    if (GA_SERVE(sync, rt, GA_NOSTREAM, false, &r0))
        return r0;
    CUcontext cur = ga_current_ctx(rt);
    ga_ctx_mark_t m = begin_ctx_wait(rt, cur);
    uint64_t began = sync_begins();
    CUresult r = GA_REAL(rt, id, cuCtxSynchronize)();
    ga_ctx_mark_idle(&m, r == CUDA_SUCCESS);
    if (r == CUDA_SUCCESS && cur)
        GA_EACH(synced, rt, GA_NOSTREAM, false, cur, began);
    return r;
}

CUresult ga_hook_ctx_sync_v2(const ga_rt_t *rt, ga_id_t id, CUcontext ctx)
{
    CUcontext cur = ga_current_ctx(rt);
    CUresult r0; /* cudart 13 names the current context */
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    if ((!ctx || ctx == cur) && GA_SERVE(sync, rt, GA_NOSTREAM, false, &r0))
        return r0;
    ga_ctx_mark_t m = begin_ctx_wait(rt, ctx ? ctx : cur);
    uint64_t began = sync_begins();
    CUresult r = GA_REAL(rt, id, cuCtxSynchronize_v2)(ctx);
    ga_ctx_mark_idle(&m, r == CUDA_SUCCESS);
    if (r == CUDA_SUCCESS && cur && (!ctx || ctx == cur))
        GA_EACH(synced, rt, GA_NOSTREAM, false, cur, began);
    return r;
}

CUresult ga_hook_event_sync(const ga_rt_t *rt, ga_id_t id, CUevent hEvent)
{
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    return GA_REAL(rt, id, cuEventSynchronize)(hEvent);
}

/* Stream capture (capture.h): the capture is counted and every stretch of
 * the library's own unsafe calls has left before the driver begins it; what
 * the library holds back goes out first, so the capture starts where the
 * program's stream order says. */
static CUresult begin_capture(const ga_rt_t *rt, ga_id_t id, CUstream h, CUresult r)
{
    if (r == CUDA_SUCCESS) {
        ga_epoch_bump(); /* what was read before the capture is not what a replay reads */
        atomic_fetch_add(&ga_work_seq, 1);
    }
    ga_capture_opened(rt, h, ga_entries[id].per_thread, r);
    return r;
}

static void open_capture(const ga_rt_t *rt)
{
    ga_capture_opening();
    ga_flush(rt, GA_FLUSH_ALL, NULL);
}

CUresult ga_hook_capture_begin(const ga_rt_t *rt, ga_id_t id, CUstream hStream,
                               CUstreamCaptureMode mode)
{
    open_capture(rt);
    return begin_capture(rt, id, hStream,
                         GA_REAL(rt, id, cuStreamBeginCapture_v2)(hStream, mode));
}

CUresult ga_hook_capture_begin_v1(const ga_rt_t *rt, ga_id_t id, CUstream hStream)
{
    open_capture(rt);
    return begin_capture(rt, id, hStream, GA_REAL(rt, id, cuStreamBeginCapture)(hStream));
}

/* cuda.h declares it from CUDA 12.3 on; a table for older headers has no such
 * entry (tools/gen-entries.py: HOOKS_SINCE), and it passes through unseen. */
#if CUDA_VERSION >= 12030
CUresult ga_hook_capture_begin_graph(const ga_rt_t *rt, ga_id_t id, CUstream hStream,
                                     CUgraph hGraph, const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData,
                                     size_t numDependencies, CUstreamCaptureMode mode)
{
    open_capture(rt);
    return begin_capture(rt, id, hStream,
                         GA_REAL(rt, id, cuStreamBeginCaptureToGraph)(
                             hStream, hGraph, dependencies, dependencyData, numDependencies, mode));
}
#endif

CUresult ga_hook_capture_end(const ga_rt_t *rt, ga_id_t id, CUstream hStream, CUgraph *phGraph)
{
    CUresult r = GA_REAL(rt, id, cuStreamEndCapture)(hStream, phGraph);
    ga_capture_ended(rt, hStream, ga_entries[id].per_thread);
    return r;
}
