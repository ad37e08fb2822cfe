/* table.c - coalesce's window table: the slots that hold windows, mirrors
 * and large reads' copies, looked up for a read, claimed for a fill (an empty
 * one, else the least recently used, of the kind and size the fill needs) and
 * settled when the fill ends; with them the allocations reads missed in (the
 * mirror decision counts them, and how often each is read decides which of
 * two large copies the table keeps) and the memory another process may write
 * (the shared-memory set, never cached).
 *
 * Owns: `lock` (ga_co_lock) and the slots it guards (ga_co_slots), the LRU
 * clock, the newest generation any window was made valid in, the allocations
 * reads missed in and the shared-memory set, all under `lock`.
 * Must never: call the driver (all of it runs under `lock`); offer a read a
 * window whose epoch or work sequence moved. */
#define _GNU_SOURCE
#include "features/coalesce/internal.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* The allocations reads touch, by a hash of their base (direct-mapped, an
 * entry replaced when another base lands on it): their misses this
 * generation (epoch and work sequence) and how often they are read (hits and
 * misses, halved every AGE_EVERY reads: recent reads count most). A table
 * kept by least recent use lost every count in a cyclic pass over more
 * allocations than it held (64 then): stwo's decommitment reads hundreds of
 * columns in turn, and none reached the third miss a large copy waits for.
 * 1024 entries cost 40 KiB. */
enum { N_SEEN = 1024, AGE_EVERY = 8 * N_SEEN };

typedef struct seen {
    CUdeviceptr base;
    uint64_t epoch, work;
    unsigned misses, reads;
} seen_t;

typedef struct shared_range {
    CUdeviceptr base;
    UT_hash_handle hh;
} shared_range_t;

pthread_mutex_t ga_co_lock = PTHREAD_MUTEX_INITIALIZER;
slot_t ga_co_slots[N_SLOTS];       /* guarded by lock */
static shared_range_t *shared;     /* guarded by lock: IPC exported or imported */
static uint64_t clock_tick;        /* guarded by lock: the slots' LRU */
static seen_t seen_allocs[N_SEEN]; /* guarded by lock */
static unsigned reads_since_aging; /* guarded by lock */

/* The newest epoch and work sequence any window was made valid in: a window
 * is valid only while both are still current, and both only grow, so when
 * either has moved past these no window is valid and none need be looked at
 * (a query phase whose reads gathers serve makes no windows: its reads skip
 * the table). */
static uint64_t valid_epoch, valid_work; /* guarded by lock */

/* ---- the window table (under lock) ------------------------------------------- */

/* A filled window's end: kept (valid), or emptied. */
void ga_co_settle_slot_locked(slot_t *s, bool keep)
{
    s->state = keep ? S_VALID : S_EMPTY;
    if (keep && s->epoch > valid_epoch)
        valid_epoch = s->epoch;
    if (keep && s->work > valid_work)
        valid_work = s->work;
}

/* The valid window or mirror holding [src, src+n), or NULL; marked used. */
slot_t *ga_co_holding_locked(CUdeviceptr src, size_t n)
{
    if (valid_epoch != ga_epoch_read() || valid_work != ga_work_seq_read())
        return NULL;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        /* (a stale one is passed: a mirror made since may hold the range) */
        if (s->state == S_VALID && src >= s->base && src + n <= s->base + s->len &&
            slot_valid(s)) {
            s->used = ++clock_tick;
            if (s->big || s->counted) /* a large copy or mirror: what admission weighs */
                ga_co_note_read_locked(s->alloc_base);
            return s;
        }
    }
    return NULL;
}

/* A slot to fill: an empty one, else the least recently used valid one,
 * preferring a slot whose buffer is of the kind the fill needs (a mirror's
 * plain memory, a window's pinned memory: either costs to make again), and
 * of that kind one large enough already (a column read whole each round
 * finds its buffer of the round before, not one it must free and page-lock
 * anew). A slot being copied out of by a reader is never taken either. A slot
 * claimed or being filled is never taken (its filler may be replacing its
 * buffer, or a copy into its memory may be in flight). */
slot_t *ga_co_claim_locked(bool big, size_t len, CUcontext ctx)
{
    slot_t *best = NULL;
    int best_score = -1;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (in_flight(s) || s->readers)
            continue;
        bool kind = !s->host || s->big == big;
        int score = free_slot_locked(s) * 4 + buffer_fits(s, big, len, ctx) * 2 + kind;
        if (score > best_score || (score == best_score && s->used < best->used))
            best = s, best_score = score;
    }
    return best;
}

