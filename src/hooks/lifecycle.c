/* lifecycle.c - hooks for calls that create, change or destroy what the
 * library keeps records of: streams, modules and libraries (kernel handles),
 * contexts. A feature may keep the program's streams (stream_create,
 * stream_destroy).
 *
 * Records are dropped only after the driver destroyed the object, so a failed
 * destroy leaves everything as it was. */
#include "core/hooks.h"
#include "hooks/dispatch.h"
#include "tracking/registry.h"
#include "tracking/streams.h"

static CUresult created(const ga_rt_t *rt, CUresult r, CUstream *ph)
{
    if (r == CUDA_SUCCESS && ph && rt->track) {
        (void)ga_stream_get(rt, *ph, false); /* learn its flags and context now */
        GA_EACH(stream_created, rt, *ph);
    }
    return r;
}

CUresult ga_hook_stream_create(const ga_rt_t *rt, ga_id_t id, CUstream *phStream,
                               unsigned int Flags)
{
    CUresult r;
    if (!GA_SERVE(stream_create, rt, phStream, Flags, 0, false, &r))
        r = GA_REAL(rt, id, cuStreamCreate)(phStream, Flags);
    return created(rt, r, phStream);
}

CUresult ga_hook_stream_create_prio(const ga_rt_t *rt, ga_id_t id, CUstream *phStream,
                                    unsigned int flags, int priority)
{
    CUresult r;
    if (!GA_SERVE(stream_create, rt, phStream, flags, priority, true, &r))
        r = GA_REAL(rt, id, cuStreamCreateWithPriority)(phStream, flags, priority);
    return created(rt, r, phStream);
}

/* The program's cuStreamDestroy: the driver's, unless a feature keeps h.
 * Every feature is told the program's stream is gone either way. A stream the
 * driver destroys leaves the tracker (its queued work chained to the legacy
 * stream first, ga_stream_outlive); a kept one still exists in the driver and
 * keeps its record, busy until known idle, so fences and idleness cover its
 * work as they did: no event recorded and waited for on every destroy (a
 * stream-per-call loop under every feature paid both each call), and the
 * record is there when the stream is handed out again. */
CUresult ga_hook_stream_destroy(const ga_rt_t *rt, ga_id_t id, CUstream hStream)
{
    CUresult r;
    ga_flush(rt, GA_FLUSH_STREAM, hStream);
    if (rt->track)
        ga_stream_destroy_begin();
    bool kept = GA_SERVE(stream_destroy, rt, hStream, &r), covered = true;
    if (!kept) {
        if (rt->track)
            covered = ga_stream_outlive(rt, hStream);
        r = GA_REAL(rt, id, cuStreamDestroy_v2)(hStream);
    }
    if (r == CUDA_SUCCESS) {
        if (rt->track)
            GA_EACH(stream_gone, rt, hStream, kept);
        ga_capture_stream_gone(hStream);
        if (rt->track && !kept) /* destroyed: it leaves the tracker */
            (covered ? ga_stream_forget : ga_stream_bury)(hStream);
    }
    if (rt->track)
        ga_stream_destroy_end();
    return r;
}

/* cuStreamAttachMemAsync and cuStreamSetAttribute: plain calls (as wrappers.c
 * makes them), then the features learn that the stream is no longer plain. */
static CUresult touched(const ga_rt_t *rt, CUresult r, CUstream h)
{
    if (r == CUDA_SUCCESS)
        GA_EACH(stream_touched, rt, h);
    return r;
}

CUresult ga_hook_stream_attach(const ga_rt_t *rt, ga_id_t id, CUstream hStream, CUdeviceptr dptr,
                               size_t length, unsigned int flags)
{
    bool pt = id == GA_ID_cuStreamAttachMemAsync_ptsz;
    if (rt->per_call)
        ga_hooks_plain_before(rt, true, true, hStream);
    CUresult r = GA_REAL(rt, id, cuStreamAttachMemAsync)(hStream, dptr, length, flags);
    if (rt->per_call)
        ga_hooks_plain_after(rt, r, hStream, pt, true, true);
    return touched(rt, r, hStream);
}

