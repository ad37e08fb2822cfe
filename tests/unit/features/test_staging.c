/* test_staging.c - the staging feature through the copy hooks, over a stub
 * driver whose asynchronous copies land only when an event recorded after them
 * is waited for (or the test synchronizes), so a slot reused or read before its
 * DMA completed shows as wrong bytes:
 *   - copies both ways are bit-exact at sizes around the threshold and the
 *     chunk (threshold-1, threshold, chunk-1, chunk, chunk+1, several chunks
 *     and an odd tail), with unaligned host and device offsets, through every
 *     entry point (sync, _ptds, async on a stream, _ptsz on the default one),
 *     and the bytes around the destination stay as they were;
 *   - each DMA goes on the program's stream (legacy, per-thread or named); a
 *     synchronous host-to-device copy returns once the stream's earlier work
 *     and its own DMAs have completed, an asynchronous one waits for nothing
 *     when the ring is free;
 *   - page-locked, device and managed "host" arguments, unified-address
 *     copies, copies under capture and after a sticky error go to the driver;
 *   - too-long copies and bad device pointers return the driver's own error
 *     with nothing copied;
 *   - a failure before the first chunk hands the copy to the driver, a DMA
 *     error after it returns the driver's code, and later copies are right;
 *   - an engine with DMAs in flight on another stream is not used; a
 *     destroyed context's ring is forgotten and made again;
 *   - several threads copying at once all get their own bytes. */
#include <dirent.h>
#include <pthread.h>

#include "check.h"
#include "features/staging/admit.h"
#include "features/staging/staging.h"
#include "core/fault.h"
#include "tracking/capture.h"
#include "stub_driver.h"
#include "stub_more.h"

enum { MIN = 32 << 10, CHUNK = 64 << 10, DEV = 2 << 20 };

static ga_rt_t rt;
static CUstream s_a, s_b, s_cap;

/* ---- the stub driver's copies: asynchronous ones queued in order ------------------ */

typedef struct qcopy {
    void *dst;
    const void *src;
    size_t n;
} qcopy_t;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static qcopy_t queue[1 << 14];
static uint64_t q_done, q_next; /* copies [q_done, q_next) still in flight */

/* What the test looks at, under q_lock. */
static unsigned t_native, t_async, t_event_syncs, t_pinned, t_unsafe;
static CUstream t_streams[256]; /* the stream of each asynchronous copy since reset */
static int t_fail_async = -1;   /* the async copy (counted from 0) that fails */
static bool t_fail_pinned, t_fail_register;
static unsigned t_native_delay_us, t_staged_delay_us; /* what each way costs, for admission */
static unsigned t_tail_delay_us; /* an event wait for everything queued (a copy's last DMA) */
static unsigned t_registered, t_unregistered;

static void complete_locked(uint64_t upto)
{
    for (; q_done < upto && q_done < q_next; q_done++) {
        qcopy_t *c = &queue[q_done % (sizeof queue / sizeof queue[0])];
        memcpy(c->dst, c->src, c->n);
    }
}

/* The device is idle again (a stream or context sync of the test's own). */
static void device_sync(void)
{
    pthread_mutex_lock(&q_lock);
    complete_locked(UINT64_MAX);
    pthread_mutex_unlock(&q_lock);
}

/* [p, p+n) within one allocation of the stub (device or managed). */
static bool in_device(const void *p, size_t n)
{
    int i = stub_find_mem((CUdeviceptr)(uintptr_t)p);
    return i >= 0 && stub_mem_list[i].kind != STUB_MAPPED &&
           (CUdeviceptr)(uintptr_t)p + n <= stub_mem_list[i].base + stub_mem_list[i].size;
}

static CUresult t_range(CUdeviceptr *base, size_t *size, CUdeviceptr d)
{
    int i = stub_find_mem(d);
    if (i < 0 || stub_mem_list[i].kind == STUB_MAPPED)
        return CUDA_ERROR_NOT_FOUND;
    *base = stub_mem_list[i].base, *size = stub_mem_list[i].size;
    return CUDA_SUCCESS;
}

/* The program's own synchronous copy: stream order first, then the bytes;
 * a device side past its allocation is refused before anything is copied. */
static CUresult native_copy(void *dst, const void *src, size_t n, const void *dev)
{
    if (!in_device(dev, n))
        return CUDA_ERROR_INVALID_VALUE;
    if (t_native_delay_us)
        usleep(t_native_delay_us);
    pthread_mutex_lock(&q_lock);
    t_native++;
    complete_locked(UINT64_MAX);
    memcpy(dst, src, n);
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}

static CUresult t_htod(CUdeviceptr d, const void *h, size_t n)
{
    return native_copy((void *)(uintptr_t)d, h, n, (const void *)(uintptr_t)d);
}

static CUresult t_dtoh(void *h, CUdeviceptr d, size_t n)
{
    return native_copy(h, (const void *)(uintptr_t)d, n, (const void *)(uintptr_t)d);
}

/* Pinned memory the library allocated (its rings), under q_lock. */
static struct {
    const char *p;
    size_t n;
} rings[64];
static unsigned n_rings;

static bool in_ring_locked(const void *p)
{
    for (unsigned i = 0; i < n_rings; i++)
        if ((const char *)p >= rings[i].p && (const char *)p < rings[i].p + rings[i].n)
            return true;
    return false;
}

/* An asynchronous copy: the library's DMAs (from or into its pinned ring) are
 * queued; the program's own, which the library passed on, copy at once. */
static CUresult async_copy(void *dst, const void *src, size_t n, const void *dev,
                           const void *hst, CUstream s)
{
    pthread_mutex_lock(&q_lock);
    bool library = in_ring_locked(hst);
    pthread_mutex_unlock(&q_lock);
    if (!library)
        return native_copy(dst, src, n, dev);
    if (!in_device(dev, n))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&q_lock);
    unsigned k = t_async++;
    if ((int)k == t_fail_async) {
        pthread_mutex_unlock(&q_lock);
        return CUDA_ERROR_UNKNOWN;
    }
    t_streams[k % 256] = s;
    if (q_next - q_done == sizeof queue / sizeof queue[0])
        complete_locked(q_done + 1);
    queue[q_next++ % (sizeof queue / sizeof queue[0])] = (qcopy_t){dst, src, n};
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}

