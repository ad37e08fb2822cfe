/* test_coalesce.c - the coalesce feature's decisions, through the read, sync
 * and launch hooks over the stub driver (tests/unit/stub_more.h), whose device
 * memory the test reads and writes as the device would: a read is served from
 * a window an earlier miss filled; the window is aligned to its size and
 * clamped to its allocation, and grows for a forward scan; an epoch bump,
 * any enqueued work or a module unload drops it; nothing is kept while a kernel runs (a polling
 * loop sees the flag flip); managed, host-mapped, shareable and IPC memory is
 * never cached, nor memory marked for GPUDirect RDMA (SYNC_MEMOPS) or exported
 * as a dma-buf; a device or managed "host" destination goes to the driver; a
 * loop that writes before every read backs off; an asynchronous read's window
 * is installed at the stream sync only if nothing was enqueued since; a sync
 * of a context with nothing in flight is answered without the driver; nothing
 * is served while a capture is open. Mirrors: reads that keep missing in one
 * allocation get the whole allocation copied once, when the cost model says it
 * pays and the budget allows; a larger read is served from one; a write or
 * any work drops a mirror as it drops a window. A column read whole again and
 * again is copied once and served after, within the budget (page-locked up to
 * 1 MiB, plain memory to 16 MiB). */
#include "check.h"
#include "features/coalesce/coalesce.h"
#include "features/coalesce/internal.h"
#include "tracking/streams.h"
#include "stub_driver.h"
#include "stub_more.h"

enum { W = 4096 }; /* GPUACCEL_COALESCE_WINDOW */

static ga_rt_t rt;
static CUstream s_nb, s_async, s_other, s_cap;

/* What happened since a tally was taken: reads served, windows filled, and
 * copies the driver was asked for. */
typedef struct tally {
    uint64_t hits, fills;
    unsigned copies;
} tally_t;

static tally_t tally(void)
{
    ga_coalesce_stats_t s;
    ga_coalesce_stats(&s);
    return (tally_t){s.hits, s.fills, stub_ncopies};
}

static tally_t since(tally_t t0)
{
    tally_t t = tally();
    return (tally_t){t.hits - t0.hits, t.fills - t0.fills, t.copies - t0.copies};
}

/* The program's synchronous 4-byte read of device address d. */
static uint32_t rd(CUdeviceptr d)
{
    uint32_t v = 0xdeadbeef;
    if (ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, &v, d, sizeof v) != CUDA_SUCCESS)
        return 0xdeadbeef;
    return v;
}

/* The same read made asynchronously on s, then s synchronized (.item()). */
static uint32_t rd_async(CUdeviceptr d, CUstream s)
{
    uint32_t v = 0xdeadbeef;
    if (ga_hook_dtoh_async(&rt, GA_ID_cuMemcpyDtoHAsync_v2, &v, d, sizeof v, s) != CUDA_SUCCESS ||
        ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s) != CUDA_SUCCESS)
        return 0xdeadbeef;
    return v;
}

/* A fresh allocation of n bytes of the given kind, every word distinct. */
static CUdeviceptr fresh_kind(size_t n, stub_kind_t kind)
{
    static uint32_t seed = 1;
    CUdeviceptr d = stub_mem(n, kind);
    for (size_t i = 0; i + 4 <= n; i += 4)
        *stub_word(d + i) = seed * 1000003u + (uint32_t)i;
    seed++;
    return d;
}

static CUdeviceptr fresh(size_t n)
{
    return fresh_kind(n, STUB_DEVICE);
}

/* The program's cuMemsetD32 of one word: a plain call that writes device
 * memory (no stream), as the wrappers make it. */
static void memset_word(CUdeviceptr d, uint32_t v)
{
    ga_hooks_plain_before(&rt, true, false, GA_NOSTREAM);
    *stub_word(d) = v;
    ga_hooks_plain_after(&rt, CUDA_SUCCESS, GA_NOSTREAM, false, true, false);
}

/* A plain call that enqueues work on s but writes no device memory
 * (cuEventRecord, cuStreamWaitEvent). */
static void enqueue_only(CUstream s)
{
    ga_hooks_plain_before(&rt, false, false, s);
    ga_hooks_plain_after(&rt, CUDA_SUCCESS, s, false, false, false);
}

/* Leave the backoff at rest: read one word until a read is served (a fill
 * then a hit), so that the next miss fills a window if it may. */
static void calm(void)
{
    CUdeviceptr d = fresh(64);
    uint64_t h = tally().hits;
    for (int i = 0; i < 300 && tally().hits == h; i++)
        rd(d);
}

/* The lengths of the window copies the driver made since copy number `from`
 * (the program's own reads here are 8 bytes at most). */
