/* graphs.c - repeated launch sequences replayed as CUDA graphs (GPUACCEL_GRAPHS).
 *
 * Learning: the launch-sequence detector (tracking/sequence.h) hands over
 * each segment (the run of launches one thread makes on one stream between
 * flush points; a long run that repeats one unit, in pieces of whole units)
 * as a topology: (function, grid, block, shared memory) per launch. A topology
 * of at least GPUACCEL_GRAPH_MIN launches seen twice becomes a candidate.
 * Replaying: a launch that matches the first node of a candidate is held (its
 * parameters copied, not launched); so are the next ones while they match.
 * When the whole sequence has arrived, the graph (built from the first held
 * sequence, explicitly with kernel nodes: no stream capture) gets the node
 * parameters that changed and is launched on the program's stream. On a
 * mismatch, at any flush point (any call that waits, copies, records, frees,
 * or may otherwise observe or change device state; a launch elsewhere), and
 * after a short time (a watchdog, for programs that poll host memory while
 * launching), the held launches are issued one by one, in order, unchanged.
 *
 * Launch-time errors: a launch is held only if the same function with the same
 * configuration was already launched successfully twice, so the errors the
 * driver checks at launch (configuration, resources) cannot arise; errors of
 * the kernels themselves surface at the next synchronization, as natively.
 *
 * Not held: per-thread default stream launches (only the launching thread can
 * name that stream, and a flush may come from another thread), cooperative,
 * cluster and attributed launches (cuLaunchKernelEx with attributes; without
 * any, hooks/launch.c hands it over as a cuLaunchKernel), launches with `extra`,
 * launches during stream capture, kernels whose parameter layout the driver
 * cannot report, and sequences whose kernels turned out long (measured on the
 * first replays: a graph saves ~2.5 us a node, nothing worth holding for).
 *
 * Owns: the topologies (uthash by hash, under `lock`) and the one held
 * sequence (under `lock`). Issuing held launches happens with `lock` held, so
 * that no launch can overtake them; the driver calls made there (launches and
 * context push/pop) never wait for another thread of this library. They can
 * wait for the device, though: a launch blocks when the device's queue is
 * full, and if a queued kernel spins on host memory that the program writes
 * only after its next CUDA call, that call waits for `lock` for ever. Such
 * programs (polling host-mapped memory while launching) are the ones the
 * design excludes from graphs; keep GPUACCEL_GRAPHS off for them. */
#define _GNU_SOURCE
#include "features/graphs/graphs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "core/clock.h"
#include "core/log.h"
#include "features/feature.h"
#include "tracking/registry.h"
#include "tracking/sequence.h"
#include "tracking/streams.h"

enum {
    LONG_NODE_NS = 50000, /* a node longer than this: the graph cannot pay back */
    WATCHDOG_NS = 2000000,
};

typedef ga_seq_node_t node_key_t; /* a launch, as the sequence detector hands it over */

typedef struct topo {
    uint64_t hash;
    unsigned n;
    node_key_t *nodes;
    unsigned sightings;
    CUcontext ctx;
    CUgraph graph;
    CUgraphExec exec;
    CUgraphNode *gnodes;
    unsigned char **last;   /* per node: the parameter bytes the exec holds */
    const ga_kernel_t **kinfo;
    bool built, dead;       /* dead: never held again (build failed, long, mismatching) */
    unsigned mismatches;
    uint64_t replays, used;
    CUevent timing[2];      /* around the first replay, to measure node length */
    bool timing_pending;
    UT_hash_handle hh;
} topo_t;

/* The held sequence: launches of `topo` on `stream`, params[k] for k < count. */
typedef struct held {
    topo_t *topo;
    CUstream stream;
    CUcontext ctx;
    bool per_thread_entry;  /* which cuLaunchKernel variant the program used */
    unsigned count;
    unsigned char **params;
    void ***argv;           /* per node: pointers into params, as kernelParams */
    uint64_t since;
} held_t;

/* Candidates by their first launch: where a held sequence can start. */
typedef struct start {
    node_key_t key;
    topo_t *best;
    UT_hash_handle hh;
} start_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static topo_t *topos;       /* guarded by lock */
static start_t *starts;     /* guarded by lock */
/* A filter over the first launches of candidates (set when one is indexed,
 * never cleared but in a fork child): a launch whose bit is clear starts no
 * candidate, so when nothing is held it goes to the driver without the lock. */