static CUresult t_htod_async(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    return async_copy((void *)(uintptr_t)d, h, n, (const void *)(uintptr_t)d, h, s);
}

static CUresult t_dtoh_async(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    return async_copy(h, (const void *)(uintptr_t)d, n, (const void *)(uintptr_t)d, h, s);
}

/* Events: the position in the queue when recorded; complete once the queue
 * has moved past it. */
typedef struct t_event {
    uint64_t at;
} t_event_t;

static CUresult t_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    pthread_mutex_unlock(&q_lock);
    *e = (CUevent)calloc(1, sizeof(t_event_t));
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult t_event_destroy(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}

static CUresult t_event_record(CUevent e, CUstream s)
{
    (void)s;
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    ((t_event_t *)e)->at = q_next;
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}

static CUresult t_event_sync(CUevent e)
{
    pthread_mutex_lock(&q_lock);
    bool tail = ((t_event_t *)e)->at == q_next && q_done < q_next; /* still in flight */
    pthread_mutex_unlock(&q_lock);
    unsigned delay = t_staged_delay_us + (tail ? t_tail_delay_us : 0);
    if (delay)
        usleep(delay);
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    t_event_syncs++;
    complete_locked(((t_event_t *)e)->at);
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}

static CUresult t_event_query(CUevent e)
{
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    bool done = q_done >= ((t_event_t *)e)->at;
    pthread_mutex_unlock(&q_lock);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult t_host_alloc(void **pp, size_t n, unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!t_fail_pinned && n_rings < 64 && (*pp = malloc(n)) != NULL) {
        t_pinned++;
        rings[n_rings].p = *pp, rings[n_rings++].n = n;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&q_lock);
    return r;
}

/* Registration: the library's own pages (mmap), recorded as a ring. */
static CUresult t_host_register(void *p, size_t n, unsigned flags)
{
    pthread_mutex_lock(&q_lock);
    t_unsafe += stub_capturing;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!t_fail_pinned && !t_fail_register && n_rings < 64 &&
        flags == CU_MEMHOSTREGISTER_PORTABLE) {
        memset(p, 0x5a, n); /* the pages are ours to use */
        t_pinned++, t_registered++;
        rings[n_rings].p = p, rings[n_rings++].n = n;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&q_lock);
    return r;
}

static CUresult t_host_unregister(void *p)
{
    pthread_mutex_lock(&q_lock);
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    for (unsigned i = 0; i < n_rings; i++)
        if (rings[i].p == p) {
            /* its queued DMAs must be done: unregistering under them is a bug */
            if (q_done != q_next) {
                r = CUDA_ERROR_ILLEGAL_STATE;
                break;
            }
            rings[i] = rings[--n_rings];
            t_unregistered++;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&q_lock);
    return r;
}

static CUresult t_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    pthread_mutex_lock(&q_lock);
    t_native++;
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}

static void install(void)
{
    static const struct {
        ga_id_t id;
        void *fn;
    } fns[] = {
        {GA_ID_cuMemGetAddressRange_v2, (void *)t_range},
        {GA_ID_cuMemcpyHtoD_v2, (void *)t_htod},
        {GA_ID_cuMemcpyHtoD_v2_ptds, (void *)t_htod},
        {GA_ID_cuMemcpyDtoH_v2, (void *)t_dtoh},
        {GA_ID_cuMemcpyDtoH_v2_ptds, (void *)t_dtoh},
        {GA_ID_cuMemcpyHtoDAsync_v2, (void *)t_htod_async},
        {GA_ID_cuMemcpyHtoDAsync_v2_ptsz, (void *)t_htod_async},
        {GA_ID_cuMemcpyDtoHAsync_v2, (void *)t_dtoh_async},
        {GA_ID_cuMemcpyDtoHAsync_v2_ptsz, (void *)t_dtoh_async},
        {GA_ID_cuMemcpy, (void *)t_memcpy},
        {GA_ID_cuEventCreate, (void *)t_event_create},
        {GA_ID_cuEventDestroy_v2, (void *)t_event_destroy},
        {GA_ID_cuEventRecord, (void *)t_event_record},
        {GA_ID_cuEventSynchronize, (void *)t_event_sync},
        {GA_ID_cuEventQuery, (void *)t_event_query},
        {GA_ID_cuMemHostAlloc, (void *)t_host_alloc},
        {GA_ID_cuMemHostRegister_v2, (void *)t_host_register},
        {GA_ID_cuMemHostUnregister, (void *)t_host_unregister},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        rt.drv.fn[fns[i].id] = fns[i].fn;
}

/* ---- the program's calls ------------------------------------------------------------ */

/* The entry points, by variant: 0 sync, 1 _ptds, 2 async on s_a, 3 _ptsz on NULL. */
static const ga_id_t htod_ids[] = {GA_ID_cuMemcpyHtoD_v2, GA_ID_cuMemcpyHtoD_v2_ptds,
                                   GA_ID_cuMemcpyHtoDAsync_v2, GA_ID_cuMemcpyHtoDAsync_v2_ptsz};
static const ga_id_t dtoh_ids[] = {GA_ID_cuMemcpyDtoH_v2, GA_ID_cuMemcpyDtoH_v2_ptds,
                                   GA_ID_cuMemcpyDtoHAsync_v2, GA_ID_cuMemcpyDtoHAsync_v2_ptsz};
static CUstream variant_stream(int v)
{
    return v == 2 ? s_a : NULL;
}
/* Where the library's DMAs of that variant must go. */
static CUstream variant_dma_stream(int v)
{
    return v == 0 ? CU_STREAM_LEGACY : v == 2 ? s_a : CU_STREAM_PER_THREAD;
}

static CUresult htod(int v, CUdeviceptr d, const void *h, size_t n)
{
    return v < 2 ? ga_hook_htod(&rt, htod_ids[v], d, h, n)
                 : ga_hook_htod_async(&rt, htod_ids[v], d, h, n, variant_stream(v));
}

static CUresult dtoh(int v, void *h, CUdeviceptr d, size_t n)
{
    return v < 2 ? ga_hook_dtoh(&rt, dtoh_ids[v], h, d, n)
                 : ga_hook_dtoh_async(&rt, dtoh_ids[v], h, d, n, variant_stream(v));
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static void fill_random(void *p, size_t n, uint64_t *state)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
        b[i] = (unsigned char)*state;
    }
}