static unsigned window_copies(unsigned from, size_t *lens, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = from; i < stub_ncopies && n < max; i++)
        if (stub_copy_at(i)->n > 8)
            lens[n++] = stub_copy_at(i)->n;
    return n;
}

static void served_from_window(void)
{
    calm();
    CUdeviceptr d = fresh(3 * W);
    tally_t t = tally();
    uint32_t a = rd(d + 100); /* a miss: one copy of the whole window */
    tally_t miss = since(t);
    CHECK(a == *stub_word(d + 100) && miss.copies == 1 && miss.fills == 1 &&
          stub_last_copy()->src == d && stub_last_copy()->n == W);
    t = tally();
    uint32_t b = rd(d + 2000); /* in the window: no driver call */
    CHECK(b == *stub_word(d + 2000) && since(t).copies == 0 && since(t).hits == 1);
}

static void aligned_and_clamped(void)
{
    calm();
    CUdeviceptr d = fresh(3 * W);
    rd(d + W + 300); /* aligned to the window's size, from the allocation's base */
    CHECK(stub_last_copy()->src == d + W && stub_last_copy()->n == W);
    calm();
    CUdeviceptr e = fresh(W + 1000);
    rd(e + W + 10); /* the last window stops where the allocation does */
    CHECK(stub_last_copy()->src == e + W && stub_last_copy()->n == 1000);
    calm();
    CUdeviceptr f = fresh(3 * W);
    uint64_t two = 0; /* a read across a window boundary: the window starts at it */
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, &two, f + W - 4, 8) == CUDA_SUCCESS &&
          stub_last_copy()->src == f + W - 4 && stub_last_copy()->n == W &&
          !memcmp(&two, stub_word(f + W - 4), 8));
}

static void grows_for_scans(void)
{
    calm();
    CUdeviceptr d = fresh(16 * W);
    unsigned from = stub_ncopies;
    bool right = true;
    for (CUdeviceptr a = d; a < d + 15 * W; a += 4) /* a forward scan, word by word */
        right &= rd(a) == *stub_word(a);
    size_t lens[8];
    unsigned n = window_copies(from, lens, 8);
    /* each read just past a window finds the scan and doubles the next: four
     * fills cover 1 + 2 + 4 + 8 windows, each starting where the scan is */
    CHECK(right && n == 4 && lens[0] == W && lens[1] == 2 * W && lens[2] == 4 * W &&
          lens[3] == 8 * W);
}

static void epoch_or_work_drops(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    rd(d);
    memset_word(d + 8, 0xa1); /* the program writes device memory: the epoch moves */
    tally_t t = tally();
    CHECK(rd(d + 8) == 0xa1 && since(t).hits == 0 && since(t).copies == 1);

    calm();
    d = fresh(W);
    rd(d);
    *stub_word(d + 8) = 0xa2; /* another writer, known only by the epoch bump */
    ga_epoch_bump();
    t = tally();
    CHECK(rd(d + 8) == 0xa2 && since(t).hits == 0 && since(t).copies == 1);

    calm();
    d = fresh(W);
    rd(d);
    uint64_t epoch = ga_epoch_read();
    enqueue_only(s_other); /* work, no write: the epoch stays, the window goes */
    *stub_word(d + 8) = 0xa3;
    t = tally();
    CHECK(ga_epoch_read() == epoch && rd(d + 8) == 0xa3 && since(t).hits == 0 &&
          since(t).copies == 1);
}

/* Whether the program's destination is host memory is asked of the driver
 * once, and asked again only after a call that may map memory: a memset or a
 * copy moves bytes only, an allocation may map where the destination was. */
static void host_answer_kept(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    rd(d);
    unsigned asked = stub_nhostq;
    memset_word(d + 8, 0xa4); /* a memset: the write epoch moves, the map epoch stands */
    bool right = rd(d + 8) == 0xa4;
    CHECK(right && stub_nhostq == asked);
    ga_hooks_plain_before(&rt, true, true, GA_NOSTREAM); /* cuMemAlloc, say */
    ga_hooks_plain_after(&rt, CUDA_SUCCESS, GA_NOSTREAM, false, true, true);
    right = rd(d + 12) == *stub_word(d + 12);
    CHECK(right && stub_nhostq == asked + 1);
}

static CUresult stub_unload(CUmodule m)
{
    (void)m;
    return CUDA_SUCCESS;
}

/* A module's global read, the module unloaded, another loaded whose global
 * lands at the same address: its value is read anew, not from the window. */
static void unload_drops(void)
{
    calm();
    CUdeviceptr g = fresh(W);
    rd(g);
    rt.drv.fn[GA_ID_cuModuleUnload] = (void *)stub_unload;
    CHECK(ga_hook_module_unload(&rt, GA_ID_cuModuleUnload, (CUmodule)&rt) == CUDA_SUCCESS);
    *stub_word(g + 8) = 0xb7;
    tally_t t = tally();
    CHECK(rd(g + 8) == 0xb7 && since(t).hits == 0);
}

