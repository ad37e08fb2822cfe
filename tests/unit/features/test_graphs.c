/* test_graphs.c - the graphs feature's decisions, through the launch and sync
 * hooks over the stub driver (tests/unit/stub_more.h), which logs every kernel
 * the device runs, one by one or as a graph node, with its arguments: a
 * sequence seen twice with at least GPUACCEL_GRAPH_MIN launches becomes a
 * candidate; its next launches are held and replayed as one graph, whose
 * nodes are updated when their parameters change; a mismatch or a flush
 * issues the held launches in order, as they were made; per-thread stream
 * launches, launches with `extra` and launches during a capture are never
 * held; a long run without a flush point is learned in periodic pieces; a
 * sequence whose kernels are long stops being held. */
#include "check.h"
#include "features/graphs/graphs.h"
#include "stub_driver.h"
#include "stub_more.h"

enum { MIN = 5, N = 5 };

static ga_rt_t rt;
static CUstream s, s2, s_cap;

static ga_graphs_stats_t stats(void)
{
    ga_graphs_stats_t st;
    ga_graphs_stats(&st);
    return st;
}

/* The program's launch of k on stream st with value v, grid g, block 64. */
static CUresult launch_as(stub_kernel_t *k, CUstream st, unsigned g, uint32_t v, ga_id_t id,
                          void **extra)
{
    return stub_call(&rt, id, k, (const unsigned[]){g, 1, 1}, (const unsigned[]){64, 1, 1}, 0, st,
                     v, extra);
}

static void launch(stub_kernel_t *k, uint32_t v)
{
    launch_as(k, s, 1, v, GA_ID_cuLaunchKernel, NULL);
}

static void sync_stream(void)
{
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, s);
}

static void fresh(stub_kernel_t **ks, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        ks[i] = stub_kernel(NULL, false);
}

/* Was launch number i of the device's k on stream st, grid g, value v, run
 * alone (not as a graph node)? */
static bool ran_one(unsigned i, const stub_kernel_t *k, CUstream st, unsigned g, uint32_t v)
{
    const stub_run_t *r = stub_ran_at(i);
    return i < stub_nran && r->k == k && r->stream == st && r->grid[0] == g && r->arg[1] == v &&
           !r->graph;
}

/* Did the device run, from launch number `from` on, exactly ks[0..n) on s
 * with the values vals, each as a graph node (graph 1) or alone (0)? */
static bool ran(unsigned from, stub_kernel_t *const *ks, unsigned n, const uint32_t *vals,
                bool graph)
{
    if (stub_nran != from + n)
        return false;
    for (unsigned i = 0; i < n; i++) {
        const stub_run_t *r = stub_ran_at(from + i);
        if (r->k != ks[i] || r->arg[0] != stub_arg || r->arg[1] != vals[i] || r->stream != s ||
            r->graph != graph || r->grid[0] != 1 || r->block[0] != 64)
            return false;
    }
    return true;
}

/* The sequence launched once, then a flush point. */
static void sighting(stub_kernel_t *const *ks, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        launch(ks[i], i);
    sync_stream();
}

/* Each launch reaches the driver when it is made. */
static bool direct(stub_kernel_t *const *ks, unsigned n, const uint32_t *vals)
{
    unsigned from = stub_nran;
    for (unsigned i = 0; i < n; i++) {
        launch(ks[i], vals[i]);
        if (stub_nran != from + i + 1)
            return false;
    }
    return ran(from, ks, n, vals, false);
}

/* Every launch is held (nothing reaches the driver) until the last, which
 * replays the sequence as one graph of n nodes with the values given. */
static bool replayed(stub_kernel_t *const *ks, unsigned n, const uint32_t *vals)
{
    unsigned from = stub_nran;
    int graphs = stub_graph_launches;
    for (unsigned i = 0; i + 1 < n; i++) {
        launch(ks[i], vals[i]);
        if (stub_nran != from)
            return false;
    }
    launch(ks[n - 1], vals[n - 1]);
    return stub_graph_launches == graphs + 1 && stub_last_graph_n == n &&
           ran(from, ks, n, vals, true);
}