static ga_staging_stats_t stats(void)
{
    ga_staging_stats_t s;
    ga_staging_stats(&s);
    return s;
}

static unsigned natives(void)
{
    pthread_mutex_lock(&q_lock);
    unsigned n = t_native;
    pthread_mutex_unlock(&q_lock);
    return n;
}

static CUdeviceptr dev;                 /* DEV bytes of device memory */
static unsigned char *host, *expect;    /* pageable, DEV + 64 bytes each */

static bool round_trip_at(int v, size_t n, size_t ho, size_t dof, bool count);

/* A round trip whose bytes are checked but not whether it was staged. */
static bool round_trip_unchecked(int v, size_t n)
{
    return round_trip_at(v, n, 0, 0, false);
}

/* One copy each way of n bytes at host offset ho and device offset dof,
 * through variant v: right bytes, nothing around them touched, and staged
 * exactly when n reaches the threshold. */
static bool round_trip(int v, size_t n, size_t ho, size_t dof)
{
    return round_trip_at(v, n, ho, dof, true);
}

static bool round_trip_at(int v, size_t n, size_t ho, size_t dof, bool count)
{
    bool ok = true;
    ga_staging_stats_t s0 = stats();
    unsigned nat0 = natives();
    /* host to device */
    fill_random(expect, DEV + 64, &rng_state);
    memcpy((void *)(uintptr_t)dev, expect, DEV); /* the device's old bytes */
    fill_random(host, DEV + 64, &rng_state);
    memcpy(expect + dof, host + ho, n);
    ok &= htod(v, dev + dof, host + ho, n) == CUDA_SUCCESS;
    device_sync();
    ok &= memcmp((void *)(uintptr_t)dev, expect, DEV) == 0;
    /* device to host */
    fill_random((void *)(uintptr_t)dev, DEV, &rng_state);
    fill_random(host, DEV + 64, &rng_state);
    memcpy(expect, host, DEV + 64);
    memcpy(expect + ho, (void *)(uintptr_t)(dev + dof), n);
    ok &= dtoh(v, host + ho, dev + dof, n) == CUDA_SUCCESS;
    ok &= memcmp(host, expect, DEV + 64) == 0; /* filled on return: no sync */
    ga_staging_stats_t s1 = stats();
    bool staged = n >= MIN;
    if (count) {
        ok &= s1.htod - s0.htod == (staged ? 1u : 0u) && s1.dtoh - s0.dtoh == (staged ? 1u : 0u);
        ok &= natives() - nat0 == (staged ? 0u : 2u);
    }
    if (!ok)
        fprintf(stderr, "round trip failed: variant %d, %zu bytes, host +%zu, device +%zu\n", v, n,
                ho, dof);
    return ok;
}

static void contexts_gone(void)
{
    GA_EACH(ctx_gone, &rt, stub_current); /* rings forgotten: the next copy makes one */
    pthread_mutex_lock(&q_lock);
    n_rings = 0; /* the context took them along (our pages are unmapped) */
    pthread_mutex_unlock(&q_lock);
}

/* The slot size allowed by the traffic: none below 4 MiB (four 64 KiB
 * slots, a sixteenth of it), powers of two up to the largest chunk. */
static void ring_follows_traffic(void)
{
    const size_t M = 1 << 20, K = 1 << 10;
    CHECK(ga_config_staging_ring_chunk(8 * M, 0) == 0 && ga_config_staging_ring_chunk(8 * M, 4 * M - 1) == 0);
    CHECK(ga_config_staging_ring_chunk(8 * M, 4 * M) == 64 * K);
    CHECK(ga_config_staging_ring_chunk(8 * M, 8 * M) == 128 * K);
    CHECK(ga_config_staging_ring_chunk(8 * M, 80 * M) == M);          /* one RISC Zero proof */
    CHECK(ga_config_staging_ring_chunk(8 * M, 512 * M) == 8 * M);
    CHECK(ga_config_staging_ring_chunk(8 * M, (uint64_t)1 << 40) == 8 * M);
    CHECK(ga_config_staging_ring_chunk(64 * K, 4 * M) == 64 * K);
    CHECK(ga_config_staging_ring_chunk(12 * M + 4 * K, 1024 * M) == 12 * M + 4 * K);
    CHECK(ga_config_staging_ring_chunk(12 * M + 4 * K, 700 * M) == 8 * M);
}

/* A fresh process: its first copies go to the driver (counted as early)
 * until its pageable traffic pays for a ring of 64 KiB slots; then they are
 * staged, in our own registered pages. */
static void first_copies_go_to_the_driver(void)
{
    unsigned pinned = t_pinned, copies = 0;
    ga_staging_stats_t s0 = stats();
    unsigned nat0 = natives();
    while (stats().htod + stats().dtoh == s0.htod + s0.dtoh && copies < 64) {
        CHECK(round_trip_unchecked(0, DEV / 4));
        copies++;
    }
    ga_staging_stats_t s1 = stats();
    /* 512 KiB each way a round trip: 4 MiB reached in the fourth (its download) */
    CHECK(copies == 4 && s1.early - s0.early == 7 && natives() - nat0 == 7);
    CHECK(s1.dtoh - s0.dtoh == 1 && t_pinned == pinned + 1 && t_registered == 1);
}

/* As the traffic grows the ring is made again with larger slots: when four
 * times its slot fits in an eighth of the traffic, or the largest chunk does,
 * its pages are made by a thread of their own and put in place by a later
 * copy, the old pages unregistered only after their DMAs are done (the stub
 * refuses otherwise). From 4 MiB of traffic (the test before) with a largest
 * chunk of 1 MiB: 64 KiB slots, then 256 KiB ones, then, once a copy can use
 * them (slots no larger than the largest copy), 1 MiB ones. Uploads are
 * queued on one stream, none waited for, while the rings grow; every byte
 * lands. */