/* The polling loop: a kernel on s_nb will set a flag; the host reads it in a
 * loop. While the kernel runs, no window is kept, so the flip is seen. */
static void busy_stream_never_served(void)
{
    calm();
    CUdeviceptr flag = fresh(W);
    *stub_word(flag) = 0;
    stub_kernel_t *spin = stub_kernel(NULL, false);
    stub_running[1] = 1;
    CHECK(stub_call(&rt, GA_ID_cuLaunchKernel, spin, (const unsigned[]){1, 1, 1},
                    (const unsigned[]){32, 1, 1}, 0, s_nb, 0, NULL) == CUDA_SUCCESS);
    tally_t t = tally();
    uint32_t seen = 0;
    for (int i = 0; i < 6; i++) {
        if (i == 3)
            *stub_word(flag) = 1; /* the kernel writes the flag */
        seen += rd(flag) + rd_async(flag, s_async);
    }
    CHECK(seen == 6 && since(t).hits == 0);
    stub_running[1] = 0;
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_nb);
}

/* A kernel of a non-blocking stream that writes the flag and ends while a
 * read's window is being copied (after the copy read the flag, before the
 * library asks whether the stream is done): the window holds the old flag
 * and must not be kept, or every later read would be served the old value (a
 * polling loop would never see the flag flip). */
static CUdeviceptr race_flag;
static CUresult kernel_ends_now(void)
{
    *stub_word(race_flag) = 1;
    stub_running[1] = 0;
    return CUDA_SUCCESS;
}

/* Another thread's cuMemsetD32 of race_flag, made as a copy returns. */
static CUresult written_meanwhile(void)
{
    memset_word(race_flag, 2);
    return CUDA_SUCCESS;
}

/* The copy fails (its bytes may be anything). */
static CUresult copy_fails(void)
{
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

static void kernel_ending_during_fill(void)
{
    calm();
    race_flag = fresh(W);
    *stub_word(race_flag) = 0;
    stub_kernel_t *k = stub_kernel(NULL, false);
    stub_running[1] = 1;
    CHECK(stub_call(&rt, GA_ID_cuLaunchKernel, k, (const unsigned[]){1, 1, 1},
                    (const unsigned[]){32, 1, 1}, 0, s_nb, 0, NULL) == CUDA_SUCCESS);
    tally_t t = tally(); /* an asynchronous read meanwhile: no fill behind it */
    CHECK(rd_async(race_flag, s_async) == 0 && since(t).fills == 0);
    stub_after_dtoh = kernel_ends_now;
    CHECK(rd(race_flag) == 0 && stub_running[1] == 0); /* read before the write */
    CHECK(rd(race_flag) == 1 && rd(race_flag) == 1);
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_nb);
}

/* Two reads of a word that changes between them: both reach the driver and
 * nothing is filled (after calm(), a cacheable miss would fill). */
static bool never_cached(CUdeviceptr d)
{
    tally_t t = tally();
    uint32_t a = rd(d + 8);
    *stub_word(d + 8) = a + 1;
    uint32_t b = rd(d + 8);
    tally_t got = since(t);
    return b == a + 1 && got.hits == 0 && got.fills == 0 && got.copies == 2;
}

static void shared_memory_never_cached(void)
{
    calm();
    CHECK(never_cached(fresh_kind(W, STUB_MANAGED)));
    calm();
    CHECK(never_cached(fresh_kind(W, STUB_MAPPED)));
    calm();
    CHECK(never_cached(fresh_kind(W, STUB_SHAREABLE)));
    calm();
    CHECK(never_cached(fresh_kind(W, STUB_SYNCMEMOPS)));
    calm();
    CUdeviceptr exported = fresh(W);
    CUipcMemHandle h;
    CHECK(ga_hook_ipc_get(&rt, GA_ID_cuIpcGetMemHandle, &h, exported) == CUDA_SUCCESS &&
          never_cached(exported));
    calm();
    CUdeviceptr dmabuf = fresh(W); /* a dma-buf of part of it, for a NIC to write */
    int fd = -1;
    CHECK(ga_hook_range_export(&rt, GA_ID_cuMemGetHandleForAddressRange, &fd, dmabuf + 1024,
                               2048, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) == CUDA_SUCCESS &&
          fd == 3 && never_cached(dmabuf));
    calm();
    CUdeviceptr imported = 0;
    CHECK(ga_hook_ipc_open(&rt, GA_ID_cuIpcOpenMemHandle_v2, &imported, h, 0) == CUDA_SUCCESS &&
          never_cached(imported));
}

/* cudaMemcpy(device_dst, src, n, cudaMemcpyDeviceToHost) is legal: the
 * library never writes such a destination itself, even when a window holds
 * the source. */
