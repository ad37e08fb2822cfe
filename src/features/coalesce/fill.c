/* fill.c - deciding and filling a window: whether the memory may be cached
 * (driver queries), where the window lies (aligned to its size, clamped to its
 * allocation, growing while the reads walk forward), whether to mirror the
 * whole allocation instead (the cost model, measured on the fills), the slot's
 * host buffer (page-locked, or a mirror's plain memory, within the budget);
 * and the synchronous read, replaced by a window fill at the same point of
 * the same stream.
 *
 * Owns: the cost model (a small fill's round trip, large fills' bandwidth)
 * and the bytes mirrors and large reads' copies hold (atomics); a claimed
 * slot's host buffer, which its filler replaces without `lock`.
 * Must never: call the driver holding `lock` (the queries, the allocations
 * and the copy run between its stretches); keep a window whose epoch or work
 * sequence moved while it was filled. */
#define _GNU_SOURCE
#include "features/coalesce/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/textfile.h"
#include "features/coalesce/pcopy.h"
#include "tracking/device.h"

enum { MAX_GROWTH = 16, MIRROR_FACTOR = 1, PLAIN_SEEN = 4, HUGE_PAGE = 2 << 20 };

/* The cost model, measured on the fills: a small fill's time (the round trip)
 * and large fills' bandwidth; initial values from an H100's pageable copies. */
static _Atomic uint64_t rtt_ns = 10000, bw_bytes_per_us = 4000;
static _Atomic uint64_t held_bytes; /* mirrors' host memory */
static _Atomic bool model_frozen;    /* tests: the model as set */

/* ---- deciding the window (driver queries, outside the lock) ------------------- */

/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set: NVIDIA's GPUDirect RDMA guide has
 * memory a NIC writes marked so (Open MPI's CUDA support, GDRCopy and
 * Holoscan's AJA video source do), and those writes reach it without a call of
 * this process. Asked on its own, so that a driver unable to answer it for some
 * memory still answers ga_co_cacheable()'s other questions. */
static bool dma_target(const ga_rt_t *rt, CUdeviceptr src)
{
    __typeof__(&cuPointerGetAttributes) get =
        GA_REAL(rt, GA_ID_cuPointerGetAttributes, cuPointerGetAttributes);
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    unsigned long long set = 0; /* a bool of a width cuda.h leaves unsaid: room for any */
    void *data = &set;
    return get && get(1, &attr, &data, src) == CUDA_SUCCESS && set != 0;
}

/* Plain device memory that only this process writes? Returns its allocation. */
bool ga_co_cacheable(const ga_rt_t *rt, CUdeviceptr src, range_t *out)
{
    __typeof__(&cuPointerGetAttributes) get =
        GA_REAL(rt, GA_ID_cuPointerGetAttributes, cuPointerGetAttributes);
    if (!get)
        return false;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    };
    unsigned type = 0, managed = 1;
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned long long handles = ~0ull;
    int device = -1;
    void *data[] = {&type, &managed, &start, &size, &handles, &device};
    if (get(6, attrs, data, src) != CUDA_SUCCESS)
        return false;
    if (type != CU_MEMORYTYPE_DEVICE || managed || !size || handles != CU_MEM_HANDLE_TYPE_NONE ||
        dma_target(rt, src))
        return false;
    pthread_mutex_lock(&ga_co_lock);
    bool sh = ga_co_is_shared_locked(start);
    pthread_mutex_unlock(&ga_co_lock);
    if (sh)
        return false;
    *out = (range_t){start, size, device};
    return true;
}

/* The window for a read at src: aligned to its size, clamped to the
 * allocation, growing while the reads walk forward. */
