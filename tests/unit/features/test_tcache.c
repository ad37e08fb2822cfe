/* test_tcache.c - the pool's thread caches over a stub driver: a thread's own
 * free-then-allocate reuses the block with no driver call; a free of a block
 * another thread's cache holds is a double free; a block freed by another
 * thread than it was handed to is freed once, and only once; a thread's cache
 * goes to the pool when the thread ends; allocation failure takes back the
 * blocks other threads' caches hold, and those threads then get other memory;
 * cuMemGetInfo counts held blocks free; IPC-exported blocks, busy contexts and
 * a destroyed context keep blocks out of the caches. Then eight threads at
 * once, passing blocks to each other to free and running out of memory now
 * and then: no block is ever handed out twice or after it was freed for real,
 * and at the end every byte the device holds is accounted as cached. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "features/pool/pool.h"
#include "tracking/streams.h"
#include "stub_driver.h"
#include "stub_device.h"

static ga_rt_t rt;
static pthread_barrier_t step;

static void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, arg) == 0);
    CHECK(pthread_join(t, NULL) == 0);
}

static size_t cached(void)
{
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    return st.cached_bytes;
}

static uint64_t hits(void)
{
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    return st.hits;
}

static bool is_live(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t n = 0;
    return stub_range(&base, &n, p) == CUDA_SUCCESS && base == p;
}

/* arg: a pointer to free; the result goes back in its place (as a CUresult). */
static void *free_there(void *arg)
{
    CUdeviceptr *p = arg;
    *p = (CUdeviceptr)release(&rt, *p);
    return NULL;
}

/* Allocate and free a block of *n bytes, then end: *n becomes its address
 * (0 if either call failed). Threads report, the main thread checks. */
static void *churn_and_end(void *arg)
{
    size_t *n = arg;
    CUdeviceptr p = alloc(&rt, *n);
    *n = p && release(&rt, p) == CUDA_SUCCESS ? (size_t)p : 0;
    return NULL;
}

/* Holds a block in its cache while the main thread runs out of memory, then
 * allocates the class again: it must get memory the device still has.
 * got: the held block, the next one, and 1 if every call succeeded. */
static void *hold_through_oom(void *arg)
{
    CUdeviceptr *got = arg;
    CUdeviceptr y = alloc(&rt, 9000);
    got[2] = y && release(&rt, y) == CUDA_SUCCESS;
    got[0] = y;
    pthread_barrier_wait(&step); /* held now */
    pthread_barrier_wait(&step); /* the main thread took it back */
    CUdeviceptr z = alloc(&rt, 9000);
    got[2] &= z && is_live(z);
    got[1] = z;
    got[2] &= release(&rt, z) == CUDA_SUCCESS;
    return NULL;
}

/* ---- many threads at once --------------------------------------------------- */

enum { RACERS = 8, ROUNDS = 20000, MAILBOXES = 16, OWNED = 512 };
static _Atomic CUdeviceptr mailbox[MAILBOXES];
static pthread_mutex_t owned_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr owned[OWNED]; /* what the program holds now */
static _Atomic int race_failures;

/* The program got p: it must be device memory no one else holds. */
static void own(CUdeviceptr p)
{
    bool fresh = is_live(p);
    int free_at = -1;
    pthread_mutex_lock(&owned_lock);
    for (int i = 0; i < OWNED; i++) {
        if (owned[i] == p)
            fresh = false; /* handed out twice */
        if (!owned[i] && free_at < 0)
            free_at = i;
    }
    if (free_at >= 0)
        owned[free_at] = p;
    pthread_mutex_unlock(&owned_lock);
    if (!fresh || free_at < 0)
        atomic_fetch_add(&race_failures, 1);
}

