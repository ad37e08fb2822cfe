/* test_pool.c - the block cache over a stub driver: size classes, reuse only
 * after the fence, double frees refused as the driver does, the cache given
 * back on allocation failure, limits, IPC-exported blocks, capture, teardown. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/hooks.h"
#include "features/pool/pool.h"
#include "tracking/streams.h"
#include "stub_driver.h"
#include "stub_device.h"

static int waits;
static CUstream waited_on[64];
static CUresult stub_wait(CUstream s, CUevent e, unsigned flags)
{
    (void)e, (void)flags;
    if (waits < 64)
        waited_on[waits] = s;
    waits++;
    return CUDA_SUCCESS;
}

/* Context switches for fences recorded in a block's own context. */
static CUcontext pushed_from;
static int pushes;
static CUresult stub_push(CUcontext c)
{
    pushed_from = stub_current;
    stub_current = c;
    pushes++;
    return CUDA_SUCCESS;
}

static CUresult stub_pop(CUcontext *c)
{
    *c = stub_current;
    stub_current = pushed_from;
    return CUDA_SUCCESS;
}

static int cmp_ptr(const void *a, const void *b)
{
    CUdeviceptr x = *(const CUdeviceptr *)a, y = *(const CUdeviceptr *)b;
    return (x > y) - (x < y);
}

/* The cases below are steps of one story over one pool, in the order main
 * runs them: each starts from what the one before left (the blocks a and b
 * of the first steps, the cache's contents, the limit). */
static ga_rt_t rt;
static CUdeviceptr a, b; /* the story's first two blocks: 1000 and 1010 bytes */

/* size classes: cover the request, waste at most 1/8 (+ the 256 B floor) */
TEST_CASE(size_classes)
{
    for (int i = 0; i < 100000; i++) {
        size_t n = 1 + ((size_t)rand() << (rand() % 20)) % ((size_t)1 << 40);
        int c = ga_pool_class(n);
        size_t bytes = ga_pool_class_bytes(c);
        CHECK(c >= 0 && bytes >= n && (bytes <= 256 || bytes - n <= n / 8 + 1));
        CHECK(ga_pool_class(bytes) == c);
    }
    CHECK(ga_pool_class(256) == 0 && ga_pool_class(257) == 1 && ga_pool_class_bytes(1) == 288);
    CHECK(ga_pool_class((size_t)1 << 50) == -1);
}

/* a freed block is reused at once when nothing was enqueued (its fence is
 * empty, no event recorded), else once its fence completes, not before */
TEST_CASE(reuse_after_fence)
{
    /* nothing enqueued: the fence is empty, no event recorded */
    a = alloc(&rt, 1000);
    CHECK(a && real_allocs == 1);
    int recorded = stub_events_recorded;
    CHECK(release(&rt, a) == CUDA_SUCCESS && real_frees == 0);
    CHECK(stub_events_recorded == recorded);
    CHECK(alloc(&rt, 1000) == a && real_allocs == 1);      /* same class, fence done */
    /* work on the legacy stream: reuse after the fence completes, not before */
    ga_stream_note_work(&rt, NULL, false);
    stub_event_pending = 1;
    CHECK(release(&rt, a) == CUDA_SUCCESS && stub_events_recorded == recorded + 1);
    b = alloc(&rt, 1010);                                   /* same class, still running */
    CHECK(b && b != a && real_allocs == 2);
    stub_event_pending = 0;
    CHECK(alloc(&rt, 1000) == a);
    /* that fence's completion showed the legacy stream idle: the next is empty */
    recorded = stub_events_recorded;
    CHECK(release(&rt, b) == CUDA_SUCCESS && stub_events_recorded == recorded);
    CHECK(alloc(&rt, 1010) == b);
}

/* freed with no context current (the driver frees a pointer in its own context
 * whatever is current): kept, and its fence recorded there */