static void device_destination_to_driver(void)
{
    calm();
    CUdeviceptr src = fresh(W);
    rd(src);
    CHECK(rd(src + 4) == *stub_word(src + 4)); /* the window is there */
    stub_kind_t kinds[] = {STUB_DEVICE, STUB_MANAGED};
    for (int i = 0; i < 2; i++) {
        CUdeviceptr dst = fresh_kind(64, kinds[i]);
        tally_t t = tally();
        CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, (void *)(uintptr_t)dst, src + 16, 4) ==
                  CUDA_SUCCESS &&
              since(t).hits == 0 && since(t).copies == 1 &&
              stub_last_copy()->dst == (void *)(uintptr_t)dst && stub_last_copy()->src == src + 16 &&
              *stub_word(dst) == *stub_word(src + 16));
    }
}

/* A read into device memory (legal with unified addressing) writes that
 * memory, and synchronously it may return before the copy ends: a window over
 * the destination is not served afterwards, whichever read entry point made
 * it, and the stream is not taken as idle. */
static void device_destination_written(void)
{
    for (int async = 0; async < 2; async++) {
        calm();
        CUdeviceptr src = fresh(W), dst = fresh(W);
        rd(dst);
        CHECK(rd(dst + 4) == *stub_word(dst + 4)); /* a window over dst */
        CUresult r = async ? ga_hook_dtoh_async(&rt, GA_ID_cuMemcpyDtoHAsync_v2,
                                                (void *)(uintptr_t)(dst + 8), src + 16, 4, s_async)
                           : ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, (void *)(uintptr_t)(dst + 8),
                                          src + 16, 4);
        unsigned n = stub_nsyncs;
        if (async)
            ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async);
        else /* device to device: the copy may still run, and a sync must wait for it */
            CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, NULL) == CUDA_SUCCESS &&
                  stub_nsyncs == n + 1);
        CHECK(r == CUDA_SUCCESS && *stub_word(dst + 8) == *stub_word(src + 16) &&
              rd(dst + 8) == *stub_word(src + 16));
    }
}

/* The same with coalescing off: the hooks alone take a synchronous read into
 * device memory as work on the default stream (the pool's and the page-locked
 * cache's fences trust an idle mark), and one into host memory as proof that
 * the stream is idle. */
static void device_destination_busy(void)
{
    CUdeviceptr src = fresh(W), dst = fresh(W);
    uint32_t v;
    rt.cfg.coalesce = false;
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, NULL) == CUDA_SUCCESS);
    ga_stream_t *st = ga_stream_get(&rt, NULL, false);
    bool idle_before = st && !ga_stream_busy(st);
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, (void *)(uintptr_t)dst, src, 4) ==
          CUDA_SUCCESS);
    bool busy = st && ga_stream_busy(st);
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, &v, src, 4) == CUDA_SUCCESS);
    CHECK(idle_before && busy && !ga_stream_busy(st) && v == *stub_word(src));
    rt.cfg.coalesce = true;
}

/* An asynchronous read behind queued work is neither served nor filled into
 * the program's memory: the driver is not asked what its destination is, even
 * after a call that may map memory (ICICLE's MSM allocates before each read).
 * Once the stream is idle, a read asks again. */
static void busy_read_asks_nothing(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    uint32_t v = 0;
    ga_hooks_plain_before(&rt, true, true, GA_NOSTREAM); /* cuMemAllocAsync, say */
    ga_hooks_plain_after(&rt, CUDA_SUCCESS, GA_NOSTREAM, false, true, true);
    enqueue_only(s_async);
    unsigned asked = stub_nhostq;
    CHECK(ga_hook_dtoh_async(&rt, GA_ID_cuMemcpyDtoHAsync_v2, &v, d + 8, 4, s_async) ==
              CUDA_SUCCESS &&
          ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async) == CUDA_SUCCESS);
    CHECK(v == *stub_word(d + 8) && stub_nhostq == asked);
    CHECK(rd_async(d + 12, s_async) == *stub_word(d + 12) && stub_nhostq == asked + 1);
}

/* A loop that writes before every read: every window is wasted. After 8
 * fills without a hit the next 64 misses go straight to the driver. */
static void writes_before_reads_back_off(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    tally_t t = tally();
    unsigned from = stub_ncopies, right = 0;
    for (uint32_t i = 0; i < 8 + 1 + 64; i++) {
        memset_word(d, i);
        right += rd(d) == i;
    }
    size_t lens[16];
    CHECK(right == 73 && since(t).fills == 8 && window_copies(from, lens, 16) == 8 &&
          since(t).copies == 73);
    memset_word(d, 1000);
    CHECK(rd(d) == 1000 && since(t).fills == 9); /* the rest is over */
}

