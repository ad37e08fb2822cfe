/* coalesce.c - small device-to-host reads served from one larger transfer
 * (GPUACCEL_COALESCE).
 *
 * A small synchronous cuMemcpyDtoH is replaced by a copy of an aligned window
 * around it (clamped to its allocation) into pinned memory the library owns,
 * issued at the same point of the same stream, so what the program reads is
 * what its own copy would have read. The window is kept for later reads only
 * when nothing can change what it holds:
 *   - every known stream of the context was idle after the fill,
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
 * context idle and is answered here too (co_sync), without the driver.
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
 * larger than a window copies its own range into page-locked memory the
 * library keeps (counted against the budget) and from there to the program,
 * at once (up to 1 MiB: faster than the driver's copy to pageable memory) or
 * the second time its allocation is read in one generation, when a free slot
 * has the page-locked memory already, else the third time (a program that
 * reads each buffer once or twice never has memory page-locked for it); later
 * reads of it are served from that copy under the windows' rules. Copies out
 * of it of 128 KiB and more are shared with a few helper threads (pcopy.h):
 * one thread's memcpy of 4 MiB is no faster than the driver's copy.
 *
 * Owns: the window slots and the shared-memory set, under `lock`.
 * Must never: call the driver holding `lock`; serve a read from a window whose
 * epoch or work sequence moved. */
#define _GNU_SOURCE
#include "features/coalesce/coalesce.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "core/clock.h"
#include "core/log.h"
#include "features/coalesce/gather.h"
#include "features/coalesce/pattern.h"
#include "features/coalesce/pcopy.h"
#include "features/feature.h"
#include "tracking/device.h"
#include "tracking/memkind.h"
#include "tracking/streams.h"

enum { N_SLOTS = 96, MAX_GROWTH = 16, N_SEEN = 64, MIRROR_FACTOR = 1 };

/* A slot's life: EMPTY -> CLAIMED (one filler owns it: no one else reads or
 * claims it, its host buffer may be replaced) -> VALID (a synchronous fill,
 * kept) or FILLING (an asynchronous copy into it is enqueued) -> VALID or
 * EMPTY at the first sync of its stream that began after the enqueue. */
typedef enum { S_EMPTY, S_CLAIMED, S_FILLING, S_VALID } slot_state_t;

typedef struct slot {
    slot_state_t state;
    CUcontext ctx;      /* whose pinned memory `host` is */
    CUdeviceptr base;   /* first device byte held */
    size_t len;
    void *host;
    size_t cap;
    uint64_t epoch, work; /* valid while both are unchanged */
    uint64_t used;        /* LRU clock */
    const ga_stream_t *fill_st; /* S_CLAIMED, S_FILLING: the tracker's record of the stream
                                 * of an asynchronous fill; NULL: a synchronous fill */
    uint64_t enqueued;          /* S_FILLING: ga_order_next() when its copy was enqueued */
    uint64_t fill_done;         /* S_FILLING: fill_st's count that says the copy finished */
    CUdeviceptr next_expected; /* sequential-scan detection */
    size_t grow;
    bool big;             /* host is malloc'd (a mirror), counted in held_bytes */
    bool counted;         /* host is page-locked and counted in held_bytes (a large read's) */
    unsigned readers;     /* threads copying out of host unlocked: not to be claimed */
    CUdeviceptr alloc_base; /* the allocation the window lies in (for the learner) */
    size_t alloc_size;
} slot_t;

/* Allocations reads missed in, this generation (epoch and work sequence). */
typedef struct seen {
    CUdeviceptr base;
    uint64_t epoch, work, used;
    unsigned misses;
} seen_t;

typedef struct shared_range {
    CUdeviceptr base;
    UT_hash_handle hh;
} shared_range_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t slots[N_SLOTS];     /* guarded by lock */
static shared_range_t *shared;    /* guarded by lock: IPC exported or imported */
static uint64_t clock_tick;       /* guarded by lock */
static seen_t seen_allocs[N_SEEN]; /* guarded by lock */
static _Atomic uint64_t hits, misses, fills, fill_bytes, mirrors, mirror_bytes;
/* Set (under lock) before a slot becomes S_FILLING, cleared under lock by a
 * sync that found none left: a sync seeing it clear has no fill to install
 * and skips the table (a .item() loop served from a window makes no fills).
 * Seq_cst: a fill enqueued before a sync began (its order number taken after
 * the flag was set) is seen by that sync. */
static _Atomic bool any_filling;
/* The cost model, measured on the fills: a small fill's time (the round trip)
 * and large fills' bandwidth; initial values from an H100's pageable copies. */
static _Atomic uint64_t rtt_ns = 10000, bw_bytes_per_us = 4000;
static _Atomic uint64_t held_bytes; /* mirrors' host memory */
static _Atomic bool model_frozen;    /* tests: the model as set */
/* Fills since the last hit, misses left to pass straight to the driver, and
 * how many the next rest lasts: a loop that writes before every read gains
 * nothing from windows, and each fill costs more than the read it replaces.
 * The rest doubles while the fills after it stay fruitless (FRUITLESS_LIMIT
 * fills a rest cost about 10% of such a loop's time with rests of 64 reads
 * on an H100; under 1% from 1,024 on) and is short again after a hit. */
enum { FRUITLESS_LIMIT = 8, REST_MISSES = 64, REST_MAX = 8192 };
static _Atomic unsigned fruitless, rest, rest_len = REST_MISSES;

/* Gathers (pattern.h, gather.h): the reads one gather fetched, valid while
 * the epoch and work sequence it was made in hold, like a window. */
typedef struct gathered {
    CUdeviceptr src;
    uint32_t n;
    bool used;
    unsigned char bytes[GA_GATHER_CELL];
} gathered_t;
static ga_pattern_t pattern;          /* guarded by lock: the misses, what was learned */
static gathered_t gat[GA_GATHER_MAX]; /* guarded by lock */
static unsigned gat_n;                /* guarded by lock */
static unsigned gat_next;             /* guarded by lock: where the next read is looked for */
/* The gathered reads by address (open addressing, index + 1; 0: empty), for
 * a read that is not where the cursor looks: a read the gather did not fetch
 * (a window's, an unexplained one) costs one probe or a few, not a scan of
 * every gathered read. */
enum { GAT_HASH = 4096, GAT_AHEAD = 8 };
_Static_assert(GAT_HASH >= 2 * GA_GATHER_MAX && !(GAT_HASH & (GAT_HASH - 1)),
               "the gathered reads' hash: a power of two, at most half full");
