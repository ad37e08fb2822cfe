/* coalesce.c - the device-to-host copy hooks. Serving small reads from a
 * window (GPUACCEL_COALESCE) is not built yet: every call goes to the driver,
 * and the stream tracker learns what a synchronous copy proves idle. */
#include "hooks.h"
#include "modules.h"
#include "streams.h"

CUresult ga_hook_dtoh(const ga_rt_t *rt, ga_id_t id, void *dstHost, CUdeviceptr srcDevice,
                      size_t ByteCount)
{
    bool pt = ga_entries[id].per_thread;
    ga_modules_flush(rt, GA_FLUSH_STREAM, NULL);
    /* A synchronous copy runs on the default stream after all its earlier work
     * and returns when done: it proves that stream idle. */
    ga_stream_mark_t m = ga_stream_mark(rt, NULL, pt);
    CUresult r = GA_REAL(rt, id, cuMemcpyDtoH_v2)(dstHost, srcDevice, ByteCount);
    if (r == CUDA_SUCCESS)
        ga_stream_mark_idle(m);
    return r;
}

CUresult ga_hook_dtoh_async(const ga_rt_t *rt, ga_id_t id, void *dstHost, CUdeviceptr srcDevice,
                            size_t ByteCount, CUstream hStream)
{
    ga_modules_flush(rt, GA_FLUSH_STREAM, hStream);
    CUresult r = GA_REAL(rt, id, cuMemcpyDtoHAsync_v2)(dstHost, srcDevice, ByteCount, hStream);
    ga_work_end(rt, r, hStream, ga_entries[id].per_thread, false);
    return r;
}

/* cuMemcpy with unified addressing may go either way: treat it as a write. */
CUresult ga_hook_memcpy(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, CUdeviceptr src,
                        size_t ByteCount)
{
    ga_modules_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemcpy)(dst, src, ByteCount);
    ga_work_end(rt, r, NULL, ga_entries[id].per_thread, true);
    return r;
}

CUresult ga_hook_memcpy_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, CUdeviceptr src,
                              size_t ByteCount, CUstream hStream)
{
    ga_modules_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemcpyAsync)(dst, src, ByteCount, hStream);
    ga_work_end(rt, r, hStream, ga_entries[id].per_thread, true);
    return r;
}