static void async_fill_installed_at_sync(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    CHECK(rd_async(d + 8, s_async) == *stub_word(d + 8));
    tally_t t = tally();
    /* installed: a synchronous and an asynchronous read, both served */
    CHECK(rd(d + 16) == *stub_word(d + 16) && rd_async(d + 24, s_async) == *stub_word(d + 24) &&
          since(t).hits == 2 && since(t).copies == 0);

    calm();
    CUdeviceptr e = fresh(W);
    uint32_t v = 0;
    CHECK(ga_hook_dtoh_async(&rt, GA_ID_cuMemcpyDtoHAsync_v2, &v, e + 8, 4, s_async) ==
          CUDA_SUCCESS);
    enqueue_only(s_other); /* between the read and its sync */
    *stub_word(e + 16) = 0xb1;
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async);
    t = tally();
    CHECK(v == *stub_word(e + 8) && rd(e + 16) == 0xb1 && since(t).hits == 0 &&
          since(t).copies == 1);
}

/* A sync whose context has nothing in flight is answered without the driver
 * (the .item() loop's sync after a served read); one with work anywhere in
 * the context, during a capture, or of a handle the driver rejects goes to
 * the driver. */
static void idle_syncs_answered(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    CHECK(rd_async(d + 8, s_async) == *stub_word(d + 8)); /* the fill, installed at its sync */
    tally_t t = tally();
    unsigned n = stub_nsyncs;
    for (int k = 0; k < 16; k++)
        CHECK(rd_async(d + 4 * (unsigned)k, s_async) == *stub_word(d + 4 * (unsigned)k));
    CHECK(since(t).hits == 16 && since(t).copies == 0 && stub_nsyncs == n);
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, NULL) == CUDA_SUCCESS &&
          ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_nb) == CUDA_SUCCESS &&
          stub_nsyncs == n);

    enqueue_only(s_other); /* work elsewhere in the context: every stream's sync waits */
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async) == CUDA_SUCCESS &&
          stub_nsyncs == n + 1);
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_other) == CUDA_SUCCESS &&
          stub_nsyncs == n + 2);
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async) == CUDA_SUCCESS &&
          stub_nsyncs == n + 2); /* idle again */

    stub_capture_begin(&rt, s_cap);
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async) == CUDA_SUCCESS &&
          stub_nsyncs == n + 3);
    stub_capture_end(&rt, s_cap);
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_cap);

    /* a handle no stream has: the driver's own error */
    uint32_t bogus;
    n = stub_nsyncs;
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, (CUstream)&bogus) ==
              CUDA_ERROR_INVALID_HANDLE &&
          stub_nsyncs == n + 1);

    rt.cfg.coalesce = false; /* the switch: every sync to the driver */
    CHECK(ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async) == CUDA_SUCCESS &&
          stub_nsyncs == n + 2);
    rt.cfg.coalesce = true;
}

static void nothing_served_in_capture(void)
{
    calm();
    CUdeviceptr d = fresh(W);
    rd(d);
    CHECK(rd(d + 4) == *stub_word(d + 4)); /* a valid window */
    stub_capture_begin(&rt, s_cap);
    tally_t t = tally();
    int pinned = stub_pinned;
    /* the program's own copy reaches the driver (and the graph) */
    CHECK(rd(d + 8) == *stub_word(d + 8) && since(t).hits == 0 && since(t).copies == 1 &&
          stub_last_copy()->n == 4);
    stub_capture_end(&rt, s_cap);
    t = tally();
    CHECK(rd(d + 16) == *stub_word(d + 16) && since(t).hits == 1); /* the window outlived it */

    /* an asynchronous read: neither served nor followed by a fill of ours */
    stub_capture_begin(&rt, s_cap);
    t = tally();
    uint32_t v = 0;
    CHECK(ga_hook_dtoh_async(&rt, GA_ID_cuMemcpyDtoHAsync_v2, &v, d + 12, 4, s_async) ==
              CUDA_SUCCESS &&
          since(t).hits == 0 && since(t).copies == 1 && stub_last_copy()->n == 4 &&
          stub_pinned == pinned && stub_unsafe_in_capture == 0);
    stub_capture_end(&rt, s_cap);
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async);
}

/* Reads at scattered places of one allocation: the third miss copies it all. */
static void mirror_after_misses(void)
{
    ga_coalesce_set_model(10000, 12000, true); /* 10 us a round trip, 12 GB/s */
    calm();
    CUdeviceptr d = fresh(64 * W);
    rd(d);
    rd(d + 10 * W);
    CHECK(stub_last_copy()->n == W);
    tally_t t = tally();
    CHECK(rd(d + 20 * W + 8) == *stub_word(d + 20 * W + 8) && since(t).copies == 1 &&
          stub_last_copy()->src == d && stub_last_copy()->n == 64 * W);
    t = tally();
    bool right = true;
    for (CUdeviceptr a = d + 4; a < d + 64 * W; a += 5 * W + 4)
        right &= rd(a) == *stub_word(a);
    CHECK(right && since(t).copies == 0 && since(t).hits >= 12);
    ga_coalesce_stats_t st;
    ga_coalesce_stats(&st);
    CHECK(st.mirrors >= 1 && st.mirror_bytes >= 64 * W);
    memset_word(d + 30 * W, 0xc1); /* a write: the mirror is not read again */
    t = tally();
    CHECK(rd(d + 30 * W) == 0xc1 && since(t).hits == 0 && since(t).copies == 1);
}