TEST_CASE(freed_without_context)
{
    CUcontext mine = stub_current;
    rt.drv.fn[GA_ID_cuCtxPushCurrent_v2] = (void *)stub_push;
    rt.drv.fn[GA_ID_cuCtxPopCurrent_v2] = (void *)stub_pop;
    stub_current = NULL;
    CHECK(release(&rt, b) == CUDA_SUCCESS && real_frees == 0 && pushes == 0);
    stub_current = mine;
    CHECK(alloc(&rt, 1010) == b && real_allocs == 2);
    ga_stream_note_work(&rt, NULL, false);
    int recorded = stub_events_recorded;
    stub_current = NULL;
    CHECK(release(&rt, b) == CUDA_SUCCESS && real_frees == 0);
    CHECK(pushes == 1 && stub_current == NULL && stub_events_recorded == recorded + 1);
    stub_current = mine;
    CHECK(alloc(&rt, 1010) == b && real_allocs == 2);
}

/* the driver's answers: double free, foreign pointers, zero, meminfo */
TEST_CASE(driver_answers)
{
    CHECK(release(&rt, b) == CUDA_SUCCESS);
    CHECK(release(&rt, b) == CUDA_ERROR_INVALID_VALUE);     /* double free */
    CHECK(release(&rt, 0x1234) == CUDA_ERROR_INVALID_VALUE); /* the stub's own answer */
    CHECK(release(&rt, 0) == stub_free(0));
    size_t f = 0, t = 0;
    CHECK(ga_hook_meminfo(&rt, GA_ID_cuMemGetInfo_v2, &f, &t) == CUDA_SUCCESS);
    CHECK(f == capacity - used + ga_pool_class_bytes(ga_pool_class(1010)));

    /* the range of a block is what the program asked for */
    CUdeviceptr base = 0;
    size_t sz = 0;
    CHECK(ga_hook_addr_range(&rt, GA_ID_cuMemGetAddressRange_v2, &base, &sz, a + 10) ==
          CUDA_SUCCESS && base == a && sz == 1000);
}

/* allocation failure gives the cache back first, then succeeds */
TEST_CASE(failure_gives_cache_back)
{
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    CHECK(st.cached_bytes > 0);
    size_t big = capacity - used; /* fits only without the cached block */
    CUdeviceptr c = alloc(&rt, big);
    ga_pool_stats(&st);
    CHECK(c && st.releases == 1 && st.cached_bytes == 0);
    CUdeviceptr huge = 1;
    CHECK(ga_hook_alloc(&rt, GA_ID_cuMemAlloc_v2, &huge, capacity * 4) ==
          CUDA_ERROR_OUT_OF_MEMORY);                        /* the driver's own error */
    CHECK(release(&rt, c) == CUDA_SUCCESS);
    release(&rt, a);
}

/* IPC-exported blocks, blocks exported as a dma-buf and blocks freed during
 * capture go to the driver */
TEST_CASE(shared_blocks_to_driver)
{
    CUdeviceptr e = alloc(&rt, 5000);
    CUipcMemHandle h;
    CHECK(ga_hook_ipc_get(&rt, GA_ID_cuIpcGetMemHandle, &h, e) == CUDA_SUCCESS);
    int frees = real_frees;
    CHECK(release(&rt, e) == CUDA_SUCCESS && real_frees == frees + 1);
    e = alloc(&rt, 5000);
    int fd = -1;
    CHECK(ga_hook_range_export(&rt, GA_ID_cuMemGetHandleForAddressRange, &fd, e, 4096,
                               CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) == CUDA_SUCCESS);
    frees = real_frees;
    CHECK(release(&rt, e) == CUDA_SUCCESS && real_frees == frees + 1);
    CUdeviceptr g = alloc(&rt, 7000);
    stub_capture_begin(&rt, (CUstream)&stub_streams[0]);
    CHECK(ga_capture_active());
    CHECK(release(&rt, g) == CUDA_SUCCESS && real_frees == frees + 2);
    stub_capture_end(&rt, (CUstream)&stub_streams[0]);
    CHECK(!ga_capture_active());
}