static uint16_t gat_hash[GAT_HASH];   /* guarded by lock */
static uint64_t gat_epoch, gat_work;  /* guarded by lock */
static bool checked;                  /* guarded by lock: the pattern's allocations were */
static uint64_t checked_epoch;        /* found live, on this device, in this epoch */
static unsigned poor;                 /* guarded by lock: gathers in a row mostly unused */
/* Allocations the missed reads fell in, for the learner (a stale one only
 * misleads it: a prediction is checked live before any gather). */
enum { N_RANGES = 64 };
static struct {
    CUdeviceptr base;
    size_t size;
} ranges[N_RANGES];                   /* guarded by lock */
static unsigned ranges_next;          /* guarded by lock: round-robin replacement */
static unsigned ranges_last;          /* guarded by lock: the last found, looked at first */
static _Atomic bool gathers_off;      /* the kernel cannot be had */
/* One gather's work: up to GA_GATHER_MAX predictions, requests and cells
 * (about 128 KiB: too much for a thread's stack), held from the prediction to
 * the keeping of what was fetched. Lock order: area_lock, then lock. */
static pthread_mutex_t area_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ga_pat_read_t pred[GA_GATHER_MAX];
    ga_gather_req_t req[GA_GATHER_MAX];
    unsigned char out[GA_GATHER_MAX * GA_GATHER_CELL];
} area;                               /* guarded by area_lock */
static _Atomic uint64_t gathers, gathered_reads, gather_hits, forgotten;
static _Atomic uint64_t idle_syncs; /* synchronizations answered: nothing was in flight */
enum { POOR_LIMIT = 8 };

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

/* ---- the window table (under lock) ------------------------------------------- */

static bool slot_valid(const slot_t *s)
{
    return s->state == S_VALID && s->epoch == ga_epoch_read() && s->work == ga_work_seq_read();
}

/* Claimed by a filler, or its copy in flight: no one else may take it. */
static bool in_flight(const slot_t *s)
{
    return s->state == S_CLAIMED || s->state == S_FILLING;
}

/* Holds nothing anyone may read now (empty, or its generation passed). */
static bool free_slot_locked(const slot_t *s)
{
    return s->state == S_EMPTY || !slot_valid(s);
}

/* Its buffer takes a fill of len bytes of this kind in ctx as it is. */
static bool buffer_fits(const slot_t *s, bool big, size_t len, CUcontext ctx)
{
    return s->host && s->big == big && s->cap >= len && s->ctx == ctx;
}

/* The newest epoch and work sequence any window was made valid in: a window
 * is valid only while both are still current, and both only grow, so when
 * either has moved past these no window is valid and none need be looked at
 * (a query phase whose reads gathers serve makes no windows: its reads skip
 * the table). */
static uint64_t valid_epoch, valid_work; /* guarded by lock */

/* A filled window's end: kept (valid), or emptied. */
static void settle_slot_locked(slot_t *s, bool keep)
{
    s->state = keep ? S_VALID : S_EMPTY;
    if (keep && s->epoch > valid_epoch)
        valid_epoch = s->epoch;
    if (keep && s->work > valid_work)
        valid_work = s->work;
}

static unsigned gat_slot(CUdeviceptr src)
{
    return (unsigned)((src * 0x9e3779b97f4a7c15ull) >> 52) & (GAT_HASH - 1);
}

/* The gathered read at src exactly, or gat_n. */
static unsigned gat_find_locked(CUdeviceptr src)
{
    for (unsigned h = gat_slot(src); gat_hash[h]; h = (h + 1) & (GAT_HASH - 1))
        if (gat[gat_hash[h] - 1].src == src)
            return gat_hash[h] - 1u;
    return gat_n;
}

static void gat_index_locked(void)
{
    memset(gat_hash, 0, sizeof gat_hash);
    for (unsigned k = 0; k < gat_n; k++) {
        unsigned h = gat_slot(gat[k].src);
        while (gat_hash[h]) /* the first of equal addresses stays found */
            h = (h + 1) & (GAT_HASH - 1);
        gat_hash[h] = (uint16_t)(k + 1);
    }
}

static bool gat_holds(unsigned k, CUdeviceptr src, size_t n)
{
    return k < gat_n && src >= gat[k].src && src + n <= gat[k].src + gat[k].n;
}

/* Serve [src, src+n) into dst from the last gather: looked for a few reads
 * on from the one after the last it served (a query's reads come in the
 * learned order), else by its address. */
static bool serve_gathered_locked(void *dst, CUdeviceptr src, size_t n)
{
    if (!gat_n || gat_epoch != ga_epoch_read() || gat_work != ga_work_seq_read())
        return false;
    unsigned k = gat_n;
    for (unsigned i = 0; i < GAT_AHEAD && k == gat_n; i++) {
        unsigned at = gat_next + i; /* wrapped without a division: once per read */
        while (at >= gat_n)
            at -= gat_n;
        if (gat_holds(at, src, n))
            k = at;
    }
    if (k == gat_n && !gat_holds(k = gat_find_locked(src), src, n))
        return false;
    memcpy(dst, gat[k].bytes + (src - gat[k].src), n);
    gat[k].used = true, gat_next = k + 1;
    atomic_fetch_add_explicit(&gather_hits, 1, memory_order_relaxed);
    return true;
}

/* The valid window or mirror holding [src, src+n), or NULL; marked used. */
static slot_t *holding_locked(CUdeviceptr src, size_t n)
{
    if (valid_epoch != ga_epoch_read() || valid_work != ga_work_seq_read())
        return NULL;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &slots[i];
        /* (a stale one is passed: a mirror made since may hold the range) */
        if (s->state == S_VALID && src >= s->base && src + n <= s->base + s->len &&
            slot_valid(s)) {
            s->used = ++clock_tick;
            return s;
        }
    }
    return NULL;
}

/* Serve [src, src+n) into dst from the last gather or a valid window (*from:
 * the window, else NULL). */
static bool serve_locked(void *dst, CUdeviceptr src, size_t n, const slot_t **from)
{
    *from = NULL;
    if (serve_gathered_locked(dst, src, n))
        return true;
    slot_t *s = holding_locked(src, n);
    if (s)
        memcpy(dst, (const char *)s->host + (src - s->base), n), *from = s;
    return s != NULL;
}

/* Serve a read larger than a window from a valid slot that holds it (a large
 * read's own fill, a mirror), copying outside the lock: the slot has a reader
 * meanwhile, and no filler claims it. */
