/* coalesce.c - small device-to-host reads served from one larger transfer
 * (GPUACCEL_COALESCE).
 *
 * A small synchronous cuMemcpyDtoH is replaced by a copy of an aligned window
 * around it (clamped to its allocation) into pinned memory the library owns,
 * issued at the same point of the same stream, so what the program reads is
 * what its own copy would have read. The window is kept for later reads only
 * when nothing can change what it holds:
 *   - no stream the fill's copy does not wait for was running as it began
 *     (a kernel there could write what it read, and end before the next
 *     check), and every known stream of the context was idle after it,
 *   - no call that can write device memory (the epoch) and no stream work at
 *     all (the work sequence) was issued between the fill and the read,
 *   - no stream capture is under way,
 *   - the memory is plain device memory: not managed, not host-mapped, not
 *     shared with another process (IPC exported or imported, shareable handles),
 *     not marked for synchronous memory operations (a GPUDirect RDMA target).
 * A read then costs a host memcpy instead of a driver round trip.
 * The asynchronous form (cuMemcpyDtoHAsync then a stream sync, PyTorch's
 * .item()) is served from a valid window when its stream is idle; a miss also
 * enqueues a window fill behind the program's own copy, installed when the
 * program synchronizes that stream. The sync after a served read finds the
 * context idle and is answered too (ga_co_sync), without the driver.
 * A host loop polling a flag that a running kernel sets still sees the write:
 * while that kernel's stream is busy no window is kept, so every read goes to
 * the device. A destination that is not host memory (a device or managed
 * pointer passed as the "host" side, which the driver accepts under unified
 * addressing) is never written here: such a read goes to the driver.
 * The fills are the library's own calls (a pinned allocation, a wider copy):
 * none is made while a stream capture is open (capture.h).
 *
 * Mirrors: a prover's query phase reads one or two words at random places of
 * tens of buffers (RISC Zero's get_at per Merkle layer, FRI openings), and a
 * 64 KiB window around each read is rarely read again. When reads keep missing
 * in one allocation while nothing changes it (the same epoch and work
 * sequence), the next fill copies the whole allocation, if the cost model says
 * it pays: the copy (its bytes over the bandwidth measured on earlier large
 * fills) may cost at most what the misses so far cost in round trips (measured
 * on small fills): rent-or-buy, never more than twice what the best choice in
 * hindsight would have cost. A read of any size is served from a window or
 * mirror that holds it. Mirrors are plain host memory (page-locking tens of
 * MiB costs more than the copy), at most GPUACCEL_COALESCE_BUDGET bytes in all;
 * the rules for keeping them are the windows'. Off unless GPUACCEL_COALESCE_MIRRORS=1:
 * on an H100 a query phase ran faster with windows alone (2^16: 4.5x native
 * against 3.3x with mirrors; 2^20: 1.7x against 1.2x): fresh host pages and
 * one thread's copies cost more than the model's bandwidth said.
 *
 * Large reads: a STARK prover's column accessor copies a whole column to the
 * host to take one value, the same unchanged columns again and again. A read
 * larger than a window, up to 1 MiB, copies its own range into page-locked
 * memory the library keeps (counted against the budget) and from there to
 * the program (faster than the driver's copy to pageable memory), when a free
 * slot has the page-locked memory already, else from the third read of its
 * allocation (a program that reads each buffer once or twice never has memory
 * page-locked for it); later reads of it are served from that copy under the
 * windows' rules; larger reads are left to staging. Copies out of it of
 * 128 KiB and more are shared with a few helper threads (pcopy.h).
 *
 * Files, behind internal.h: table.c the window table, fill.c deciding and
 * filling windows (and the synchronous read), async.c the asynchronous read
 * and the sync answered, query.c the learner's reads and gathers; pattern.c
 * the learner, gather.c the gather kernel, pcopy.c the copy helpers. This
 * file: the read handlers, the back-off, lifecycle, the descriptor and its
 * report.
 *
 * Owns: the counts (ga_co_counts), the back-off and the reads since a query
 * began (atomics), the thread's last offered read.
 * Must never: call the driver holding `lock`; serve a read from a window whose
 * epoch or work sequence moved. */
