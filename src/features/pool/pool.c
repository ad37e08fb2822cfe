/* pool.c - allocations served from a per-context cache of whole device blocks
 * (GPUACCEL_POOL), with cuMemFree's guarantee kept.
 *
 * A block is a real cuMemAlloc of its size class (8 classes per power of two),
 * never split, so pointer attributes, address ranges and IPC handles are those
 * of a real allocation. cuMemFree does not free: it records a fence (streams.h)
 * and queues the block; the block is handed out again only once the fence shows
 * that everything enqueued before the free has finished, on every stream.
 * The host never blocks in free. On allocation failure the cache is given back
 * to the driver and the allocation retried before the driver's error is
 * returned. Blocks freed while a stream capture is under way, blocks with an
 * IPC handle, and pitched allocations go straight to the driver.
 *
 * A thread's own free-then-allocate takes no lock: a block of up to 1 MiB that
 * a thread frees while its context is idle (the fence would be empty) goes to
 * that thread's cache, and its next allocation of the class takes it back
 * from there (see "thread caches" below for how other threads stay safe).
 *
 * Owns: `blocks` (every block the pool owns, by address), `pools` (per
 * context: cached blocks per class, oldest first) and the list of thread
 * caches, all under `lock`; each block's ownership word (atomic).
 * Must never: call the driver while holding `lock`; hand out a block whose
 * fence has not completed; change an error code the driver would return.
 * Prior art, read not copied: PyTorch's CUDACachingAllocator (event-guarded
 * reuse across streams), RMM's pool resource (size classes). Both split blocks
 * and own one device's memory; this pool never splits, for IPC and range
 * queries, and keys everything by context for multi-GPU programs. */
#define _GNU_SOURCE
#include "features/pool/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Device addresses hashed multiplicatively (Fibonacci): their low bits are
 * zero (blocks are 256-byte aligned or more), and the product's top bits
 * depend on all of them. `blocks` uses it instead of uthash's default Jenkins
 * hash of the key's bytes, which took a third of a pooled free's time
 * (uthash picks a bucket from the hash's low bits: the product's top half). */
static inline uint64_t addr_mix(uint64_t addr)
{
    return addr * 0x9E3779B97F4A7C15ull;
}

#define HASH_FUNCTION(keyptr, keylen, hashv)                                             \
    do {                                                                                 \
        uint64_t k_;                                                                     \
        memcpy(&k_, (keyptr), sizeof k_);                                                \
        (hashv) = (unsigned)(addr_mix(k_) >> 32);                                        \
    } while (0)
#include <uthash.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/streams.h"

enum {
    MIN_CLASS_BYTES = 256,
    MAX_CLASS_LOG2 = 48,                              /* larger requests bypass the pool */
    N_CLASSES = 1 + (MAX_CLASS_LOG2 - 8) * 8,
};

/* live: the program has it; pending: in its context's pool behind a fence;
 * checking: taken from the pool while its fence is asked about; held: in a
 * thread cache; dead: not a block (a spare record). */
typedef enum { B_LIVE, B_PENDING, B_CHECKING, B_HELD, B_DEAD } bstate_t;

/* The fields other than `own` and `requested` are written under `lock` only,
 * when a record takes on a block. Records are never freed, only reused
 * (spare_blocks): a thread cache may still name one it let go of. */
typedef struct block {
    CUdeviceptr ptr;
    size_t size;      /* what the driver allocated */
    _Atomic size_t requested; /* while live: what the program asked for */
    CUcontext ctx;
    int cls;          /* size class, or -1: freed for real, never cached */
    /* version << 32 | holder << 8 | state. Every change bumps the version, so
     * a compare-and-swap against a value read earlier fails if the block
     * changed at all in between (no ABA): a thread cache acts on a block it
     * only remembers, without the lock. holder: the id of the thread cache
     * whose thread a live block was handed to, or that holds it (0: none). */
    _Atomic uint64_t own;
    bool exported;    /* an IPC handle was taken: freed for real */
    ga_fence_t fence; /* while pending; empty while live or held */
    struct block *next;
    UT_hash_handle hh;
} block_t;

typedef struct pool {
    CUcontext ctx;
    block_t *head[N_CLASSES], *tail[N_CLASSES]; /* cached blocks, oldest first */
    size_t cached_bytes;
    size_t limit;
    struct pool *next;
} pool_t;

/* The fence of a block handed out before it completed: streams created later
 * must still wait for it (see order_after). */
typedef struct outstanding {
    CUcontext ctx;
    ga_fence_t fence;
    bool borrowed; /* the events still belong to a block's fence: never released here */
    struct outstanding *next;
} outstanding_t;

