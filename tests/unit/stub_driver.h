/* stub_driver.h - a runtime whose "driver" is a handful of host functions, for
 * unit tests of the modules that call the driver (streams, registry).
 * Streams and events are plain addresses; events complete when the test says. */
#ifndef GA_STUB_DRIVER_H
#define GA_STUB_DRIVER_H

#include <string.h>

#include "tracking/capture.h"
#include "core/runtime.h"
#include "hooks/dispatch.h"

static int stub_ctx_a, stub_ctx_b __attribute__((unused));
static CUcontext stub_current = (CUcontext)&stub_ctx_a;
static int stub_events_recorded, stub_event_pending, stub_event_queries;
static CUstream stub_recorded_on[64];
static int stub_streams[8];
static unsigned stub_stream_flags[8];

static int stub_stream_index(CUstream s)
{
    for (int i = 0; i < 8; i++)
        if (s == (CUstream)&stub_streams[i])
            return i;
    return -1;
}

static CUresult stub_ctx_get_current(CUcontext *c) { *c = stub_current; return CUDA_SUCCESS; }

static CUresult stub_stream_get_flags(CUstream s, unsigned *f)
{
    int i = stub_stream_index(s);
    if (i < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    *f = stub_stream_flags[i];
    return CUDA_SUCCESS;
}

static CUresult stub_stream_get_ctx(CUstream s, CUcontext *c)
{
    if (stub_stream_index(s) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    *c = stub_current;
    return CUDA_SUCCESS;
}

static int stub_event_store[64], stub_nevents;
static CUresult stub_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    if (stub_nevents >= 64)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *e = (CUevent)&stub_event_store[stub_nevents++];
    return CUDA_SUCCESS;
}

/* A stream capture the test opens and closes (stub_capture_begin/end): every
 * capture-unsafe call the library makes while it is open is counted. */
static int stub_capturing, stub_unsafe_in_capture;

static CUresult stub_is_capturing(CUstream s, CUstreamCaptureStatus *st)
{
    (void)s;
    *st = stub_capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

static CUresult stub_event_record(CUevent e, CUstream s)
{
    (void)e;
    stub_unsafe_in_capture += stub_capturing && (s == NULL || s == CU_STREAM_LEGACY);
    if (stub_events_recorded < 64)
        stub_recorded_on[stub_events_recorded] = s;
    stub_events_recorded++;
    return CUDA_SUCCESS;
}

static CUresult stub_event_query(CUevent e)
{
    (void)e;
    stub_event_queries++;
    stub_unsafe_in_capture += stub_capturing;
    return stub_event_pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static void stub_runtime(ga_rt_t *rt)
{
    memset(rt, 0, sizeof *rt);
    rt->active = true;
    rt->track = true;
    rt->epochs = true;
    rt->per_call = true;
    rt->drv.fn[GA_ID_cuCtxGetCurrent] = (void *)stub_ctx_get_current;
    rt->drv.fn[GA_ID_cuStreamGetFlags] = (void *)stub_stream_get_flags;
    rt->drv.fn[GA_ID_cuStreamGetCtx] = (void *)stub_stream_get_ctx;
    rt->drv.fn[GA_ID_cuEventCreate] = (void *)stub_event_create;
    rt->drv.fn[GA_ID_cuEventRecord] = (void *)stub_event_record;
    rt->drv.fn[GA_ID_cuEventQuery] = (void *)stub_event_query;
    rt->drv.fn[GA_ID_cuStreamIsCapturing] = (void *)stub_is_capturing;
}

/* Open and close a capture on s the way the capture hooks do. */
static inline void stub_capture_begin(const ga_rt_t *rt, CUstream s)
{
    ga_capture_opening();
    stub_capturing = 1;
    ga_capture_opened(rt, s, false, CUDA_SUCCESS);
}

static inline void stub_capture_end(const ga_rt_t *rt, CUstream s)
{
    stub_capturing = 0;
    ga_capture_ended(rt, s, false);
}

/* Dispatch to the features rt's configuration switches on (again after a
 * test changes it), as init would, without asking the driver. */
static inline void stub_features(ga_rt_t *rt)
{
    bool on[GA_N_FEATURES];
    for (unsigned i = 0; i < GA_N_FEATURES; i++)
        on[i] = ga_features[i]->on(&rt->cfg);
    ga_hooks_enable(rt, on);
}

#endif