#define _GNU_SOURCE
#include "features/coalesce/internal.h"

#include <string.h>

#include "core/log.h"
#include "features/coalesce/gather.h"
#include "features/coalesce/pcopy.h"
#include "features/feature.h"
#include "tracking/memkind.h"

ga_co_counts_t ga_co_counts;

/* Fills since the last hit, misses left to pass straight to the driver, and
 * how many the next rest lasts: a loop that writes before every read gains
 * nothing from windows, and each fill costs more than the read it replaces.
 * The rest doubles while the fills after it stay fruitless (FRUITLESS_LIMIT
 * fills a rest cost about 10% of such a loop's time with rests of 64 reads
 * on an H100; under 1% from 1,024 on) and is short again after a hit. */
enum { FRUITLESS_LIMIT = 8, REST_MISSES = 64, REST_MAX = 8192 };
static _Atomic unsigned fruitless, rest, rest_len = REST_MISSES;

static bool worth_filling(void)
{
    unsigned r = atomic_load_explicit(&rest, memory_order_relaxed);
    if (r) {
        atomic_store_explicit(&rest, r - 1, memory_order_relaxed);
        return false;
    }
    if (atomic_fetch_add_explicit(&fruitless, 1, memory_order_relaxed) >= FRUITLESS_LIMIT) {
        unsigned len = atomic_load_explicit(&rest_len, memory_order_relaxed);
        atomic_store_explicit(&fruitless, 0, memory_order_relaxed);
        atomic_store_explicit(&rest, len, memory_order_relaxed);
        atomic_store_explicit(&rest_len, len < REST_MAX ? 2 * len : REST_MAX,
                              memory_order_relaxed);
        return false;
    }
    return true;
}

/* ---- serving a read (the table under lock) ------------------------------------- */

/* Serve [src, src+n) into dst from the last gather or a valid window (*from:
 * the window, else NULL). */
static bool serve_locked(void *dst, CUdeviceptr src, size_t n, const slot_t **from)
{
    *from = NULL;
    if (ga_co_serve_gathered_locked(dst, src, n))
        return true;
    slot_t *s = ga_co_holding_locked(src, n);
    if (s)
        memcpy(dst, (const char *)s->host + (src - s->base), n), *from = s;
    return s != NULL;
}

/* Serve a read larger than a window from a valid slot that holds it (a large
 * read's own fill, a mirror), copying outside the lock: the slot has a reader
 * meanwhile, and no filler claims it. */
static bool serve_large(const ga_rt_t *rt, void *dst, CUdeviceptr src, size_t n)
{
    if (ga_serving_off())
        return false;
    const char *from = NULL;
    pthread_mutex_lock(&ga_co_lock);
    slot_t *hit = ga_co_holding_locked(src, n);
    if (hit)
        hit->readers++, hit->served = true, from = (const char *)hit->host + (src - hit->base);
    pthread_mutex_unlock(&ga_co_lock);
    if (!hit)
        return false;
    ga_pcopy(dst, from, n, rt->cfg.coalesce_threads);
    pthread_mutex_lock(&ga_co_lock);
    if (hit->readers) /* (zeroed if its context was destroyed meanwhile) */
        hit->readers--;
    pthread_mutex_unlock(&ga_co_lock);
    atomic_fetch_add_explicit(&ga_co_counts.hits, 1, memory_order_relaxed);
    return true;
}

/* Reads that went to the device since the last query began: a query whose
 * first read a window serves is still gathered when the query before it paid
 * round trips (its other reads miss). */
static _Atomic unsigned period_misses;

/* Serve from a window or a gather; with note, tell the learner of the read
 * under the same lock (*noted: it was told; a read a window serves tells it
 * of the window's allocation if it knew none). *gather: the read begins a
 * query that windows served but partly, worth a gather though served. */
