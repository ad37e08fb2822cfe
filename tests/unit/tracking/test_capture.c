/* test_capture.c - the capture rule over a stub driver: while a capture is
 * open the library makes none of its own capture-unsafe calls (the stub counts
 * any), a capture opens only after the library's stretches of such calls in
 * flight have left, a capture ends when the driver says so, a busy stream
 * destroyed during a capture keeps its context busy until a context sync;
 * and what a "host" pointer really is (memkind), asked once per epoch. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "tracking/memkind.h"
#include "tracking/streams.h"
#include "stub_driver.h"

static CUresult stub_stream_query(CUstream s)
{
    (void)s;
    stub_unsafe_in_capture += stub_capturing;
    return CUDA_SUCCESS;
}

/* ---- a stretch of own calls in flight when a capture opens ---- */
static atomic_int stretch_entered, stretch_left;

static void *long_stretch(void *arg)
{
    (void)arg;
    if (ga_own_calls_enter()) {
        atomic_store(&stretch_entered, 1);
        usleep(50000);
        atomic_store(&stretch_left, 1);
        ga_own_calls_leave();
    }
    return NULL;
}

static void gate(ga_rt_t *rt, CUstream s)
{
    CHECK(!ga_capture_active() && ga_own_calls_enter());
    ga_own_calls_leave();
    stub_capture_begin(rt, s);
    CHECK(ga_capture_active() && !ga_own_calls_enter());
    CHECK(ga_stream_capturing(rt, s, false));
    /* an end the driver did not take (wrong thread): still open */
    ga_capture_ended(rt, s, false);
    CHECK(ga_capture_active());
    stub_capture_end(rt, s);
    CHECK(!ga_capture_active() && !ga_stream_capturing(rt, s, false));

    /* opening waits for the stretch that entered first */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, long_stretch, NULL) == 0);
    while (!atomic_load(&stretch_entered))
        usleep(100);
    ga_capture_opening();
    CHECK(atomic_load(&stretch_left) == 1);
    ga_capture_opened(rt, s, false, CUDA_ERROR_INVALID_VALUE); /* the driver refused */
    CHECK(!ga_capture_active());
    CHECK(pthread_join(t, NULL) == 0);

    /* a destroyed origin stream ends its capture */
    stub_capture_begin(rt, s);
    ga_capture_stream_gone(s);
    stub_capturing = 0;
    CHECK(!ga_capture_active());
}

static void tracker(ga_rt_t *rt, CUstream s_block, CUstream s_nb, CUstream s_cap)
{
    ga_fence_t f, pending;
    /* a fence made before the capture, still pending */
    ga_stream_note_work(rt, s_nb, false);
    CHECK(ga_fence_init(rt, stub_current, &pending) && pending.n == 2);
    stub_event_pending = 1;
    CHECK(!ga_fence_done(rt, &pending));
    stub_event_pending = 0;

    ga_stream_note_work(rt, s_block, false);
    stub_capture_begin(rt, s_cap);
    int recorded = stub_events_recorded, queries = stub_event_queries;
    CHECK(!ga_fence_init(rt, stub_current, &f));       /* no records during capture */
    CHECK(!ga_fence_done(rt, &pending));               /* no queries either */
    CHECK(!ga_ctx_settle(rt, stub_current));
    CHECK(stub_events_recorded == recorded && stub_event_queries == queries);

    /* destroyed while busy, during the capture */
    CHECK(ga_stream_outlive(rt, s_block));             /* blocking: the legacy stream covers it */
    ga_stream_forget(s_block);
    CHECK(ga_stream_busy(ga_stream_get(rt, NULL, false)));
    CHECK(!ga_stream_outlive(rt, s_nb));               /* non-blocking: cannot be chained now */
    ga_stream_bury(s_nb);
    CHECK(stub_events_recorded == recorded && stub_unsafe_in_capture == 0);
    stub_capture_end(rt, s_cap);

    /* after it: the context is busy and no fence can cover the buried work */
    CHECK(!ga_ctx_idle(stub_current));
    CHECK(!ga_fence_init(rt, stub_current, &f));
    ga_stream_t *reborn = ga_stream_get(rt, s_nb, false); /* the handle comes back, fresh */
    CHECK(reborn && !ga_stream_busy(reborn));
    CHECK(ga_ctx_nonblocking(stub_current, NULL, 0) == 1);
    CHECK(ga_fence_done(rt, &pending));
    ga_fence_release(rt, &pending);
    ga_ctx_mark_t m = ga_ctx_mark(rt, stub_current);
    ga_ctx_mark_idle(&m, true);                        /* a context sync covers it */
    CHECK(ga_ctx_idle(stub_current));
    CHECK(ga_fence_init(rt, stub_current, &f) && ga_fence_empty(&f));
    ga_stream_note_work(rt, s_nb, false);
    stub_events_recorded = 0;
    CHECK(ga_fence_init(rt, stub_current, &f) && stub_events_recorded == 2); /* the buried one is gone */
    CHECK(ga_fence_done(rt, &f));
    ga_fence_release(rt, &f);
    CHECK(stub_unsafe_in_capture == 0);
}

