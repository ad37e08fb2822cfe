/* copies.c - hooks for copies that may read device memory into host memory:
 * cuMemcpyDtoH (sync and async) and the unified-address cuMemcpy forms, whose
 * direction the driver decides. A read is offered to the features that serve
 * reads (coalescing, staging); if none does, the program's copy goes to the
 * driver and they are told it did; either way, they are told it was answered
 * (a read another feature made may be kept). Every copy is a flush point: what features hold back
 * is issued first, so a read sees every write the program made before it. */
#include "core/hooks.h"
#include "hooks/dispatch.h"
#include "tracking/memkind.h"
#include "tracking/streams.h"

static uint64_t since(uint64_t t0)
{
    return t0 ? ga_now_ns() - t0 : 0;
}

CUresult ga_hook_dtoh(const ga_rt_t *rt, ga_id_t id, void *dstHost, CUdeviceptr srcDevice,
                      size_t ByteCount)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    GA_EACH(copy_begin, rt, GA_COPY_DTOH, dstHost, srcDevice, ByteCount);
    ga_flush(rt, GA_FLUSH_STREAM, NULL);
    if (!GA_SERVE(read, rt, id, dstHost, srcDevice, ByteCount, GA_DEFSTREAM, &r)) {
        /* A synchronous copy runs on the default stream after all its earlier
         * work and, into host memory, returns when done: it proves that stream
         * idle. Into device memory (unified addressing: the driver says what
         * dst is) it is a device-to-device copy, which may return before it
         * ends: work that writes. */
        bool pt = ga_entries[id].per_thread;
        ga_stream_mark_t m = ga_stream_mark(rt, NULL, pt);
        r = GA_REAL(rt, id, cuMemcpyDtoH_v2)(dstHost, srcDevice, ByteCount);
        if (r == CUDA_SUCCESS) {
            if (m.st && ga_host_memory(rt, dstHost, ByteCount))
                ga_stream_mark_idle(m);
            else
                ga_data_end(rt, r, GA_DEFSTREAM, pt);
        }
        GA_EACH(read_issued, rt, id, dstHost, srcDevice, ByteCount, GA_DEFSTREAM, r);
    }
    GA_EACH(read_done, rt, id, dstHost, srcDevice, ByteCount, GA_DEFSTREAM, r);
    GA_EACH(copy_done, rt, GA_COPY_DTOH, dstHost, srcDevice, ByteCount, since(t0), r);
    return r;
}

CUresult ga_hook_dtoh_async(const ga_rt_t *rt, ga_id_t id, void *dstHost, CUdeviceptr srcDevice,
                            size_t ByteCount, CUstream hStream)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    GA_EACH(copy_begin, rt, GA_COPY_DTOH, dstHost, srcDevice, ByteCount);
    ga_flush(rt, GA_FLUSH_STREAM, hStream);
    if (!GA_SERVE(read, rt, id, dstHost, srcDevice, ByteCount, hStream, &r)) {
        r = GA_REAL(rt, id, cuMemcpyDtoHAsync_v2)(dstHost, srcDevice, ByteCount, hStream);
        ga_work_end(rt, r, hStream, ga_entries[id].per_thread, false);
        GA_EACH(read_issued, rt, id, dstHost, srcDevice, ByteCount, hStream, r);
    }
    GA_EACH(read_done, rt, id, dstHost, srcDevice, ByteCount, hStream, r);
    GA_EACH(copy_done, rt, GA_COPY_DTOH, dstHost, srcDevice, ByteCount, since(t0), r);
    return r;
}

/* cuMemcpy with unified addressing may go either way: a read may be served;
 * anything else is counted as a write on the default stream. */
CUresult ga_hook_memcpy(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, CUdeviceptr src,
                        size_t ByteCount)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    if (!GA_SERVE(read, rt, id, (void *)(uintptr_t)dst, src, ByteCount, GA_DEFSTREAM, &r)) {
        ga_data_begin(rt);
        r = GA_REAL(rt, id, cuMemcpy)(dst, src, ByteCount);
        ga_data_end(rt, r, NULL, ga_entries[id].per_thread);
        GA_EACH(read_issued, rt, id, (void *)(uintptr_t)dst, src, ByteCount, GA_DEFSTREAM, r);
    }
    GA_EACH(read_done, rt, id, (void *)(uintptr_t)dst, src, ByteCount, GA_DEFSTREAM, r);
    GA_EACH(copy_done, rt, GA_COPY_OTHER, NULL, dst, ByteCount, since(t0), r);
    return r;
}

CUresult ga_hook_memcpy_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, CUdeviceptr src,
                              size_t ByteCount, CUstream hStream)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    if (!GA_SERVE(read, rt, id, (void *)(uintptr_t)dst, src, ByteCount, hStream, &r)) {
        ga_data_begin(rt);
        r = GA_REAL(rt, id, cuMemcpyAsync)(dst, src, ByteCount, hStream);
        ga_data_end(rt, r, hStream, ga_entries[id].per_thread);
        GA_EACH(read_issued, rt, id, (void *)(uintptr_t)dst, src, ByteCount, hStream, r);
    }
    GA_EACH(read_done, rt, id, (void *)(uintptr_t)dst, src, ByteCount, hStream, r);
    GA_EACH(copy_done, rt, GA_COPY_OTHER, NULL, dst, ByteCount, since(t0), r);
    return r;
}

/* Copies from host memory to the device: offered to the features that serve
 * writes (staging pageable memory); otherwise the driver's, as a plain writer
 * on its stream. */
CUresult ga_hook_htod(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dstDevice, const void *srcHost,
                      size_t ByteCount)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    bool pt = ga_entries[id].per_thread;
    GA_EACH(copy_begin, rt, GA_COPY_HTOD, srcHost, dstDevice, ByteCount);
    ga_hooks_plain_before(rt, true, false, GA_DEFSTREAM);
    if (!GA_SERVE(write, rt, id, dstDevice, srcHost, ByteCount, GA_DEFSTREAM, &r))
        r = GA_REAL(rt, id, cuMemcpyHtoD_v2)(dstDevice, srcHost, ByteCount);
    ga_hooks_plain_after(rt, r, GA_DEFSTREAM, pt, true, false);
    GA_EACH(copy_done, rt, GA_COPY_HTOD, srcHost, dstDevice, ByteCount, since(t0), r);
    return r;
}

CUresult ga_hook_htod_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dstDevice,
                            const void *srcHost, size_t ByteCount, CUstream hStream)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    bool pt = ga_entries[id].per_thread;
    GA_EACH(copy_begin, rt, GA_COPY_HTOD, srcHost, dstDevice, ByteCount);
    ga_hooks_plain_before(rt, true, false, hStream);
    if (!GA_SERVE(write, rt, id, dstDevice, srcHost, ByteCount, hStream, &r))
        r = GA_REAL(rt, id, cuMemcpyHtoDAsync_v2)(dstDevice, srcHost, ByteCount, hStream);
    ga_hooks_plain_after(rt, r, hStream, pt, true, false);
    GA_EACH(copy_done, rt, GA_COPY_HTOD, srcHost, dstDevice, ByteCount, since(t0), r);
    return r;
}