static bool serve(void *dst, CUdeviceptr src, size_t n, bool note, bool *noted, bool *gather)
{
    if (ga_serving_off()) /* a captured copy must reach the graph; a fault, the program */
        return false;
    const slot_t *from;
    pthread_mutex_lock(&ga_co_lock);
    if (note)
        *noted = ga_co_note_known_locked(src, n);
    bool ok = serve_locked(dst, src, n, &from);
    if (note && !*noted && from && from->alloc_size) {
        ga_co_note_in_locked(from->alloc_base, from->alloc_size, src, n);
        *noted = true;
    }
    if (*noted && ga_co_at_anchor_locked()) {
        unsigned m = atomic_exchange_explicit(&period_misses, 0, memory_order_relaxed);
        *gather = ok && m >= 2;
    }
    pthread_mutex_unlock(&ga_co_lock);
    if (ok) {
        atomic_fetch_add_explicit(&ga_co_counts.hits, 1, memory_order_relaxed);
        atomic_store_explicit(&fruitless, 0, memory_order_relaxed);
        if (atomic_load_explicit(&rest_len, memory_order_relaxed) != REST_MISSES)
            atomic_store_explicit(&rest_len, REST_MISSES, memory_order_relaxed);
    }
    return ok;
}

/* A read the library may serve itself: not under capture (a captured copy
 * must reach the graph) or after a fault, and into host memory (co_read asks
 * the driver where it would write dst). Small ones
 * (up to GPUACCEL_COALESCE_MAX) fill windows; larger ones are served from a
 * window or mirror that holds them, and mirrored when read twice. */
static bool servable(const ga_rt_t *rt, const void *dst, size_t n)
{
    return rt->cfg.coalesce && dst && n && !ga_serving_off();
}

/* ---- the read handlers ------------------------------------------------------ */

typedef enum { R_SYNC, R_ASYNC } read_kind_t;

/* What the entry point is: which way it waits, and whether its direction is
 * for the driver to decide (unified addresses); `as` is the device-to-host
 * entry of the same variant, for the library's own copies. */
static read_kind_t read_kind(ga_id_t id, bool *unified, ga_id_t *as)
{
    bool pt = ga_entries[id].per_thread;
    *unified = id == GA_ID_cuMemcpy || id == GA_ID_cuMemcpy_ptds || id == GA_ID_cuMemcpyAsync ||
               id == GA_ID_cuMemcpyAsync_ptsz;
    bool async = id == GA_ID_cuMemcpyAsync || id == GA_ID_cuMemcpyAsync_ptsz ||
                 id == GA_ID_cuMemcpyDtoHAsync_v2 || id == GA_ID_cuMemcpyDtoHAsync_v2_ptsz;
    if (async)
        *as = pt ? GA_ID_cuMemcpyDtoHAsync_v2_ptsz : GA_ID_cuMemcpyDtoHAsync_v2;
    else
        *as = pt ? GA_ID_cuMemcpyDtoH_v2_ptds : GA_ID_cuMemcpyDtoH_v2;
    return async ? R_ASYNC : R_SYNC;
}

/* Does this unified-address copy read device memory? (One driver query,
 * asked only of small copies into host memory that no window holds.) */
static bool src_is_device(const ga_rt_t *rt, CUdeviceptr src)
{
    __typeof__(&cuPointerGetAttributes) get =
        GA_REAL(rt, GA_ID_cuPointerGetAttributes, cuPointerGetAttributes);
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    unsigned type = 0;
    void *data[] = {&type};
    return get && get(1, &attr, data, src) == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
}

