/* async_pool.c - stream-ordered allocations keep their memory between
 * synchronizations (GPUACCEL_ASYNC_POOL).
 *
 * cuMemAllocAsync allocates from a device's memory pool; the default pool's
 * release threshold is 0, so at every synchronization the driver unmaps the
 * pool's free memory and maps it again at the next allocation: a 1 GiB
 * cudaMallocAsync/cudaFreeAsync/sync cycle costs milliseconds instead of
 * microseconds (sppark's Dmalloc and ICICLE's MSM allocate this way on every
 * call). The first time a device's default pool serves the program, this
 * feature raises that pool's threshold to GPUACCEL_ASYNC_POOL_LIMIT (half the
 * device by default; RMM's and CuPy's async resources raise it to "keep
 * everything" when they create their pools) unless the program
 * set the threshold itself (cuMemPoolSetAttribute is respected, before or
 * after), and answers the program's own reading of the threshold with the
 * value it would have seen. The memory the pool keeps is reported free by
 * cuMemGetInfo (the program would have had it back at the next sync) and is
 * trimmed when any allocation runs out of memory (then retried once).
 * Pools the program created are left alone: it chose their attributes.
 *
 * Owns: the table of default pools met, under `lock`.
 * Must never: call the driver holding `lock`; touch a pool while anything
 * captures (the hooks only call in when serving is on). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/device.h"
#include "tracking/streams.h"

enum { MAX_POOLS = 64, MAX_DEVICES = 64 };

typedef struct pool_rec {
    CUmemoryPool pool;
    CUdevice dev;
    bool raised;          /* we set its threshold */
    bool program_set;     /* the program set it: never touch it again */
    cuuint64_t native;    /* the threshold before we raised it */
} pool_rec_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pool_rec_t pools[MAX_POOLS]; /* under lock */
static unsigned n_pools;            /* under lock */
/* Per device ordinal, read without the lock on every stream-ordered
 * allocation: 0 its default pool not looked at yet, 1 a thread is looking
 * (others go on: their allocation may come before the raise), 2 looked at
 * (raised or left). One thread at a time looks, so two first allocations on
 * two threads cannot undo each other's reading of the threshold. */
enum { DEV_UNSEEN, DEV_LOOKING, DEV_DONE };
static _Atomic unsigned char dev_state[MAX_DEVICES];
/* Per device ordinal: its default pool keeps memory because of us (counted). */
static _Atomic bool dev_raised[MAX_DEVICES];
static _Atomic uint64_t kept, asked; /* stream-ordered allocations: from a raised pool, all */
static _Atomic uint64_t threshold;   /* the last threshold set, for the report */

/* The threshold: the limit in bytes, or its share of the current device (the
 * allocation's: a stream-ordered allocation is made in the current context). */
static cuuint64_t keep_for(const ga_rt_t *rt)
{
    const ga_limit_t *l = &rt->cfg.async_pool_limit;
    size_t free_b = 0, total = 0;
    if (l->bytes)
        return l->bytes;
    __typeof__(&cuMemGetInfo_v2) info = GA_REAL(rt, GA_ID_cuMemGetInfo_v2, cuMemGetInfo_v2);
    if (!info || info(&free_b, &total) != CUDA_SUCCESS)
        return 0; /* unknown: leave the pool as it is */
    return total / 100 * l->percent;
}

static pool_rec_t *find_locked(CUmemoryPool pool)
{
    for (unsigned i = 0; i < n_pools; i++)
        if (pools[i].pool == pool)
            return &pools[i];
    return NULL;
}

static pool_rec_t *add_locked(CUmemoryPool pool, CUdevice dev)
{
    pool_rec_t *p = find_locked(pool);
    if (!p && n_pools < MAX_POOLS) {
        p = &pools[n_pools++];
        memset(p, 0, sizeof *p);
        p->pool = pool;
        p->dev = dev;
    }
    return p;
}