static void window_for(const ga_rt_t *rt, const range_t *r, CUdeviceptr src, size_t n,
                       const slot_t *prev, CUdeviceptr *base, size_t *len, size_t *grow)
{
    size_t unit = window_unit(rt), w = unit;
    *grow = 1;
    if (prev && src >= prev->base + prev->len && src < prev->next_expected + w) {
        *grow = prev->grow < MAX_GROWTH ? prev->grow * 2 : prev->grow;
        w *= *grow;
    }
    /* Aligned to the unit, not to the grown size: a scan's next window starts
     * where the scan is, not back over what it has read. */
    CUdeviceptr b = src - (src - r->base) % unit;
    CUdeviceptr e = b + w;
    if (e > r->base + r->size)
        e = r->base + r->size;
    if (src + n > e) /* straddles the boundary: start at the read */
        b = src, e = src + w > r->base + r->size ? r->base + r->size : src + w;
    *base = b;
    *len = (size_t)(e - b);
}

static void free_pinned(const ga_rt_t *rt, void *p)
{
    __typeof__(&cuMemFreeHost) hfree = GA_REAL(rt, GA_ID_cuMemFreeHost, cuMemFreeHost);
    if (p && hfree)
        hfree(p);
}

void ga_co_free_buffer(const ga_rt_t *rt, buffer_t b)
{
    if (!b.host)
        return;
    if (b.big) {
        free(b.host);
        atomic_fetch_sub(&held_bytes, b.cap);
    } else {
        free_pinned(rt, b.host);
        if (b.counted)
            atomic_fetch_sub(&held_bytes, b.cap);
    }
}

/* A buffer of a destroyed context: plain memory freed; page-locked memory,
 * which went with the context, only taken off the bytes held (left counted,
 * it would shrink the budget for good). */
void ga_co_forget_buffer(const ga_rt_t *rt, buffer_t b)
{
    if (b.big)
        ga_co_free_buffer(rt, b);
    else if (b.host && b.counted)
        atomic_fetch_sub(&held_bytes, b.cap);
}

/* The bytes mirrors and large reads' copies hold now (tests). */
uint64_t ga_co_held_bytes(void)
{
    return atomic_load(&held_bytes);
}

buffer_t ga_co_detach_buffer(slot_t *s)
{
    buffer_t b = {s->host, s->cap, s->big, s->counted};
    s->host = NULL, s->cap = 0, s->big = s->counted = false;
    return b;
}

/* Host memory available now (the kernel's MemAvailable: free memory and the
 * page cache it would give back); 0 if unknown. */
static uint64_t available_bytes(void)
{
    size_t len;
    char *text = ga_read_file("/proc/meminfo", 1 << 16, &len), *at;
    unsigned long long kib = 0;
    if (text && (at = strstr(text, "MemAvailable:")) != NULL)
        (void)sscanf(at + 13, "%llu", &kib);
    free(text);
    if (kib)
        return (uint64_t)kib << 10;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Bytes mirrors and large reads' copies may hold: the setting, or a quarter
 * of the host memory available when first asked, at most an eighth of all
 * of it and at least 64 MiB (a cache sized from all of it took memory other
 * processes were using). */
uint64_t ga_co_budget(const ga_rt_t *rt)
{
    static _Atomic uint64_t budget; /* asked once: a file read and system calls */
    if (rt->cfg.coalesce_budget)
        return rt->cfg.coalesce_budget;
    uint64_t b = atomic_load_explicit(&budget, memory_order_relaxed);
    if (!b) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        uint64_t eighth = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 8 : 1ull << 30;
        uint64_t avail = available_bytes() / 4;
        b = avail && avail < eighth ? avail : eighth;
        if (b < (64ull << 20))
            b = 64ull << 20;
        atomic_store_explicit(&budget, b, memory_order_relaxed);
    }
    return b;
}

/* Is copying `size` bytes once worth it after `missed` round trips? */
static bool worth_mirror(const ga_rt_t *rt, size_t size, unsigned missed)
{
    uint64_t bw = atomic_load_explicit(&bw_bytes_per_us, memory_order_relaxed);
    uint64_t copy_ns = bw ? (uint64_t)size * 1000 / bw : UINT64_MAX;
    uint64_t paid_ns = (uint64_t)missed * atomic_load_explicit(&rtt_ns, memory_order_relaxed);
    return size <= ga_co_budget(rt) / 2 && copy_ns <= paid_ns * MIRROR_FACTOR;
}