/* A read larger than a window that no slot holds: its own range copied to
 * host memory the library keeps and from there to the program, kept for the
 * next read of it under the windows' rules. Up to GA_CO_PINNED_MAX the copy is
 * page-locked (on an H100 host, 25 us for 256 KiB against the driver's 42 us
 * straight to pageable memory); it fills only into page-locked memory a free
 * slot has, until the third read (ga_co_begin_fill). Page-locking costs about
 * 0.55 ms a MiB on an H200 host (32 MiB in 16-20 ms): with page-locked copies
 * up to 4 MiB, coalescing on made the column-20 row (4 MiB columns) 17.4 ms a
 * round against the defaults' 13.1. Above it, up to GA_CO_PLAIN_MAX, the copy
 * is plain memory, filled from the buffer of the round before or at the
 * fourth read: stwo's decommitment copies each 4 MiB column whole for every
 * queried value (bench_decommit.cu), and each read after the first of a
 * round is then one host copy shared with the helpers (pcopy.h), not a
 * device round trip. A synchronous cuMemcpyDtoH of that size is not copied
 * by the library: staging (or the driver) makes the program's copy, and the
 * range is taken from the program's destination once the read is answered
 * (co_read_done), on the same thread before the call returns: staging's
 * copy then a host copy cost less than the driver's copy to pageable memory
 * then one. (A unified-address cuMemcpy, which staging leaves alone, is
 * filled by the library as smaller large reads are.) Larger reads are left alone (to staging's threads, or
 * the driver: staging read 64 MiB in 2.6 ms and 256 MiB in 5.6 ms on an H200
 * host, 25-48 GB/s, about what a host copy that size, past the caches, takes);
 * so is a read over an eighth of the budget. */
enum { LARGE_SHARE = 8 };

/* The large read of this thread whose copy another makes, its slot claimed
 * (set by large_fill, taken by co_read_done in the same call). */
static GA_TLS struct {
    bool set, before;
    const void *dst;
    fill_t f;
} deferred;

/* A claim no answer took (none should be left: every read hook answers),
 * freed before the thread's next large read claims. */
static void drop_deferred(const ga_rt_t *rt)
{
    if (deferred.set) {
        deferred.set = false;
        ga_co_keep_from(rt, &deferred.f, NULL, false);
    }
}

static bool large_fill(const ga_rt_t *rt, ga_id_t id, ga_id_t as, bool unified, void *dst,
                       CUdeviceptr src, size_t n, CUresult *r)
{
    if (n > GA_CO_PLAIN_MAX || n > ga_co_budget(rt) / LARGE_SHARE)
        return false;
    atomic_fetch_add_explicit(&ga_co_counts.misses, 1, memory_order_relaxed);
    /* Taken back only from pageable memory (staging's): page-locked memory
     * gets the driver's copy anyway, write-combined memory is slow to read,
     * and memory registered as I/O memory is another device's. */
    if (n <= GA_CO_PINNED_MAX || unified || !ga_pageable_ends(rt, dst, n))
        return ga_co_fill_and_serve(rt, as, dst, src, n, 1, r);
    drop_deferred(rt);
    deferred.set = ga_co_begin_keep(rt, id, src, n, &deferred.f, &deferred.before);
    deferred.dst = dst;
    return false; /* staging or the driver copies it; co_read_done keeps it */
}

static void co_read_done(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                         CUstream s, CUresult r)
{
    (void)id, (void)s;
    if (!deferred.set)
        return;
    deferred.set = false;
    bool ours = deferred.dst == dst && deferred.f.base == src && deferred.f.len == n;
    ga_co_keep_from(rt, &deferred.f, ours && r == CUDA_SUCCESS ? dst : NULL, deferred.before);
}

/* The last read offered on this thread, and whether it was one to count (a
 * small device-to-host read into host memory): read_issued starts an async
 * fill only for such a read. */
static GA_TLS struct {
    CUdeviceptr src;
    size_t n;
    bool candidate;
} offered;