static void give_up(CUdeviceptr p)
{
    bool found = false;
    pthread_mutex_lock(&owned_lock);
    for (int i = 0; i < OWNED && !found; i++)
        if (owned[i] == p)
            owned[i] = 0, found = true;
    pthread_mutex_unlock(&owned_lock);
    if (!found || !is_live(p) || release(&rt, p) != CUDA_SUCCESS)
        atomic_fetch_add(&race_failures, 1);
}

static void *racer(void *arg)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1);
    static const size_t sizes[] = {300, 5000, 5000, 70000, 200000};
    CUdeviceptr mine[4] = {0};
    for (int round = 0; round < ROUNDS; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)(rng >> 33);
        CUdeviceptr *slot = &mine[k % 4];
        if (*slot && k % 5 == 0) { /* to another thread, which frees it */
            CUdeviceptr other = atomic_exchange(&mailbox[(k >> 4) % MAILBOXES], *slot);
            if (other)
                give_up(other);
            *slot = 0;
        } else if (*slot) {
            give_up(*slot);
            *slot = 0;
        }
        if (k % 997 == 0) { /* more than the device has: the caches are given back */
            CUdeviceptr huge = 0;
            if (ga_hook_alloc(&rt, GA_ID_cuMemAlloc_v2, &huge, capacity * 2) !=
                CUDA_ERROR_OUT_OF_MEMORY)
                atomic_fetch_add(&race_failures, 1);
        }
        CUdeviceptr p = alloc(&rt, sizes[(k >> 8) % 5]);
        if (p) /* the device may really be full: then 0, and that is fine */
            own(p), *slot = p;
    }
    for (int i = 0; i < 4; i++)
        if (mine[i])
            give_up(mine[i]);
    return NULL;
}

/* leaked: device bytes the pool forgot with a context (the stub never frees them). */
static void race(size_t leaked)
{
    pthread_t t[RACERS];
    for (uintptr_t i = 0; i < RACERS; i++)
        CHECK(pthread_create(&t[i], NULL, racer, (void *)i) == 0);
    for (int i = 0; i < RACERS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < MAILBOXES; i++) {
        CUdeviceptr p = atomic_exchange(&mailbox[i], 0);
        if (p)
            give_up(p);
    }
    CHECK(atomic_load(&race_failures) == 0);
    /* nothing is live: every byte the device holds is cached, once, or leaked */
    pthread_mutex_lock(&stub_dev_lock);
    size_t device = used;
    pthread_mutex_unlock(&stub_dev_lock);
    size_t f = 0, t_ = 0;
    CHECK(ga_hook_meminfo(&rt, GA_ID_cuMemGetInfo_v2, &f, &t_) == CUDA_SUCCESS);
    printf("race: device holds %zu, cached %zu, free (with cached) %zu of %zu\n", device,
           cached(), f, t_);
    CHECK(cached() + leaked == device && f == capacity - leaked);
}

