/* tcache.c - the per-thread caches: a thread's own free-then-allocate with no
 * lock.
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
 * thread caches, and PyTorch's per-stream free lists, are the prior art.
 *
 * Owns: each thread's cache (`my_cache`), the list of caches (`tcaches`,
 * under `lock`) and the generations that make caches bind again or drop.
 * Must never: touch another thread's slots or table; move a block other than
 * by a compare-and-swap of its word against the value last seen; hold a block
 * whose fence is not empty; call the driver. */
#define _GNU_SOURCE
#include "features/pool/internal.h"

#include <stdlib.h>

enum { TC_CLASSES = 97 /* classes up to 1 MiB */, TC_SLOTS = 4, TC_LIVE = 64 };
/* The most a thread cache holds: 4 MiB, and 1/16 of its pool's limit. */
#define TC_BYTES ((size_t)4 << 20)

typedef struct tc_ref {
    block_t *b;
    uint64_t own; /* the word as this thread last set it */
    CUdeviceptr ptr;
} tc_ref_t;

struct tcache {
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
};

static GA_TLS tcache_t *my_cache;
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

/* ---- this thread's cache ---------------------------------------------------------- */

/* A new cache for this thread, on its first allocation (or its first since
 * a fork). Out of line and cold: thread_cache's check is the hot part. */
static __attribute__((noinline, cold)) tcache_t *new_thread_cache(void)
{
    tcache_t *tc;
    my_cache = NULL; /* one inherited through fork names the parent's blocks: dropped */
    if (pthread_once(&tc_once, tc_key_init) != 0 || !tc_key_ok || !(tc = calloc(1, sizeof *tc)))
        return NULL;
    pthread_mutex_lock(&ga_pool_lock);
    bool ok = next_tc_id < 0xffffff;
    if (ok) {
        tc->id = next_tc_id++;
        tc->gen = atomic_load(&tc_gen);
        tc->next = tcaches;
        tcaches = tc;
    }
    pthread_mutex_unlock(&ga_pool_lock);
    if (!ok) {
        free(tc);
        return NULL;
    }
    pthread_setspecific(tc_key, tc);
    my_cache = tc;
    return tc;
}

/* This thread's cache, made on first use; NULL if it cannot be had. */
static tcache_t *thread_cache(void)
{
    tcache_t *tc = my_cache;
    if (GA_LIKELY(tc && tc->gen == atomic_load_explicit(&tc_gen, memory_order_relaxed)))
        return tc;
    return new_thread_cache();
}

unsigned ga_pool_holder_of(const tcache_t *tc)
{
    return tc ? tc->id : 0;
}

static unsigned live_index(CUdeviceptr p)
{
    return (unsigned)(ga_addr_mix(p) >> 58); /* TC_LIVE = 64 entries */
}

/* A block was handed to this thread with word `own`. */
void ga_pool_note_live(tcache_t *tc, block_t *b, uint64_t own, CUcontext ctx, int c)
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
            if (atomic_compare_exchange_strong(&r.b->own, &r.own, own_next(r.own, 0, B_PENDING)))
                ga_pool_requeue_locked(r.b);
            else /* taken back, counted then at its class's size (the record may be reused) */
                atomic_fetch_sub_explicit(&tc->taken, class_bytes(c), memory_order_relaxed);
        }
        tc->n[c] = 0;
    }
    set_held(tc, 0);
}

/* Bind this thread's cache to ctx, with its pool's limit (emptying it first
 * if it held blocks of another binding). False while that limit is unknown. */
static bool bind(tcache_t *tc, CUcontext ctx)
{
    pthread_mutex_lock(&ga_pool_lock);
    flush_locked(tc);
    size_t limit = ga_pool_limit_locked(ctx);
    tc->cap = limit == SIZE_MAX ? 0 : limit / 16 < TC_BYTES ? limit / 16 : TC_BYTES;
    tc->bound = atomic_load(&bind_gen);
    atomic_store_explicit(&tc->ctx, ctx, memory_order_relaxed);
    pthread_mutex_unlock(&ga_pool_lock);
    return tc->cap > 0;
}

/* A free of a block handed to this thread, its context idle: into the cache,
 * no lock. False: the caller takes the locked path. */
bool ga_pool_free_fast(const ga_rt_t *rt, CUdeviceptr dptr)
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
    size_t bytes = class_bytes(c);
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
static block_t *take_held(tcache_t *tc, CUcontext ctx, int c, uint64_t *own)
{
    if (c >= TC_CLASSES || tc->n[c] == 0 ||
        atomic_load_explicit(&tc->ctx, memory_order_relaxed) != ctx)
        return NULL;
    size_t bytes = class_bytes(c);
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

/* An allocation's fast path: a block of class c in ctx that this thread's
 * cache holds, handed to this thread again (noted live), or NULL. *tcp: the
 * cache (NULL if it cannot be had), for the locked path's block. One call
 * from pool.c: the steps inline here. */
block_t *ga_pool_alloc_fast(CUcontext ctx, int c, tcache_t **tcp, uint64_t *own)
{
    tcache_t *tc = *tcp = thread_cache();
    block_t *b = tc ? take_held(tc, ctx, c, own) : NULL;
    if (b)
        ga_pool_note_live(tc, b, *own, ctx, c);
    return b;
}

/* ---- other threads (under lock) -------------------------------------------------- */

/* Take a held block back from its thread's cache (under lock); false if its
 * thread took it first. The block is then pending, with no holder. */
bool ga_pool_take_back_locked(block_t *b)
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

static void take_back_into(block_t *b, void *out)
{
    block_t **list = out;
    if (ga_pool_take_back_locked(b)) {
        ga_pool_unlink_locked(b);
        b->next = *list;
        *list = b;
    }
}

/* Every held block of ctx, taken back and out of `blocks`, put in front of
 * list `out`; returns the list. */
block_t *ga_pool_take_back_all_locked(CUcontext ctx, block_t *out)
{
    ga_pool_each_locked(ctx, take_back_into, &out);
    return out;
}

/* Bytes the thread caches hold in ctx (NULL: in every context). */
size_t ga_pool_held_in_locked(CUcontext ctx)
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

/* Hits served from thread caches, those of ended threads included. */
uint64_t ga_pool_tc_hits_locked(void)
{
    uint64_t n = retired_hits;
    for (tcache_t *tc = tcaches; tc; tc = tc->next)
        n += atomic_load_explicit(&tc->hits, memory_order_relaxed);
    return n;
}

/* A pool was made or went: every cache binds again before it holds a block. */
void ga_pool_rebind_caches(void)
{
    atomic_fetch_add(&bind_gen, 1);
}

/* ---- thread exit and fork ------------------------------------------------------- */

/* The thread ends: its held blocks go to their pools (their fences are
 * empty), its count of hits to retired_hits. */
static void tc_detach(void *arg)
{
    tcache_t *tc = arg;
    my_cache = NULL; /* a later call on this thread (another destructor) makes a new one */
    pthread_mutex_lock(&ga_pool_lock);
    flush_locked(tc);
    for (tcache_t **pp = &tcaches; *pp; pp = &(*pp)->next)
        if (*pp == tc) {
            *pp = tc->next;
            break;
        }
    retired_hits += atomic_load(&tc->hits);
    pthread_mutex_unlock(&ga_pool_lock);
    free(tc);
}

void ga_pool_tc_fork_child(void)
{
    tcaches = NULL; /* each thread's is dropped on its next use (tc_gen) */
    retired_hits = 0;
    atomic_fetch_add(&tc_gen, 1);
}