static bool co_read(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                    CUstream s, CUresult *r)
{
    bool unified;
    ga_id_t as;
    read_kind_t kind = read_kind(id, &unified, &as);
    offered.candidate = false;
    if (!servable(rt, dst, n))
        return false;
    /* Asynchronous: served only when the stream has nothing queued (the copy
     * would have run at once and completed before the program's next sync). */
    bool idle = kind == R_SYNC || ga_co_stream_idle(rt, s, ga_entries[id].per_thread);
    /* What dst is matters where the library may write it: a read it may serve
     * or fill (idle), or one whose direction the driver decides. An
     * asynchronous read behind queued work is neither (a fill at most follows
     * the program's copy, into the library's memory), and the enqueued copy
     * drops every window; the driver is not asked there (ICICLE-style loops
     * allocate before each read, so its answer was never cached). A copy
     * into device memory is the hooks' to count as a write. */
    if ((idle || unified) && !ga_host_memory(rt, dst, n))
        return false;
    ga_co_install_done();
    bool noted = false, note = kind == R_SYNC && rt->cfg.coalesce_gather && n <= GA_GATHER_CELL;
    bool gather = false;
    size_t largest = window_unit(rt) > rt->cfg.coalesce_max ? window_unit(rt) : rt->cfg.coalesce_max;
    if (idle &&
        (n <= largest ? serve(dst, src, n, note, &noted, &gather) : serve_large(rt, dst, src, n))) {
        CUresult g; /* a gather rewrites dst with the same bytes: nothing ran since */
        if (gather)
            ga_co_gather_and_serve(rt, as, dst, src, n, true, &g);
        *r = CUDA_SUCCESS;
        return true;
    }
    if (unified && !src_is_device(rt, src))
        return false; /* host to host or to device: not a read */
    if (n > rt->cfg.coalesce_max) /* large: served from what holds it, or the driver's */
        return kind == R_SYNC && n > largest && large_fill(rt, id, as, unified, dst, src, n, r);
    offered.src = src, offered.n = n, offered.candidate = true;
    atomic_fetch_add_explicit(&ga_co_counts.misses, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&period_misses, 1, memory_order_relaxed);
    /* Synchronous: where a learned query begins, its reads gathered; else
     * replaced by a window fill at the same stream position. */
    if (kind == R_SYNC && ga_co_gather_and_serve(rt, as, dst, src, n, noted, r))
        return true;
    if (note && !noted)
        ga_co_note_new(rt, src, n);
    return kind == R_SYNC && worth_filling() && ga_co_fill_and_serve(rt, as, dst, src, n, 0, r);
}

/* After the program's own asynchronous read: a window fill behind it. */
static void co_read_issued(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                           CUstream s, CUresult r)
{
    (void)dst;
    bool unified, candidate = offered.candidate && offered.src == src && offered.n == n;
    ga_id_t as;
    offered.candidate = false;
    if (candidate && r == CUDA_SUCCESS && read_kind(id, &unified, &as) == R_ASYNC &&
        worth_filling())
        ga_co_start_async_fill(rt, src, n, s, ga_entries[id].per_thread, as);
}

static void co_shared(const ga_rt_t *rt, CUdeviceptr base, bool exported)
{
    (void)rt, (void)exported;
    ga_coalesce_note_shared(base);
}

/* ---- lifecycle ----------------------------------------------------------------- */

static void co_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    pthread_mutex_lock(&ga_co_lock);
    /* Its pinned buffers and its fills in flight went with the context. A
     * claimed slot is left to its filler, whose buffer is of the filler's
     * current context (ga_co_begin_fill detached any other): if that is the one
     * destroyed, the program destroyed a context another thread was using. */
    buffer_t gone[N_SLOTS];
    unsigned n_gone = 0;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (s->state == S_CLAIMED || s->ctx != ctx)
            continue;
        if (s->readers && s->big) { /* a reader copies out of its plain memory, */
            s->state = S_EMPTY, s->ctx = NULL; /* which no context owns: freed later */
            continue;
        }
        gone[n_gone++] = ga_co_detach_buffer(s);
        memset(s, 0, sizeof *s);
    }
    ga_co_query_ctx_gone_locked(); /* its allocations are gone: the pattern's are asked again */
    pthread_mutex_unlock(&ga_co_lock);
    ga_gather_ctx_gone(ctx);
    for (unsigned i = 0; i < n_gone; i++)
        ga_co_forget_buffer(rt, gone[i]);
}

static void co_stream_gone(const ga_rt_t *rt, CUstream h, bool kept)
{
    (void)rt;
    const ga_stream_t *st = kept ? NULL : ga_stream_lookup(h);
    if (!st) /* kept: the next owner's syncs of the same stream install its fills */
        return;
    pthread_mutex_lock(&ga_co_lock);
    /* Its fills become orphans, installed by none but a sync of the whole
     * context (a stream created later may reuse the record, and its syncs do
     * not wait for this stream's copies). */
    for (int i = 0; i < N_SLOTS; i++)
        if (in_flight(&ga_co_slots[i]) && ga_co_slots[i].fill_st == st)
            ga_co_slots[i].fill_st = NULL;
    pthread_mutex_unlock(&ga_co_lock);
}