static bool serve_large(void *dst, CUdeviceptr src, size_t n)
{
    if (ga_serving_off())
        return false;
    const char *from = NULL;
    pthread_mutex_lock(&lock);
    slot_t *hit = holding_locked(src, n);
    if (hit)
        hit->readers++, from = (const char *)hit->host + (src - hit->base);
    pthread_mutex_unlock(&lock);
    if (!hit)
        return false;
    ga_pcopy(dst, from, n);
    pthread_mutex_lock(&lock);
    if (hit->readers) /* (zeroed if its context was destroyed meanwhile) */
        hit->readers--;
    pthread_mutex_unlock(&lock);
    atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
    return true;
}

/* Remember an allocation reads fell in, for the learner. */
static void add_range_locked(CUdeviceptr base, size_t size)
{
    ranges[ranges_next].base = base, ranges[ranges_next].size = size;
    ranges_last = ranges_next;
    ranges_next = (ranges_next + 1) % N_RANGES;
}

/* Tell the learner of a small synchronous read, served or not (the program's
 * own sequence of reads, which repeats query after query; which of them
 * windows serve does not), if its allocation is in the cache of ranges. */
static bool note_known_locked(CUdeviceptr src, size_t n)
{
    for (unsigned k = 0; k < N_RANGES; k++) {
        unsigned i = (ranges_last + k) % N_RANGES;
        if (ranges[i].size && src >= ranges[i].base && src + n <= ranges[i].base + ranges[i].size) {
            ranges_last = i;
            ga_pat_note(&pattern, &(ga_pat_read_t){ranges[i].base, ranges[i].size,
                                                   src - ranges[i].base, (uint32_t)n});
            return true;
        }
    }
    return false;
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
    pthread_mutex_lock(&lock);
    if (note)
        *noted = note_known_locked(src, n);
    bool ok = serve_locked(dst, src, n, &from);
    if (note && !*noted && from && from->alloc_size) {
        add_range_locked(from->alloc_base, from->alloc_size);
        ga_pat_note(&pattern, &(ga_pat_read_t){from->alloc_base, from->alloc_size,
                                               src - from->alloc_base, (uint32_t)n});
        *noted = true;
    }
    if (*noted && ga_pat_at_anchor(&pattern)) {
        unsigned m = atomic_exchange_explicit(&period_misses, 0, memory_order_relaxed);
        *gather = ok && m >= 2;
    }
    pthread_mutex_unlock(&lock);
    if (ok) {
        atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
        atomic_store_explicit(&fruitless, 0, memory_order_relaxed);
        if (atomic_load_explicit(&rest_len, memory_order_relaxed) != REST_MISSES)
            atomic_store_explicit(&rest_len, REST_MISSES, memory_order_relaxed);
    }
    return ok;
}

/* A slot to fill: an empty one, else the least recently used valid one,
 * preferring a slot whose buffer is of the kind the fill needs (a mirror's
 * plain memory, a window's pinned memory: either costs to make again), and
 * of that kind one large enough already (a column read whole each round
 * finds its buffer of the round before, not one it must free and page-lock
 * anew). A slot being copied out of by a reader is never taken either. A slot
 * claimed or being filled is never taken (its filler may be replacing its
 * buffer, or a copy into its memory may be in flight). */
static slot_t *claim_locked(bool big, size_t len, CUcontext ctx)
{
    slot_t *best = NULL;
    int best_score = -1;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &slots[i];
        if (in_flight(s) || s->readers)
            continue;
        bool kind = !s->host || s->big == big;
        int score = free_slot_locked(s) * 4 + buffer_fits(s, big, len, ctx) * 2 + kind;
        if (score > best_score || (score == best_score && s->used < best->used))
            best = s, best_score = score;
    }
    return best;
}

static bool is_shared_locked(CUdeviceptr base)
{
    shared_range_t *r;
    HASH_FIND(hh, shared, &base, sizeof base, r);
    return r != NULL;
}

void ga_coalesce_note_shared(CUdeviceptr base)
{
    shared_range_t *r = calloc(1, sizeof *r);
    if (!r)
        return;
    r->base = base;
    pthread_mutex_lock(&lock);
    shared_range_t *old;
    HASH_FIND(hh, shared, &base, sizeof base, old);
    if (old)
        free(r);
    else
        HASH_ADD(hh, shared, base, sizeof r->base, r);
    /* A window over it may already exist: the epoch moves, which invalidates
     * every window and every fill in flight. */
    ga_epoch_bump();
    pthread_mutex_unlock(&lock);
}

/* ---- deciding the window (driver queries, outside the lock) ------------------- */

/* The window's size (GPUACCEL_COALESCE_WINDOW): what a fill copies around a
 * small read, and the largest read served from a window that holds it. */
static size_t window_unit(const ga_rt_t *rt)
{
    return rt->cfg.coalesce_window ? rt->cfg.coalesce_window : 65536;
}

typedef struct range {
    CUdeviceptr base; /* of the allocation */
    size_t size;
    int device;       /* its device's ordinal */
} range_t;

/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set: NVIDIA's GPUDirect RDMA guide has
 * memory a NIC writes marked so (Open MPI's CUDA support, GDRCopy and
 * Holoscan's AJA video source do), and those writes reach it without a call of
 * this process. Asked on its own, so that a driver unable to answer it for some
 * memory still answers cacheable()'s other questions. */
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
static bool cacheable(const ga_rt_t *rt, CUdeviceptr src, range_t *out)
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
    pthread_mutex_lock(&lock);
    bool sh = is_shared_locked(start);
    pthread_mutex_unlock(&lock);
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

/* A slot's host buffer, detached from it. */
typedef struct buffer {
    void *host;
    size_t cap;
    bool big, counted;
} buffer_t;

static void free_buffer(const ga_rt_t *rt, buffer_t b)
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

static buffer_t detach_buffer(slot_t *s)
{
    buffer_t b = {s->host, s->cap, s->big, s->counted};
    s->host = NULL, s->cap = 0, s->big = s->counted = false;
    return b;
}

/* Bytes mirrors and large reads' copies may hold: the setting, or an eighth
 * of host memory. */
static uint64_t budget(const ga_rt_t *rt)
{
    static _Atomic uint64_t eighth; /* of host memory, asked once (sysconf is a system call) */
    if (rt->cfg.coalesce_budget)
        return rt->cfg.coalesce_budget;
    uint64_t e = atomic_load_explicit(&eighth, memory_order_relaxed);
    if (!e) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        e = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 8 : (1ull << 30);
        atomic_store_explicit(&eighth, e, memory_order_relaxed);
    }
    return e;
}