/* The same pattern when the copy would cost too much, or the budget is small. */
static void mirror_only_when_it_pays(void)
{
    ga_coalesce_set_model(10000, 1, true); /* 1 byte a microsecond: never pays */
    calm();
    CUdeviceptr d = fresh(64 * W);
    rd(d), rd(d + 10 * W), rd(d + 20 * W), rd(d + 30 * W);
    CHECK(stub_last_copy()->n == W);
    ga_coalesce_set_model(10000, 12000, true);
    rt.cfg.coalesce_budget = 64 * W; /* a mirror may take half of it at most */
    calm();
    d = fresh(64 * W);
    rd(d), rd(d + 10 * W), rd(d + 20 * W), rd(d + 30 * W);
    CHECK(stub_last_copy()->n == W);
    rt.cfg.coalesce_budget = 0;
}

/* Reads larger than GPUACCEL_COALESCE_MAX: served from a mirror that holds
 * them up to a window's size; larger ones, and any never mirrored, go to the
 * driver (a host memcpy of them costs what the driver's copy does). */
static void large_reads(void)
{
    ga_coalesce_set_model(10000, 12000, true);
    calm();
    CUdeviceptr d = fresh(64 * W);
    static uint32_t got[W / 2], want[W / 2];
    tally_t t = tally();
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, d + W, W) == CUDA_SUCCESS &&
          !memcmp(got, stub_word(d + W), W) && since(t).copies == 1 && since(t).fills == 0);
    rd(d), rd(d + 10 * W), rd(d + 20 * W); /* the third miss mirrors it */
    memcpy(want, stub_word(d + 3 * W), W);
    t = tally();
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, d + 3 * W, W) == CUDA_SUCCESS &&
          !memcmp(got, want, W) && since(t).copies == 0 && since(t).hits == 1);
    t = tally(); /* larger than a window, inside the mirror: served from it too */
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, d + 3 * W, 2 * W) == CUDA_SUCCESS &&
          !memcmp(got, stub_word(d + 3 * W), 2 * W) && since(t).copies == 0 &&
          since(t).hits == 1);
}

/* One whole-column read of n bytes at d into got; true if its bytes are the
 * device's. */
static bool column(CUdeviceptr d, size_t n, uint32_t *got)
{
    memset(got, 0xa5, n);
    return ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, d, n) == CUDA_SUCCESS &&
           !memcmp(got, stub_word(d), n);
}

/* A column accessor: a read larger than a window copies its own range once
 * (through the library's page-locked memory) and later reads of it are served
 * from there, every byte the device's, until a write or any work; it does so
 * only into page-locked memory already kept until the range's third read in
 * one generation; a read over an eighth of the budget goes to the driver.
 * Over 1 MiB the copy is plain memory, made at the range's fourth read in a
 * generation and, in the next, filled at the first read into the buffer that
 * held it (taken from the program's own copy, which staging or the driver
 * made), none while a kernel of another stream runs; over 16 MiB a read is
 * left to the driver. */