/* Raise dev's default pool, unless the program set its threshold. */
static void raise_default(const ga_rt_t *rt, CUdevice dev)
{
    CUmemoryPool pool;
    if (GA_REAL(rt, GA_ID_cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool)(&pool, dev) !=
        CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    pool_rec_t *p = add_locked(pool, dev);
    bool go = p && !p->program_set;
    bool ours = go && p->raised;
    pthread_mutex_unlock(&lock);
    if (!go)
        return;
    __typeof__(&cuMemPoolGetAttribute) get =
        GA_REAL(rt, GA_ID_cuMemPoolGetAttribute, cuMemPoolGetAttribute);
    __typeof__(&cuMemPoolSetAttribute) set =
        GA_REAL(rt, GA_ID_cuMemPoolSetAttribute, cuMemPoolSetAttribute);
    cuuint64_t now = 0, keep = keep_for(rt);
    if (!keep || get(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &now) != CUDA_SUCCESS)
        return;
    if (ours && now == keep)
        return; /* still as we left it */
    /* Anything but 0 was chosen by somebody else (a framework in this
     * process, or the program by a path we did not see): theirs to keep. */
    bool take = now == 0 && set(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    p->raised = take;
    p->native = now;
    pthread_mutex_unlock(&lock);
    if (dev >= 0 && dev < MAX_DEVICES)
        atomic_store(&dev_raised[dev], take);
    if (!take)
        return;
    atomic_store(&threshold, keep);
    ga_log(GA_LOG_INFO, "device %d: the default memory pool keeps up to %llu MiB between "
                        "synchronizations", (int)dev, (unsigned long long)(keep >> 20));
}

static bool device_of_pool(const ga_rt_t *rt, CUmemoryPool pool, CUdevice *dev)
{
    /* A pool the program passes by name: only a device's default pool is ours
     * to raise; find whose, among the devices (a handful, once per pool). */
    int n = 0;
    if (GA_REAL(rt, GA_ID_cuDeviceGetCount, cuDeviceGetCount)(&n) != CUDA_SUCCESS)
        return false;
    for (int d = 0; d < n && d < MAX_DEVICES; d++) {
        CUmemoryPool def;
        if (GA_REAL(rt, GA_ID_cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool)(&def, d) ==
                CUDA_SUCCESS && def == pool) {
            *dev = d;
            return true;
        }
    }
    return false;
}

static void async_pool_begin(const ga_rt_t *rt, CUmemoryPool pool, CUstream s, bool per_thread)
{
    (void)s, (void)per_thread;
    CUdevice dev;
    if (pool) {
        pthread_mutex_lock(&lock);
        bool known = find_locked(pool) != NULL;
        pthread_mutex_unlock(&lock);
        if (known || !device_of_pool(rt, pool, &dev)) {
            if (!known) { /* a pool of the program's own: remember to skip it */
                pthread_mutex_lock(&lock);
                pool_rec_t *p = add_locked(pool, -1);
                if (p)
                    p->program_set = true;
                pthread_mutex_unlock(&lock);
            }
            return;
        }
    } else if (GA_REAL(rt, GA_ID_cuCtxGetDevice, cuCtxGetDevice)(&dev) != CUDA_SUCCESS) {
        return; /* no context: the driver's own error follows */
    }
    if (dev < 0 || dev >= MAX_DEVICES)
        return;
    unsigned char unseen = DEV_UNSEEN;
    if (atomic_load_explicit(&dev_state[dev], memory_order_acquire) == DEV_UNSEEN &&
        atomic_compare_exchange_strong(&dev_state[dev], &unseen, DEV_LOOKING)) {
        raise_default(rt, dev);
        atomic_store_explicit(&dev_state[dev], DEV_DONE, memory_order_release);
    }
    atomic_fetch_add_explicit(&asked, 1, memory_order_relaxed);
    if (atomic_load_explicit(&dev_raised[dev], memory_order_relaxed))
        atomic_fetch_add_explicit(&kept, 1, memory_order_relaxed);
}

/* The program's own view of a threshold we changed; its own setting wins. */
static bool async_pool_attr(const ga_rt_t *rt, bool set, CUmemoryPool pool,
                           CUmemPool_attribute attr, void *value, CUresult *r)
{
    (void)rt;
    if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || !pool || !value)
        return false;
    pthread_mutex_lock(&lock);
    pool_rec_t *p = set ? add_locked(pool, -1) : find_locked(pool);
    bool answer = false;
    if (set && p) {
        p->program_set = true; /* the driver sets it: we never touch it again */
        if (p->raised && p->dev >= 0 && p->dev < MAX_DEVICES)
            atomic_store(&dev_raised[p->dev], false);
        p->raised = false;
    } else if (!set && p && p->raised && !p->program_set) {
        *(cuuint64_t *)value = p->native;
        *r = CUDA_SUCCESS;
        answer = true;
    }
    pthread_mutex_unlock(&lock);
    return answer;
}

/* The raised pools of dev (-1: all), at most max. */
static unsigned raised_pools(CUdevice dev, CUmemoryPool *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n_pools && n < max; i++)
        if (pools[i].raised && (dev < 0 || pools[i].dev == dev))
            out[n++] = pools[i].pool;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Out of memory somewhere: what the pools keep unused goes back. */
static bool async_pool_reclaim(const ga_rt_t *rt, bool host)
{
    CUmemoryPool p[MAX_POOLS];
    unsigned n = host ? 0 : raised_pools(-1, p, MAX_POOLS);
    bool gave = false;
    __typeof__(&cuMemPoolGetAttribute) get =
        GA_REAL(rt, GA_ID_cuMemPoolGetAttribute, cuMemPoolGetAttribute);
    for (unsigned i = 0; i < n; i++) {
        cuuint64_t before = 0, after = 0;
        get(p[i], CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &before);
        GA_REAL(rt, GA_ID_cuMemPoolTrimTo, cuMemPoolTrimTo)(p[i], 0);
        get(p[i], CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &after);
        gave |= after < before;
    }
    return gave;
}

/* cuMemGetInfo: what the current device's pool keeps beyond what is in use
 * would have been free after the program's last synchronization. */
static size_t async_pool_held_free(CUcontext ctx)
{
    const ga_rt_t *rt = ga_rt();
    CUdevice dev;
    if (!ctx || GA_REAL(rt, GA_ID_cuCtxGetDevice, cuCtxGetDevice)(&dev) != CUDA_SUCCESS)
        return 0;
    CUmemoryPool p[MAX_POOLS];
    unsigned n = raised_pools(dev, p, MAX_POOLS);
    size_t held = 0;
    __typeof__(&cuMemPoolGetAttribute) get =
        GA_REAL(rt, GA_ID_cuMemPoolGetAttribute, cuMemPoolGetAttribute);
    for (unsigned i = 0; i < n; i++) {
        cuuint64_t reserved = 0, used = 0;
        if (get(p[i], CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) == CUDA_SUCCESS &&
            get(p[i], CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS && reserved > used)
            held += reserved - used;
    }
    return held;
}

/* A context went: its device's pool may have been reset with it. Look again
 * at the next allocation (raise_default finds whether our setting stands). */
static void async_pool_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt, (void)ctx;
    for (unsigned d = 0; d < MAX_DEVICES; d++) {
        unsigned char done = DEV_DONE; /* one being looked at is left to its looker */
        atomic_compare_exchange_strong(&dev_state[d], &done, DEV_UNSEEN);
    }
}

static void fork_child(void)
{
    n_pools = 0;
    for (unsigned d = 0; d < MAX_DEVICES; d++) {
        atomic_store_explicit(&dev_state[d], DEV_UNSEEN, memory_order_relaxed);
        atomic_store_explicit(&dev_raised[d], false, memory_order_relaxed);
    }
}

/* At exit: how many stream-ordered allocations came from a pool that kept its
 * memory, and up to how much it was allowed to keep. */
static void async_pool_report(void)
{
    uint64_t n = atomic_load(&asked);
    if (n)
        ga_log(GA_LOG_INFO, "async_pool: %llu of %llu stream-ordered allocations from a pool "
                            "keeping up to %llu MiB",
               (unsigned long long)atomic_load(&kept), (unsigned long long)n,
               (unsigned long long)(atomic_load(&threshold) >> 20));
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

GA_SWITCH(async_pool)

const ga_feature_t ga_feature_async_pool = {
    .summary = "stream-ordered allocations keep the default pool's memory between syncs",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuDeviceGetDefaultMemPool, GA_ID_cuMemPoolGetAttribute,
             GA_ID_cuMemPoolSetAttribute, GA_ID_cuMemPoolTrimTo, GA_ID_cuCtxGetDevice,
             GA_ID_cuDeviceGetCount, GA_ID_cuMemGetInfo_v2),
    .fork = &fork_ops,
    .report = async_pool_report,
    .alloc_async_begin = async_pool_begin,
    .pool_attr = async_pool_attr,
    .reclaim = async_pool_reclaim,
    .held_free = async_pool_held_free,
    .ctx_gone = async_pool_ctx_gone,
};