/* A slot free to fill whose plain buffer takes len bytes and last held a
 * copy of the allocation at alloc_base that a read was served from: the copy
 * of the round before of a column read whole round after round (its
 * allocation rewritten between). A large read in plain memory fills into it
 * at once, not only at the allocation's fourth read (fill.c); a copy never
 * read again (a buffer read once a generation since) is not made again so. */
slot_t *ga_co_own_buffer_locked(CUdeviceptr alloc_base, size_t len)
{
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (!in_flight(s) && !s->readers && free_slot_locked(s) && s->host && s->big &&
            s->served && s->cap >= len && s->alloc_base == alloc_base && alloc_base)
            return s;
    }
    return NULL;
}

/* The slot that last held memory just before src (for scan detection). */
slot_t *ga_co_predecessor_locked(CUdeviceptr src)
{
    /* Of the windows a scan has left behind, the one reaching furthest: the
     * latest. (The first one found was often an older, smaller window, and
     * the scan's windows then stopped growing after one doubling.) */
    slot_t *best = NULL;
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (s->state != S_EMPTY && s->next_expected && src >= s->base &&
            src <= s->next_expected + 4 * s->len &&
            (!best || s->next_expected > best->next_expected))
            best = s;
    }
    return best;
}

static seen_t *seen_of(CUdeviceptr base)
{
    uint64_t h = (uint64_t)base * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
    return &seen_allocs[h >> 54];                          /* the top 10 bits: N_SEEN */
}
_Static_assert(N_SEEN == 1 << 10, "seen_of takes the top 10 bits of the hash");

/* One more read of the allocation at base (its entry made if need be). */
static seen_t *count_read_locked(CUdeviceptr base)
{
    seen_t *e = seen_of(base);
    if (e->base != base)
        memset(e, 0, sizeof *e), e->base = base;
    e->reads++;
    if (++reads_since_aging >= AGE_EVERY) {
        reads_since_aging = 0;
        for (int i = 0; i < N_SEEN; i++)
            seen_allocs[i].reads /= 2;
    }
    return e;
}

void ga_co_note_read_locked(CUdeviceptr base)
{
    if (base)
        count_read_locked(base);
}

unsigned ga_co_reads_locked(CUdeviceptr base)
{
    const seen_t *e = seen_of(base);
    return base && e->base == base ? e->reads : 0;
}

/* Count a miss in the allocation at base, this generation; returns its misses
 * this generation. */
unsigned ga_co_note_miss_locked(CUdeviceptr base, uint64_t epoch, uint64_t work)
{
    seen_t *e = count_read_locked(base);
    if (e->epoch != epoch || e->work != work)
        e->epoch = epoch, e->work = work, e->misses = 0;
    return ++e->misses;
}

/* Where a finished or enqueued fill lies and what it was judged by. */
void ga_co_record_window_locked(const fill_t *f)
{
    slot_t *s = f->slot;
    s->base = f->base, s->len = f->len, s->epoch = f->epoch, s->work = f->work;
    s->used = ++clock_tick, s->grow = f->grow, s->next_expected = f->base + f->len;
    s->served = false;
    s->alloc_base = f->alloc_base, s->alloc_size = f->alloc_size;
}

/* ---- the shared-memory set ----------------------------------------------------- */

bool ga_co_is_shared_locked(CUdeviceptr base)
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
    pthread_mutex_lock(&ga_co_lock);
    shared_range_t *old;
    HASH_FIND(hh, shared, &base, sizeof base, old);
    if (old)
        free(r);
    else
        HASH_ADD(hh, shared, base, sizeof r->base, r);
    /* A window over it may already exist: the epoch moves, which invalidates
     * every window and every fill in flight. */
    ga_epoch_bump();
    pthread_mutex_unlock(&ga_co_lock);
}

/* Fork: the child starts with an empty table. */
void ga_co_table_fork_child(void)
{
    memset(ga_co_slots, 0, sizeof ga_co_slots); /* pinned buffers belong to the parent's CUDA */
    memset(seen_allocs, 0, sizeof seen_allocs);
    reads_since_aging = 0;
    shared = NULL;
    valid_epoch = valid_work = 0;
}