static unsigned grow_by_uploads(unsigned want_grown, size_t size)
{
    unsigned n = 0;
    for (; stats().grown < want_grown && n < 2000; n++) {
        size_t at = (n % 2) * (DEV - size);
        CHECK(htod(2, dev + at, host + at, size) == CUDA_SUCCESS);
        usleep(1000);
    }
    return n;
}

static void ring_grows_with_traffic(void)
{
    CHECK(stats().traffic == 4u << 20);
    rt.cfg.staging_chunk = 1 << 20;
    unsigned pinned = t_pinned, unreg = t_unregistered;
    uint64_t g0 = stats().grown;
    fill_random(host, DEV, &rng_state);
    /* a copy as large as a slot is one DMA: its chunks start at an eighth of
     * the largest chunk (128 KiB), not of the slot */
    device_sync();
    unsigned dmas = t_async;
    CHECK(htod(2, dev, host, CHUNK) == CUDA_SUCCESS && t_async == dmas + 1);
    unsigned n1 = grow_by_uploads((unsigned)g0 + 1, DEV / 4);
    CHECK(n1 >= 2 && n1 < 2000 && t_pinned - pinned == 1 && t_unregistered - unreg == 1);
    /* 512 KiB copies use slots of 512 KiB at most: 48 MiB more make no 1 MiB ones */
    for (unsigned i = 0; i < 96; i++)
        CHECK(htod(2, dev, host, DEV / 4) == CUDA_SUCCESS);
    usleep(20000);
    CHECK(htod(2, dev, host, DEV / 4) == CUDA_SUCCESS && stats().grown == g0 + 1);
    unsigned n2 = grow_by_uploads((unsigned)g0 + 2, DEV);
    CHECK(n2 < 2000 && t_pinned - pinned == 2 && t_unregistered - unreg == 2);
    /* the second needs 32 MiB of traffic: an eighth of it holds 4 x 1 MiB */
    CHECK(stats().traffic >= 32u << 20);
    device_sync();
    CHECK(memcmp((void *)(uintptr_t)dev, host, DEV) == 0);
    /* a download a slot holds (up to 2 MiB) is one DMA, then one crew copy;
     * a larger one goes in chunks; the bytes arrive either way */
    unsigned d0 = t_async;
    memset(expect, 0, DEV);
    CHECK(dtoh(2, expect, dev, DEV / 2) == CUDA_SUCCESS && t_async == d0 + 1);
    d0 = t_async;
    CHECK(dtoh(3, expect + DEV / 2, dev + DEV / 2, DEV / 2 - 4096) == CUDA_SUCCESS &&
          t_async == d0 + 1);
    d0 = t_async;
    CHECK(dtoh(2, expect, dev, DEV) == CUDA_SUCCESS && t_async >= d0 + 2);
    device_sync();
    CHECK(memcmp(expect, host, DEV) == 0);
    bool ok = true;
    for (unsigned i = 0; i < 8; i++)
        ok &= round_trip(i % 4, DEV / 2 + 4096 * i, i, i % 2);
    CHECK(ok && stats().grown == g0 + 2 && t_pinned - pinned == 2);
    rt.cfg.staging_chunk = CHUNK;
    contexts_gone(); /* the tests after this expect slots of CHUNK bytes */
}