enum { FILTER_BITS = 1 << 12 };
static _Atomic uint64_t start_filter[FILTER_BITS / 64];
static unsigned n_built;    /* guarded by lock */
static held_t held;         /* guarded by lock */
static uint64_t use_clock;  /* guarded by lock */
static bool watchdog_started; /* guarded by lock */
static const ga_rt_t *graphs_rt; /* guarded by lock; set at init, before subscribing */
_Atomic bool ga_graphs_held;  /* a sequence is held: flush points must flush */
static _Atomic uint64_t seen, built, replays, fallbacks, fallback_mismatch, fallback_flush,
    fallback_timeout, long_skipped;

static unsigned filter_bit(const node_key_t *k)
{
    uint64_t h = (uint64_t)(uintptr_t)k->f * 0x9E3779B97F4A7C15ull;
    h ^= (k->grid[0] * 0xC2B2AE3D27D4EB4Full) + k->block[0] + ((uint64_t)k->shmem << 32);
    return (unsigned)((h * 0x9E3779B97F4A7C15ull) >> 52) % FILTER_BITS;
}

static void filter_add(const node_key_t *k)
{
    unsigned b = filter_bit(k);
    atomic_fetch_or_explicit(&start_filter[b / 64], 1ull << (b % 64), memory_order_release);
}

static bool filter_maybe(const node_key_t *k)
{
    unsigned b = filter_bit(k);
    return (atomic_load_explicit(&start_filter[b / 64], memory_order_acquire) >> (b % 64)) & 1;
}

/* ---- learning ------------------------------------------------------------------ */

static bool better(const topo_t *a, const topo_t *b)
{
    return !b || a->replays > b->replays || (a->replays == b->replays && a->n > b->n);
}

/* A topology became a candidate, or stopped being one: fix the start index. */
static void index_locked(const ga_rt_t *rt, topo_t *t)
{
    start_t *st;
    HASH_FIND(hh, starts, &t->nodes[0], sizeof(node_key_t), st);
    bool eligible = !t->dead && t->sightings >= 2 && t->n >= rt->cfg.graph_min;
    if (eligible) {
        if (!st && (st = calloc(1, sizeof *st))) {
            st->key = t->nodes[0];
            HASH_ADD(hh, starts, key, sizeof st->key, st);
            filter_add(&st->key);
        }
        if (st && better(t, st->best))
            st->best = t;
        return;
    }
    if (!st || st->best != t)
        return;
    st->best = NULL; /* find the next best, if any (rare: a topology died) */
    topo_t *o, *tmp;
    HASH_ITER(hh, topos, o, tmp)
        if (!o->dead && o->sightings >= 2 && o->n >= rt->cfg.graph_min &&
            !memcmp(&o->nodes[0], &t->nodes[0], sizeof(node_key_t)) && better(o, st->best))
            st->best = o;
}

static void kill_locked(const ga_rt_t *rt, topo_t *t)
{
    t->dead = true;
    index_locked(rt, t);
}

/* The sequence detector's sink: count one sighting of the topology
 * nodes[0..n). */
static void count_topology(const node_key_t *nodes, unsigned n, CUstream s)
{
    (void)s;
    uint64_t h = ga_seq_hash(nodes, n);
    pthread_mutex_lock(&lock);
    const ga_rt_t *rt = graphs_rt;
    topo_t *t;
    HASH_FIND(hh, topos, &h, sizeof h, t);
    if (!t) {
        t = calloc(1, sizeof *t);
        node_key_t *copy = t ? malloc(n * sizeof *copy) : NULL;
        if (!copy) {
            free(t);
            pthread_mutex_unlock(&lock);
            return;
        }
        memcpy(copy, nodes, n * sizeof *copy);
        t->hash = h, t->n = n, t->nodes = copy;
        HASH_ADD(hh, topos, hash, sizeof t->hash, t);
    }
    if (++t->sightings == 2)
        index_locked(rt, t);
    pthread_mutex_unlock(&lock);
    atomic_fetch_add_explicit(&seen, 1, memory_order_relaxed);
}

/* ---- issuing held launches (under lock) ----------------------------------------- */