static void column_reads(void)
{
    enum { COL = 16 * W, MID = 40 * W, BIG = (3 << 20) + 8 * W, HUGE = (16 << 20) + 8 * W };
    static uint32_t got[HUGE / 4];
    CUdeviceptr c = fresh(COL), big = fresh(BIG), huge = fresh(HUGE);
    tally_t t = tally();
    CHECK(column(c, COL, got) && since(t).copies == 1 && since(t).fills == 1);
    t = tally();
    CHECK(column(c, COL, got) && column(c + W, COL - 2 * W, got) && since(t).copies == 0 &&
          since(t).hits == 2);
    memset_word(c + 5 * W, 0x1234567u); /* a write: read anew, the new word seen */
    t = tally();
    CHECK(column(c, COL, got) && got[5 * W / 4] == 0x1234567u && since(t).copies == 1);
    enqueue_only(s_async); /* any work drops it too */
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_async);
    t = tally();
    CHECK(column(c, COL, got) && since(t).copies == 1);
    CUdeviceptr c2 = fresh(MID); /* larger than any page-locked buffer kept so far */
    t = tally();
    CHECK(column(c2, MID, got) && since(t).copies == 1 && since(t).fills == 0);
    CHECK(column(c2, MID, got) && since(t).copies == 2 && since(t).fills == 0);
    CHECK(column(c2, MID, got) && since(t).copies == 3 && since(t).fills == 1);
    CHECK(column(c2, MID, got) && since(t).copies == 3 && since(t).hits == 1);
    memset_word(c2 + W, 7); /* a new generation: its buffer is there, filled at once */
    t = tally();
    CHECK(column(c2, MID, got) && got[W / 4] == 7 && since(t).copies == 1 &&
          since(t).fills == 1);
    rt.cfg.coalesce_budget = 1ull << 30; /* an eighth of it takes HUGE */
    t = tally(); /* over 1 MiB: three reads go to the driver, the fourth fills */
    CHECK(column(big, BIG, got) && column(big, BIG, got) && column(big, BIG, got) &&
          since(t).copies == 3 && since(t).fills == 0 && since(t).hits == 0);
    CHECK(column(big, BIG, got) && since(t).copies == 4 && since(t).fills == 1);
    CHECK(stub_last_copy()->dst == got); /* the program's copy, kept from its destination */
    CHECK(column(big, BIG, got) && column(big + W, BIG - 2 * W, got) && since(t).copies == 4 &&
          since(t).hits == 2);
    memset_word(big + 3 * W, 9); /* a new generation: its buffer takes the first read */
    t = tally();
    CHECK(column(big, BIG, got) && got[3 * W / 4] == 9 && since(t).copies == 1 &&
          since(t).fills == 1);
    CHECK(column(big, BIG, got) && got[3 * W / 4] == 9 && since(t).copies == 1 &&
          since(t).hits == 1);
    /* A kernel of another stream runs, writes the column just after the read
     * that would be kept copied it, and ends: nothing is kept, the next reads
     * see what it wrote. */
    race_flag = fresh(BIG) + 5 * W;
    stub_kernel_t *k = stub_kernel(NULL, false);
    stub_running[1] = 1;
    CHECK(stub_call(&rt, GA_ID_cuLaunchKernel, k, (const unsigned[]){1, 1, 1},
                    (const unsigned[]){32, 1, 1}, 0, s_nb, 0, NULL) == CUDA_SUCCESS);
    CUdeviceptr big2 = race_flag - 5 * W;
    t = tally();
    for (int i = 0; i < 3; i++)
        CHECK(column(big2, BIG, got));
    uint32_t old = *stub_word(race_flag);
    stub_after_dtoh = kernel_ends_now; /* the copy reads the old word */
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, big2, BIG) == CUDA_SUCCESS &&
          got[5 * W / 4] == old && old != 1 && stub_running[1] == 0);
    CHECK(column(big2, BIG, got) && got[5 * W / 4] == 1);
    CHECK(since(t).copies == 5 && since(t).hits == 0);
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s_nb);
    /* The copy to be kept fails: the driver's error returned as it is, nothing
     * kept (the next read is the one kept); then, in the next generation, a
     * write as the copy to be kept returns: the next read sees it. */
    CUdeviceptr big3 = fresh(BIG);
    race_flag = big3 + 7 * W;
    t = tally();
    for (int i = 0; i < 3; i++)
        CHECK(column(big3, BIG, got));
    stub_after_dtoh = copy_fails;
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, big3, BIG) == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(since(t).fills == 0 && since(t).hits == 0);
    CHECK(column(big3, BIG, got) && since(t).fills == 1 && since(t).hits == 0);
    CHECK(column(big3, BIG, got) && since(t).hits == 1);
    memset_word(big3, 3);
    stub_after_dtoh = written_meanwhile;
    CHECK(ga_hook_dtoh(&rt, GA_ID_cuMemcpyDtoH_v2, got, big3, BIG) == CUDA_SUCCESS &&
          got[0] == 3 && got[7 * W / 4] != 2 && since(t).fills == 2);
    CHECK(column(big3, BIG, got) && got[7 * W / 4] == 2 && since(t).hits == 1);
    /* Read whole four times in one generation, then once in each of the next
     * (a write between): its copy, never read again, is not made again at the
     * first read of each. */
    CUdeviceptr big4 = fresh(BIG);
    for (int i = 0; i < 4; i++)
        CHECK(column(big4, BIG, got));
    t = tally();
    for (int i = 0; i < 3; i++) {
        memset_word(big4 + W, (uint32_t)i);
        CHECK(column(big4, BIG, got) && got[W / 4] == (uint32_t)i);
    }
    CHECK(since(t).fills == 0 && since(t).copies == 3);
    t = tally(); /* over 16 MiB: left to the driver, never copied */
    for (int i = 0; i < 5; i++)
        CHECK(column(huge, HUGE, got));
    CHECK(since(t).copies == 5 && since(t).fills == 0 && since(t).hits == 0);
    memset_word(c, 1);
    rt.cfg.coalesce_budget = 64 * W; /* a read may take an eighth of it: 8 windows */
    t = tally();
    CHECK(column(c, COL, got) && column(c, COL, got) && since(t).copies == 2 &&
          since(t).fills == 0);
    rt.cfg.coalesce_budget = 0;
}