void ga_coalesce_stats(ga_coalesce_stats_t *s)
{
    s->hits = atomic_load(&ga_co_counts.hits);
    s->misses = atomic_load(&ga_co_counts.misses);
    s->fills = atomic_load(&ga_co_counts.fills);
    s->fill_bytes = atomic_load(&ga_co_counts.fill_bytes);
    s->mirrors = atomic_load(&ga_co_counts.mirrors);
    s->mirror_bytes = atomic_load(&ga_co_counts.mirror_bytes);
    s->gathers = atomic_load(&ga_co_counts.gathers);
    s->gathered = atomic_load(&ga_co_counts.gathered_reads);
    s->gather_hits = atomic_load(&ga_co_counts.gather_hits);
    s->forgotten = atomic_load(&ga_co_counts.forgotten);
    s->idle_syncs = atomic_load(&ga_co_counts.idle_syncs);
    s->kept = atomic_load(&ga_co_counts.kept);
    ga_co_learner_stats(s); /* the learner's, under the lock (query.c) */
}

static void co_report(void)
{
    ga_coalesce_stats_t s;
    ga_coalesce_stats(&s);
    if (s.hits + s.misses + s.mirrors)
        ga_info("coalesce: hits=%llu misses=%llu fills=%llu fill_bytes=%llu mirrors=%llu "
                "mirror_bytes=%llu gathers=%llu gathered=%llu gather_hits=%llu learned=%llu/%llu "
                "fits=%llu forgotten=%llu idle_syncs=%llu kept=%llu",
                (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.fills, (unsigned long long)s.fill_bytes,
                (unsigned long long)s.mirrors, (unsigned long long)s.mirror_bytes,
                (unsigned long long)s.gathers, (unsigned long long)s.gathered,
                (unsigned long long)s.gather_hits, (unsigned long long)s.learned,
                (unsigned long long)s.learn_tries, (unsigned long long)s.fits,
                (unsigned long long)s.forgotten, (unsigned long long)s.idle_syncs,
                (unsigned long long)s.kept);
}

static void fork_child(void)
{
    ga_co_table_fork_child();
    ga_co_fill_fork_child();
    atomic_store(&ga_co_counts.hits, 0);
    atomic_store(&ga_co_counts.misses, 0);
    atomic_store(&ga_co_counts.fills, 0);
    atomic_store(&ga_co_counts.fill_bytes, 0);
    atomic_store(&ga_co_counts.gathers, 0);
    atomic_store(&ga_co_counts.gathered_reads, 0);
    atomic_store(&ga_co_counts.gather_hits, 0);
    atomic_store(&ga_co_counts.forgotten, 0);
    atomic_store(&ga_co_counts.kept, 0);
    atomic_store(&rest_len, REST_MISSES);
    ga_co_query_fork_child();
    ga_gather_child();
    ga_pcopy_fork_child();
    ga_co_async_fork_child();
}

static const ga_fork_ops_t fork_ops = {NULL, &ga_co_lock, fork_child};

GA_SWITCH(coalesce)

const ga_feature_t ga_feature_coalesce = {
    .summary = "small device-to-host reads served from one larger transfer",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuPointerGetAttributes, GA_ID_cuMemHostAlloc, GA_ID_cuMemFreeHost,
             GA_ID_cuStreamQuery, GA_ID_cuStreamGetFlags, GA_ID_cuStreamGetCtx),
    .uses = GA_USES_STREAMS | GA_USES_EPOCH,
    .report = co_report,
    .fork = &fork_ops,
    .read = co_read,
    .read_issued = co_read_issued,
    .read_done = co_read_done,
    .shared = co_shared,
    .synced = ga_co_synced,
    .sync = ga_co_sync,
    .stream_gone = co_stream_gone,
    .ctx_gone = co_ctx_gone,
};