/* Is copying `size` bytes once worth it after `missed` round trips? */
static bool worth_mirror(const ga_rt_t *rt, size_t size, unsigned missed)
{
    uint64_t bw = atomic_load_explicit(&bw_bytes_per_us, memory_order_relaxed);
    uint64_t copy_ns = bw ? (uint64_t)size * 1000 / bw : UINT64_MAX;
    uint64_t paid_ns = (uint64_t)missed * atomic_load_explicit(&rtt_ns, memory_order_relaxed);
    return size <= budget(rt) / 2 && copy_ns <= paid_ns * MIRROR_FACTOR;
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

static bool ensure_big(const ga_rt_t *rt, slot_t *s, size_t len)
{
    if (s->host && s->big && s->cap >= len)
        return true;
    free_buffer(rt, detach_buffer(s));
    if (atomic_fetch_add(&held_bytes, len) + len > budget(rt)) {
        atomic_fetch_sub(&held_bytes, len);
        return false;
    }
    if (!(s->host = malloc(len))) {
        atomic_fetch_sub(&held_bytes, len);
        return false;
    }
    s->cap = len, s->big = true;
    return true;
}

/* The slot's buffer for a fill of len bytes: a mirror's plain memory (big),
 * else page-locked memory, counted against the budget when `counted` (a
 * large read's: windows are at most a few of MiB each, 96 of them). */
static bool ensure_host(const ga_rt_t *rt, slot_t *s, size_t len, CUcontext ctx, bool big,
                        bool counted)
{
    if (big)
        return ensure_big(rt, s, len) && (s->ctx = ctx, true);
    if (s->host && !s->big && s->cap >= len && s->ctx == ctx)
        return true;
    __typeof__(&cuMemHostAlloc) halloc = GA_REAL(rt, GA_ID_cuMemHostAlloc, cuMemHostAlloc);
    free_buffer(rt, detach_buffer(s));
    size_t cap = len < 65536 ? 65536 : len;
    if (counted && atomic_fetch_add(&held_bytes, cap) + cap > budget(rt)) {
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

/* The slot that last held memory just before src (for scan detection). */
static slot_t *predecessor_locked(CUdeviceptr src)
{
    /* Of the windows a scan has left behind, the one reaching furthest: the
     * latest. (The first one found was often an older, smaller window, and
     * the scan's windows then stopped growing after one doubling.) */
    slot_t *best = NULL;
    for (int i = 0; i < N_SLOTS; i++)
        if (slots[i].state != S_EMPTY && slots[i].next_expected &&
            src >= slots[i].base && src <= slots[i].next_expected + 4 * slots[i].len &&
            (!best || slots[i].next_expected > best->next_expected))
            best = &slots[i];
    return best;
}

/* A window being filled: its slot (S_CLAIMED) and where it lies. */
typedef struct fill {
    slot_t *slot;
    CUcontext ctx;
    CUdeviceptr base;
    size_t len, grow;
    uint64_t epoch, work; /* read before the memory was found cacheable */
    bool big;             /* a mirror: a whole allocation (plain host memory) */
    bool exact;           /* a large read's own range (page-locked, counted) */
    CUdeviceptr alloc_base; /* the allocation it lies in */
    size_t alloc_size;
} fill_t;

/* Count a miss in the allocation at base, this generation. */
static seen_t *note_miss_locked(CUdeviceptr base, uint64_t epoch, uint64_t work)
{
    seen_t *e = NULL, *lru = &seen_allocs[0];
    for (int i = 0; i < N_SEEN && !e; i++) {
        if (seen_allocs[i].base == base)
            e = &seen_allocs[i];
        else if (seen_allocs[i].used < lru->used)
            lru = &seen_allocs[i];
    }
    if (!e) {
        e = lru;
        memset(e, 0, sizeof *e);
        e->base = base;
    }
    if (e->epoch != epoch || e->work != work)
        e->epoch = epoch, e->work = work, e->misses = 0;
    e->misses++;
    e->used = ++clock_tick;
    return e;
}

/* Count a miss in allocation r and decide whether its fill is a mirror (the
 * whole allocation: f->big, f->base, f->len). Returns the allocation's misses
 * this generation. */
static unsigned plan_locked(const ga_rt_t *rt, const range_t *r, bool may_mirror, fill_t *f)
{
    size_t unit = window_unit(rt);
    seen_t *e = note_miss_locked(r->base, f->epoch, f->work);
    f->big = !f->exact && may_mirror && rt->cfg.coalesce_mirrors && r->size > unit &&
             e->misses > 2 && worth_mirror(rt, r->size, e->misses);
    if (f->big)
        f->base = r->base, f->len = r->size;
    return e->misses;
}

/* Claim a slot for a window holding [src, src+n), for a fill on the stream
 * whose tracker record is `st` (NULL: a synchronous fill). A fill is matched
 * with its sync by that record, which names the default stream (NULL) as the
 * legacy or the calling thread's per-thread stream; the raw handle cannot: an
 * asynchronous fill on the default stream, how PyTorch's .item() and CuPy read
 * a scalar, was once taken for a synchronous one and never installed. False
 * if the memory may not be cached, no slot is free, or the read does not fit in
 * a window (past the allocation, or wider). */
static bool begin_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, const ga_stream_t *st,
                       unsigned need, fill_t *f)
{
    bool may_mirror = st == NULL; /* an asynchronous fill stays small and pinned */
    range_t range;
    f->exact = need > 0;
    /* Read first: memory shared (IPC) after the check below bumps the epoch,
     * and the window is then not kept. */
    f->epoch = ga_epoch_read(), f->work = ga_work_seq_read();
    f->ctx = ga_current_ctx(rt);
    if (!f->ctx || ga_serving_off() || !cacheable(rt, src, &range))
        return false;
    f->alloc_base = range.base, f->alloc_size = range.size;
    pthread_mutex_lock(&lock);
    unsigned seen = plan_locked(rt, &range, may_mirror, f);
    if (seen < need) { /* not read often enough yet */
        pthread_mutex_unlock(&lock);
        return false;
    }
    /* What window_for needs of the slot before it, copied: window_for runs
     * unlocked, while another thread may refill that slot (its owner writes
     * host and cap unlocked, so only the fields kept under the lock). */
    slot_t *before = predecessor_locked(src), prev_copy = {0};
    const slot_t *prev = NULL;
    if (before) {
        prev_copy.base = before->base, prev_copy.len = before->len;
        prev_copy.next_expected = before->next_expected, prev_copy.grow = before->grow;
        prev = &prev_copy;
    }
    slot_t *s = claim_locked(f->big, f->exact ? n : window_unit(rt), f->ctx);
    /* A large read fills into page-locked memory already there (a column
     * read round after round); making some (about a millisecond for 4 MiB)
     * waits for the allocation's third read in one generation (a program
     * that reads each buffer once or twice must not page-lock memory for it). */
    if (s && f->exact && seen < 3 && !(free_slot_locked(s) && buffer_fits(s, false, n, f->ctx)))
        s = NULL;
    for (int i = 0; s && st && i < N_SLOTS; i++)
        if (in_flight(&slots[i]) && slots[i].fill_st == st)
            s = NULL; /* one asynchronous fill per stream at a time */
    buffer_t stale = {0}; /* the slot's buffer, if pinned in another context */
    if (s) {
        s->state = S_CLAIMED, s->fill_st = st;
        if (s->host && s->ctx != f->ctx) { /* detached here, where ctx_gone sees it */
            stale = detach_buffer(s);
            s->ctx = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    free_buffer(rt, stale);
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
        pthread_mutex_lock(&lock);
        s->state = S_EMPTY;
        pthread_mutex_unlock(&lock);
        return false;
    }
    f->slot = s;
    return true;
}

/* Where a finished or enqueued fill lies and what it was judged by. */
static void record_window_locked(const fill_t *f)
{
    slot_t *s = f->slot;
    s->base = f->base, s->len = f->len, s->epoch = f->epoch, s->work = f->work;
    s->used = ++clock_tick, s->grow = f->grow, s->next_expected = f->base + f->len;
    s->alloc_base = f->alloc_base, s->alloc_size = f->alloc_size;
}

/* ---- the synchronous read ------------------------------------------------------ */

/* Replace the program's read by a window fill at the same stream position.
 * Returns false (nothing done) if the read is not a candidate; otherwise the
 * driver's result in *r, with dst filled on success. */
static bool fill_and_serve_entered(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src,
                                   size_t n, unsigned need, CUresult *r)
{
    fill_t f;
    if (!begin_fill(rt, src, n, NULL, need, &f))
        return false;
    slot_t *s = f.slot;
    bool ok = ensure_host(rt, s, f.len, f.ctx, f.big, f.exact);
    ga_stream_mark_t m = ga_stream_mark(rt, NULL, ga_entries[id].per_thread);
    __typeof__(&cuMemcpyDtoH_v2) copy = GA_REAL(rt, id, cuMemcpyDtoH_v2);
    uint64_t t0 = ga_now_ns();
    *r = ok ? copy(s->host, f.base, f.len) : CUDA_ERROR_OUT_OF_MEMORY;
    if (*r == CUDA_SUCCESS) {
        measured(f.len, ga_now_ns() - t0, window_unit(rt));
        ga_stream_mark_idle(m); /* a synchronous copy: the default stream is done */
        ga_pcopy(dst, (const char *)s->host + (src - f.base), n); /* the slot is claimed */
        atomic_fetch_add_explicit(&fills, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&fill_bytes, f.len, memory_order_relaxed);
        if (f.big || f.exact) {
            atomic_fetch_add_explicit(&mirrors, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&mirror_bytes, f.len, memory_order_relaxed);
        }
    }
    bool keep = *r == CUDA_SUCCESS && ga_ctx_settle(rt, f.ctx);
    pthread_mutex_lock(&lock);
    keep = keep && f.epoch == ga_epoch_read() && f.work == ga_work_seq_read() &&
           !ga_serving_off();
    record_window_locked(&f);
    settle_slot_locked(s, keep);
    if (keep && f.big) /* the windows it covers hold nothing more: free their slots */
        for (int i = 0; i < N_SLOTS; i++)
            if (&slots[i] != s && slots[i].state == S_VALID && slots[i].base >= f.base &&
                slots[i].base + slots[i].len <= f.base + f.len)
                slots[i].state = S_EMPTY;
    pthread_mutex_unlock(&lock);
    if (f.big && !keep)
        ga_debug("coalesce: a %zu-byte mirror was not kept (copy %d)", f.len, (int)*r);
    if (*r != CUDA_SUCCESS && ok)
        return false; /* let the program's own copy produce the driver's error */
    return *r == CUDA_SUCCESS;
    /* (!ok: no buffer, over budget for a mirror: the program's copy goes) */
}

static bool fill_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                           unsigned need, CUresult *r)
{
    if (!ga_own_calls_enter())
        return false;
    bool done = fill_and_serve_entered(rt, id, dst, src, n, need, r);
    ga_own_calls_leave();
    return done;
}

/* ---- gathers: a query's reads in one round trip -------------------------------- */

/* Are the predicted reads' allocations still the ones learned, cacheable and
 * on the current device? Asked once per epoch: every call that can free or
 * unmap memory moves the epoch, so within it they stay. (The gather kernel
 * reads them: an unmapped address would be a fault in the program's context.) */
static bool predictions_live(const ga_rt_t *rt, const ga_pat_read_t *pred, unsigned np)
{
    uint64_t epoch = ga_epoch_read();
    pthread_mutex_lock(&lock);
    bool done = checked && checked_epoch == epoch;
    pthread_mutex_unlock(&lock);
    if (done)
        return true;
    int dev = ga_current_device(rt);
    CUdeviceptr asked[N_RANGES]; /* allocations asked about already (a query reads tens) */
    unsigned n_asked = 0;
    for (unsigned k = 0; k < np; k++) {
        bool seen = k && pred[k - 1].base == pred[k].base;
        for (unsigned j = 0; j < n_asked && !seen; j++)
            seen = asked[j] == pred[k].base;
        range_t rg;
        if (!seen && (!cacheable(rt, pred[k].base, &rg) || rg.base != pred[k].base ||
                      rg.size != pred[k].alloc_size || rg.device != dev || dev < 0))
            return false;
        if (!seen && n_asked < N_RANGES)
            asked[n_asked++] = pred[k].base;
    }
    pthread_mutex_lock(&lock);
    checked = true, checked_epoch = epoch;
    pthread_mutex_unlock(&lock);
    return true;
}

/* Keep what a gather fetched (if nothing moved meanwhile), judging the gather
 * before it: a pattern whose predictions keep going unread is forgotten. */
static void keep_gathered_locked(const ga_gather_req_t *req, unsigned np,
                                 const unsigned char *out, bool keep, uint64_t epoch,
                                 uint64_t work)
{
    unsigned used = 0;
    for (unsigned k = 1; k < gat_n; k++)
        used += gat[k].used;
    if (gat_n > 1) {
        poor = 2 * used < gat_n - 1 ? poor + 1 : 0;
        if (poor >= POOR_LIMIT) {
            ga_debug("coalesce: a learned read pattern kept missing; forgotten");
            ga_pat_forget(&pattern);
            atomic_fetch_add_explicit(&forgotten, 1, memory_order_relaxed);
            poor = 0, checked = false;
        }
    }
    gat_n = 0;
    if (!keep)
        return;
    for (unsigned k = 0; k < np; k++) {
        gat[k].src = req[k].src, gat[k].n = req[k].n, gat[k].used = false;
        memcpy(gat[k].bytes, out + (size_t)k * GA_GATHER_CELL, GA_GATHER_CELL);
    }
    gat_n = np, gat_next = 1, gat_epoch = epoch, gat_work = work; /* read 0 is served */
    gat_index_locked();
}

static bool gather_entered(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                           const ga_pat_read_t *pred, unsigned np, CUresult *r)
{
    uint64_t epoch = ga_epoch_read(), work = ga_work_seq_read();
    CUcontext ctx = ga_current_ctx(rt);
    if (!ctx || ga_serving_off())
        return false;
    if (!predictions_live(rt, pred, np)) { /* freed, moved or elsewhere: learn anew */
        atomic_fetch_add_explicit(&forgotten, 1, memory_order_relaxed);
        pthread_mutex_lock(&lock);
        ga_pat_forget(&pattern);
        gat_n = 0;
        pthread_mutex_unlock(&lock);
        return false;
    }
    ga_gather_req_t *req = area.req;
    unsigned char *out = area.out;
    for (unsigned k = 0; k < np; k++)
        req[k].src = pred[k].base + pred[k].off, req[k].n = pred[k].n;
    ga_stream_mark_t m = ga_stream_mark(rt, NULL, ga_entries[id].per_thread);
    CUresult res = ga_gather_run(rt, id, ctx, req, np, out);
    if (res == CUDA_ERROR_NOT_SUPPORTED)
        atomic_store(&gathers_off, true);
    if (res != CUDA_SUCCESS)
        return false; /* the program's own copy goes, and gets the driver's answer */
    ga_stream_mark_idle(m); /* everything before the gather on that stream finished */
    memcpy(dst, out + (src - req[0].src), n);
    *r = CUDA_SUCCESS;
    atomic_fetch_add_explicit(&gathers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&gathered_reads, np, memory_order_relaxed);
    bool keep = ga_ctx_settle(rt, ctx);
    pthread_mutex_lock(&lock);
    keep = keep && epoch == ga_epoch_read() && work == ga_work_seq_read() && !ga_serving_off();
    keep_gathered_locked(req, np, out, keep, epoch, work);
    pthread_mutex_unlock(&lock);
    return true;
}

/* The same for a read not noted yet: its allocation asked of the driver. */
static void note_new(const ga_rt_t *rt, CUdeviceptr src, size_t n)
{
    range_t rg;
    if (!rt->cfg.coalesce_gather || n > GA_GATHER_CELL || !cacheable(rt, src, &rg))
        return;
    pthread_mutex_lock(&lock);
    add_range_locked(rg.base, rg.size);
    ga_pat_note(&pattern, &(ga_pat_read_t){rg.base, rg.size, src - rg.base, (uint32_t)n});
    pthread_mutex_unlock(&lock);
}

/* A synchronous read that missed: if it is where a learned query begins,
 * fetch the whole query's reads with one gather and serve this one. */
static bool gather_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src,
                             size_t n, bool noted, CUresult *r)
{
    if (!noted || !rt->cfg.coalesce_gather || n > GA_GATHER_CELL ||
        atomic_load_explicit(&gathers_off, memory_order_relaxed))
        return false;
    /* One gather at a time; a read in another thread meanwhile goes its own way. */
    if (pthread_mutex_trylock(&area_lock))
        return false;
    unsigned np = 0;
    pthread_mutex_lock(&lock);
    /* Only where a query begins: the learner, told of this read, found it
     * the first of a period (another read in the anchor's allocation, such as
     * a later column of one buffer, would predict the wrong query). */
    const ga_pat_read_t *a = &pattern.slot[0];
    if (ga_pat_at_anchor(&pattern) && src >= a->base && src + n <= a->base + a->alloc_size) {
        ga_pat_read_t probe = {a->base, a->alloc_size, src - a->base, (uint32_t)n};
        np = ga_pat_predict(&pattern, &probe, area.pred, GA_GATHER_MAX);
    }
    pthread_mutex_unlock(&lock);
    bool done = false;
    if (np >= 2 && ga_own_calls_enter()) {
        done = gather_entered(rt, id, dst, src, n, area.pred, np, r);
        ga_own_calls_leave();
    }
    pthread_mutex_unlock(&area_lock);
    return done;
}

/* A read the library may serve itself: into host memory, and not under
 * capture (a captured copy must reach the graph) or after a fault. Small ones
 * (up to GPUACCEL_COALESCE_MAX) fill windows; larger ones are served from a
 * window or mirror that holds them, and mirrored when read twice. */
static bool servable(const ga_rt_t *rt, const void *dst, size_t n)
{
    return rt->cfg.coalesce && dst && n && !ga_serving_off() && ga_host_memory(rt, dst, n);
}

/* ---- the asynchronous read and its stream sync -------------------------------- */

/* Is the stream the program named idle right now (by the tracker)? */
static bool stream_idle(const ga_rt_t *rt, CUstream h, bool pt)
{
    ga_stream_t *st = ga_stream_get(rt, h, pt);
    return st && !ga_stream_busy(st);
}

/* After the program's own async copy: enqueue a window fill behind it on the
 * same stream, installed when the program synchronizes that stream. */
static void start_async_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, CUstream h, bool pt,
                             ga_id_t id)
{
    fill_t f;
    ga_stream_t *st = ga_stream_get(rt, h, pt);
    if (!st || !ga_own_calls_enter())
        return;
    if (!begin_fill(rt, src, n, st, 0, &f)) {
        ga_own_calls_leave();
        return;
    }
    slot_t *s = f.slot;
    __typeof__(&cuMemcpyDtoHAsync_v2) copy = GA_REAL(rt, id, cuMemcpyDtoHAsync_v2);
    /* The program's own copy is already noted as work (f.work was read after
     * it): the window is valid if nothing else is enqueued anywhere until the
     * stream sync. */
    bool ok = ensure_host(rt, s, f.len, f.ctx, false, false) &&
              copy(s->host, f.base, f.len, h) == CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (ok) { /* from now on a sync of this stream that begins may install it */
        atomic_store(&any_filling, true);
        s->state = S_FILLING, s->enqueued = ga_order_next();
        s->fill_done = ga_stream_note_own(st);
        record_window_locked(&f);
        atomic_fetch_add_explicit(&fills, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&fill_bytes, f.len, memory_order_relaxed);
    } else {
        s->state = S_EMPTY;
    }
    pthread_mutex_unlock(&lock);
    ga_own_calls_leave();
}