int main(void)
{
    stub_runtime(&rt);
    stub_device(&rt);
    size_t klass = ga_pool_class_bytes(ga_pool_class(5000));

    /* the first free makes the pool and learns its limit; then a thread's
     * own pair reuses its block, no driver call, and counts as a hit */
    CUdeviceptr a = alloc(&rt, 5000);
    CHECK(a && release(&rt, a) == CUDA_SUCCESS);
    int allocs = real_allocs, frees = real_frees;
    uint64_t h0 = hits();
    for (int i = 0; i < 100; i++) {
        CUdeviceptr b = alloc(&rt, 5000);
        CHECK(b == a && release(&rt, b) == CUDA_SUCCESS);
    }
    CHECK(real_allocs == allocs && real_frees == frees && hits() == h0 + 100);
    CHECK(cached() == klass); /* held in this thread's cache, counted as cached */
    size_t f = 0, t = 0;
    CHECK(ga_hook_meminfo(&rt, GA_ID_cuMemGetInfo_v2, &f, &t) == CUDA_SUCCESS &&
          f == capacity - used + klass);

    /* another thread frees the block this thread's cache holds: double free */
    CUdeviceptr p = a;
    on_thread(free_there, &p);
    CHECK((CUresult)p == CUDA_ERROR_INVALID_VALUE);
    CHECK(alloc(&rt, 5000) == a); /* still held, still good */

    /* a live block freed by another thread: freed once, the second free refused */
    p = a;
    on_thread(free_there, &p);
    CHECK((CUresult)p == CUDA_SUCCESS && real_frees == frees);
    CHECK(release(&rt, a) == CUDA_ERROR_INVALID_VALUE);
    CHECK(alloc(&rt, 5000) == a && real_allocs == allocs); /* from the pool */
    CHECK(release(&rt, a) == CUDA_SUCCESS);

    /* a thread's cache goes to the pool when it ends */
    size_t n = 7000;
    on_thread(churn_and_end, &n);
    CUdeviceptr x = (CUdeviceptr)n;
    CHECK(x != 0);
    allocs = real_allocs;
    CHECK(alloc(&rt, 7000) == x && real_allocs == allocs);
    CHECK(release(&rt, x) == CUDA_SUCCESS);

    /* allocation failure takes back what other threads' caches hold */
    CUdeviceptr got[3] = {0, 0, 0};
    pthread_t holder;
    CHECK(pthread_barrier_init(&step, NULL, 2) == 0);
    CHECK(pthread_create(&holder, NULL, hold_through_oom, got) == 0);
    pthread_barrier_wait(&step);
    CHECK(got[0] && is_live(got[0]));
    ga_pool_stats_t st;
    ga_pool_stats(&st);
    uint64_t releases = st.releases;
    CUdeviceptr big = alloc(&rt, capacity - used + 1000); /* fits once the caches are given back */
    ga_pool_stats(&st);
    CHECK(big && st.releases == releases + 1 && !is_live(got[0]) && st.cached_bytes == 0);
    CHECK(release(&rt, big) == CUDA_SUCCESS);
    pthread_barrier_wait(&step);
    CHECK(pthread_join(holder, NULL) == 0);
    CHECK(got[2] == 1 && got[1] && got[1] != big);
    pthread_barrier_destroy(&step);

    /* exported blocks go to the driver, even from a thread's own pair */
    CUdeviceptr e = alloc(&rt, 5000);
    CUipcMemHandle ipc;
    CHECK(ga_hook_ipc_get(&rt, GA_ID_cuIpcGetMemHandle, &ipc, e) == CUDA_SUCCESS);
    frees = real_frees;
    CHECK(release(&rt, e) == CUDA_SUCCESS && real_frees == frees + 1 && !is_live(e));

    /* a busy context: the free records a fence, the block is not held */
    CUdeviceptr w = alloc(&rt, 5000);
    ga_stream_note_work(&rt, NULL, false);
    int recorded = stub_events_recorded;
    size_t before = cached();
    CHECK(release(&rt, w) == CUDA_SUCCESS && stub_events_recorded == recorded + 1);
    CHECK(cached() == before + klass);
    ga_ctx_mark_t idle = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&idle, true);
    CHECK(alloc(&rt, 5000) == w); /* its fence completed */
    CHECK(release(&rt, w) == CUDA_SUCCESS);

    /* the context is destroyed: held blocks are forgotten, not handed out */
    CUdeviceptr d = alloc(&rt, 5000);
    CHECK(release(&rt, d) == CUDA_SUCCESS);
    ga_pool_ctx_gone(stub_current);
    CHECK(cached() == 0);
    allocs = real_allocs;
    h0 = hits();
    CUdeviceptr fresh = alloc(&rt, 5000);
    CHECK(fresh && fresh != d && real_allocs == allocs + 1 && hits() == h0);
    frees = real_frees;
    CHECK(release(&rt, d) == CUDA_SUCCESS && real_frees == frees + 1); /* the driver's to answer */
    CHECK(release(&rt, fresh) == CUDA_SUCCESS);
    race(used - cached());
    return check_done("test_tcache");
}