/* a limit trims the cache */
TEST_CASE(limit_trims)
{
    rt.cfg.pool_limit = (ga_limit_t){.bytes = 4096, .percent = 0};
    ga_pool_ctx_gone(stub_current); /* new pool, new limit; forget everything */
    CUdeviceptr x1 = alloc(&rt, 3000), x2 = alloc(&rt, 3000);
    int frees = real_frees;
    release(&rt, x1);
    release(&rt, x2);
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    CHECK(st.cached_bytes <= 4096 && real_frees == frees + 1 && st.trims >= 1);
}

/* teardown: the context is gone; nothing is freed through the driver */
TEST_CASE(teardown)
{
    int frees = real_frees;
    ga_pool_ctx_gone(stub_current);
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    CHECK(st.cached_bytes == 0 && real_frees == frees);
}

/* a pending block handed out early: every later user is ordered after its fence
 * (the legacy stream waits for the non-blocking stream's event, non-blocking
 * streams for all events, and streams created later too) */
TEST_CASE(early_handout)
{
    rt.cfg.pool_limit = (ga_limit_t){.bytes = 0, .percent = 100};
    rt.drv.fn[GA_ID_cuStreamWaitEvent] = (void *)stub_wait;
    CUstream nb = (CUstream)&stub_streams[3];
    stub_stream_flags[3] = CU_STREAM_NON_BLOCKING;
    CUdeviceptr q = alloc(&rt, 20000);
    ga_stream_note_work(&rt, nb, false); /* the block was used on nb */
    stub_event_pending = 1;
    CHECK(release(&rt, q) == CUDA_SUCCESS);
    waits = 0;
    int allocs = real_allocs;
    CHECK(alloc(&rt, 20000) == q && real_allocs == allocs); /* handed out at once */
    /* fence = {legacy, nb}: legacy waits for nb's event; nb waits for both */
    CHECK(waits == 3 && waited_on[0] == CU_STREAM_LEGACY && waited_on[1] == nb &&
          waited_on[2] == nb);
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    CHECK(st.early == 1);
    waits = 0;
    CUstream later = (CUstream)&stub_streams[4];
    ga_pool_stream_created(&rt, later);
    CHECK(waits == 2 && waited_on[0] == later);
    stub_event_pending = 0;
    ga_pool_stream_created(&rt, later); /* completed fences are let go */
    waits = 0;
    ga_pool_stream_created(&rt, later);
    CHECK(waits == 0);
    release(&rt, q);
}

/* early hand-outs of legacy-only fences (the block used on a blocking stream,
 * its fence still pending): each asks the driver once, about its own fence; the
 * fences it superseded are let go unasked (they cost the driver 1.5 us a
 * completed query), so a stream created afterwards waits on the newest alone,
 * whose legacy record follows all of theirs */
TEST_CASE(superseded_fences)
{
    CUstream bs = (CUstream)&stub_streams[5];
    stub_stream_flags[5] = 0; /* blocking */
    CUdeviceptr u = alloc(&rt, 30000);
    ga_pool_stats_t st;
    uint64_t early0 = (ga_pool_stats(&st), st.early);
    stub_event_pending = 1;
    int asked = 0;
    for (int i = 0; i < 20; i++) {
        ga_stream_note_work(&rt, bs, false);
        CHECK(release(&rt, u) == CUDA_SUCCESS);
        int q0 = stub_event_queries;
        CHECK(alloc(&rt, 30000) == u);
        asked += stub_event_queries - q0;
    }
    ga_pool_stats(&st);
    CHECK(st.early == early0 + 20 && asked == 20);
    waits = 0;
    ga_pool_stream_created(&rt, (CUstream)&stub_streams[6]);
    CHECK(waits == 1 && waited_on[0] == (CUstream)&stub_streams[6]);
    stub_event_pending = 0;
    release(&rt, u);
}

/* many blocks, freed on an idle context: each is found again by its address
 * (the table's hash) and queued without a fence */