static void exact_at_every_size(void)
{
    const size_t sizes[] = {MIN - 1, MIN, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 777,
                            CHUNK / 8 + 1, (1 << 20) + 13};
    const size_t host_offsets[] = {0, 1, 7, 4096 - 3}, dev_offsets[] = {0, 5};
    for (int v = 0; v < 4; v++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (size_t h = 0; h < 4; h++)
                CHECK(round_trip(v, sizes[i], host_offsets[h], dev_offsets[(i + h) % 2]));
}

/* Every slot of the ring free: a device-to-host copy through all of them
 * waits for each (and leaves none in flight). */
static void ring_free(void)
{
    CHECK(dtoh(0, expect, dev, 5 * CHUNK) == CUDA_SUCCESS);
}

static unsigned event_syncs(void)
{
    pthread_mutex_lock(&q_lock);
    unsigned n = t_event_syncs;
    pthread_mutex_unlock(&q_lock);
    return n;
}

/* Each DMA on the program's stream; the synchronous host-to-device copy waits
 * for its last DMA, the asynchronous one for nothing while the ring holds the
 * copy. */
static void dmas_on_the_programs_stream(void)
{
    for (int v = 0; v < 4; v++) {
        ring_free();
        unsigned a0 = t_async, e0 = event_syncs();
        size_t n = CHUNK / 8 + CHUNK / 4 + CHUNK / 2 + CHUNK + 50000; /* five chunks */
        fill_random(host, n, &rng_state);
        CHECK(htod(v, dev, host, n) == CUDA_SUCCESS);
        unsigned a1 = t_async, e1 = event_syncs();
        bool right = a1 - a0 == 5;
        for (unsigned k = a0; k < a1; k++)
            right &= t_streams[k % 256] == variant_dma_stream(v);
        /* five chunks in a ring of four: the first slot is reused (one wait);
         * the synchronous forms also wait for their last DMA */
        CHECK(right && e1 - e0 == (v < 2 ? 2u : 1u));
        device_sync();
        CHECK(memcmp((void *)(uintptr_t)dev, host, n) == 0);

        ring_free();
        n = CHUNK; /* four chunks (1/8, 1/4, 1/2, then the rest): the ring holds them */
        e0 = event_syncs();
        CHECK(htod(v, dev, host, n) == CUDA_SUCCESS);
        CHECK(event_syncs() - e0 == (v < 2 ? 1u : 0u));
        device_sync();
        CHECK(memcmp((void *)(uintptr_t)dev, host, n) == 0);

        /* device to host: every chunk waited for, on the same stream */
        a0 = t_async;
        fill_random((void *)(uintptr_t)dev, 3 * CHUNK, &rng_state);
        CHECK(dtoh(v, host + 1, dev, 3 * CHUNK) == CUDA_SUCCESS &&
              memcmp(host + 1, (void *)(uintptr_t)dev, 3 * CHUNK) == 0);
        right = t_async - a0 == 6;
        for (unsigned k = a0; k < t_async; k++)
            right &= t_streams[k % 256] == variant_dma_stream(v);
        CHECK(right);
    }
}

/* A synchronous host-to-device copy returns once every copy queued on its
 * stream before it, and its own, have landed: a read on a stream not ordered
 * after it sees the bytes. */
static void sync_copy_lands_before_it_returns(void)
{
    for (int v = 0; v < 2; v++) {
        ring_free();
        fill_random(host, 2 * CHUNK, &rng_state);
        /* an asynchronous staged copy on the same stream, left queued */
        CHECK(ga_hook_htod_async(&rt, v ? GA_ID_cuMemcpyHtoDAsync_v2_ptsz : GA_ID_cuMemcpyHtoDAsync_v2,
                                 dev, host, CHUNK, NULL) == CUDA_SUCCESS);
        pthread_mutex_lock(&q_lock);
        uint64_t earlier = q_next;
        pthread_mutex_unlock(&q_lock);
        CHECK(htod(v, dev + 4 * CHUNK, host + CHUNK, CHUNK) == CUDA_SUCCESS);
        pthread_mutex_lock(&q_lock);
        bool landed = q_done >= earlier && q_done == q_next;
        pthread_mutex_unlock(&q_lock);
        CHECK(landed);
        CHECK(memcmp((void *)(uintptr_t)dev, host, CHUNK) == 0);
        CHECK(memcmp((void *)(uintptr_t)(dev + 4 * CHUNK), host + CHUNK, CHUNK) == 0);
    }
}

/* Host sides the driver knows (page-locked, device, managed) go to it. */
static void known_memory_passes_through(void)
{
    const stub_kind_t kinds[] = {STUB_MAPPED, STUB_DEVICE, STUB_MANAGED};
    for (int k = 0; k < 3; k++) {
        unsigned char *h = (unsigned char *)(uintptr_t)stub_mem(4 * CHUNK, kinds[k]);
        for (int v = 0; v < 4; v++) {
            ga_staging_stats_t s0 = stats();
            unsigned nat0 = natives();
            fill_random(h, 4 * CHUNK, &rng_state);
            CHECK(htod(v, dev, h, 4 * CHUNK) == CUDA_SUCCESS);
            device_sync();
            CHECK(memcmp((void *)(uintptr_t)dev, h, 4 * CHUNK) == 0);
            fill_random((void *)(uintptr_t)dev, 4 * CHUNK, &rng_state);
            CHECK(dtoh(v, h, dev, 4 * CHUNK) == CUDA_SUCCESS &&
                  memcmp((void *)(uintptr_t)dev, h, 4 * CHUNK) == 0);
            ga_staging_stats_t s1 = stats();
            CHECK(s1.htod == s0.htod && s1.dtoh == s0.dtoh && natives() - nat0 == 2);
        }
    }
    /* a unified-address copy is the driver's to direct */
    ga_staging_stats_t s0 = stats();
    fill_random((void *)(uintptr_t)dev, 4 * CHUNK, &rng_state);
    CHECK(ga_hook_memcpy(&rt, GA_ID_cuMemcpy, (CUdeviceptr)(uintptr_t)host, dev, 4 * CHUNK) ==
              CUDA_SUCCESS &&
          memcmp(host, (void *)(uintptr_t)dev, 4 * CHUNK) == 0 && stats().dtoh == s0.dtoh);
}

/* Past the allocation's end, or not device memory at all: the driver's error,
 * nothing copied. */
static void bad_device_ranges_get_the_drivers_error(void)
{
    CUdeviceptr small = stub_mem(4 * CHUNK, STUB_DEVICE);
    for (int v = 0; v < 4; v++) {
        ga_staging_stats_t s0 = stats();
        fill_random((void *)(uintptr_t)small, 4 * CHUNK, &rng_state);
        memcpy(expect, (void *)(uintptr_t)small, 4 * CHUNK);
        fill_random(host, 8 * CHUNK, &rng_state);
        CHECK(htod(v, small + 8, host, 4 * CHUNK) == CUDA_ERROR_INVALID_VALUE);
        device_sync();
        CHECK(memcmp((void *)(uintptr_t)small, expect, 4 * CHUNK) == 0);
        memcpy(expect, host, 8 * CHUNK);
        CHECK(dtoh(v, host, small + 1, 4 * CHUNK) == CUDA_ERROR_INVALID_VALUE &&
              memcmp(host, expect, 8 * CHUNK) == 0);
        /* a "device" pointer that is pageable host memory */
        CHECK(htod(v, (CUdeviceptr)(uintptr_t)(host + 8 * CHUNK), host, 4 * CHUNK) ==
              CUDA_ERROR_INVALID_VALUE);
        ga_staging_stats_t s1 = stats();
        CHECK(s1.htod == s0.htod && s1.dtoh == s0.dtoh && s1.declined - s0.declined == 3);
    }
}

/* Pinned memory not to be had, or the first DMA refused: the driver's own
 * copy. A DMA error later on: its code, and the next copies are right. */
static void errors(void)
{
    contexts_gone();
    t_fail_pinned = true;
    ga_staging_stats_t s0 = stats();
    unsigned nat0 = natives();
    fill_random(host, 4 * CHUNK, &rng_state);
    CHECK(htod(2, dev, host, 4 * CHUNK) == CUDA_SUCCESS &&
          dtoh(2, expect, dev, 4 * CHUNK) == CUDA_SUCCESS &&
          memcmp(host, expect, 4 * CHUNK) == 0);
    ga_staging_stats_t s1 = stats();
    CHECK(s1.fallbacks - s0.fallbacks == 2 && s1.htod == s0.htod && s1.dtoh == s0.dtoh &&
          natives() == nat0 + 2);
    t_fail_pinned = false;
    unsigned pinned = t_pinned, registered = t_registered;
    CHECK(round_trip(2, 4 * CHUNK, 1, 0) && t_pinned == pinned + 1);
    CHECK(t_registered == registered + 1);
    /* no registration to be had: cuMemHostAlloc's memory serves */
    contexts_gone();
    t_fail_register = true;
    CHECK(round_trip(2, 4 * CHUNK, 1, 0) && round_trip(0, 5 * CHUNK + 3, 3, 5));
    CHECK(t_pinned == pinned + 2 && t_registered == registered + 1);
    t_fail_register = false;

    device_sync();
    t_fail_async = (int)t_async; /* the first DMA */
    nat0 = natives();
    fill_random(host, 4 * CHUNK, &rng_state);
    CHECK(htod(2, dev, host, 4 * CHUNK) == CUDA_SUCCESS && natives() == nat0 + 1);
    device_sync();
    CHECK(memcmp((void *)(uintptr_t)dev, host, 4 * CHUNK) == 0);

    t_fail_async = (int)t_async + 2; /* the third */
    CHECK(htod(2, dev, host, 4 * CHUNK) == CUDA_ERROR_UNKNOWN);
    t_fail_async = (int)t_async + 3;
    CHECK(dtoh(2, host, dev, 4 * CHUNK) == CUDA_ERROR_UNKNOWN);
    t_fail_async = -1;
    device_sync();
    CHECK(round_trip(2, 5 * CHUNK + 3, 3, 5) && round_trip(0, 5 * CHUNK + 3, 3, 5));
}

/* DMAs still in flight on stream A: a copy on stream B takes another engine
 * (tying B to A's progress is not the driver's behaviour); one on A waits. */
static void other_streams_in_flight(void)
{
    device_sync();
    fill_random(host, 2 * CHUNK, &rng_state);
    unsigned pinned = t_pinned;
    ga_staging_stats_t s0 = stats();
    CHECK(ga_hook_htod_async(&rt, GA_ID_cuMemcpyHtoDAsync_v2, dev, host, CHUNK, s_a) ==
          CUDA_SUCCESS);
    CHECK(ga_hook_htod_async(&rt, GA_ID_cuMemcpyHtoDAsync_v2, dev + CHUNK, host + CHUNK, CHUNK,
                             s_b) == CUDA_SUCCESS);
    CHECK(stats().htod - s0.htod == 2 && t_pinned == pinned + 1); /* a second ring */
    CHECK(ga_hook_htod_async(&rt, GA_ID_cuMemcpyHtoDAsync_v2, dev, host, CHUNK, s_a) ==
          CUDA_SUCCESS && t_pinned == pinned + 1);
    device_sync();
    CHECK(memcmp((void *)(uintptr_t)dev, host, 2 * CHUNK) == 0);
}

static void nothing_staged_in_capture(void)
{
    stub_capture_begin(&rt, s_cap);
    ga_staging_stats_t s0 = stats();
    unsigned unsafe = t_unsafe, nat0 = natives();
    fill_random(host, 4 * CHUNK, &rng_state);
    CHECK(htod(2, dev, host, 4 * CHUNK) == CUDA_SUCCESS &&
          dtoh(2, expect, dev, 4 * CHUNK) == CUDA_SUCCESS);
    CHECK(stats().htod == s0.htod && stats().dtoh == s0.dtoh && natives() == nat0 + 2 &&
          t_unsafe == unsafe && memcmp(host, expect, 4 * CHUNK) == 0);
    stub_capture_end(&rt, s_cap);
    CHECK(round_trip(2, 4 * CHUNK, 0, 0));
}

/* ---- several threads at once --------------------------------------------------------- */

enum { THREADS = 6, ROUNDS = 25, TBUF = 400 << 10 };
static CUdeviceptr t_dev[THREADS];

static void *copier(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint64_t st = 0x1234567ull * (t + 1);
    unsigned char *src = malloc(TBUF + 8), *back = malloc(TBUF + 8);
    bool ok = src && back;
    for (int i = 0; ok && i < ROUNDS; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        size_t n = MIN - 1 + (size_t)(st % (TBUF - MIN)), off = (st >> 20) % 8;
        int v = (int)((st >> 32) % 4);
        fill_random(src, n + off, &st);
        ok &= htod(v == 2 ? 3 : v, t_dev[t], src + off, n) == CUDA_SUCCESS;
        memset(back, 0, TBUF + 8);
        ok &= dtoh((v + 1) % 4 == 2 ? 3 : (v + 1) % 4, back + off, t_dev[t], n) == CUDA_SUCCESS;
        ok &= memcmp(back + off, src + off, n) == 0;
    }
    free(src);
    free(back);
    return (void *)(uintptr_t)ok;
}

static int threads_running(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void several_threads(void)
{
    for (unsigned t = 0; t < THREADS; t++)
        t_dev[t] = stub_mem(TBUF, STUB_DEVICE);
    pthread_t th[THREADS];
    for (unsigned t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, copier, (void *)(uintptr_t)t);
    bool all = true;
    for (unsigned t = 0; t < THREADS; t++) {
        void *ok;
        pthread_join(th[t], &ok);
        all &= ok != NULL;
    }
    CHECK(all);
}

/* GPUACCEL_STAGING_ADAPT: each kind and size of copy is staged where staged
 * copies ran an eighth faster than the driver's, else goes to the driver; runs
 * of two go the other way every 16 copies (64 while one way takes half the
 * other's time or less), less often while they agree; a class with no staged
 * figure is staged, one under 1 MiB with no driver figure goes to the driver
 * (two copies make a figure). 64
 * synchronous round trips of 256 KiB each time; `staged` of each direction: */
static unsigned adapted(unsigned native_us, unsigned staged_us, unsigned staged)
{
    ga_admit_reset();
    t_native_delay_us = native_us, t_staged_delay_us = staged_us;
    ga_staging_stats_t s0 = stats();
    bool ok = true;
    for (int i = 0; i < 64; i++)
        ok &= round_trip_unchecked(0, 256 << 10);
    ga_staging_stats_t s1 = stats();
    t_native_delay_us = t_staged_delay_us = 0;
    CHECK(ok && s1.htod - s0.htod == staged && s1.dtoh - s0.dtoh == staged);
    CHECK(s1.driver - s0.driver == 2 * (64 - staged));
    return (unsigned)(s1.driver - s0.driver);
}

/* Figures for both ways of uploads of n bytes: a figure needs two copies
 * each way, and a copy right after the other way's is not counted (two
 * staged, then three by the driver). */
static void give_figures(size_t n, uint64_t staged_ns, uint64_t driver_ns)
{
    for (int i = 0; i < 2; i++)
        ga_admit_record(0, true, n, GA_WAY_STAGED, staged_ns);
    ga_admit_record(0, true, n, GA_WAY_DRIVER, driver_ns / 4); /* after staged: uncounted */
    for (int i = 0; i < 2; i++)
        ga_admit_record(0, true, n, GA_WAY_DRIVER, driver_ns);
}

/* Of the next k uploads of n bytes, how many the admission sends to the
 * driver. */
static unsigned driver_choices(size_t n, unsigned k)
{
    unsigned d = 0;
    for (unsigned i = 0; i < k; i++)
        d += ga_admit_choose(0, true, n) == GA_WAY_DRIVER;
    return d;
}

/* The rule itself, on figures given: of 64 copies of a class whose ways
 * have figures (ns per copy), how many are staged. */
static unsigned staged_of_64(uint64_t staged_ns, uint64_t driver_ns)
{
    ga_admit_reset();
    const size_t n = 256 << 10;
    give_figures(n, staged_ns, driver_ns);
    return 64 - driver_choices(n, 64);
}

/* One copy is not yet a way's figure (a way's first copy is cold): a class
 * whose one staged copy was slow is staged again, and judged on two. */
static void one_copy_is_no_figure(void)
{
    ga_admit_reset();
    const size_t n = 256 << 10;
    for (int i = 0; i < 4; i++)
        ga_admit_record(0, true, n, GA_WAY_DRIVER, 40000);
    ga_admit_record(0, true, n, GA_WAY_STAGED, 1000000); /* cold: 25 times the driver's */
    CHECK(ga_admit_choose(0, true, n) == GA_WAY_STAGED);
    ga_admit_record(0, true, n, GA_WAY_STAGED, 30000); /* warm: the best of two counts */
    unsigned staged = 0;
    for (int i = 0; i < 8; i++)
        staged += ga_admit_choose(0, true, n) == GA_WAY_STAGED;
    CHECK(staged == 8);
    ga_admit_reset();
}

/* A driver's upload after staged copies returns before its DMA ends, and
 * is faster than the driver's copies back to back (each waits for the last
 * one's DMA): 1 MiB uploads, 55 us a copy staged, 110 us by the driver in a
 * loop, 40 us for a driver copy right after staged ones. Counted, the probe's
 * first copy made the driver's figure 40 and sent the loop to the driver;
 * uncounted, of 256 copies all but the probes are staged. */
static void probe_after_other_way(void)
{
    ga_admit_reset();
    const size_t n = 1 << 20;
    unsigned staged = 0;
    ga_way_t last = GA_WAY_STAGED;
    for (int i = 0; i < 256; i++) {
        ga_way_t w = ga_admit_choose(0, true, n);
        uint64_t us = w == GA_WAY_STAGED ? 55 : last == GA_WAY_STAGED ? 40 : 110;
        ga_admit_record(0, true, n, w, us * 1000);
        staged += w == GA_WAY_STAGED;
        last = w;
    }
    CHECK(staged >= 256 - 2 * (256 / 16));
    ga_admit_reset();
}

/* Ways about 2x apart move between near and far as their figures move; the
 * choice holds, so the probes keep backing off: 16 blocks of 256 copies, the
 * driver's figure 99 us then 101 us in turn against the staged 50 (two windows
 * of driver copies set it), and fewer than 100 probes in all (resetting the
 * period at each move, about 320). */
static void probes_back_off_near_and_far(void)
{
    ga_admit_reset();
    const size_t n = 1 << 20;
    give_figures(n, 50000, 99000);
    unsigned probes = 0;
    for (int b = 0; b < 16; b++) {
        for (int i = 0; i < 2 * 32 + 1; i++)
            ga_admit_record(0, true, n, GA_WAY_DRIVER, b % 2 ? 99000 : 101000);
        probes += driver_choices(n, 256);
    }
    CHECK(probes > 0 && probes < 100);
    ga_admit_reset();
}

static void admission_rule(void)
{
    probes_back_off_near_and_far();
    one_copy_is_no_figure();
    probe_after_other_way();
    /* near (within 2x), staged faster by an eighth or more: staged but the
     * runs of two probes, at the 14th-15th copies, then every 16, 32, 64 ...
     * while they leave the choice as it was (14-15, 30-31, 62-63) */
    CHECK(staged_of_64(80000, 90000) == 58 && staged_of_64(60000, 100000) == 58);
    /* near, staged faster by less than an eighth, or slower: the driver's */
    CHECK(staged_of_64(85000, 90000) == 6 && staged_of_64(100000, 90000) == 6);
    /* far apart (2x or more): runs of two in 64 */
    CHECK(staged_of_64(50000, 100000) == 62 && staged_of_64(200000, 100000) == 2);
    ga_admit_reset();
}

/* The probes back off while they agree, to a run in PROBE_MAX (256)
 * copies, and come back to every 16 when the choice changes: of 4,096 near
 * copies staged faster, 2 * (4096 / 256) probes and a few; then the driver
 * turns faster: the next run of probes comes within 256 copies, finds the
 * choice changed, and the one after it comes 16 copies later. */
static void probes_back_off(void)
{
    ga_admit_reset();
    const size_t n = 256 << 10;
    give_figures(n, 80000, 90000);
    unsigned probes = driver_choices(n, 4096);
    CHECK(probes >= 2 * (4096 / 256 - 1) && probes <= 2 * (5 + 4096 / 256));
    for (int i = 0; i < 40; i++) /* a window of faster driver copies turns over */
        ga_admit_record(0, true, n, GA_WAY_DRIVER, 60000);
    int at[4], k = 0;
    for (int i = 0; i < 300 && k < 4; i++)
        if (ga_admit_choose(0, true, n) == GA_WAY_STAGED)
            at[k++] = i;
    CHECK(k == 4 && at[0] < 256 && at[1] == at[0] + 1 && at[2] == at[0] + 16 &&
          at[3] == at[2] + 1);
    ga_admit_reset();
}

/* GPUACCEL_STAGING_UPLOAD_MIN: with the admission on, uploads under it go to
 * the driver untouched (not timed for the admission), downloads of that size
 * and uploads from it are admitted by measurement (each class's first copy
 * is staged). */
static void uploads_under_the_floor(void)
{
    ga_admit_reset();
    rt.cfg.staging_adapt = true;
    rt.cfg.staging_upload_min = 512 << 10;
    ga_staging_stats_t s0 = stats();
    bool ok = true;
    for (int i = 0; i < 8; i++)
        ok &= round_trip_unchecked(0, 256 << 10);
    ga_staging_stats_t s1 = stats();
    CHECK(ok && s1.htod == s0.htod && s1.dtoh > s0.dtoh && s1.driver - s0.driver < 8);
    CHECK(round_trip_unchecked(0, 512 << 10) && stats().htod == s1.htod + 1);
    rt.cfg.staging_upload_min = 0;
    rt.cfg.staging_adapt = false;
    ga_admit_reset();
}

/* A new ring's first copy is not the staged way's figure: it pays for the
 * ring's first use. On a new ring, downloads of 256 KiB whose driver figure is
 * 5 ms: the first staged copy slow (cold), the second slower than the driver,
 * the third fast. Uncounted, the first leaves the figure to the second and
 * third (two make one), so the third is staged and the class stays staged;
 * counted, the figure after the second (the better of the first two) loses
 * to the driver and the third goes there. */
static void new_rings_first_copy_uncounted(void)
{
    const size_t n = 256 << 10;
    ga_admit_reset();
    for (int i = 0; i < 2; i++)
        ga_admit_record(1, true, n, GA_WAY_DRIVER, 5000000);
    contexts_gone();
    ga_staging_stats_t s0 = stats();
    unsigned nat0 = natives();
    const unsigned delay_us[] = {20000, 10000, 0, 0, 0};
    bool ok = true;
    for (unsigned i = 0; i < sizeof delay_us / sizeof delay_us[0]; i++) {
        t_staged_delay_us = delay_us[i];
        ok &= dtoh(0, host, dev, n) == CUDA_SUCCESS;
    }
    t_staged_delay_us = 0;
    ga_staging_stats_t s1 = stats();
    CHECK(ok && s1.dtoh - s0.dtoh == 5 && s1.driver == s0.driver && natives() == nat0);
    ga_admit_reset();
}

/* A synchronous upload's figure ends where the driver's own returns: its
 * source consumed, its last DMA queued; the wait for that DMA, which the
 * driver's copy leaves to the program's next wait, is not counted. Uploads
 * whose last DMA takes 60 ms to land, the driver's copy 20 ms (far beyond a
 * staged copy's own time on a loaded machine): staged but the three that make
 * the driver's first figure; counting the wait, all but the first two went to
 * the driver. */
static void sync_upload_figure_without_its_wait(void)
{
    ga_admit_reset();
    t_native_delay_us = 20000, t_tail_delay_us = 60000;
    ga_staging_stats_t s0 = stats();
    bool ok = true;
    for (int i = 0; i < 24; i++) {
        fill_random(host, CHUNK, &rng_state);
        ok &= htod(0, dev, host, CHUNK) == CUDA_SUCCESS &&
              memcmp((void *)(uintptr_t)dev, host, CHUNK) == 0;
    }
    ga_staging_stats_t s1 = stats();
    t_native_delay_us = t_tail_delay_us = 0;
    CHECK(ok && s1.htod - s0.htod >= 18 && s1.driver - s0.driver <= 6);
    ga_admit_reset();
}

static void admission_by_measurement(void)
{
    admission_rule();
    probes_back_off();
    uploads_under_the_floor();
    rt.cfg.staging_adapt = true;
    new_rings_first_copy_uncounted();
    sync_upload_figure_without_its_wait();
    /* Delays of 20 ms: far beyond either way's own time on a loaded machine
     * (1 ms was not). The first two copies are staged, the next three the
     * driver's (a way's figure needs two, and the first after staged copies
     * is not counted); then, the ways far apart, probes are the 62nd-63rd
     * copies. */
    adapted(20000, 0, 59); /* the driver slow: staged but the 3rd-5th and the probes */
    adapted(0, 20000, 4);  /* staging slow: the driver's but the first two and the probes */
    rt.cfg.staging_adapt = false;
    ga_admit_reset();
}

/* After a sticky error the driver answers every call. */
static void nothing_staged_after_a_fault(void)
{
    ga_fault_note(CUDA_ERROR_ILLEGAL_ADDRESS);
    ga_staging_stats_t s0 = stats();
    unsigned nat0 = natives();
    CHECK(htod(0, dev, host, 4 * CHUNK) == CUDA_SUCCESS && natives() == nat0 + 1 &&
          stats().htod == s0.htod);
}

int main(void)
{
    stub_runtime(&rt);
    rt.cfg.staging = true;
    rt.cfg.staging_min = MIN;
    rt.cfg.staging_chunk = CHUNK;
    rt.cfg.staging_threads = 4;
    rt.cfg.staging_adapt = false; /* every copy staged: the tests count them (see admission_by_measurement) */
    stub_more(&rt);
    install();
    stub_features(&rt);
    GA_EACH(init, &rt);
    s_a = (CUstream)&stub_streams[1], s_b = (CUstream)&stub_streams[2];
    s_cap = (CUstream)&stub_streams[4];
    stub_stream_flags[4] = CU_STREAM_NON_BLOCKING;
    dev = stub_mem(DEV, STUB_DEVICE);
    host = malloc(DEV + 64);
    expect = malloc(DEV + 64);
    if (!host || !expect)
        return 1;

    int before = threads_running();
    ring_follows_traffic();
    first_copies_go_to_the_driver();
    ring_grows_with_traffic();
    exact_at_every_size();
    CHECK(threads_running() >= before + 3); /* the crew: 4 threads copy, the caller included */
    dmas_on_the_programs_stream();
    sync_copy_lands_before_it_returns();
    known_memory_passes_through();
    bad_device_ranges_get_the_drivers_error();
    errors();
    other_streams_in_flight();
    nothing_staged_in_capture();
    several_threads();
    admission_by_measurement();
    nothing_staged_after_a_fault();
    return check_done("test_staging");
}