static void free_held_buffers(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        free(held.params ? held.params[i] : NULL);
        free(held.argv ? held.argv[i] : NULL);
    }
    free(held.params);
    free(held.argv);
    memset(&held, 0, sizeof held);
    atomic_store_explicit(&ga_graphs_held, false, memory_order_release);
}

/* Held launches counted as work on their stream when they were held; they
 * count again now that they really are enqueued, so a fence that completed in
 * between (and declared the stream idle) does not outlast them, and windows
 * filled meanwhile are dropped. Called in the held launches' context. */
static void note_issued_locked(const ga_rt_t *rt)
{
    ga_work_end(rt, CUDA_SUCCESS, held.stream, held.per_thread_entry, true);
}

/* Issue every held launch one by one, as the program made them. */
static void issue_held_locked(const ga_rt_t *rt)
{
    if (!held.topo)
        return;
    ga_id_t id = held.per_thread_entry ? GA_ID_cuLaunchKernel_ptsz : GA_ID_cuLaunchKernel;
    __typeof__(&cuLaunchKernel) launch = GA_REAL(rt, id, cuLaunchKernel);
    ga_ctx_scope_t scope; /* a flush may come from a thread with another context, or none */
    if (ga_ctx_enter(rt, held.ctx, &scope)) {
        for (unsigned i = 0; i < held.count && launch; i++) {
            const node_key_t *k = &held.topo->nodes[i];
            CUresult r = launch((CUfunction)k->f, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                k->block[1], k->block[2], k->shmem, held.stream, held.argv[i], NULL);
            if (r != CUDA_SUCCESS) /* cannot happen for a configuration that ran twice */
                ga_warn("graphs: issuing a held launch failed: %d", (int)r);
        }
        note_issued_locked(rt);
    } else {
        ga_error("graphs: cannot make the context of held launches current; %u launches lost",
                 held.count);
    }
    ga_ctx_leave(rt, &scope);
    free_held_buffers(held.topo->n);
}