/* Learn from a fill of len bytes that took ns. */
static void measured(size_t len, uint64_t ns, size_t unit)
{
    if (atomic_load_explicit(&model_frozen, memory_order_relaxed))
        return;
    if (len <= unit) {
        uint64_t r = atomic_load_explicit(&rtt_ns, memory_order_relaxed);
        atomic_store_explicit(&rtt_ns, (7 * r + ns) / 8, memory_order_relaxed);
        return;
    }
    uint64_t r = atomic_load_explicit(&rtt_ns, memory_order_relaxed);
    if (ns <= r)
        return;
    uint64_t bw = (uint64_t)len * 1000 / (ns - r), old = atomic_load(&bw_bytes_per_us);
    atomic_store_explicit(&bw_bytes_per_us, (3 * old + bw) / 4, memory_order_relaxed);
}

/* Plain host memory for a mirror or a large read's copy: from 2 MiB up,
 * aligned to a huge page and advised to use huge pages, where transparent huge
 * pages are on in madvise mode (Debian's and Ubuntu's default): the first copy
 * into 4 MiB then faults twice, not 1,024 times (about 2.3 us a 4 KiB page on
 * an H200 host, profile's measure). free() takes either. */
static size_t plain_cap(size_t len)
{
    return len < HUGE_PAGE ? len : (len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
}

static void *plain_alloc(size_t cap)
{
    void *p = NULL;
    if (cap < HUGE_PAGE)
        return malloc(cap);
    if (posix_memalign(&p, HUGE_PAGE, cap) != 0)
        return NULL;
    (void)madvise(p, cap, MADV_HUGEPAGE); /* advice: refused is fine */
    return p;
}

static bool ensure_big(const ga_rt_t *rt, slot_t *s, size_t len)
{
    if (s->host && s->big && s->cap >= len)
        return true;
    ga_co_free_buffer(rt, ga_co_detach_buffer(s));
    size_t cap = plain_cap(len);
    if (atomic_fetch_add(&held_bytes, cap) + cap > ga_co_budget(rt)) {
        atomic_fetch_sub(&held_bytes, cap);
        return false;
    }
    if (!(s->host = plain_alloc(cap))) {
        atomic_fetch_sub(&held_bytes, cap);
        return false;
    }
    s->cap = cap, s->big = true;
    return true;
}

/* The slot's buffer for a fill of len bytes: a mirror's plain memory (big),
 * else page-locked memory, counted against the budget when `counted` (a
 * large read's: windows are at most a few of MiB each, 96 of them). */
bool ga_co_ensure_host(const ga_rt_t *rt, slot_t *s, size_t len, CUcontext ctx, bool big,
                       bool counted)
{
    if (big)
        return ensure_big(rt, s, len) && (s->ctx = ctx, true);
    if (s->host && !s->big && s->cap >= len && s->ctx == ctx)
        return true;
    __typeof__(&cuMemHostAlloc) halloc = GA_REAL(rt, GA_ID_cuMemHostAlloc, cuMemHostAlloc);
    ga_co_free_buffer(rt, ga_co_detach_buffer(s));
    size_t cap = len < 65536 ? 65536 : len;
    if (counted && atomic_fetch_add(&held_bytes, cap) + cap > ga_co_budget(rt)) {
        atomic_fetch_sub(&held_bytes, cap);
        return false;
    }
    if (!halloc || halloc(&s->host, cap, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
        s->host = NULL;
        if (counted)
            atomic_fetch_sub(&held_bytes, cap);
        return false;
    }
    s->cap = cap, s->counted = counted;
    s->ctx = ctx;
    return true;
}

/* Count a miss in allocation r and decide whether its fill is a mirror (the
 * whole allocation: f->big, f->base, f->len). Returns the allocation's misses
 * this generation. */
static unsigned plan_locked(const ga_rt_t *rt, const range_t *r, bool may_mirror, fill_t *f)
{
    size_t unit = window_unit(rt);
    unsigned misses = ga_co_note_miss_locked(r->base, f->epoch, f->work);
    f->big = !f->exact && may_mirror && rt->cfg.coalesce_mirrors && r->size > unit &&
             misses > 2 && worth_mirror(rt, r->size, misses);
    if (f->big)
        f->base = r->base, f->len = r->size;
    return misses;
}

/* Claim a slot for a window holding [src, src+n), for a fill on the stream
 * whose tracker record is `st` (NULL: a synchronous fill). A fill is matched
 * with its sync by that record, which names the default stream (NULL) as the
 * legacy or the calling thread's per-thread stream; the raw handle cannot: an
 * asynchronous fill on the default stream, how PyTorch's .item() and CuPy read
 * a scalar, was once taken for a synchronous one and never installed. False
 * if the memory may not be cached, no slot is free, or the read does not fit in
 * a window (past the allocation, or wider). */
bool ga_co_begin_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, const ga_stream_t *st,
                      unsigned need, fill_t *f)
{
    bool may_mirror = st == NULL; /* an asynchronous fill stays small and pinned */
    range_t range;
    f->exact = need > 0;
    f->plain = f->exact && n > GA_CO_PINNED_MAX;
    /* Read first: memory shared (IPC) after the check below bumps the epoch,
     * and the window is then not kept. */
    f->epoch = ga_epoch_read(), f->work = ga_work_seq_read();
    f->ctx = ga_current_ctx(rt);
    if (!f->ctx || ga_serving_off() || !ga_co_cacheable(rt, src, &range))
        return false;
    f->alloc_base = range.base, f->alloc_size = range.size;
    pthread_mutex_lock(&ga_co_lock);
    unsigned seen = plan_locked(rt, &range, may_mirror, f);
    if (seen < need) { /* not read often enough yet */
        pthread_mutex_unlock(&ga_co_lock);
        return false;
    }
    /* What window_for needs of the slot before it, copied: window_for runs
     * unlocked, while another thread may refill that slot (its owner writes
     * host and cap unlocked, so only the fields kept under the lock). */
    slot_t *before = ga_co_predecessor_locked(src), prev_copy = {0};
    const slot_t *prev = NULL;
    if (before) {
        prev_copy.base = before->base, prev_copy.len = before->len;
        prev_copy.next_expected = before->next_expected, prev_copy.grow = before->grow;
        prev = &prev_copy;
    }
    slot_t *s = ga_co_claim_locked(f->big || f->plain, f->exact ? n : window_unit(rt), f->ctx);
    /* A large read fills into page-locked memory already there (a column
     * read round after round); making some (about a millisecond for 4 MiB)
     * waits for the allocation's third read in one generation (a program
     * that reads each buffer once or twice must not page-lock memory for it).
     * One in plain memory fills into the buffer that held this allocation's
     * copy the generation before; else it waits for the fourth read: its
     * fill (the driver's copy to pageable memory, then to the program) costs
     * more than staging's copy of the read, so three reads of a buffer (a
     * Merkle layer's) must not pay it. */
    if (s && f->plain) {
        slot_t *own = ga_co_own_buffer_locked(range.base, n);
        s = own ? own : seen < PLAIN_SEEN ? NULL : s;
    } else if (s && f->exact && seen < 3 &&
               !(free_slot_locked(s) && buffer_fits(s, false, n, f->ctx)))
        s = NULL;
    /* A large copy or a mirror takes a slot holding live data only from an
     * allocation read less often lately than its own: in a cyclic pass over
     * more than the table holds, least-recent-use evicts each copy just before
     * it is read again (no hits at all); this keeps what it holds and serves
     * it each pass. */
    if (s && (f->exact || f->big) && !free_slot_locked(s) &&
        ga_co_reads_locked(s->alloc_base) >= ga_co_reads_locked(range.base)) {
        s = NULL;
        atomic_fetch_add_explicit(&ga_co_counts.kept, 1, memory_order_relaxed);
    }
    for (int i = 0; s && st && i < N_SLOTS; i++)
        if (in_flight(&ga_co_slots[i]) && ga_co_slots[i].fill_st == st)
            s = NULL; /* one asynchronous fill per stream at a time */
    buffer_t stale = {0}; /* the slot's buffer, if pinned in another context */
    if (s) {
        s->state = S_CLAIMED, s->fill_st = st;
        if (s->host && s->ctx != f->ctx) { /* detached here, where ctx_gone sees it */
            stale = ga_co_detach_buffer(s);
            s->ctx = NULL;
        }
    }
    pthread_mutex_unlock(&ga_co_lock);
    ga_co_free_buffer(rt, stale);
    if (!s)
        return false;
    if (f->exact && src + n > range.base + range.size)
        f->base = src, f->len = 0; /* past its allocation: the program's copy gets the driver's answer */
    else if (f->exact)
        f->base = src, f->len = n, f->grow = 1;
    else if (f->big)
        f->grow = 1;
    else
        window_for(rt, &range, src, n, prev, &f->base, &f->len, &f->grow);
    if (src < f->base || src + n > f->base + f->len) {
        pthread_mutex_lock(&ga_co_lock);
        s->state = S_EMPTY;
        pthread_mutex_unlock(&ga_co_lock);
        return false;
    }
    f->slot = s;
    return true;
}

/* ---- the synchronous read ------------------------------------------------------ */

/* Before a synchronous copy of entry point id (on its default stream): is
 * every stream the copy does not wait for idle? A kernel there may write
 * what the copy reads, so its bytes are kept only if so (and all idle after). */
bool ga_co_idle_before_sync(const ga_rt_t *rt, CUcontext ctx, ga_id_t id)
{
    bool pt = ga_entries[id].per_thread;
    return ga_ctx_settle_for(rt, ctx, ga_stream_mark(rt, NULL, pt).st, !pt);
}

/* A fill's bytes copied: counted for the report. */
static void count_fill(const fill_t *f)
{
    atomic_fetch_add_explicit(&ga_co_counts.fills, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ga_co_counts.fill_bytes, f->len, memory_order_relaxed);
    if (f->big || f->exact) {
        atomic_fetch_add_explicit(&ga_co_counts.mirrors, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ga_co_counts.mirror_bytes, f->len, memory_order_relaxed);
    }
}

/* Nothing issued since the fill began that could change its bytes. */
static bool unchanged_locked(const fill_t *f)
{
    return f->epoch == ga_epoch_read() && f->work == ga_work_seq_read() && !ga_serving_off();
}

/* Replace the program's read by a window fill at the same stream position.
 * Returns false (nothing done) if the read is not a candidate; otherwise the
 * driver's result in *r, with dst filled on success. */
static bool fill_and_serve_entered(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src,
                                   size_t n, unsigned need, CUresult *r)
{
    fill_t f;
    if (!ga_co_begin_fill(rt, src, n, NULL, need, &f))
        return false;
    slot_t *s = f.slot;
    bool ok = ga_co_ensure_host(rt, s, f.len, f.ctx, f.big || f.plain, f.exact);
    ga_stream_mark_t m = ga_stream_mark(rt, NULL, ga_entries[id].per_thread);
    bool before = ok && ga_co_idle_before_sync(rt, f.ctx, id);
    __typeof__(&cuMemcpyDtoH_v2) copy = GA_REAL(rt, id, cuMemcpyDtoH_v2);
    uint64_t t0 = ga_now_ns();
    *r = ok ? copy(s->host, f.base, f.len) : CUDA_ERROR_OUT_OF_MEMORY;
    if (*r == CUDA_SUCCESS) {
        measured(f.len, ga_now_ns() - t0, window_unit(rt));
        ga_stream_mark_idle(m); /* a synchronous copy: the default stream is done */
        /* the slot is claimed */
        ga_pcopy(dst, (const char *)s->host + (src - f.base), n, rt->cfg.coalesce_threads);
        count_fill(&f);
    }
    bool keep = *r == CUDA_SUCCESS && before && ga_ctx_settle(rt, f.ctx);
    pthread_mutex_lock(&ga_co_lock);
    keep = keep && unchanged_locked(&f);
    ga_co_record_window_locked(&f);
    ga_co_settle_slot_locked(s, keep);
    if (keep && f.big) /* the windows it covers hold nothing more: free their slots */
        for (int i = 0; i < N_SLOTS; i++) {
            slot_t *o = &ga_co_slots[i];
            if (o != s && o->state == S_VALID && o->base >= f.base &&
                o->base + o->len <= f.base + f.len)
                o->state = S_EMPTY;
        }
    pthread_mutex_unlock(&ga_co_lock);
    if (f.big && !keep)
        ga_debug("coalesce: a %zu-byte mirror was not kept (copy %d)", f.len, (int)*r);
    if (*r != CUDA_SUCCESS && ok)
        return false; /* let the program's own copy produce the driver's error */
    return *r == CUDA_SUCCESS;
    /* (!ok: no buffer, over budget for a mirror: the program's copy goes) */
}

/* ---- a large read kept after another made it ----------------------------------- */

/* A large read in plain memory whose copy staging or the driver makes: its
 * slot claimed now (the rules of ga_co_begin_fill), and whether every stream
 * the copy does not wait for is idle as it begins. */
bool ga_co_begin_keep(const ga_rt_t *rt, ga_id_t id, CUdeviceptr src, size_t n, fill_t *f,
                      bool *before)
{
    if (!ga_own_calls_enter())
        return false;
    bool ok = ga_co_begin_fill(rt, src, n, NULL, 1, f);
    if (ok)
        *before = ga_co_idle_before_sync(rt, f->ctx, id);
    ga_own_calls_leave();
    return ok;
}

/* The copy made (from: the program's destination, which holds the range as
 * the device had it at the copy's stream position; NULL: it failed, or was
 * not the one claimed for): the range copied into the slot's plain memory and
 * kept under the windows' rules, else the slot freed. */
void ga_co_keep_from(const ga_rt_t *rt, fill_t *f, const void *from, bool before)
{
    slot_t *s = f->slot;
    bool keep = from && before && ga_own_calls_enter(); /* the buffer's old one may be pinned */
    if (keep) {
        keep = ga_co_ensure_host(rt, s, f->len, f->ctx, true, true);
        ga_own_calls_leave();
    }
    if (keep) {
        /* the slot is claimed: no reader */
        ga_pcopy(s->host, from, f->len, rt->cfg.coalesce_threads);
        count_fill(f);
        keep = ga_ctx_settle(rt, f->ctx);
    }
    pthread_mutex_lock(&ga_co_lock);
    keep = keep && unchanged_locked(f);
    ga_co_record_window_locked(f);
    ga_co_settle_slot_locked(s, keep);
    pthread_mutex_unlock(&ga_co_lock);
}

bool ga_co_fill_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                          unsigned need, CUresult *r)
{
    if (!ga_own_calls_enter())
        return false;
    bool done = fill_and_serve_entered(rt, id, dst, src, n, need, r);
    ga_own_calls_leave();
    return done;
}

/* ---- the cost model as tests set it; fork -------------------------------------- */

void ga_coalesce_set_model(uint64_t rtt, uint64_t bw, bool frozen)
{
    atomic_store(&rtt_ns, rtt);
    atomic_store(&bw_bytes_per_us, bw);
    atomic_store(&model_frozen, frozen);
}

void ga_co_fill_fork_child(void)
{
    atomic_store(&held_bytes, 0); /* the mirrors' memory is left (a child forgets) */
}
