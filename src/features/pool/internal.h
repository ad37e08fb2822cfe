/* internal.h - the pool's private boundary: what its files share with each
 * other, and nothing outside features/pool/ may include (tools/check-layers
 * fails any other folder that does, or that calls one of these functions).
 *
 * It exposes: the block record (block_t) and its states; the one lock; the
 * ownership word helpers, the size-class arithmetic and `pooling` (inline:
 * they are on every allocation and free); and the few functions the files
 * call in each other, grouped by the file that defines them. Each file keeps its own state static: the block table
 * (block.c), the pools and their counters (cache.c), the outstanding fences
 * (early.c), the thread caches (tcache.c). The public part is pool.h.
 * Why one header: the ownership word and the lock discipline are one protocol
 * that every file follows; they are written down once, here.
 * Model: mimalloc's include/mimalloc/internal.h. */
#ifndef GA_POOL_INTERNAL_H
#define GA_POOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/hash.h"

/* The block table hashes addresses with ga_addr_mix instead of uthash's
 * default (core/hash.h says why); uthash picks a bucket from the hash's low
 * bits: the product's top half. Defined before uthash.h, here, so that every
 * file of the pool sees the same hash. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                             \
    do {                                                                                 \
        uint64_t k_;                                                                     \
        memcpy(&k_, (keyptr), sizeof k_);                                                \
        (hashv) = (unsigned)(ga_addr_mix(k_) >> 32);                                     \
    } while (0)
#include <uthash.h>

#include "features/pool/pool.h"
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

/* A thread's cache (tcache.c); the other files only pass it along. */
typedef struct tcache tcache_t;

/* The pool's one lock (`lock` in the files' comments): guards the block
 * table, the pools, the outstanding fences and the list of thread caches.
 * Never held across a driver call (cuStreamWaitEvent excepted, which never
 * blocks: see ga_pool_stream_created); taken before the stream tracker's lock
 * (the fork handlers' order). Defined in pool.c, beside the fork handlers. */
extern pthread_mutex_t ga_pool_lock;

/* ---- the ownership word ----------------------------------------------------------- */

static inline uint64_t own_next(uint64_t cur, unsigned holder, bstate_t s)
{
    return (((cur >> 32) + 1) << 32) | (uint64_t)holder << 8 | (uint64_t)s;
}

static inline bstate_t own_state(uint64_t o)
{
    return (bstate_t)(o & 0xff);
}

static inline unsigned own_holder(uint64_t o)
{
    return (unsigned)(o >> 8) & 0xffffff;
}

static inline bstate_t state_of(block_t *b)
{
    return own_state(atomic_load_explicit(&b->own, memory_order_acquire));
}

/* ---- size classes: 256 B, then 8 per power of two (pool.h) ------------------------ */

/* Inline, as ga_pool_class and ga_pool_class_bytes (block.c) are for other
 * layers: every allocation and free asks, on a path of a few tens of ns. */
static inline int class_of(size_t n)
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

static inline size_t class_bytes(int c)
{
    if (c <= 0)
        return MIN_CLASS_BYTES;
    unsigned e = 8 + (unsigned)(c - 1) / 8, k = (unsigned)(c - 1) % 8;
    return ((size_t)1 << e) + (size_t)(k + 1) * ((size_t)1 << (e - 3));
}

static inline bool pooling(const ga_rt_t *rt)
{
    return rt->cfg.pool && !ga_serving_off();
}

/* ---- block.c: block records, the ownership word, the block table ------------------ */

uint64_t ga_pool_set_state_locked(block_t *b, unsigned holder, bstate_t s);
bool ga_pool_move_live(block_t *b, bool keep_holder, bstate_t s);
block_t *ga_pool_remember(CUdeviceptr ptr, size_t size, size_t requested, CUcontext ctx, int cls,
                          unsigned holder, uint64_t *own);
void ga_pool_recycle_locked(block_t *b);
block_t *ga_pool_find_locked(CUdeviceptr ptr);
void ga_pool_unlink_locked(block_t *b);
void ga_pool_each_locked(CUcontext ctx, void (*fn)(block_t *b, void *arg), void *arg);
void ga_pool_blocks_fork_child(void);

/* ---- cache.c: the per-context pools ----------------------------------------------- */

block_t *ga_pool_take_cached(const ga_rt_t *rt, unsigned holder, CUcontext ctx, int c,
                             uint64_t *own);
bool ga_pool_keep(const ga_rt_t *rt, CUdeviceptr dptr, CUresult *err);
void ga_pool_release_cache(const ga_rt_t *rt, CUcontext ctx);
size_t ga_pool_cached_in(CUcontext ctx);
void ga_pool_requeue_locked(block_t *b);
size_t ga_pool_limit_locked(CUcontext ctx);
bool ga_pool_one_ctx_locked(void);
void ga_pool_drop_pool_locked(CUcontext ctx);
void ga_pool_cache_stats_locked(ga_pool_stats_t *s);
void ga_pool_cache_fork_child(void);

/* ---- early.c: blocks handed out before their fence completed ---------------------- */

bool ga_pool_order_after(const ga_rt_t *rt, block_t *b);
void ga_pool_prune_outstanding(const ga_rt_t *rt, bool ask);
void ga_pool_outstanding_gone_locked(CUcontext ctx);
void ga_pool_early_fork_child(void);

/* ---- tcache.c: the per-thread caches ---------------------------------------------- */

unsigned ga_pool_holder_of(const tcache_t *tc);
void ga_pool_note_live(tcache_t *tc, block_t *b, uint64_t own, CUcontext ctx, int c);
bool ga_pool_free_fast(const ga_rt_t *rt, CUdeviceptr dptr);
block_t *ga_pool_alloc_fast(CUcontext ctx, int c, tcache_t **tcp, uint64_t *own);
bool ga_pool_take_back_locked(block_t *b);
block_t *ga_pool_take_back_all_locked(CUcontext ctx, block_t *out);
size_t ga_pool_held_in_locked(CUcontext ctx);
uint64_t ga_pool_tc_hits_locked(void);
void ga_pool_rebind_caches(void);
void ga_pool_tc_fork_child(void);

#endif