/* Did this sync (of stream st, or with st NULL of the whole context ctx,
 * begun at `began`) wait for the fill in s? A context sync covers only its own
 * context's streams: another context's fill may still be landing. */
static bool covered_locked(const slot_t *s, const ga_stream_t *st, CUcontext ctx,
                           uint64_t began)
{
    return s->state == S_FILLING && s->enqueued <= began &&
           (st ? s->fill_st == st : s->ctx == ctx);
}

/* After a sync: the fills it covered have completed (their copies were
 * enqueued before it began, in another thread maybe); keep each only if
 * nothing was issued since and everything is idle. */
static void install_covered(const ga_rt_t *rt, const ga_stream_t *st, CUcontext ctx,
                            uint64_t began)
{
    bool any = false, filling = false;
    if (!atomic_load(&any_filling))
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N_SLOTS; i++) {
        any |= covered_locked(&slots[i], st, ctx, began);
        filling |= slots[i].state == S_FILLING;
    }
    if (!filling)
        atomic_store(&any_filling, false);
    pthread_mutex_unlock(&lock);
    if (!any)
        return;
    CUcontext cur = ctx ? ctx : ga_current_ctx(rt);
    bool settled = cur && ga_ctx_settle(rt, cur);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &slots[i];
        if (!covered_locked(s, st, ctx, began))
            continue;
        bool keep = settled && s->epoch == ga_epoch_read() && s->work == ga_work_seq_read() &&
                    !ga_serving_off();
        settle_slot_locked(s, keep);
        s->fill_st = NULL;
    }
    pthread_mutex_unlock(&lock);
}