TEST_CASE(many_blocks)
{
    enum { MANY = 150 };
    ga_pool_stats_t ps;
    ga_ctx_mark_t idle = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&idle, true);
    int recorded = stub_events_recorded;
    CUdeviceptr many[MANY], again[MANY];
    size_t sizes[MANY];
    for (int i = 0; i < MANY; i++)
        many[i] = alloc(&rt, sizes[i] = 256 + (size_t)(rand() % 3000));
    int allocs = real_allocs, frees = real_frees;
    for (int i = 0; i < MANY; i++)
        CHECK(many[i] && release(&rt, many[i]) == CUDA_SUCCESS);
    for (int i = 0; i < MANY; i++)
        CHECK(release(&rt, many[i]) == CUDA_ERROR_INVALID_VALUE); /* each a double free */
    CHECK(real_frees == frees && stub_events_recorded == recorded);
    ga_pool_stats(&ps);
    uint64_t hits0 = ps.hits;
    for (int i = MANY; i-- > 0;) { /* the same sizes, in the other order */
        size_t got = 0;
        CUdeviceptr at = 0;
        again[i] = alloc(&rt, sizes[i]);
        CHECK(ga_hook_addr_range(&rt, GA_ID_cuMemGetAddressRange_v2, &at, &got, again[i]) ==
              CUDA_SUCCESS && at == again[i] && got == sizes[i]);
    }
    ga_pool_stats(&ps);
    CHECK(real_allocs == allocs && ps.hits == hits0 + MANY); /* every one a hit */
    qsort(many, MANY, sizeof many[0], cmp_ptr);
    qsort(again, MANY, sizeof again[0], cmp_ptr);
    CHECK(memcmp(many, again, sizeof many) == 0); /* the same blocks came back */
    for (int i = 0; i < MANY; i++)
        CHECK(release(&rt, again[i]) == CUDA_SUCCESS);
}

/* pool off: pure pass-through */
TEST_CASE(pool_off)
{
    rt.cfg.pool = false;
    stub_features(&rt);
    CUdeviceptr p1 = alloc(&rt, 100);
    int allocs = real_allocs;
    release(&rt, p1);
    CHECK(alloc(&rt, 100) && real_allocs == allocs + 1);
}

/* The epochs (which coalescing's windows and the host-memory cache trust)
 * move around the driver's own allocations and frees, and around a poisoned
 * block's fill, but not when the pool hands a block out or takes it back:
 * that maps and writes nothing. */
TEST_CASE(epochs_follow_the_driver)
{
    rt.cfg.pool = true;
    stub_features(&rt);
    rt.epochs = true; /* as when coalescing is on */
    uint64_t e = ga_epoch_read(), m = ga_map_epoch_read();
    int allocs = real_allocs;
    CUdeviceptr p = alloc(&rt, 200000u); /* a class not seen yet: the driver's */
    CHECK(p && real_allocs == allocs + 1);
    CHECK(ga_epoch_read() > e && ga_map_epoch_read() > m);
    e = ga_epoch_read(), m = ga_map_epoch_read();
    CHECK(release(&rt, p) == CUDA_SUCCESS);       /* kept */
    CHECK(alloc(&rt, 200000u) == p && real_allocs == allocs + 1); /* served */
    CHECK(ga_epoch_read() == e && ga_map_epoch_read() == m);
    rt.cfg.pool_poison = true; /* a reused block is filled before it is handed out */
    CHECK(release(&rt, p) == CUDA_SUCCESS);
    CHECK(alloc(&rt, 200000u) == p && real_allocs == allocs + 1);
    CHECK(ga_epoch_read() > e && ga_map_epoch_read() == m);
    rt.cfg.pool_poison = false;
    CHECK(release(&rt, p) == CUDA_SUCCESS);
    rt.epochs = false;
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    printf("seed %u\n", seed);
    srand(seed);
    RUN_CASE(size_classes);
    stub_runtime(&rt);
    stub_device(&rt);
    RUN_CASE(reuse_after_fence);
    RUN_CASE(freed_without_context);
    RUN_CASE(driver_answers);
    RUN_CASE(failure_gives_cache_back);
    RUN_CASE(shared_blocks_to_driver);
    RUN_CASE(limit_trims);
    RUN_CASE(teardown);
    RUN_CASE(early_handout);
    RUN_CASE(superseded_fences);
    RUN_CASE(many_blocks);
    RUN_CASE(epochs_follow_the_driver);
    RUN_CASE(pool_off);
    return check_done("test_pool");
}
