/* internal.h - coalesce's private boundary: what its files share with each
 * other, and nothing outside features/coalesce/ may include (tools/check-layers
 * fails any other folder that does, or that calls one of these functions).
 *
 * It exposes: the window slot (slot_t), its states, the questions every file
 * asks of one and the window's size (inline); the one lock and the slot table
 * it guards; the counts the exit report prints; the records a fill passes
 * between files (range_t, buffer_t, fill_t); and the functions the files call
 * in each other, grouped by the file that defines them. Each file keeps the
 * rest of its state static: the allocations reads missed in and the
 * shared-memory set (table.c), the cost model and the bytes held (fill.c),
 * whether any fill is in flight (async.c), the learner, the allocations its
 * reads fell in and the gathered reads (query.c), the back-off (coalesce.c).
 * The public part is coalesce.h.
 * Calls go one way: table.c calls none of the others; fill.c calls table.c;
 * async.c calls both, query.c fill.c; coalesce.c (the handlers) calls them all.
 * Model: the pool's features/pool/internal.h. */
#ifndef GA_COALESCE_INTERNAL_H
#define GA_COALESCE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "features/coalesce/coalesce.h"
#include "tracking/streams.h"

enum { N_SLOTS = 96 };

/* A large read's own copy (larger than a window): up to GA_CO_PINNED_MAX in
 * page-locked memory; above it, up to GA_CO_PLAIN_MAX, in plain host memory
 * (page-locking MiBs costs more than it saves); larger reads are left alone.
 * Why these sizes: coalesce.c, large_fill. */
enum { GA_CO_PINNED_MAX = 1 << 20, GA_CO_PLAIN_MAX = 16 << 20 };

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
    bool served;          /* a large read was served from what it holds since its fill */
    unsigned readers;     /* threads copying out of host unlocked: not to be claimed */
    CUdeviceptr alloc_base; /* the allocation the window lies in (for the learner) */
    size_t alloc_size;
} slot_t;

/* The one lock (`lock` in the files' comments). It guards every slot's
 * fields (but a claimed slot's host buffer, which its filler replaces
 * unlocked), the LRU clock, the allocations reads missed in and the
 * shared-memory set (table.c); the learner, the allocations its reads fell in
 * and the gathered reads (query.c). The counts, the cost model, the bytes held,
 * the back-off and whether any fill is in flight are atomics, under no lock.
 * Never held across a driver call. Lock order: query.c's area_lock, then this
 * one. Defined in table.c, with the slots. */
extern pthread_mutex_t ga_co_lock;
extern slot_t ga_co_slots[N_SLOTS]; /* guarded by lock */

/* The counts the exit report prints (ga_coalesce_stats), each bumped where it
 * happens. Defined in coalesce.c. */
typedef struct ga_co_counts {
    _Atomic uint64_t hits, misses, fills, fill_bytes, mirrors, mirror_bytes;
    _Atomic uint64_t gathers, gathered_reads, gather_hits, forgotten;
    _Atomic uint64_t idle_syncs; /* synchronizations answered: nothing was in flight */
    _Atomic uint64_t kept; /* large copies not made: the slot's was read more often */
} ga_co_counts_t;
extern ga_co_counts_t ga_co_counts;

/* ---- a slot's state (under lock; inline: every file asks) ---------------------- */

static inline bool slot_valid(const slot_t *s)
{
    return s->state == S_VALID && s->epoch == ga_epoch_read() && s->work == ga_work_seq_read();
}

/* Claimed by a filler, or its copy in flight: no one else may take it. */
static inline bool in_flight(const slot_t *s)
{
    return s->state == S_CLAIMED || s->state == S_FILLING;
}

/* Holds nothing anyone may read now (empty, or its generation passed). */
static inline bool free_slot_locked(const slot_t *s)
{
    return s->state == S_EMPTY || !slot_valid(s);
}

/* Its buffer takes a fill of len bytes of this kind in ctx as it is. */
static inline bool buffer_fits(const slot_t *s, bool big, size_t len, CUcontext ctx)
{
    return s->host && s->big == big && s->cap >= len && s->ctx == ctx;
}

/* The window's size (GPUACCEL_COALESCE_WINDOW): what a fill copies around a
 * small read, and the largest read served from a window that holds it. */
static inline size_t window_unit(const ga_rt_t *rt)
{
    return rt->cfg.coalesce_window ? rt->cfg.coalesce_window : 65536;
}