/* A context destroyed while a thread copies out of a kept 4 MiB copy: that
 * plain memory stays (emptied, not freed under the reader); a page-locked
 * copy, gone with the context, is taken off the bytes held. */
static void context_gone(void)
{
    enum { COL = 48 * W, BIG = 4 << 20 }; /* COL: larger than any page-locked buffer so far */
    static uint32_t got[BIG / 4];
    CUdeviceptr c = fresh(COL), big = fresh(BIG);
    for (int i = 0; i < 4; i++)
        CHECK(column(c, COL, got) && column(big, BIG, got));
    slot_t *plain = NULL, *pinned = NULL;
    pthread_mutex_lock(&ga_co_lock);
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (s->state == S_VALID && s->base == big && s->big)
            plain = s;
        if (s->state == S_VALID && s->base == c && s->counted)
            pinned = s;
    }
    CHECK(plain && pinned);
    if (!plain || !pinned) {
        pthread_mutex_unlock(&ga_co_lock);
        return;
    }
    void *host = plain->host;
    plain->readers = 1; /* a reader copying out of it */
    uint64_t left = plain->cap; /* what stays counted: every other copy of the context goes */
    for (int i = 0; i < N_SLOTS; i++)
        if (ga_co_slots[i].ctx != stub_current && (ga_co_slots[i].big || ga_co_slots[i].counted))
            left += ga_co_slots[i].cap;
    CHECK(pinned->counted && ga_co_held_bytes() > left);
    pthread_mutex_unlock(&ga_co_lock);
    GA_EACH(ctx_gone, &rt, stub_current);
    CHECK(plain->host == host && plain->state == S_EMPTY && !pinned->host);
    CHECK(ga_co_held_bytes() == left);
    ((volatile uint32_t *)host)[BIG / 4 - 1] = 1; /* still ours to touch */
    pthread_mutex_lock(&ga_co_lock);
    plain->readers = 0;
    pthread_mutex_unlock(&ga_co_lock);
}

/* The budget when none is set: a quarter of the host memory available (as
 * /proc/meminfo says, within a quarter: it moves), at most an eighth of all
 * of it, 64 MiB at least; a set one as set. */
static void default_budget(void)
{
    uint64_t all = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    unsigned long long kib = 0;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu", &kib) == 1)
            break;
    if (f)
        fclose(f);
    uint64_t want = (uint64_t)kib * 1024 / 4;
    if (!kib || want > all / 8)
        want = all / 8;
    if (want < (64ull << 20))
        want = 64ull << 20;
    rt.cfg.coalesce_budget = 0;
    uint64_t b = ga_co_budget(&rt);
    CHECK(b >= (64ull << 20) && b <= (all / 8 > (64ull << 20) ? all / 8 : 64ull << 20));
    CHECK(b >= want - want / 4 && b <= want + want / 4);
    rt.cfg.coalesce_budget = 123u << 20;
    CHECK(ga_co_budget(&rt) == 123u << 20);
    rt.cfg.coalesce_budget = 0;
}

int main(void)
{
    stub_runtime(&rt);
    rt.cfg.coalesce = true;
    rt.cfg.coalesce_max = 256;
    rt.cfg.coalesce_window = W;
    rt.cfg.coalesce_mirrors = true;
    stub_start(&rt);
    /* No mirror pays until a test says so: the windows' rules first. */
    ga_coalesce_set_model(10000, 1, true);
    s_nb = (CUstream)&stub_streams[1], s_async = (CUstream)&stub_streams[2];
    s_other = (CUstream)&stub_streams[3], s_cap = (CUstream)&stub_streams[4];
    stub_stream_flags[1] = CU_STREAM_NON_BLOCKING;
    stub_stream_flags[4] = CU_STREAM_NON_BLOCKING;

    served_from_window();
    aligned_and_clamped();
    grows_for_scans();
    epoch_or_work_drops();
    host_answer_kept();
    unload_drops();
    busy_stream_never_served();
    kernel_ending_during_fill();
    shared_memory_never_cached();
    device_destination_to_driver();
    device_destination_written();
    device_destination_busy();
    busy_read_asks_nothing();
    writes_before_reads_back_off();
    async_fill_installed_at_sync();
    idle_syncs_answered();
    nothing_served_in_capture();
    mirror_after_misses();
    mirror_only_when_it_pays();
    large_reads();
    column_reads();
    context_gone();
    default_budget();
    return check_done("test_coalesce");
}