static void fallback_locked(const ga_rt_t *rt, _Atomic uint64_t *why)
{
    atomic_fetch_add_explicit(&fallbacks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(why, 1, memory_order_relaxed);
    issue_held_locked(rt);
}

void ga_graphs_flush(const ga_rt_t *rt)
{
    if (atomic_load_explicit(&ga_graphs_held, memory_order_acquire)) {
        pthread_mutex_lock(&lock);
        if (held.topo)
            fallback_locked(rt, &fallback_flush);
        pthread_mutex_unlock(&lock);
    }
}

/* ---- the graph ------------------------------------------------------------------ */

static void node_params(const topo_t *t, unsigned i, void **argv, CUDA_KERNEL_NODE_PARAMS *p)
{
    const node_key_t *k = &t->nodes[i];
    memset(p, 0, sizeof *p);
    if (t->kinfo[i]->is_library)
        p->kern = (CUkernel)k->f, p->ctx = t->ctx;
    else
        p->func = (CUfunction)k->f;
    p->gridDimX = k->grid[0], p->gridDimY = k->grid[1], p->gridDimZ = k->grid[2];
    p->blockDimX = k->block[0], p->blockDimY = k->block[1], p->blockDimZ = k->block[2];
    p->sharedMemBytes = k->shmem;
    p->kernelParams = argv;
}

/* Keep at most GPUACCEL_GRAPH_CACHE graphs instantiated: destroy the least
 * recently used one (it is learned again if it comes back). */
static void evict_locked(const ga_rt_t *rt)
{
    topo_t *lru = NULL, *t, *tmp;
    HASH_ITER(hh, topos, t, tmp)
        if (t->built && t != held.topo && (!lru || t->used < lru->used))
            lru = t;
    if (!lru)
        return;
    __typeof__(&cuGraphExecDestroy) xd = GA_REAL(rt, GA_ID_cuGraphExecDestroy, cuGraphExecDestroy);
    __typeof__(&cuGraphDestroy) gd = GA_REAL(rt, GA_ID_cuGraphDestroy, cuGraphDestroy);
    if (xd)
        xd(lru->exec);
    if (gd)
        gd(lru->graph);
    for (unsigned i = 0; i < lru->n; i++)
        free(lru->last[i]);
    free(lru->last);
    free(lru->gnodes);
    lru->last = NULL, lru->gnodes = NULL, lru->exec = NULL, lru->graph = NULL;
    lru->built = false;
    n_built--;
}

/* Build and instantiate the graph from the held parameters. */
static bool build_locked(const ga_rt_t *rt, topo_t *t)
{
    if (rt->cfg.graph_cache && n_built >= rt->cfg.graph_cache)
        evict_locked(rt);
    __typeof__(&cuGraphCreate) create = GA_REAL(rt, GA_ID_cuGraphCreate, cuGraphCreate);
    __typeof__(&cuGraphAddKernelNode_v2) add =
        GA_REAL(rt, GA_ID_cuGraphAddKernelNode_v2, cuGraphAddKernelNode_v2);
    __typeof__(&cuGraphInstantiateWithFlags) inst =
        GA_REAL(rt, GA_ID_cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags);
    t->ctx = held.ctx; /* library-kernel nodes run in the context named here */
    t->gnodes = calloc(t->n, sizeof *t->gnodes);
    t->last = calloc(t->n, sizeof *t->last);
    if (!create || !add || !inst || !t->gnodes || !t->last ||
        create(&t->graph, 0) != CUDA_SUCCESS)
        return false;
    for (unsigned i = 0; i < t->n; i++) {
        CUDA_KERNEL_NODE_PARAMS p;
        node_params(t, i, held.argv[i], &p);
        /* A chain: node i after node i-1, as on the stream. */
        if (add(&t->gnodes[i], t->graph, i ? &t->gnodes[i - 1] : NULL, i ? 1 : 0, &p) !=
            CUDA_SUCCESS)
            return false;
        size_t bytes = t->kinfo[i]->param_bytes;
        t->last[i] = malloc(bytes ? bytes : 1);
        if (!t->last[i])
            return false;
        memcpy(t->last[i], held.params[i], bytes);
    }
    if (inst(&t->exec, t->graph, 0) != CUDA_SUCCESS)
        return false;
    t->built = true;
    n_built++;
    atomic_fetch_add_explicit(&built, 1, memory_order_relaxed);
    return true;
}

/* Update the nodes whose parameters changed since the exec last ran. */
static bool update_locked(const ga_rt_t *rt, topo_t *t)
{
    __typeof__(&cuGraphExecKernelNodeSetParams_v2) set = GA_REAL(
        rt, GA_ID_cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams_v2);
    for (unsigned i = 0; i < t->n; i++) {
        size_t bytes = t->kinfo[i]->param_bytes;
        if (!memcmp(t->last[i], held.params[i], bytes))
            continue;
        CUDA_KERNEL_NODE_PARAMS p;
        node_params(t, i, held.argv[i], &p);
        if (!set || set(t->exec, t->gnodes[i], &p) != CUDA_SUCCESS)
            return false;
        memcpy(t->last[i], held.params[i], bytes);
    }
    return true;
}

/* Measure the first replay: a graph of long kernels is not worth holding for. */
static void time_replay_locked(const ga_rt_t *rt, topo_t *t, int which)
{
    __typeof__(&cuEventCreate) create = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    __typeof__(&cuEventRecord) record = GA_REAL(rt, GA_ID_cuEventRecord, cuEventRecord);
    if (!create || !record)
        return;
    if (!t->timing[which] && create(&t->timing[which], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return;
    record(t->timing[which], held.stream);
    if (which == 1)
        t->timing_pending = true;
}

static void judge_timing_locked(const ga_rt_t *rt, topo_t *t)
{
    __typeof__(&cuEventQuery) query = GA_REAL(rt, GA_ID_cuEventQuery, cuEventQuery);
    __typeof__(&cuEventElapsedTime) elapsed = ga_real_elapsed(rt);
    float ms = 0;
    if (!t->timing_pending || !query || !elapsed || !ga_own_calls_enter())
        return;
    CUresult done = query(t->timing[1]); /* a query is unsafe during capture */
    ga_own_calls_leave();
    if (done != CUDA_SUCCESS)
        return;
    t->timing_pending = false;
    if (elapsed(&ms, t->timing[0], t->timing[1]) != CUDA_SUCCESS)
        return;
    if (ms * 1e6f / (float)t->n > LONG_NODE_NS) {
        kill_locked(rt, t);
        atomic_fetch_add_explicit(&long_skipped, 1, memory_order_relaxed);
        ga_debug("graphs: %u-kernel sequence takes %.3f ms: left alone", t->n, (double)ms);
    }
}

/* The whole sequence is held: launch it as a graph. Building, updating and
 * timing it are the library's own calls: while a capture is open the held
 * launches are issued as they were instead. */
static CUresult replay_entered_locked(const ga_rt_t *rt)
{
    topo_t *t = held.topo;
    ga_ctx_scope_t scope;
    if (!ga_ctx_enter(rt, held.ctx, &scope)) {
        fallback_locked(rt, &fallback_flush);
        return CUDA_SUCCESS;
    }
    bool ok = t->built ? update_locked(rt, t) : build_locked(rt, t);
    __typeof__(&cuGraphLaunch) glaunch = GA_REAL(rt, GA_ID_cuGraphLaunch, cuGraphLaunch);
    if (ok && glaunch) {
        bool timed = t->replays == 1; /* the first replay may include upload */
        if (timed)
            time_replay_locked(rt, t, 0);
        ok = glaunch(t->exec, held.stream) == CUDA_SUCCESS;
        if (ok)
            note_issued_locked(rt);
        if (timed && ok)
            time_replay_locked(rt, t, 1);
    }
    ga_ctx_leave(rt, &scope);
    if (!ok) { /* never again for this one; the program's launches go as they were */
        kill_locked(rt, t);
        ga_debug("graphs: building or launching a %u-kernel graph failed", t->n);
        fallback_locked(rt, &fallback_flush);
        return CUDA_SUCCESS;
    }
    t->replays++;
    atomic_fetch_add_explicit(&replays, 1, memory_order_relaxed);
    free_held_buffers(t->n);
    return CUDA_SUCCESS;
}

static CUresult replay_locked(const ga_rt_t *rt)
{
    if (!ga_own_calls_enter()) {
        fallback_locked(rt, &fallback_flush);
        return CUDA_SUCCESS;
    }
    CUresult r = replay_entered_locked(rt);
    ga_own_calls_leave();
    return r;
}

/* ---- the launch hook's part ------------------------------------------------------ */

/* Copy a launch's parameters into held slot i. */
static bool hold_params_locked(unsigned i, const ga_kernel_t *k, void **kernelParams)
{
    size_t bytes = k->param_bytes;
    unsigned char *buf = calloc(1, bytes ? bytes : 1); /* padding compares equal */
    void **argv = malloc((k->nparams ? k->nparams : 1) * sizeof *argv);
    if (!buf || !argv) {
        free(buf);
        free(argv);
        return false;
    }
    for (unsigned p = 0; p < k->nparams; p++) {
        memcpy(buf + k->offset[p], kernelParams[p], k->size[p]);
        argv[p] = buf + k->offset[p];
    }
    held.params[i] = buf;
    held.argv[i] = argv;
    return true;
}

/* The candidate starting with this launch, or NULL. */
static topo_t *candidate_locked(const node_key_t *k, CUcontext ctx)
{
    start_t *st;
    HASH_FIND(hh, starts, k, sizeof *k, st);
    topo_t *t = st ? st->best : NULL;
    return t && !t->dead && !(t->built && t->ctx != ctx) ? t : NULL;
}

static void start_watchdog_locked(void);

ga_graph_verdict_t ga_graphs_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                                    const unsigned block[3], unsigned shmem, CUstream s,
                                    bool per_thread, void **kernelParams, void **extra)
{
    node_key_t k = ga_seq_node(f, grid, block, shmem);
    if (!ga_seq_learnable(s, per_thread, kernelParams, extra)) {
        ga_graphs_flush(rt); /* (the hooks end the detector's segment too) */
        return GA_GRAPH_LAUNCH;
    }
    /* Nothing held and no candidate starts here: the common launch, no lock. */
    if (!atomic_load_explicit(&ga_graphs_held, memory_order_acquire) && !filter_maybe(&k))
        return GA_GRAPH_LAUNCH;
    CUcontext ctx = ga_current_ctx(rt);
    pthread_mutex_lock(&lock);
    if (held.topo && (held.stream != s || held.ctx != ctx))
        fallback_locked(rt, &fallback_flush); /* a launch elsewhere: keep the order */
    if (held.topo) {
        topo_t *t = held.topo;
        const ga_kernel_t *ki = t->kinfo[held.count];
        if (!memcmp(&t->nodes[held.count], &k, sizeof k) &&
            hold_params_locked(held.count, ki, kernelParams)) {
            held.count++;
            CUresult r = held.count == t->n ? replay_locked(rt) : CUDA_SUCCESS;
            pthread_mutex_unlock(&lock);
            return r == CUDA_SUCCESS ? GA_GRAPH_HELD : GA_GRAPH_LAUNCH;
        }
        fallback_locked(rt, &fallback_mismatch);
        if (++t->mismatches > 8 && t->mismatches > t->replays)
            kill_locked(rt, t); /* this sequence rarely completes: stop holding for it */
    }
    topo_t *t = candidate_locked(&k, ctx);
    if (t)
        judge_timing_locked(rt, t);
    if (t && !t->dead) {
        bool ready = t->kinfo != NULL;
        if (!ready) { /* parameter layouts: every kernel of it launched fine twice */
            t->kinfo = calloc(t->n, sizeof *t->kinfo);
            ready = t->kinfo != NULL;
            for (unsigned i = 0; ready && i < t->n; i++) {
                t->kinfo[i] = ga_kernel_info(rt, (CUfunction)t->nodes[i].f);
                ready = t->kinfo[i] && t->kinfo[i]->params_known;
            }
            if (!ready)
                kill_locked(rt, t);
        }
        held.params = ready ? calloc(t->n, sizeof *held.params) : NULL;
        held.argv = ready ? calloc(t->n, sizeof *held.argv) : NULL;
        if (held.params && held.argv && hold_params_locked(0, t->kinfo[0], kernelParams)) {
            held.topo = t, held.stream = s, held.ctx = ctx, held.per_thread_entry = per_thread;
            held.count = 1, held.since = ga_now_ns();
            t->used = ++use_clock;
            atomic_store_explicit(&ga_graphs_held, true, memory_order_release);
            start_watchdog_locked();
            pthread_cond_signal(&wake);
            pthread_mutex_unlock(&lock);
            return GA_GRAPH_HELD;
        }
        free(held.params);
        free(held.argv);
        held.params = NULL, held.argv = NULL;
    }
    pthread_mutex_unlock(&lock);
    return GA_GRAPH_LAUNCH;
}

/* ---- the watchdog ------------------------------------------------------------------ */

/* Programs may wait for a kernel without calling CUDA (polling host-mapped
 * memory). Held launches older than WATCHDOG_NS are issued from here. */
static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        if (!held.topo) {
            pthread_cond_wait(&wake, &lock);
            continue;
        }
        uint64_t deadline = held.since + WATCHDOG_NS;
        struct timespec ts = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
        pthread_cond_timedwait(&wake, &lock, &ts);
        if (held.topo && ga_now_ns() >= held.since + WATCHDOG_NS)
            fallback_locked(graphs_rt, &fallback_timeout);
    }
    return NULL;
}