/* ---- memkind: a stub address space ---- */
/* The upper half of `space` is device memory, the lower half host memory. */
static unsigned char space[2 * 4096] __attribute__((aligned(4096))), managed_range[1 << 12];
#define device_range (space + 4096)
static int attr_queries;

static CUresult stub_pointer_attrs(unsigned n, CUpointer_attribute *a, void **data, CUdeviceptr p)
{
    attr_queries++;
    bool dev = p >= (CUdeviceptr)device_range && p < (CUdeviceptr)device_range + 4096;
    bool man = p >= (CUdeviceptr)managed_range && p < (CUdeviceptr)managed_range + sizeof managed_range;
    for (unsigned i = 0; i < n; i++) {
        if (a[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            *(unsigned *)data[i] = dev || man ? CU_MEMORYTYPE_DEVICE : 0;
        else if (a[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED)
            *(unsigned *)data[i] = man;
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static void memkind(ga_rt_t *rt)
{
    rt->drv.fn[GA_ID_cuPointerGetAttributes] = (void *)stub_pointer_attrs;
    static unsigned char host[3 * 4096];
    int q = attr_queries;
    CHECK(ga_host_memory(rt, host + 8, 4));
    CHECK(attr_queries == q + 1);
    CHECK(ga_host_memory(rt, host + 100, 64) && attr_queries == q + 1); /* same page: cached */
    ga_data_begin(rt), ga_data_end(rt, CUDA_SUCCESS, GA_NOSTREAM, false); /* a launch */
    CHECK(ga_host_memory(rt, host + 100, 64) && attr_queries == q + 1); /* still cached */
    ga_work_begin(rt, true);                                           /* something mapped */
    CHECK(ga_host_memory(rt, host + 100, 64) && attr_queries == q + 2);
    CHECK(!ga_host_memory(rt, device_range + 64, 4));
    CHECK(!ga_host_memory(rt, managed_range, 4));
    CHECK(!ga_host_memory(rt, NULL, 4) && !ga_host_memory(rt, host, 0));
    /* a range whose last byte is device memory */
    CHECK(!ga_host_memory(rt, device_range - 8, 16));
    /* streams tracked without epochs (the defaults): the answer is kept too,
     * and a call that maps memory still moves the map epoch */
    bool track = rt->track;
    rt->epochs = false, rt->track = true;
    ga_work_begin(rt, true);
    q = attr_queries;
    CHECK(ga_host_memory(rt, host + 8, 4) && ga_host_memory(rt, host + 8, 4));
    CHECK(attr_queries == q + 1);
    ga_work_begin(rt, true);
    CHECK(ga_host_memory(rt, host + 8, 4) && attr_queries == q + 2);
    /* neither: nothing is kept */
    rt->track = false;
    q = attr_queries;
    CHECK(ga_host_memory(rt, host + 8, 4) && ga_host_memory(rt, host + 8, 4));
    CHECK(attr_queries == q + 2);
    rt->epochs = true, rt->track = track;
}

int main(void)
{
    static ga_rt_t rt;
    stub_runtime(&rt);
    rt.drv.fn[GA_ID_cuStreamQuery] = (void *)stub_stream_query;
    CUstream s_block = (CUstream)&stub_streams[0], s_nb = (CUstream)&stub_streams[1],
             s_cap = (CUstream)&stub_streams[2];
    stub_stream_flags[1] = CU_STREAM_NON_BLOCKING;
    stub_stream_flags[2] = CU_STREAM_NON_BLOCKING;
    gate(&rt, s_cap);
    tracker(&rt, s_block, s_nb, s_cap);
    memkind(&rt);
    return check_done("test_capture");
}