/* Fills whose stream the tracker knows finished past them, whoever waited:
 * a synchronization lazy_sync deferred and paid at a later call, or a fence,
 * marks the stream idle without a sync event here. Kept under the same rule
 * as at a sync (nothing issued since, the context idle); asks no driver. */
static void install_done(void)
{
    if (!atomic_load(&any_filling))
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &slots[i];
        if (s->state != S_FILLING || !s->fill_st || !ga_stream_done(s->fill_st, s->fill_done))
            continue;
        bool keep = s->epoch == ga_epoch_read() && s->work == ga_work_seq_read() &&
                    ga_ctx_idle(s->ctx) && !ga_serving_off();
        settle_slot_locked(s, keep);
        s->fill_st = NULL;
    }
    pthread_mutex_unlock(&lock);
}

/* A wait succeeded: a stream's fills are found by its tracker record, a
 * context's by the context. */
static void co_synced(const ga_rt_t *rt, CUstream h, bool pt, CUcontext ctx, uint64_t began)
{
    const ga_stream_t *st = h == GA_NOSTREAM ? NULL : ga_stream_get(rt, h, pt);
    if (st)
        install_covered(rt, st, NULL, began);
    else if (h == GA_NOSTREAM && ctx)
        install_covered(rt, NULL, ctx, began);
}