static void start_watchdog_locked(void)
{
    if (watchdog_started)
        return;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_destroy(&wake);
    pthread_cond_init(&wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_t t;
    watchdog_started = pthread_create(&t, NULL, watchdog, NULL) == 0;
    if (watchdog_started)
        pthread_detach(t);
}

/* ---- lifecycle ------------------------------------------------------------------ */

void ga_graphs_init(const ga_rt_t *rt)
{
    pthread_mutex_lock(&lock);
    graphs_rt = rt;
    pthread_mutex_unlock(&lock);
    if (!ga_seq_subscribe(count_topology))
        ga_warn("graphs: the sequence detector has no room for another subscriber: "
                "nothing is learned");
}

/* Forget every topology (and destroy built graphs, unless their context is gone). */
static void drop_all(const ga_rt_t *rt, CUcontext only, bool destroy)
{
    __typeof__(&cuGraphExecDestroy) xdestroy =
        GA_REAL(rt, GA_ID_cuGraphExecDestroy, cuGraphExecDestroy);
    __typeof__(&cuGraphDestroy) gdestroy = GA_REAL(rt, GA_ID_cuGraphDestroy, cuGraphDestroy);
    pthread_mutex_lock(&lock);
    if (held.topo)
        fallback_locked(rt, &fallback_flush);
    start_t *st, *stmp;
    HASH_ITER(hh, starts, st, stmp) { /* rebuilt as topologies are seen again */
        HASH_DEL(starts, st);
        free(st);
    }
    topo_t *t, *tmp;
    HASH_ITER(hh, topos, t, tmp) {
        if (only && t->ctx != only && t->built) {
            index_locked(rt, t);
            continue;
        }
        HASH_DEL(topos, t);
        n_built -= t->built;
        if (destroy && t->exec && xdestroy)
            xdestroy(t->exec);
        if (destroy && t->graph && gdestroy)
            gdestroy(t->graph);
        for (unsigned i = 0; t->last && i < t->n; i++)
            free(t->last[i]);
        free(t->last);
        free(t->gnodes);
        free(t->kinfo);
        free(t->nodes);
        free(t);
    }
    pthread_mutex_unlock(&lock);
}

void ga_graphs_unload(const ga_rt_t *rt, const void *owner)
{
    (void)owner;
    drop_all(rt, NULL, true); /* kernel handles may be reused after an unload */
}

void ga_graphs_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    drop_all(rt, ctx, false); /* the driver destroyed them with the context */
}

