/* block.c - the pool's blocks: size classes, the block records, each block's
 * ownership word, and the block table (every block the pool owns, by address).
 *
 * Owns: `blocks` and `spare_blocks`, under `lock`; how a block's ownership
 * word moves (internal.h describes the word).
 * Must never: call the driver; free a record (a thread cache may still name
 * one it let go of: records are only reused); change a word other than by a
 * move that bumps its version. */
#define _GNU_SOURCE
#include "features/pool/internal.h"

#include <stdlib.h>

static block_t *blocks;             /* guarded by lock */
static block_t *spare_blocks;       /* guarded by lock: records to reuse */

/* ---- size classes (pool.h; the arithmetic is internal.h's, inline) ------------ */

int ga_pool_class(size_t n)
{
    return class_of(n);
}

size_t ga_pool_class_bytes(int c)
{
    return class_bytes(c);
}

/* ---- block ownership ------------------------------------------------------------ */

/* Under lock, for a block no thread cache can be changing: pending,
 * checking, dead, or a record just taken on. Returns the new word. */
uint64_t ga_pool_set_state_locked(block_t *b, unsigned holder, bstate_t s)
{
    uint64_t o = own_next(atomic_load_explicit(&b->own, memory_order_relaxed), holder, s);
    atomic_store_explicit(&b->own, o, memory_order_release);
    return o;
}

/* Move a live block to (holder, s) whoever holds it; false if it is not live
 * (freed already, perhaps a moment ago by its holder's cache). */
bool ga_pool_move_live(block_t *b, bool keep_holder, bstate_t s)
{
    uint64_t o = atomic_load_explicit(&b->own, memory_order_acquire);
    while (own_state(o) == B_LIVE)
        if (atomic_compare_exchange_weak_explicit(&b->own, &o,
                                                  own_next(o, keep_holder ? own_holder(o) : 0, s),
                                                  memory_order_acq_rel, memory_order_acquire))
            return true;
    return false;
}

/* ---- records (all under lock) ------------------------------------------------- */

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
void ga_pool_recycle_locked(block_t *b)
{
    ga_pool_set_state_locked(b, 0, B_DEAD);
    b->next = spare_blocks;
    spare_blocks = b;
}

/* A new block from the driver, live, handed to `holder`; NULL if no record
 * could be had (the block is then a plain allocation, unknown to the pool). */
block_t *ga_pool_remember(CUdeviceptr ptr, size_t size, size_t requested, CUcontext ctx, int cls,
                          unsigned holder, uint64_t *own)
{
    pthread_mutex_lock(&ga_pool_lock);
    block_t *b = record_locked(ptr, size, ctx, cls);
    if (b) {
        atomic_store_explicit(&b->requested, requested, memory_order_relaxed);
        *own = ga_pool_set_state_locked(b, holder, B_LIVE);
        HASH_ADD(hh, blocks, ptr, sizeof b->ptr, b);
    }
    pthread_mutex_unlock(&ga_pool_lock);
    return b;
}

/* ---- the block table (all under lock) ------------------------------------------- */

block_t *ga_pool_find_locked(CUdeviceptr ptr)
{
    block_t *b;
    HASH_FIND(hh, blocks, &ptr, sizeof ptr, b);
    return b;
}

void ga_pool_unlink_locked(block_t *b)
{
    HASH_DEL(blocks, b);
}

/* fn on every block of ctx; fn may unlink the block it is given. */
void ga_pool_each_locked(CUcontext ctx, void (*fn)(block_t *b, void *arg), void *arg)
{
    block_t *b, *tmp;
    HASH_ITER(hh, blocks, b, tmp)
        if (b->ctx == ctx)
            fn(b, arg);
}

/* The child has no CUDA state: every block is forgotten (leaked on purpose). */
void ga_pool_blocks_fork_child(void)
{
    blocks = NULL;
    spare_blocks = NULL;
}