/* Held launches older than 2 ms are issued by the watchdog: a step that
 * holds is run again (up to 5 times) if the watchdog fired during it, as it
 * may on a loaded machine. */
#define UNTIMED(ok, step)                                                                  \
    do {                                                                                   \
        for (int try_ = 0; try_ < 5; try_++) {                                             \
            uint64_t t_ = stats().fallback_timeout;                                        \
            (ok) = (step);                                                                 \
            if (stats().fallback_timeout == t_)                                            \
                break;                                                                     \
            sync_stream();                                                                        \
        }                                                                                  \
    } while (0)

static const uint32_t v0[N] = {20, 21, 22, 23, 24}, v1[N] = {20, 21, 99, 23, 24};

/* Shorter than GPUACCEL_GRAPH_MIN: never a candidate; long enough: a
 * candidate after two sightings, not one. */
static void candidates(void)
{
    bool ok;
    stub_kernel_t *four[4], *five[N];
    fresh(four, 4);
    sighting(four, 4);
    sighting(four, 4);
    sighting(four, 4);
    CHECK(direct(four, 4, v0));
    sync_stream();

    fresh(five, N);
    sighting(five, N);
    CHECK(direct(five, N, v0)); /* seen once: launched as made, and seen twice now */
    sync_stream();
    uint64_t built = stats().built;
    UNTIMED(ok, replayed(five, N, v0));
    CHECK(ok && stats().built == built + 1);
    sync_stream();

    /* the same parameters: replayed, no node updated; one changed: that
     * node alone is updated, and runs with the new value */
    int sets = stub_graph_sets;
    UNTIMED(ok, replayed(five, N, v0));
    CHECK(ok && stub_graph_sets == sets);
    sync_stream();
    UNTIMED(ok, replayed(five, N, v1));
    CHECK(ok && stub_graph_sets == sets + 1 && stats().built == built + 1);
    sync_stream();
}

/* Held T0, T1, then a launch that does not continue the sequence: the held
 * ones are issued first, in order, with the values they were made with. */
static bool mismatch(stub_kernel_t *const *t, stub_kernel_t *next, unsigned grid)
{
    unsigned from = stub_nran;
    launch(t[0], 40);
    launch(t[1], 41);
    if (stub_nran != from)
        return false;
    launch_as(next, s, grid, 42, GA_ID_cuLaunchKernel, NULL);
    return stub_nran == from + 3 && ran_one(from, t[0], s, 1, 40) &&
           ran_one(from + 1, t[1], s, 1, 41) && ran_one(from + 2, next, s, grid, 42);
}

/* Held T0..T2, then a flush point (a sync, or a launch on another stream). */
static bool flushed(stub_kernel_t *const *t, bool by_sync)
{
    unsigned from = stub_nran;
    for (unsigned i = 0; i < 3; i++)
        launch(t[i], 50 + i);
    if (stub_nran != from)
        return false;
    if (by_sync)
        sync_stream();
    else /* the sequence's next kernel, but on another stream */
        launch_as(t[3], s2, 1, 53, GA_ID_cuLaunchKernel, NULL);
    bool in_order = ran_one(from, t[0], s, 1, 50) && ran_one(from + 1, t[1], s, 1, 51) &&
                    ran_one(from + 2, t[2], s, 1, 52);
    return in_order && (by_sync ? stub_nran == from + 3
                                : stub_nran == from + 4 && ran_one(from + 3, t[3], s2, 1, 53));
}

static void fallbacks(void)
{
    bool ok;
    stub_kernel_t *t[N];
    fresh(t, N);
    sighting(t, N);
    sighting(t, N);
    uint64_t mism = stats().fallback_mismatch;
    UNTIMED(ok, mismatch(t, stub_kernel(NULL, false), 1)); /* another kernel */
    CHECK(ok && stats().fallback_mismatch == mism + 1);
    sync_stream();
    UNTIMED(ok, mismatch(t, t[2], 2)); /* the right kernel, another grid */
    CHECK(ok && stats().fallback_mismatch == mism + 2);
    sync_stream();
    uint64_t flushes = stats().fallback_flush;
    UNTIMED(ok, flushed(t, true));
    CHECK(ok && stats().fallback_flush > flushes);
    UNTIMED(ok, flushed(t, false));
    CHECK(ok);
    sync_stream();
}