void ga_graphs_stats(ga_graphs_stats_t *s)
{
    s->segments = atomic_load(&seen);
    s->built = atomic_load(&built);
    s->replays = atomic_load(&replays);
    s->fallbacks = atomic_load(&fallbacks);
    s->fallback_mismatch = atomic_load(&fallback_mismatch);
    s->fallback_flush = atomic_load(&fallback_flush);
    s->fallback_timeout = atomic_load(&fallback_timeout);
    s->long_skipped = atomic_load(&long_skipped);
}

static void graphs_report(void)
{
    ga_graphs_stats_t s;
    ga_graphs_stats(&s);
    if (s.segments)
        ga_info("graphs: segments=%llu built=%llu replays=%llu fallbacks=%llu (mismatch %llu, "
                "flush %llu, timeout %llu) long_skipped=%llu",
                (unsigned long long)s.segments, (unsigned long long)s.built,
                (unsigned long long)s.replays, (unsigned long long)s.fallbacks,
                (unsigned long long)s.fallback_mismatch, (unsigned long long)s.fallback_flush,
                (unsigned long long)s.fallback_timeout, (unsigned long long)s.long_skipped);
}

static void fork_child(void)
{
    /* No CUDA state and no watchdog thread in the child: start over. */
    pthread_cond_init(&wake, NULL);
    topos = NULL;
    starts = NULL;
    for (unsigned i = 0; i < FILTER_BITS / 64; i++)
        atomic_store(&start_filter[i], 0);
    n_built = 0;
    memset(&held, 0, sizeof held);
    watchdog_started = false;
    atomic_store(&ga_graphs_held, false);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

static bool graphs_hold(const ga_rt_t *rt, const ga_launch_t *l, CUresult *r)
{
    if (ga_graphs_launch(rt, l->f, l->grid, l->block, l->shmem, l->stream, l->per_thread,
                         l->params, l->extra) != GA_GRAPH_HELD)
        return false;
    *r = CUDA_SUCCESS;
    return true;
}

static void graphs_flush(const ga_rt_t *rt, ga_flush_t what, CUstream s)
{
    (void)what, (void)s; /* one sequence is held at most: flush it whatever asked */
    ga_graphs_flush(rt);
}

GA_SWITCH(graphs)

const ga_feature_t ga_feature_graphs = {
    .summary = "repeated launch sequences replayed as CUDA graphs",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuGraphCreate, GA_ID_cuGraphAddKernelNode_v2,
             GA_ID_cuGraphInstantiateWithFlags, GA_ID_cuGraphExecKernelNodeSetParams_v2,
             GA_ID_cuGraphLaunch, GA_ID_cuFuncGetParamInfo, GA_ID_cuKernelGetParamInfo),
    .uses = GA_USES_STREAMS | GA_USES_SEQUENCES,
    .init = ga_graphs_init,
    .report = graphs_report,
    .fork = &fork_ops,
    .hold = graphs_hold,
    .flush = graphs_flush,
    .ctx_gone = ga_graphs_ctx_gone,
    .unload = ga_graphs_unload,
};