/* QUERY_AFTER: outstanding fences kept before completed ones are looked for. */
enum { MAX_OUTSTANDING = 1024, MAX_NONBLOCKING = 64, QUERY_AFTER = 8 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block_t *blocks;             /* guarded by lock */
static block_t *spare_blocks;       /* guarded by lock: records to reuse */
static pool_t *pools;               /* guarded by lock */
static outstanding_t *outstanding;  /* guarded by lock, newest first */
static unsigned n_outstanding;      /* guarded by lock */
static block_t *parked;             /* guarded by lock: to free once no capture is open */
/* Hits are counted under the lock the hit takes anyway: an atomic add more
 * on a path of ~50 ns was measurable. */
static uint64_t hits, early;        /* guarded by lock */
static _Atomic uint64_t misses, trims, releases;

/* ---- size classes ------------------------------------------------------------- */

int ga_pool_class(size_t n)
{
    if (n <= MIN_CLASS_BYTES)
        return 0;
    unsigned e = 63 - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    if (e >= MAX_CLASS_LOG2)
        return -1;
    size_t step = (size_t)1 << (e - 3);
    size_t k = (n - 1 - ((size_t)1 << e)) / step;
    return 1 + (int)(e - 8) * 8 + (int)k;
}

size_t ga_pool_class_bytes(int c)
{
    if (c <= 0)
        return MIN_CLASS_BYTES;
    unsigned e = 8 + (unsigned)(c - 1) / 8, k = (unsigned)(c - 1) % 8;
    return ((size_t)1 << e) + (size_t)(k + 1) * ((size_t)1 << (e - 3));
}

/* ---- block ownership ------------------------------------------------------------ */

static uint64_t own_next(uint64_t cur, unsigned holder, bstate_t s)
{
    return (((cur >> 32) + 1) << 32) | (uint64_t)holder << 8 | (uint64_t)s;
}

static bstate_t own_state(uint64_t o)
{
    return (bstate_t)(o & 0xff);
}

static unsigned own_holder(uint64_t o)
{
    return (unsigned)(o >> 8) & 0xffffff;
}

static bstate_t state_of(block_t *b)
{
    return own_state(atomic_load_explicit(&b->own, memory_order_acquire));
}

/* Under lock, for a block no thread cache can be changing: pending,
 * checking, dead, or a record just taken on. Returns the new word. */
static uint64_t set_state_locked(block_t *b, unsigned holder, bstate_t s)
{
    uint64_t o = own_next(atomic_load_explicit(&b->own, memory_order_relaxed), holder, s);
    atomic_store_explicit(&b->own, o, memory_order_release);
    return o;
}

/* Move a live block to (holder, s) whoever holds it; false if it is not live
 * (freed already, perhaps a moment ago by its holder's cache). */
static bool move_live(block_t *b, bool keep_holder, bstate_t s)
{
    uint64_t o = atomic_load_explicit(&b->own, memory_order_acquire);
    while (own_state(o) == B_LIVE)
        if (atomic_compare_exchange_weak_explicit(&b->own, &o,
                                                  own_next(o, keep_holder ? own_holder(o) : 0, s),
                                                  memory_order_acq_rel, memory_order_acquire))
            return true;
    return false;
}

/* ---- bookkeeping (all under lock) -------------------------------------------- */

/* A record for a new block: a spare one, or a new one (NULL if out of memory). */
static block_t *record_locked(CUdeviceptr ptr, size_t size, CUcontext ctx, int cls)
{
    block_t *b = spare_blocks;
    if (b)
        spare_blocks = b->next;
    else if (!(b = calloc(1, sizeof *b)))
        return NULL;
    b->ptr = ptr;
    b->size = size;
    b->ctx = ctx;
    b->cls = cls;
    b->exported = false;
    memset(&b->fence, 0, sizeof b->fence);
    b->next = NULL;
    return b;
}

/* The record no longer stands for a block (out of `blocks` already). */
static void recycle_locked(block_t *b)
{
    set_state_locked(b, 0, B_DEAD);
    b->next = spare_blocks;
    spare_blocks = b;
}

static pool_t *pool_of(CUcontext ctx, bool create)
{
    for (pool_t *p = pools; p; p = p->next)
        if (p->ctx == ctx)
            return p;
    if (!create)
        return NULL;
    pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ctx = ctx;
    p->limit = SIZE_MAX; /* set by the caller outside the lock */
    p->next = pools;
    pools = p;
    return p;
}

static void push_back(pool_t *p, block_t *b)
{
    b->next = NULL;
    if (p->tail[b->cls])
        p->tail[b->cls]->next = b;
    else
        p->head[b->cls] = b;
    p->tail[b->cls] = b;
}

static void push_front(pool_t *p, block_t *b)
{
    b->next = p->head[b->cls];
    p->head[b->cls] = b;
    if (!p->tail[b->cls])
        p->tail[b->cls] = b;
}

static block_t *pop_front(pool_t *p, int c)
{
    block_t *b = p->head[c];
    if (b) {
        p->head[c] = b->next;
        if (!p->head[c])
            p->tail[c] = NULL;
        b->next = NULL;
    }
    return b;
}

/* Take every cached block of `p` out, as a list, for freeing for real. */
static block_t *drain_locked(pool_t *p, size_t keep)
{
    block_t *out = NULL;
    for (int c = N_CLASSES - 1; c >= 0 && p->cached_bytes > keep; c--) {
        block_t *b;
        while (p->cached_bytes > keep && (b = pop_front(p, c))) {
            p->cached_bytes -= b->size;
            HASH_DEL(blocks, b);
            b->next = out;
            out = b;
        }
    }
    return out;
}

/* ---- driver calls (outside the lock) ------------------------------------------ */

/* Free a list of blocks for real. cuMemFree synchronizes the device, so a
 * block whose fence is still pending is safe to free here. While a capture
 * is open a free would invalidate it: the blocks are parked (unreachable,
 * neither cached nor live) and freed by the next call that may. */
static void free_for_real(const ga_rt_t *rt, block_t *list)
{
    __typeof__(&cuMemFree_v2) mfree = GA_REAL(rt, GA_ID_cuMemFree_v2, cuMemFree_v2);
    if (!ga_own_calls_enter()) {
        pthread_mutex_lock(&lock);
        while (list) {
            block_t *b = list;
            list = b->next;
            b->next = parked;
            parked = b;
        }
        pthread_mutex_unlock(&lock);
        return;
    }
    pthread_mutex_lock(&lock);
    if (parked) { /* one list: the parked blocks go with these */
        block_t **tail = &parked;
        while (*tail)
            tail = &(*tail)->next;
        *tail = list;
        list = parked;
        parked = NULL;
    }
    pthread_mutex_unlock(&lock);
    for (block_t *b = list; b; b = b->next) {
        if (mfree && mfree(b->ptr) != CUDA_SUCCESS)
            ga_debug("pool: freeing cached block %#llx failed", (unsigned long long)b->ptr);
        ga_fence_release(rt, &b->fence);
    }
    ga_own_calls_leave();
    pthread_mutex_lock(&lock);
    while (list) {
        block_t *b = list;
        list = b->next;
        recycle_locked(b);
    }
    pthread_mutex_unlock(&lock);
}

static size_t limit_for(const ga_rt_t *rt)
{
    const ga_limit_t *l = &rt->cfg.pool_limit;
    if (l->bytes)
        return l->bytes;
    size_t free_b = 0, total = 0;
    __typeof__(&cuMemGetInfo_v2) info = GA_REAL(rt, GA_ID_cuMemGetInfo_v2, cuMemGetInfo_v2);
    if (!info || info(&free_b, &total) != CUDA_SUCCESS)
        return SIZE_MAX / 2;
    return total / 100 * l->percent;
}

/* Unlink the outstanding fences that a kept one covers (ga_fence_implies):
 * streams created later wait for the newest legacy record, which follows
 * theirs, so they need not be kept, and no driver call learns it. */
static outstanding_t *unlink_covered_locked(void)
{
    outstanding_t *newest = NULL, *gone = NULL;
    for (outstanding_t *o = outstanding; o; o = o->next)
        if (!o->borrowed && o->fence.n > 0 &&
            (!newest || o->fence.rec_begin > newest->fence.rec_begin))
            newest = o;
    for (outstanding_t **pp = &outstanding; newest && *pp;) {
        outstanding_t *o = *pp;
        if (o != newest && !o->borrowed && ga_fence_implies(&newest->fence, &o->fence)) {
            *pp = o->next;
            n_outstanding--;
            o->next = gone;
            gone = o;
        } else {
            pp = &o->next;
        }
    }
    return gone;
}

/* Forget outstanding fences: first those a newer one covers (free), then
 * those that have completed (a few per call, oldest last in the list: they
 * are the likeliest to be done). Asking the driver is what costs (1.5-1.7 us
 * a completed event, see ga_fence_implies): on the allocation path (ask
 * false) a short list, one fence a stream in the usual case, is left alone;
 * a stream creation (rare, and about to wait on each) always asks. */
static void prune_outstanding(const ga_rt_t *rt, bool ask)
{
    pthread_mutex_lock(&lock);
    outstanding_t *gone = unlink_covered_locked();
    bool few = !ask && n_outstanding <= QUERY_AFTER;
    pthread_mutex_unlock(&lock);
    while (gone) {
        outstanding_t *o = gone;
        gone = o->next;
        ga_fence_release(rt, &o->fence); /* later waits on its events are not asked for */
        free(o);
    }
    for (int round = 0; round < 4 && !few; round++) {
        pthread_mutex_lock(&lock);
        outstanding_t **pp = &outstanding;
        while (*pp && (*pp)->next)
            pp = &(*pp)->next;
        outstanding_t *o = *pp;
        if (o && o->borrowed)
            o = NULL; /* the oldest is not ours to release: stop here */
        if (o)
            *pp = NULL, n_outstanding--;
        pthread_mutex_unlock(&lock);
        if (!o)
            return;
        if (!ga_fence_done(rt, &o->fence)) {
            pthread_mutex_lock(&lock); /* put it back, still the oldest */
            for (pp = &outstanding; *pp; pp = &(*pp)->next)
                ;
            *pp = o;
            n_outstanding++;
            pthread_mutex_unlock(&lock);
            return;
        }
        ga_fence_release(rt, &o->fence);
        free(o);
    }
}

/* Hand out a block whose fence has not completed yet, by ordering every later
 * use of it after the fence instead of waiting for it. Any device access the
 * program makes to the block from now on is enqueued on a stream of its
 * context: the legacy stream (made to wait for the fence's other events),
 * blocking streams and per-thread default streams (which wait for earlier
 * legacy-stream work), or a non-blocking stream (each made to wait for every
 * event of the fence; streams created later wait too, while the fence is
 * outstanding). Only with a single context, every stream known, and few
 * non-blocking streams; otherwise the caller allocates afresh. */
static bool order_after_entered(const ga_rt_t *rt, block_t *b)
{
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    outstanding_t *o = wait && !ga_untracked() ? calloc(1, sizeof *o) : NULL;
    if (!o)
        return false;
    CUstream nb[MAX_NONBLOCKING];
    /* List the streams and publish the fence in one critical section: a stream
     * created meanwhile is either listed here or finds the fence when
     * ga_pool_stream_created runs (it is tracked before that takes the lock).
     * None of the listed can be destroyed until the waits are done (use lock,
     * taken after ours: the fork handlers' order). */
    pthread_mutex_lock(&lock);
    ga_stream_use_begin();
    bool alone = pools && !pools->next && n_outstanding < MAX_OUTSTANDING;
    unsigned n = alone ? ga_ctx_nonblocking(b->ctx, nb, MAX_NONBLOCKING) : MAX_NONBLOCKING + 1;
    bool ok = n <= MAX_NONBLOCKING;
    if (ok) { /* borrowed: the block keeps owning the events until this succeeds */
        o->ctx = b->ctx, o->fence = b->fence, o->borrowed = true;
        o->next = outstanding;
        outstanding = o;
        n_outstanding++;
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        ga_stream_use_end();
        free(o);
        return false;
    }
    /* Event 0 is the legacy stream's own (streams.c records it first). */
    for (unsigned e = 1; ok && e < b->fence.n; e++)
        ok = wait(CU_STREAM_LEGACY, b->fence.ev[e], 0) == CUDA_SUCCESS;
    for (unsigned i = 0; ok && i < n; i++)
        for (unsigned e = 0; ok && e < b->fence.n; e++)
            ok = wait(nb[i], b->fence.ev[e], 0) == CUDA_SUCCESS;
    ga_stream_use_end();
    if (!ok) { /* some waits may be in place: harmless, they only delay */
        pthread_mutex_lock(&lock); /* the block keeps its fence: forget the borrowed copy */
        for (outstanding_t **op = &outstanding; *op; op = &(*op)->next)
            if (*op == o) {
                *op = o->next;
                n_outstanding--;
                break;
            }
        pthread_mutex_unlock(&lock);
        free(o);
        return false;
    }
    pthread_mutex_lock(&lock);
    o->borrowed = false; /* the fence is the outstanding record's now */
    pthread_mutex_unlock(&lock);
    memset(&b->fence, 0, sizeof b->fence);
    return true;
}

/* The waits on the legacy stream are unsafe while a capture is open. */
static bool order_after(const ga_rt_t *rt, block_t *b)
{
    if (!ga_own_calls_enter())
        return false;
    bool ok = order_after_entered(rt, b);
    ga_own_calls_leave();
    return ok;
}

void ga_pool_stream_created(const ga_rt_t *rt, CUstream s)
{
    if (!rt->cfg.pool)
        return;
    prune_outstanding(rt, true);
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    pthread_mutex_lock(&lock); /* waits are cheap and never block: fine under the lock */
    for (outstanding_t *o = outstanding; o && wait; o = o->next)
        for (unsigned e = 0; e < o->fence.n; e++)
            wait(s, o->fence.ev[e], 0);
    pthread_mutex_unlock(&lock);
}

static bool pooling(const ga_rt_t *rt)
{
    return rt->cfg.pool && !ga_serving_off();
}

/* ---- thread caches ---------------------------------------------------------------
 *
 * Each thread that allocates has a cache: up to TC_SLOTS blocks a class, of
 * classes up to 1 MiB, all of one context, at most `cap` bytes, that the
 * thread itself freed while their context was idle (so their fence is empty:
 * they may be handed out at once), and a small table of the blocks handed to
 * it, by address, so that its free finds the block without the lock.
 *
 * Only the owner thread reads or writes its slots and table. Other threads
 * reach held blocks through `blocks` (under the lock): a free of a held block
 * is a double free, and a thread that needs the memory (allocation failure,
 * context destroyed) takes a held block back by swapping its ownership word.
 * Every move of a block in or out of a cache is a compare-and-swap of that
 * word against the value the owner saw when it last moved the block, so a
 * slot or table entry whose block was taken back (or whose record was reused
 * since) fails its swap and is dropped: a record is never freed.
 * Why not a lock per thread: a lock costs two atomic operations, the swap
 * one, on a path whose whole cost is a few of them. mimalloc's and glibc's
 * thread caches, and PyTorch's per-stream free lists, are the prior art. */
enum { TC_CLASSES = 97 /* classes up to 1 MiB */, TC_SLOTS = 4, TC_LIVE = 64 };
/* The most a thread cache holds: 4 MiB, and 1/16 of its pool's limit. */
#define TC_BYTES ((size_t)4 << 20)

typedef struct tc_ref {
    block_t *b;
    uint64_t own; /* the word as this thread last set it */
    CUdeviceptr ptr;
} tc_ref_t;

typedef struct tcache {
    unsigned id;                  /* holder id, never reused */
    uint64_t gen;                 /* tc_gen when made: a fork child drops its inherited one */
    _Atomic(CUcontext) ctx;       /* of every held block; written by the owner only */
    uint64_t bound;               /* bind_gen when ctx and cap were set */
    size_t cap;                   /* bytes it may hold in ctx */
    unsigned n[TC_CLASSES];
    tc_ref_t slot[TC_CLASSES][TC_SLOTS];
    struct {
        tc_ref_t ref;
        CUcontext ctx;
        int cls;
    } live[TC_LIVE];               /* blocks handed to this thread, by address */
    /* For other threads to read: written by the owner only (hits; held: bytes
     * in the slots, taken-back ones included until the owner sees them), or
     * under `lock` (taken: bytes of held blocks others took back). */
    _Atomic uint64_t hits;
    _Atomic size_t held, taken;
    struct tcache *next;          /* guarded by lock */
} tcache_t;

static __thread tcache_t *my_cache __attribute__((tls_model("initial-exec")));
static tcache_t *tcaches;          /* guarded by lock */
static unsigned next_tc_id = 1;    /* guarded by lock */
static uint64_t retired_hits;      /* guarded by lock: hits of caches whose thread ended */
static _Atomic uint64_t tc_gen;    /* bumped in a fork child */
static _Atomic uint64_t bind_gen;  /* bumped when a pool is made or goes: caches bind again */
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

static void tc_detach(void *arg);

static void tc_key_init(void)
{
    tc_key_ok = pthread_key_create(&tc_key, tc_detach) == 0;
}

static tcache_t *tc_by_id_locked(unsigned id)
{
    for (tcache_t *tc = tcaches; tc; tc = tc->next)
        if (tc->id == id)
            return tc;
    return NULL;
}

/* This thread's cache, made on first use; NULL if it cannot be had. */
static tcache_t *thread_cache(void)
{
    tcache_t *tc = my_cache;
    if (GA_LIKELY(tc && tc->gen == atomic_load_explicit(&tc_gen, memory_order_relaxed)))
        return tc;
    my_cache = NULL; /* one inherited through fork names the parent's blocks: dropped */
    if (pthread_once(&tc_once, tc_key_init) != 0 || !tc_key_ok || !(tc = calloc(1, sizeof *tc)))
        return NULL;
    pthread_mutex_lock(&lock);
    bool ok = next_tc_id < 0xffffff;
    if (ok) {
        tc->id = next_tc_id++;
        tc->gen = atomic_load(&tc_gen);
        tc->next = tcaches;
        tcaches = tc;
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        free(tc);
        return NULL;
    }
    pthread_setspecific(tc_key, tc);
    my_cache = tc;
    return tc;
}

static unsigned holder_of(const tcache_t *tc)
{
    return tc ? tc->id : 0;
}

static unsigned live_index(CUdeviceptr p)
{
    return (unsigned)(addr_mix(p) >> 58); /* TC_LIVE = 64 entries */
}

/* A block was handed to this thread with word `own`. */
static void note_live(tcache_t *tc, block_t *b, uint64_t own, CUcontext ctx, int c)
{
    if (!tc || c < 0 || c >= TC_CLASSES)
        return;
    unsigned i = live_index(b->ptr);
    tc->live[i].ref = (tc_ref_t){b, own, b->ptr};
    tc->live[i].ctx = ctx;
    tc->live[i].cls = c;
}

/* Owner-only writes: a plain load and store, no atomic read-modify-write. */
static size_t held_of(tcache_t *tc)
{
    return atomic_load_explicit(&tc->held, memory_order_relaxed);
}

static void set_held(tcache_t *tc, size_t bytes)
{
    atomic_store_explicit(&tc->held, bytes, memory_order_relaxed);
}

/* Empty this thread's cache into the pools (under lock): the blocks' fences
 * are empty. Blocks another thread took back are only forgotten. */
static void flush_locked(tcache_t *tc)
{
    for (int c = 0; c < TC_CLASSES; c++) {
        for (unsigned i = 0; i < tc->n[c]; i++) {
            tc_ref_t r = tc->slot[c][i];
            pool_t *p;
            if (atomic_compare_exchange_strong(&r.b->own, &r.own, own_next(r.own, 0, B_PENDING))) {
                if ((p = pool_of(r.b->ctx, true))) { /* made if it went meanwhile */
                    push_back(p, r.b);
                    p->cached_bytes += r.b->size;
                }
            } else { /* taken back, counted then at its class's size (the record may be reused) */
                atomic_fetch_sub_explicit(&tc->taken, ga_pool_class_bytes(c), memory_order_relaxed);
            }
        }
        tc->n[c] = 0;
    }
    set_held(tc, 0);
}

/* Bind this thread's cache to ctx, with its pool's limit (emptying it first
 * if it held blocks of another binding). False while that limit is unknown. */
static bool bind(tcache_t *tc, CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    flush_locked(tc);
    pool_t *p = pool_of(ctx, false);
    size_t limit = p ? p->limit : SIZE_MAX;
    tc->cap = limit == SIZE_MAX ? 0 : limit / 16 < TC_BYTES ? limit / 16 : TC_BYTES;
    tc->bound = atomic_load(&bind_gen);
    atomic_store_explicit(&tc->ctx, ctx, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    return tc->cap > 0;
}

/* A free of a block handed to this thread, its context idle: into the cache,
 * no lock. False: the caller takes the locked path. */
static bool free_fast(const ga_rt_t *rt, CUdeviceptr dptr)
{
    tcache_t *tc = my_cache;
    if (!tc || tc->gen != atomic_load_explicit(&tc_gen, memory_order_relaxed))
        return false;
    unsigned i = live_index(dptr);
    tc_ref_t r = tc->live[i].ref;
    if (r.ptr != dptr || !r.b)
        return false;
    tc->live[i].ref.ptr = 0; /* freed now, one way or the other */
    int c = tc->live[i].cls;
    CUcontext ctx = tc->live[i].ctx;
    if (!pooling(rt) || rt->cfg.pool_poison || !ga_ctx_idle(ctx))
        return false;
    if (GA_UNLIKELY(atomic_load_explicit(&tc->ctx, memory_order_relaxed) != ctx ||
                    tc->bound != atomic_load_explicit(&bind_gen, memory_order_relaxed)) &&
        !bind(tc, ctx))
        return false;
    size_t bytes = ga_pool_class_bytes(c);
    if (tc->n[c] == TC_SLOTS || held_of(tc) + bytes > tc->cap)
        return false;
    uint64_t held = own_next(r.own, tc->id, B_HELD);
    if (!atomic_compare_exchange_strong_explicit(&r.b->own, &r.own, held, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false; /* not as handed out any more (exported, freed already): the lock decides */
    tc->slot[c][tc->n[c]++] = (tc_ref_t){r.b, held, dptr};
    set_held(tc, held_of(tc) + bytes);
    return true;
}

/* A held block of class c in ctx, or NULL. */
static block_t *alloc_fast(tcache_t *tc, CUcontext ctx, int c, uint64_t *own)
{
    if (c >= TC_CLASSES || tc->n[c] == 0 ||
        atomic_load_explicit(&tc->ctx, memory_order_relaxed) != ctx)
        return NULL;
    size_t bytes = ga_pool_class_bytes(c);
    block_t *b = NULL;
    while (!b && tc->n[c] > 0) {
        tc_ref_t r = tc->slot[c][--tc->n[c]];
        set_held(tc, held_of(tc) - bytes);
        *own = own_next(r.own, tc->id, B_LIVE);
        if (atomic_compare_exchange_strong_explicit(&r.b->own, &r.own, *own,
                                                    memory_order_acq_rel, memory_order_relaxed))
            b = r.b;
        else /* another thread took it back, and counted it in `taken` */
            atomic_fetch_sub_explicit(&tc->taken, bytes, memory_order_relaxed);
    }
    if (b)
        atomic_store_explicit(&tc->hits, atomic_load_explicit(&tc->hits, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    return b;
}

/* Take a held block back from its thread's cache (under lock); false if its
 * thread took it first. The block is then pending, with no holder. */
static bool take_back_locked(block_t *b)
{
    uint64_t o = atomic_load_explicit(&b->own, memory_order_acquire);
    if (own_state(o) != B_HELD ||
        !atomic_compare_exchange_strong(&b->own, &o, own_next(o, 0, B_PENDING)))
        return false;
    tcache_t *tc = tc_by_id_locked(own_holder(o));
    if (tc)
        atomic_fetch_add_explicit(&tc->taken, b->size, memory_order_relaxed);
    return true;
}

/* Every held block of ctx, taken back and out of `blocks`, put in front of
 * list `out`; returns the list. */
static block_t *take_back_all_locked(CUcontext ctx, block_t *out)
{
    block_t *b, *tmp;
    HASH_ITER(hh, blocks, b, tmp)
        if (b->ctx == ctx && take_back_locked(b)) {
            HASH_DEL(blocks, b);
            b->next = out;
            out = b;
        }
    return out;
}

/* Bytes the thread caches hold in ctx. */
static size_t held_in_locked(CUcontext ctx)
{
    size_t sum = 0;
    for (tcache_t *tc = tcaches; tc; tc = tc->next) {
        size_t h = held_of(tc);
        size_t t = atomic_load_explicit(&tc->taken, memory_order_relaxed);
        if ((!ctx || atomic_load_explicit(&tc->ctx, memory_order_relaxed) == ctx) && h > t)
            sum += h - t;
    }
    return sum;
}

/* The thread ends: its held blocks go to their pools (their fences are
 * empty), its count of hits to retired_hits. */
static void tc_detach(void *arg)
{
    tcache_t *tc = arg;
    my_cache = NULL; /* a later call on this thread (another destructor) makes a new one */
    pthread_mutex_lock(&lock);
    flush_locked(tc);
    for (tcache_t **pp = &tcaches; *pp; pp = &(*pp)->next)
        if (*pp == tc) {
            *pp = tc->next;
            break;
        }
    retired_hits += atomic_load(&tc->hits);
    pthread_mutex_unlock(&lock);
    free(tc);
}

/* ---- the locked path -------------------------------------------------------------- */

/* A cached block leaves the cache, live again, handed to `holder` (under lock). */
static uint64_t hand_out_locked(pool_t *p, block_t *b, unsigned holder)
{
    p->cached_bytes -= b->size;
    hits++;
    return set_state_locked(b, holder, B_LIVE);
}

/* A cached block of class c in ctx, or NULL: one whose fence completed, or
 * one whose later uses could be ordered after its fence. *own: its word. */
static block_t *take_cached(const ga_rt_t *rt, const tcache_t *tc, CUcontext ctx, int c,
                            uint64_t *own)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    block_t *b = p ? pop_front(p, c) : NULL;
    /* Freed while its context was idle: nothing to ask, one critical section. */
    bool empty = b && ga_fence_empty(&b->fence);
    if (b && empty)
        *own = hand_out_locked(p, b, holder_of(tc));
    else if (b)
        set_state_locked(b, 0, B_CHECKING);
    pthread_mutex_unlock(&lock);
    if (!b || empty)
        return b;
    bool done = ga_fence_done(rt, &b->fence); /* driver calls: outside the lock */
    bool ordered = !done && order_after(rt, b);
    if (done)
        ga_fence_release(rt, &b->fence); /* a live block's fence is empty */
    pthread_mutex_lock(&lock);
    if (done || ordered) {
        *own = hand_out_locked(p, b, holder_of(tc));
        early += ordered;
    } else {
        set_state_locked(b, 0, B_PENDING);
        push_front(p, b); /* the oldest is still running: newer ones are too */
        b = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (b && ordered)
        prune_outstanding(rt, false);
    return b;
}

static void poison(const ga_rt_t *rt, const block_t *b)
{
    __typeof__(&cuMemsetD8_v2) set = GA_REAL(rt, GA_ID_cuMemsetD8_v2, cuMemsetD8_v2);
    __typeof__(&cuStreamSynchronize) sync =
        GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize);
    /* Done before the block is handed out: a non-blocking stream's first write
     * must not be overtaken by the poison. Not while a capture is open (a
     * legacy-stream memset and a sync would invalidate it). */
    if (!ga_own_calls_enter())
        return;
    if (set && set(b->ptr, 0xA5, b->size) == CUDA_SUCCESS && sync)
        sync(CU_STREAM_LEGACY);
    ga_own_calls_leave();
}

/* A new block from the driver, live, handed to `holder`; NULL if no record
 * could be had (the block is then a plain allocation, unknown to the pool). */
static block_t *remember(CUdeviceptr ptr, size_t size, size_t requested, CUcontext ctx, int cls,
                         unsigned holder, uint64_t *own)
{
    pthread_mutex_lock(&lock);
    block_t *b = record_locked(ptr, size, ctx, cls);
    if (b) {
        atomic_store_explicit(&b->requested, requested, memory_order_relaxed);
        *own = set_state_locked(b, holder, B_LIVE);
        HASH_ADD(hh, blocks, ptr, sizeof b->ptr, b);
    }
    pthread_mutex_unlock(&lock);
    return b;
}

/* Give every cached block of ctx back to the driver (allocation failed),
 * those thread caches hold included. */
static void release_cache(const ga_rt_t *rt, CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    block_t *list = take_back_all_locked(ctx, p ? drain_locked(p, 0) : NULL);
    pthread_mutex_unlock(&lock);
    if (list) {
        atomic_fetch_add(&releases, 1);
        free_for_real(rt, list);
    }
}

static size_t cached_in(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    size_t n = (p ? p->cached_bytes : 0) + held_in_locked(ctx);
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- handlers ------------------------------------------------------------------ */

/* Served: a cached block, or a new one of its class from the driver. */
static bool pool_alloc(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize,
                       CUresult *r)
{
    __typeof__(&cuMemAlloc_v2) real = GA_REAL(rt, id, cuMemAlloc_v2);
    int c = ga_pool_class(bytesize);
    CUcontext ctx = NULL;
    if (!pooling(rt) || !dptr || bytesize == 0 || c < 0 || !(ctx = ga_current_ctx(rt)))
        return false; /* the driver's own answer, errors included */
    /* Poisoning fills every reused block: only the locked path does it. */
    tcache_t *tc = rt->cfg.pool_poison ? NULL : thread_cache();
    uint64_t own = 0;
    block_t *b = tc ? alloc_fast(tc, ctx, c, &own) : NULL;
    if (!b)
        b = take_cached(rt, tc, ctx, c, &own);
    if (b) {
        atomic_store_explicit(&b->requested, bytesize, memory_order_relaxed);
        if (rt->cfg.pool_poison)
            poison(rt, b);
        note_live(tc, b, own, ctx, c);
        *dptr = b->ptr;
        *r = CUDA_SUCCESS;
        return true;
    }
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    size_t size = ga_pool_class_bytes(c);
    *r = real(dptr, size);
    if (*r == CUDA_ERROR_OUT_OF_MEMORY) {
        release_cache(rt, ctx);
        *r = real(dptr, size);
    }
    if (*r == CUDA_ERROR_OUT_OF_MEMORY && size != bytesize) {
        *r = real(dptr, bytesize); /* the class rounding may be what does not fit */
        size = bytesize, c = -1;
    }
    /* Without a record it is a plain allocation, freed by the driver. */
    if (*r == CUDA_SUCCESS && (b = remember(*dptr, size, bytesize, ctx, c, holder_of(tc), &own)))
        note_live(tc, b, own, ctx, c);
    return true;
}

/* The driver refused an allocation the pool did not serve (after a fault,
 * say): the cache gives way, except during a capture, where a free would
 * invalidate the program's capture. */
static bool pool_reclaim(const ga_rt_t *rt)
{
    CUcontext ctx = ga_current_ctx(rt);
    if (ga_capture_active() || !ctx || !cached_in(ctx))
        return false;
    release_cache(rt, ctx);
    return true;
}

/* Queue a freed block in its pool (under lock). Returns the blocks the pool's
 * limit pushes out, for the caller to free outside the lock. */
static block_t *queue_locked(pool_t *p, block_t *b)
{
    push_back(p, b);
    p->cached_bytes += b->size;
    return p->cached_bytes > p->limit ? drain_locked(p, p->limit) : NULL;
}

static void trim(const ga_rt_t *rt, block_t *victims)
{
    if (victims) {
        atomic_fetch_add(&trims, 1);
        free_for_real(rt, victims);
    }
}

/* The pool's part of a free: queue a live block behind a fence. Returns false
 * when the block is not the pool's to keep (the caller frees it for real);
 * *err is set when the pointer is a block the pool already holds (double
 * free). A block freed while its context is idle, in a pool whose limit is
 * known, is queued in the one critical section that finds it. */
static bool keep_block(const ga_rt_t *rt, CUdeviceptr dptr, CUresult *err)
{
    *err = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    block_t *b;
    HASH_FIND(hh, blocks, &dptr, sizeof dptr, b);
    if (!b) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    bool keep = b->cls >= 0 && !b->exported && pooling(rt);
    /* Whoever holds it: its thread may be freeing it in its cache right now,
     * and then this free is the second. */
    if (!move_live(b, false, keep ? B_PENDING : B_DEAD)) {
        pthread_mutex_unlock(&lock);
        /* what the driver says to a double free, or to anything after a fault */
        *err = ga_faulted() ? ga_fault_code() : CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    if (!keep) {
        HASH_DEL(blocks, b);
        recycle_locked(b);
        pthread_mutex_unlock(&lock);
        return false;
    }
    pool_t *p = pool_of(b->ctx, true);
    if (p && p->limit != SIZE_MAX && ga_fence_idle(b->ctx, &b->fence)) {
        block_t *victims = queue_locked(p, b);
        pthread_mutex_unlock(&lock);
        trim(rt, victims);
        return true;
    }
    bool new_pool = p && p->limit == SIZE_MAX;
    pthread_mutex_unlock(&lock);

    /* Record the fence in the block's own context. */
    CUcontext cur = ga_current_ctx(rt);
    __typeof__(&cuCtxPushCurrent_v2) push =
        GA_REAL(rt, GA_ID_cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = GA_REAL(rt, GA_ID_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
    bool switched = cur != b->ctx && push && pop && push(b->ctx) == CUDA_SUCCESS;
    bool fenced = p && (cur == b->ctx || switched) && ga_fence_init(rt, b->ctx, &b->fence);
    size_t limit = new_pool ? limit_for(rt) : 0;
    if (switched) {
        CUcontext dummy;
        pop(&dummy);
    }

    pthread_mutex_lock(&lock);
    if (!fenced) { /* cannot prove when it is safe: let the driver free it */
        HASH_DEL(blocks, b);
        recycle_locked(b);
        pthread_mutex_unlock(&lock);
        return false;
    }
    if (new_pool) {
        p->limit = limit;
        atomic_fetch_add(&bind_gen, 1); /* thread caches learn the limit */
    }
    block_t *victims = queue_locked(p, b);
    pthread_mutex_unlock(&lock);
    trim(rt, victims);
    return true;
}

/* Served: the block goes to the pool (or this thread's cache) behind a fence.
 * A stream-ordered free (s given) of a pooled block: the fence covers s if the
 * tracker saw work on it, which it did if the program used the block there. */
static bool pool_free(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr, CUstream s, CUresult *r)
{
    (void)id;
    if (!dptr)
        return false;
    if (s == GA_NOSTREAM && free_fast(rt, dptr)) {
        *r = CUDA_SUCCESS;
        return true;
    }
    return keep_block(rt, dptr, r);
}

static size_t pool_held_free(CUcontext ctx)
{
    return cached_in(ctx);
}

/* A block may be larger than asked for (its size class): the allocation the
 * program made is what it asked. */
static bool pool_asked_size(CUdeviceptr base, CUdeviceptr dptr, size_t *size)
{
    pthread_mutex_lock(&lock);
    block_t *b;
    HASH_FIND(hh, blocks, &base, sizeof base, b);
    size_t asked = b ? atomic_load_explicit(&b->requested, memory_order_relaxed) : 0;
    bool known = b && state_of(b) == B_LIVE && dptr < base + asked;
    pthread_mutex_unlock(&lock);
    if (known)
        *size = asked;
    return known;
}

/* Another process may map an exported block: it must be freed when the
 * program says, not cached. */
static void pool_shared(const ga_rt_t *rt, CUdeviceptr dptr, bool exported)
{
    (void)rt;
    if (!exported)
        return;
    pthread_mutex_lock(&lock);
    block_t *b;
    HASH_FIND(hh, blocks, &dptr, sizeof dptr, b);
    if (b) {
        b->exported = true;
        /* The word moves: its thread's cache no longer takes it on a free. */
        move_live(b, true, B_LIVE);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- lifecycle ----------------------------------------------------------------- */

void ga_pool_ctx_gone(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    block_t *b, *tmp;
    HASH_ITER(hh, blocks, b, tmp)
        if (b->ctx == ctx) {
            take_back_locked(b); /* a thread cache's: counted as taken */
            HASH_DEL(blocks, b);
            ga_fence_drop(&b->fence); /* the driver freed the memory and the events */
            recycle_locked(b);
        }
    for (outstanding_t **op = &outstanding; *op;) {
        outstanding_t *o = *op;
        if (o->ctx == ctx) {
            *op = o->next;
            n_outstanding--;
            if (!o->borrowed) /* a borrowed fence is its block's, dropped above */
                ga_fence_drop(&o->fence);
            free(o);
        } else {
            op = &o->next;
        }
    }
    atomic_fetch_add(&bind_gen, 1); /* thread caches bound to it bind again */
    for (pool_t **pp = &pools; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx) {
            pool_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
    pthread_mutex_unlock(&lock);
}

void ga_pool_stats(ga_pool_stats_t *s)
{
    s->misses = atomic_load(&misses);
    s->trims = atomic_load(&trims);
    s->releases = atomic_load(&releases);
    s->cached_bytes = 0;
    pthread_mutex_lock(&lock);
    s->hits = hits + retired_hits;
    for (tcache_t *tc = tcaches; tc; tc = tc->next)
        s->hits += atomic_load_explicit(&tc->hits, memory_order_relaxed);
    s->early = early;
    for (pool_t *p = pools; p; p = p->next)
        s->cached_bytes += p->cached_bytes;
    s->cached_bytes += held_in_locked(NULL);
    pthread_mutex_unlock(&lock);
}

static void pool_report(void)
{
    ga_pool_stats_t s;
    ga_pool_stats(&s);
    if (s.hits + s.misses == 0)
        return;
    ga_info("pool: hits=%llu (ordered after their fence: %llu) misses=%llu cached_bytes=%zu "
            "trims=%llu releases=%llu",
            (unsigned long long)s.hits, (unsigned long long)s.early,
            (unsigned long long)s.misses, s.cached_bytes, (unsigned long long)s.trims,
            (unsigned long long)s.releases);
}

static void fork_child(void)
{
    /* The child has no CUDA state: forget every block (leaked on purpose). */
    blocks = NULL;
    spare_blocks = NULL;
    pools = NULL;
    tcaches = NULL; /* each thread's is dropped on its next use (tc_gen) */
    retired_hits = 0;
    atomic_fetch_add(&tc_gen, 1);
    outstanding = NULL;
    n_outstanding = 0;
    early = 0;
    hits = 0;
    atomic_store(&misses, 0);
    atomic_store(&trims, 0);
    atomic_store(&releases, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

static void pool_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    ga_pool_ctx_gone(ctx);
}

GA_SWITCH(pool)

const ga_feature_t ga_feature_pool = {
    .name = "pool",
    .variable = "GPUACCEL_POOL",
    .summary = "allocations served from a cache of device blocks",
    .on = switch_on,
    .off = switch_off,
    .needs = {GA_ID_cuEventCreate, GA_ID_cuEventRecord, GA_ID_cuEventQuery,
              GA_ID_cuStreamWaitEvent, GA_ID_cuStreamGetFlags, GA_ID_cuStreamGetCtx,
              GA_ID_cuCtxPushCurrent_v2, GA_ID_cuCtxPopCurrent_v2},
    .n_needs = 8,
    .uses = GA_USES_STREAMS,
    .report = pool_report,
    .fork = &fork_ops,
    .alloc = pool_alloc,
    .reclaim = pool_reclaim,
    .free = pool_free,
    .held_free = pool_held_free,
    .asked_size = pool_asked_size,
    .shared = pool_shared,
    .stream_created = ga_pool_stream_created,
    .ctx_gone = pool_ctx_gone,
};