/* A launch that would start a held sequence, made the way that must not be
 * held: it reaches the driver at once. */
static bool goes_direct(stub_kernel_t *k, CUstream st, ga_id_t id, void **extra)
{
    unsigned from = stub_nran;
    launch_as(k, st, 1, 60, id, extra);
    bool ok = stub_nran == from + 1 && ran_one(from, k, st, 1, 60);
    ga_hook_stream_sync(&rt, GA_ID_cuStreamSynchronize, st);
    return ok;
}

static bool held_first(stub_kernel_t *k)
{
    unsigned from = stub_nran;
    launch(k, 61);
    bool held = stub_nran == from;
    sync_stream();
    return held && stub_nran == from + 1;
}

static void never_held(void)
{
    bool ok;
    stub_kernel_t *p[N];
    fresh(p, N);
    sighting(p, N);
    sighting(p, N);
    CHECK(goes_direct(p[0], CU_STREAM_PER_THREAD, GA_ID_cuLaunchKernel, NULL));
    CHECK(goes_direct(p[0], NULL, GA_ID_cuLaunchKernel_ptsz, NULL)); /* the per-thread default */
    void *extra[] = {CU_LAUNCH_PARAM_END};
    CHECK(goes_direct(p[0], s, GA_ID_cuLaunchKernel, extra));
    stub_capture_begin(&rt, s_cap);
    CHECK(goes_direct(p[0], s, GA_ID_cuLaunchKernel, NULL) && stub_unsafe_in_capture == 0);
    stub_capture_end(&rt, s_cap);
    UNTIMED(ok, held_first(p[0])); /* the same launch, made plainly: held */
    CHECK(ok);
}

/* 4096 launches of a 4-kernel unit with no flush point: learned as two
 * sightings of a 256-launch piece, replayed from the next unit boundary. */
static bool cycle_replayed(stub_kernel_t *const *q)
{
    stub_kernel_t *ks[256];
    uint32_t vals[256];
    for (unsigned i = 0; i < 256; i++)
        ks[i] = q[i % 4], vals[i] = 5000 + i;
    return replayed(ks, 256, vals);
}

static void periodic(void)
{
    bool ok;
    stub_kernel_t *q[4];
    fresh(q, 4);
    unsigned from = stub_nran;
    uint64_t segments = stats().segments;
    for (unsigned i = 0; i < 4096; i++)
        launch(q[i % 4], i);
    CHECK(stub_nran == from + 4096 && stats().segments == segments + 2);
    UNTIMED(ok, cycle_replayed(q));
    CHECK(ok);
    sync_stream();
}

/* The second replay is timed; a sequence whose kernels take over 50 us each
 * is not held again. */
static void long_kernels(void)
{
    bool ok;
    stub_kernel_t *l[N];
    fresh(l, N);
    sighting(l, N);
    sighting(l, N);
    UNTIMED(ok, replayed(l, N, v0));
    CHECK(ok);
    sync_stream();
    int recorded = stub_events_recorded;
    UNTIMED(ok, replayed(l, N, v0));
    CHECK(ok && stub_events_recorded == recorded + 2); /* around the graph launch */
    sync_stream();
    stub_elapsed_ms = 5.0f; /* 1 ms a kernel */
    uint64_t skipped = stats().long_skipped;
    CHECK(direct(l, N, v0) && stats().long_skipped == skipped + 1);
    sync_stream();
    CHECK(direct(l, N, v1)); /* and never again */
    sync_stream();
    stub_elapsed_ms = 0.001f;
}

int main(void)
{
    stub_runtime(&rt);
    rt.cfg.graphs = true;
    rt.cfg.graph_min = MIN;
    rt.cfg.graph_cache = 64;
    stub_start(&rt);
    s = (CUstream)&stub_streams[0], s2 = (CUstream)&stub_streams[1];
    s_cap = (CUstream)&stub_streams[2];
    stub_stream_flags[2] = CU_STREAM_NON_BLOCKING;

    candidates();
    fallbacks();
    never_held();
    periodic();
    long_kernels();
    return check_done("test_graphs");
}