/* A synchronization of a stream (or of the context) whose context has nothing
 * in flight: a read served from a window leaves the program's stream sync of
 * .item() nothing to wait for, yet the driver's own answer to it costs about as
 * much as the served read did (bench row driver-sync-idle). The tracker knows
 * the context idle only after successful waits for everything counted on its
 * streams, so no error can be pending there that the driver would report;
 * a handle it cannot vouch for, a capture or a sticky error goes to the driver. */
static bool co_sync(const ga_rt_t *rt, CUstream h, bool pt, CUresult *r)
{
    if (!rt->cfg.coalesce || !rt->track || ga_serving_off() || !ga_stream_ctx_idle(rt, h, pt))
        return false;
    atomic_fetch_add_explicit(&idle_syncs, 1, memory_order_relaxed);
    *r = CUDA_SUCCESS;
    return true;
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
 * page-locked memory and from there to the program (on an H100 host, 25 us
 * for 256 KiB against the driver's 42 us straight to pageable memory), kept
 * for the next read of it under the windows' rules. Up to LARGE_FIRST bytes
 * that pays at once; larger reads wait for the second read of their
 * allocation in one generation (a 4 MiB fill and one thread's copy cost more
 * than the driver's copy: 462 us against 358). Either fills only into
 * page-locked memory a free slot has, until the third read (begin_fill). */
enum { LARGE_FIRST = 1 << 20, LARGE_SHARE = 8, LARGE_MAX = 4 << 20 };
/* Above LARGE_MAX a read is left alone: a copy that large runs near the
 * link's bandwidth through staging's threads (or the driver's own), while a
 * window serves it with one thread's memcpy after a fill that copies it twice.
 * Measured on an H200 (stwo-gpu's commitment at 2^20, whose decommitment
 * copies whole 8 MiB columns and 32-64 MiB Merkle layers again and again):
 * coalescing alone took 0.65x native's time per proof. */
static bool large_fill(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                       CUresult *r)
{
    if (n > LARGE_MAX || n > budget(rt) / LARGE_SHARE)
        return false;
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    return fill_and_serve(rt, id, dst, src, n, n <= LARGE_FIRST ? 1 : 2, r);
}

/* The last read offered on this thread, and whether it was one to count (a
 * small device-to-host read into host memory): read_issued starts an async
 * fill only for such a read. */
static __thread struct {
    CUdeviceptr src;
    size_t n;
    bool candidate;
} offered __attribute__((tls_model("initial-exec")));

static bool co_read(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                    CUstream s, CUresult *r)
{
    bool unified;
    ga_id_t as;
    read_kind_t kind = read_kind(id, &unified, &as);
    offered.candidate = false;
    if (!servable(rt, dst, n))
        return false;
    install_done();
    /* Asynchronous: served only when the stream has nothing queued (the copy
     * would have run at once and completed before the program's next sync). */
    bool idle = kind == R_SYNC || stream_idle(rt, s, ga_entries[id].per_thread);
    bool noted = false, note = kind == R_SYNC && rt->cfg.coalesce_gather && n <= GA_GATHER_CELL;
    bool gather = false;
    size_t largest = window_unit(rt) > rt->cfg.coalesce_max ? window_unit(rt) : rt->cfg.coalesce_max;
    if (idle &&
        (n <= largest ? serve(dst, src, n, note, &noted, &gather) : serve_large(dst, src, n))) {
        CUresult g; /* a gather rewrites dst with the same bytes: nothing ran since */
        if (gather)
            gather_and_serve(rt, as, dst, src, n, true, &g);
        *r = CUDA_SUCCESS;
        return true;
    }
    if (unified && !src_is_device(rt, src))
        return false; /* host to host or to device: not a read */
    if (n > rt->cfg.coalesce_max) /* large: served from what holds it, or the driver's */
        return kind == R_SYNC && n > largest && large_fill(rt, as, dst, src, n, r);
    offered.src = src, offered.n = n, offered.candidate = true;
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&period_misses, 1, memory_order_relaxed);
    /* Synchronous: where a learned query begins, its reads gathered; else
     * replaced by a window fill at the same stream position. */
    if (kind == R_SYNC && gather_and_serve(rt, as, dst, src, n, noted, r))
        return true;
    if (note && !noted)
        note_new(rt, src, n);
    return kind == R_SYNC && worth_filling() && fill_and_serve(rt, as, dst, src, n, 0, r);
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
        start_async_fill(rt, src, n, s, ga_entries[id].per_thread, as);
}

static void co_shared(const ga_rt_t *rt, CUdeviceptr base, bool exported)
{
    (void)rt, (void)exported;
    ga_coalesce_note_shared(base);
}

/* ---- lifecycle ----------------------------------------------------------------- */

static void co_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    /* Its pinned buffers and its fills in flight went with the context. A
     * claimed slot is left to its filler, whose buffer is of the filler's
     * current context (begin_fill detached any other): if that is the one
     * destroyed, the program destroyed a context another thread was using. */
    buffer_t big[N_SLOTS];
    unsigned n_big = 0;
    for (int i = 0; i < N_SLOTS; i++)
        if (slots[i].state != S_CLAIMED && slots[i].ctx == ctx) {
            if (slots[i].big) /* plain host memory: ours to free */
                big[n_big++] = detach_buffer(&slots[i]);
            memset(&slots[i], 0, sizeof slots[i]);
        }
    checked = false; /* its allocations are gone: the pattern's are asked again */
    pthread_mutex_unlock(&lock);
    ga_gather_ctx_gone(ctx);
    for (unsigned i = 0; i < n_big; i++)
        free_buffer(rt, big[i]);
}

static void co_stream_gone(const ga_rt_t *rt, CUstream h)
{
    (void)rt;
    const ga_stream_t *st = ga_stream_lookup(h);
    if (!st)
        return;
    pthread_mutex_lock(&lock);
    /* Its fills become orphans, installed by none but a sync of the whole
     * context (a stream created later may reuse the record, and its syncs do
     * not wait for this stream's copies). */
    for (int i = 0; i < N_SLOTS; i++)
        if (in_flight(&slots[i]) && slots[i].fill_st == st)
            slots[i].fill_st = NULL;
    pthread_mutex_unlock(&lock);
}

void ga_coalesce_stats(ga_coalesce_stats_t *s)
{
    s->hits = atomic_load(&hits);
    s->misses = atomic_load(&misses);
    s->fills = atomic_load(&fills);
    s->fill_bytes = atomic_load(&fill_bytes);
    s->mirrors = atomic_load(&mirrors);
    s->mirror_bytes = atomic_load(&mirror_bytes);
    s->gathers = atomic_load(&gathers);
    s->gathered = atomic_load(&gathered_reads);
    s->gather_hits = atomic_load(&gather_hits);
    s->forgotten = atomic_load(&forgotten);
    s->idle_syncs = atomic_load(&idle_syncs);
    pthread_mutex_lock(&lock);
    s->learn_tries = pattern.attempts, s->learned = pattern.successes, s->fits = pattern.fits_total;
    s->forgotten += pattern.lost;
    pthread_mutex_unlock(&lock);
}

void ga_coalesce_set_model(uint64_t rtt, uint64_t bw, bool frozen)
{
    atomic_store(&rtt_ns, rtt);
    atomic_store(&bw_bytes_per_us, bw);
    atomic_store(&model_frozen, frozen);
}

static void co_report(void)
{
    ga_coalesce_stats_t s;
    ga_coalesce_stats(&s);
    if (s.hits + s.misses + s.mirrors)
        ga_info("coalesce: hits=%llu misses=%llu fills=%llu fill_bytes=%llu mirrors=%llu "
                "mirror_bytes=%llu gathers=%llu gathered=%llu gather_hits=%llu learned=%llu/%llu "
                "fits=%llu forgotten=%llu idle_syncs=%llu",
                (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.fills, (unsigned long long)s.fill_bytes,
                (unsigned long long)s.mirrors, (unsigned long long)s.mirror_bytes,
                (unsigned long long)s.gathers, (unsigned long long)s.gathered,
                (unsigned long long)s.gather_hits, (unsigned long long)s.learned,
                (unsigned long long)s.learn_tries, (unsigned long long)s.fits,
                (unsigned long long)s.forgotten, (unsigned long long)s.idle_syncs);
}

static void fork_child(void)
{
    memset(slots, 0, sizeof slots); /* pinned buffers belong to the parent's CUDA */
    memset(seen_allocs, 0, sizeof seen_allocs);
    atomic_store(&held_bytes, 0); /* the mirrors' memory is left (a child forgets) */
    shared = NULL;
    atomic_store(&hits, 0);
    atomic_store(&misses, 0);
    atomic_store(&fills, 0);
    atomic_store(&fill_bytes, 0);
    atomic_store(&gathers, 0);
    atomic_store(&gathered_reads, 0);
    atomic_store(&gather_hits, 0);
    atomic_store(&forgotten, 0);
    atomic_store(&rest_len, REST_MISSES);
    memset(&pattern, 0, sizeof pattern);
    memset(ranges, 0, sizeof ranges);
    gat_n = 0, gat_next = 0, checked = false, poor = 0;
    valid_epoch = valid_work = 0;
    atomic_store(&gathers_off, false);
    pthread_mutex_init(&area_lock, NULL); /* a gather in another thread at fork held it */
    ga_gather_child();
    ga_pcopy_fork_child();
    atomic_store(&any_filling, false);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

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
    .shared = co_shared,
    .synced = co_synced,
    .sync = co_sync,
    .stream_gone = co_stream_gone,
    .ctx_gone = co_ctx_gone,
};