/* An allocation, as the driver describes it (ga_co_cacheable). */
typedef struct range {
    CUdeviceptr base; /* of the allocation */
    size_t size;
    int device;       /* its device's ordinal */
} range_t;

/* A slot's host buffer, detached from it. */
typedef struct buffer {
    void *host;
    size_t cap;
    bool big, counted;
} buffer_t;

/* A window being filled: its slot (S_CLAIMED) and where it lies. */
typedef struct fill {
    slot_t *slot;
    CUcontext ctx;
    CUdeviceptr base;
    size_t len, grow;
    uint64_t epoch, work; /* read before the memory was found cacheable */
    bool big;             /* a mirror: a whole allocation (plain host memory) */
    bool exact;           /* a large read's own range (counted against the budget) */
    bool plain;           /* exact, in plain host memory (above GA_CO_PINNED_MAX) */
    CUdeviceptr alloc_base; /* the allocation it lies in */
    size_t alloc_size;
} fill_t;

/* ---- table.c: the window table, the misses per allocation, the shared set ------ */

void ga_co_settle_slot_locked(slot_t *s, bool keep);
slot_t *ga_co_holding_locked(CUdeviceptr src, size_t n);
slot_t *ga_co_claim_locked(bool big, size_t len, CUcontext ctx);
slot_t *ga_co_own_buffer_locked(CUdeviceptr alloc_base, size_t len);
bool ga_co_is_shared_locked(CUdeviceptr base);
slot_t *ga_co_predecessor_locked(CUdeviceptr src);
unsigned ga_co_note_miss_locked(CUdeviceptr base, uint64_t epoch, uint64_t work);
/* A read served in the allocation at base; how often it is read lately. */
void ga_co_note_read_locked(CUdeviceptr base);
unsigned ga_co_reads_locked(CUdeviceptr base);
void ga_co_record_window_locked(const fill_t *f);
void ga_co_table_fork_child(void);

/* ---- fill.c: deciding and filling windows, the synchronous read ---------------- */

bool ga_co_cacheable(const ga_rt_t *rt, CUdeviceptr src, range_t *out);
void ga_co_free_buffer(const ga_rt_t *rt, buffer_t b);
void ga_co_forget_buffer(const ga_rt_t *rt, buffer_t b);
uint64_t ga_co_held_bytes(void);
buffer_t ga_co_detach_buffer(slot_t *s);
uint64_t ga_co_budget(const ga_rt_t *rt);
bool ga_co_ensure_host(const ga_rt_t *rt, slot_t *s, size_t len, CUcontext ctx, bool big,
                       bool counted);
bool ga_co_begin_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, const ga_stream_t *st,
                      unsigned need, fill_t *f);
bool ga_co_fill_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                          unsigned need, CUresult *r);
bool ga_co_idle_before_sync(const ga_rt_t *rt, CUcontext ctx, ga_id_t id);
bool ga_co_begin_keep(const ga_rt_t *rt, ga_id_t id, CUdeviceptr src, size_t n, fill_t *f,
                      bool *before);
void ga_co_keep_from(const ga_rt_t *rt, fill_t *f, const void *from, bool before);
void ga_co_fill_fork_child(void);

/* ---- async.c: the asynchronous read, its fills, the sync answered -------------- */

bool ga_co_stream_idle(const ga_rt_t *rt, CUstream h, bool pt);
void ga_co_start_async_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, CUstream h, bool pt,
                            ga_id_t id);
void ga_co_install_done(void);
void ga_co_synced(const ga_rt_t *rt, CUstream h, bool pt, CUcontext ctx, uint64_t began);
bool ga_co_sync(const ga_rt_t *rt, CUstream h, bool pt, CUresult *r);
void ga_co_async_fork_child(void);

/* ---- query.c: the learner told of reads, gathers and the reads they fetched ---- */

bool ga_co_serve_gathered_locked(void *dst, CUdeviceptr src, size_t n);
bool ga_co_note_known_locked(CUdeviceptr src, size_t n);
void ga_co_note_in_locked(CUdeviceptr base, size_t size, CUdeviceptr src, size_t n);
bool ga_co_at_anchor_locked(void);
void ga_co_note_new(const ga_rt_t *rt, CUdeviceptr src, size_t n);
bool ga_co_gather_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src,
                            size_t n, bool noted, CUresult *r);
void ga_co_query_ctx_gone_locked(void);
void ga_co_learner_stats(ga_coalesce_stats_t *s);
void ga_co_query_fork_child(void);

#endif