CUresult ga_hook_stream_set_attr(const ga_rt_t *rt, ga_id_t id, CUstream hStream,
                                 CUstreamAttrID attr, const CUstreamAttrValue *value)
{
    bool pt = id == GA_ID_cuStreamSetAttribute_ptsz;
    if (rt->per_call)
        ga_hooks_plain_before(rt, true, true, hStream);
    CUresult r = GA_REAL(rt, id, cuStreamSetAttribute)(hStream, attr, value);
    if (rt->per_call)
        ga_hooks_plain_after(rt, r, hStream, pt, true, true);
    return touched(rt, r, hStream);
}

/* An unload frees the code's global variables, as cuMemFree frees memory:
 * the epochs move on both sides (a window over a global must not serve a
 * later load's global at the same address). */
static CUresult unloaded(const ga_rt_t *rt, CUresult r, const void *owner)
{
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    if (r == CUDA_SUCCESS)
        ga_registry_forget_owner(owner);
    return r;
}

CUresult ga_hook_module_unload(const ga_rt_t *rt, ga_id_t id, CUmodule hmod)
{
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    GA_EACH(unload, rt, hmod);
    ga_work_begin(rt, true);
    return unloaded(rt, GA_REAL(rt, id, cuModuleUnload)(hmod), hmod);
}

CUresult ga_hook_library_unload(const ga_rt_t *rt, ga_id_t id, CUlibrary library)
{
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    GA_EACH(unload, rt, library);
    ga_work_begin(rt, true);
    return unloaded(rt, GA_REAL(rt, id, cuLibraryUnload)(library), library);
}

/* A context was destroyed (or its primary context reset): the driver freed
 * its memory, streams, events and modules; every feature forgets them without
 * driver calls, then the trackers do (a module's kernel handles may come back
 * as another module's). */
static void ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    GA_EACH(ctx_gone, rt, ctx);
    ga_ctx_forget(ctx);
    ga_registry_forget_modules();
}

CUresult ga_hook_ctx_destroy(const ga_rt_t *rt, ga_id_t id, CUcontext ctx)
{
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuCtxDestroy_v2)(ctx);
    if (r == CUDA_SUCCESS)
        ctx_gone(rt, ctx); /* the driver freed its memory and streams */
    return r;
}

/* The primary context of `dev` if it is active, without creating it. */
static CUcontext active_primary(const ga_rt_t *rt, CUdevice dev)
{
    __typeof__(&cuDevicePrimaryCtxGetState) state =
        GA_REAL(rt, GA_ID_cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState);
    __typeof__(&cuDevicePrimaryCtxRetain) retain =
        GA_REAL(rt, GA_ID_cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
    __typeof__(&cuDevicePrimaryCtxRelease_v2) release =
        GA_REAL(rt, GA_ID_cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2);
    unsigned flags = 0;
    int active = 0;
    CUcontext ctx = NULL;
    if (!state || !retain || !release || state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return NULL;
    if (retain(&ctx, dev) != CUDA_SUCCESS)
        return NULL;
    release(dev); /* back to the program's own count: never the last reference */
    return ctx;
}

/* cuDevicePrimaryCtxRelease_v2 and cuDevicePrimaryCtxReset_v2 share a
 * prototype. A reset frees every allocation of the primary context; a release
 * does so only when it drops the last reference, which shows afterwards as an
 * inactive context. Either way the library then forgets what it cached there. */
CUresult ga_hook_primary_reset(const ga_rt_t *rt, ga_id_t id, CUdevice dev)
{
    CUcontext ctx = active_primary(rt, dev);
    if (ctx)
        ga_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuDevicePrimaryCtxReset_v2)(dev);
    if (r != CUDA_SUCCESS || !ctx)
        return r;
    bool gone = id == GA_ID_cuDevicePrimaryCtxReset_v2 || !active_primary(rt, dev);
    if (gone)
        ctx_gone(rt, ctx);
    return r;
}
