/* tuner.c - the tuner (GPUACCEL_TUNER=FILE, `gpuaccel tune`): finds faster
 * launch configurations of a program's own kernels and writes only those it
 * proved bit-identical, as a tune table (tune.h).
 *
 * On the third launch of a kernel configuration (the program's data is then
 * real, and the kernel known to launch), before the launch is issued:
 *   1. synchronize; copy every live allocation of the context to the host;
 *   2. run the original, keep every allocation's contents (A); restore, run it
 *      again: if anything differs from A, the kernel is not deterministic and
 *      is rejected;
 *   3. a launch that changed no memory is not tried (a candidate skipping
 *      work would look the same); for a 1-D launch, each block size from 32
 *      to 1024 keeping the thread count (threads), and, if one thread alone
 *      reproduces A and the launch changed a word per two threads or more
 *      (the kernel is grid-stride), smaller grids (stride): restore, run,
 *      compare every allocation bit for bit with A; time the ones that match
 *      (events, each run from the restored state);
 *   4. restore, and let the program's launch go as it asked: the program
 *      continues with its own result.
 * Refused, with the reason in the table as a comment: kernels using shared
 * memory (its size may follow the block; a failing candidate could fault the
 * context), launches with `extra`, kernels whose outputs differ run to run,
 * programs with memory the tuner cannot restore (managed, registered host
 * memory, VMM mappings, imported or graph allocations: seen in the call
 * counts, or an allocation made while a capture was open), and more than
 * MAX_BYTES of live memory. Stream-ordered and pitched allocations are
 * restored like the others (their hooks tell alloc_done and free_done, and
 * the context is synchronized before a snapshot): real provers use them, and
 * refusing them left every corpus kernel untried. Page-locked host memory is
 * never snapshotted nor restored: the program's other threads may write it
 * while an experiment runs (a loader filling the next batch), and a restore
 * would undo their writes. It is tracked instead, and a launch with a
 * parameter word pointing into it (a kernel that may write host memory
 * through unified addressing) is not tried; a host pointer a kernel finds in
 * device memory is not seen (as the __device__ variables below).
 *
 * Candidates keep the launch's thread count exactly (a block size that does
 * not divide it would add threads: a kernel that is not bounds-checked, or
 * asserts on its index, as sppark's generate_partial_twiddles does, would
 * write past its data or trap). A candidate can still fault the context (a
 * kernel that hard-codes its block size): the driver's error is sticky and the
 * program cannot go on. The tuner then writes the table at once, that
 * configuration marked "faulted"; `gpuaccel tune` runs the program again with
 * GPUACCEL_TUNER_SKIP naming that table, and the tuner leaves such launches
 * alone (the program's own configuration runs, untouched).
 *
 * Not seen, and so not restored: memory a kernel reaches other than through
 * cuMemAlloc allocations, such as a module's __device__ variables; a kernel
 * that keeps state there (a counter, a retirement flag) may be run 2+N times
 * by the tuner. Tune such programs with --kernel naming the others.
 *
 * Owns: the live-allocation list and the results, under `lock`. Runs the
 * experiments with `lock` released (they call the driver), one at a time
 * (`busy`), with every other intercepted call held off (`gate`). */
#define _GNU_SOURCE
#include "features/tune/tuner.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "core/fault.h"
#include "core/log.h"
#include "core/textfile.h"
#include "features/feature.h"
#include "tracking/capture.h"
#include "tracking/device.h"
#include "tracking/registry.h"
#include "core/stats.h"
#include "tracking/streams.h"
#include "features/tune/tune.h"

enum { TRIAL_LAUNCH = 3, MAX_CONFIGS = 64, TIMING_RUNS = 5 };
#define MAX_BYTES ((size_t)8 << 30) /* live memory tried; three snapshots of it are kept */
#define MIN_GAIN 1.05                /* a candidate must be 5% faster */

typedef struct live {
    CUdeviceptr ptr;
    size_t size;
    CUcontext ctx;
    bool host; /* page-locked host memory: never snapshotted, only looked for in parameters */
    UT_hash_handle hh;
} live_t;

typedef struct config {
    struct {
        const void *f;
        unsigned grid[3], block[3], shmem;
    } key;
    unsigned seen;
    UT_hash_handle hh;
} config_t;

typedef struct result {
    ga_tune_entry_t e;    /* e.name points to name */
    char name[512];
    char comment[512];    /* how it was verified, or why not */
    bool accepted;
    struct result *next;
} result_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static live_t *lives;          /* guarded by lock */
static config_t *configs;      /* guarded by lock */
static result_t *results;      /* guarded by lock */
static unsigned n_tried;       /* guarded by lock */
static _Atomic bool busy;      /* an experiment is running */
/* Every intercepted call holds this shared while the tuner runs; an experiment
 * holds it exclusively, so no other thread's launch or copy can touch memory
 * between a snapshot and its restore. */
static pthread_rwlock_t gate = PTHREAD_RWLOCK_INITIALIZER;
/* An allocation was made while a capture was open: it may be a graph's,
 * mapped only while the graph runs, and is not snapshotted. */
static _Atomic bool graph_memory;
static const char *out_path;
/* Launches a candidate of an earlier run faulted (GPUACCEL_TUNER_SKIP): read
 * at init, read-only after. Keys "NAME G,G,G B,B,B SHMEM", the reason beside. */
typedef struct skip {
    char key[600];
    char why[300];
    UT_hash_handle hh;
} skip_t;
static skip_t *skips;
static _Atomic bool dead; /* a candidate faulted the context: no more experiments */

/* ---- what the program allocates ------------------------------------------------ */

static void forget_live_locked(CUdeviceptr p)
{
    live_t *l;
    HASH_FIND(hh, lives, &p, sizeof p, l);
    if (l) {
        HASH_DEL(lives, l);
        free(l);
    }
}

static void track(const ga_rt_t *rt, CUdeviceptr p, size_t size, bool host)
{
    live_t *l = calloc(1, sizeof *l);
    if (!l)
        return;
    l->ptr = p, l->size = size, l->host = host, l->ctx = host ? NULL : ga_current_ctx(rt);
    pthread_mutex_lock(&lock);
    forget_live_locked(p); /* an address the driver handed out again */
    HASH_ADD(hh, lives, ptr, sizeof l->ptr, l);
    pthread_mutex_unlock(&lock);
}

void ga_tuner_alloc(const ga_rt_t *rt, CUdeviceptr p, size_t size)
{
    if (ga_capture_active())
        atomic_store(&graph_memory, true);
    else
        track(rt, p, size, false);
}

void ga_tuner_free(CUdeviceptr p)
{
    pthread_mutex_lock(&lock);
    forget_live_locked(p);
    pthread_mutex_unlock(&lock);
}

/* ---- snapshots ------------------------------------------------------------------ */

typedef struct snap {
    unsigned n;
    CUdeviceptr *ptr;
    size_t *size;
    unsigned char **data;
} snap_t;

static void snap_free(snap_t *s)
{
    for (unsigned i = 0; i < s->n; i++)
        free(s->data ? s->data[i] : NULL);
    free(s->ptr), free(s->size), free(s->data);
    memset(s, 0, sizeof *s);
}

/* The layout (addresses and sizes) of every live device allocation of ctx. */
static bool snap_layout(CUcontext ctx, snap_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&lock);
    unsigned n = 0;
    size_t bytes = 0;
    for (live_t *l = lives; l; l = l->hh.next)
        if (!l->host && l->ctx == ctx)
            n++, bytes += l->size;
    s->ptr = calloc(n ? n : 1, sizeof *s->ptr);
    s->size = calloc(n ? n : 1, sizeof *s->size);
    s->data = calloc(n ? n : 1, sizeof *s->data);
    bool ok = s->ptr && s->size && s->data && bytes <= MAX_BYTES;
    for (live_t *l = lives; ok && l; l = l->hh.next)
        if (!l->host && l->ctx == ctx)
            s->ptr[s->n] = l->ptr, s->size[s->n] = l->size, s->n++;
    pthread_mutex_unlock(&lock);
    for (unsigned i = 0; ok && i < s->n; i++)
        ok = (s->data[i] = malloc(s->size[i] ? s->size[i] : 1)) != NULL;
    if (!ok)
        snap_free(s);
    return ok;
}

static bool snap_read(const ga_rt_t *rt, snap_t *s)
{
    __typeof__(&cuMemcpyDtoH_v2) copy = GA_REAL(rt, GA_ID_cuMemcpyDtoH_v2, cuMemcpyDtoH_v2);
    for (unsigned i = 0; i < s->n; i++)
        if (!copy || copy(s->data[i], s->ptr[i], s->size[i]) != CUDA_SUCCESS)
            return false;
    return true;
}

static bool snap_write(const ga_rt_t *rt, const snap_t *s)
{
    __typeof__(&cuMemcpyHtoD_v2) copy = GA_REAL(rt, GA_ID_cuMemcpyHtoD_v2, cuMemcpyHtoD_v2);
    __typeof__(&cuCtxSynchronize) sync = GA_REAL(rt, GA_ID_cuCtxSynchronize, cuCtxSynchronize);
    for (unsigned i = 0; i < s->n; i++)
        if (!copy || copy(s->ptr[i], s->data[i], s->size[i]) != CUDA_SUCCESS)
            return false;
    /* A copy from pageable memory may return before its DMA lands, and the
     * next launch may be on a non-blocking stream: wait for it. */
    return sync && sync() == CUDA_SUCCESS;
}

/* Does the device now hold exactly what `want` holds? (uses `tmp` as space) */
static bool snap_equal(const ga_rt_t *rt, const snap_t *want, snap_t *tmp)
{
    if (!snap_read(rt, tmp))
        return false;
    for (unsigned i = 0; i < want->n; i++)
        if (memcmp(want->data[i], tmp->data[i], want->size[i]))
            return false;
    return true;
}

/* How many 4-byte words the original run changed (`a` against the state `s`
 * it started from). A candidate that skips work is caught only where the
 * original changed something: a skipped write of a value already in place
 * looks the same as the original's. */
static uint64_t words_changed(const snap_t *s, const snap_t *a)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < s->n; i++)
        for (size_t j = 0; j < s->size[i]; j += 4) {
            size_t w = s->size[i] - j < 4 ? s->size[i] - j : 4;
            n += memcmp(s->data[i] + j, a->data[i] + j, w) != 0;
        }
    return n;
}

/* ---- one experiment --------------------------------------------------------------- */

typedef struct trial {
    const ga_rt_t *rt;
    CUfunction f;
    CUstream s;
    void **params;
    unsigned shmem;
    CUevent ev[2];
} trial_t;

static CUresult run_once(trial_t *t, const unsigned g[3], const unsigned b[3])
{
    __typeof__(&cuLaunchKernel) launch = GA_REAL(t->rt, GA_ID_cuLaunchKernel, cuLaunchKernel);
    __typeof__(&cuCtxSynchronize) sync = GA_REAL(t->rt, GA_ID_cuCtxSynchronize, cuCtxSynchronize);
    CUresult r = launch(t->f, g[0], g[1], g[2], b[0], b[1], b[2], t->shmem, t->s, t->params, NULL);
    return r == CUDA_SUCCESS ? sync() : r;
}

/* Median time of TIMING_RUNS launches, each from the program's state `start`
 * (a kernel that counts or appends may not run twice on the same memory), in
 * microseconds (0 on failure). */
static double time_config(trial_t *t, const snap_t *start, const unsigned g[3],
                          const unsigned b[3])
{
    __typeof__(&cuLaunchKernel) launch = GA_REAL(t->rt, GA_ID_cuLaunchKernel, cuLaunchKernel);
    __typeof__(&cuEventRecord) rec = GA_REAL(t->rt, GA_ID_cuEventRecord, cuEventRecord);
    __typeof__(&cuEventSynchronize) esync =
        GA_REAL(t->rt, GA_ID_cuEventSynchronize, cuEventSynchronize);
    __typeof__(&cuEventElapsedTime) elapsed = ga_real_elapsed(t->rt);
    double us[TIMING_RUNS];
    for (int i = 0; i < TIMING_RUNS; i++) {
        float ms = 0;
        if (!snap_write(t->rt, start) || rec(t->ev[0], t->s) != CUDA_SUCCESS ||
            launch(t->f, g[0], g[1], g[2], b[0], b[1], b[2], t->shmem, t->s, t->params, NULL) !=
                CUDA_SUCCESS ||
            rec(t->ev[1], t->s) != CUDA_SUCCESS || esync(t->ev[1]) != CUDA_SUCCESS ||
            elapsed(&ms, t->ev[0], t->ev[1]) != CUDA_SUCCESS)
            return 0;
        us[i] = ms * 1000.0;
    }
    for (int i = 1; i < TIMING_RUNS; i++) /* insertion sort: five values */
        for (int j = i; j > 0 && us[j - 1] > us[j]; j--) {
            double x = us[j];
            us[j] = us[j - 1], us[j - 1] = x;
        }
    return us[TIMING_RUNS / 2];
}

static void add_result(const char *name, const ga_tune_entry_t *e, bool accepted,
                       const char *comment)
{
    result_t *r = calloc(1, sizeof *r);
    if (!r)
        return;
    snprintf(r->name, sizeof r->name, "%s", name);
    if (e)
        r->e = *e;
    r->e.name = r->name;
    r->accepted = accepted;
    snprintf(r->comment, sizeof r->comment, "%s", comment);
    pthread_mutex_lock(&lock);
    r->next = results;
    results = r;
    pthread_mutex_unlock(&lock);
    ga_info("tuner: %s: %s", name, comment);
}

/* A candidate made the context fail: the driver answers every later call with
 * that error, so the program cannot go on. Say so, write the table now (the
 * exit may never come), and try nothing more. */
static void faulted(const ga_kernel_t *k, const ga_tune_entry_t *e, const unsigned g[3],
                    const unsigned b[3], CUresult r)
{
    char why[300];
    snprintf(why, sizeof why, "faulted: the candidate %u,%u,%u %u,%u,%u made the context fail "
             "(error %d); gpuaccel tune runs the program again, leaving this launch alone",
             g[0], g[1], g[2], b[0], b[1], b[2], (int)r);
    add_result(k->name, e, false, why);
    atomic_store(&dead, true);
    ga_error("tuner: %s: %s", k->name, why);
    ga_tuner_write();
}

static bool one_d(const unsigned g[3], const unsigned b[3])
{
    return g[1] == 1 && g[2] == 1 && b[1] == 1 && b[2] == 1;
}

/* The configurations to try for a 1-D launch: every power-of-two block size
 * (every multiple of 32 when exhaustive) that divides the thread count, which
 * stays the same; with stride, smaller grids at every block size too. */
typedef struct cand {
    unsigned grid[3], block[3];
    bool stride;
} cand_t;

enum { MAX_CANDIDATES = 512 };

static unsigned candidates(const unsigned g[3], const unsigned b[3], int max_threads,
                           bool stride, bool exhaustive, cand_t *out)
{
    unsigned n = 0;
    uint64_t threads = (uint64_t)g[0] * b[0];
    for (unsigned bs = 32; bs <= 1024 && (int)bs <= max_threads && n < MAX_CANDIDATES;
         bs = exhaustive ? bs + 32 : bs * 2) {
        uint64_t gs = (threads + bs - 1) / bs;
        if (bs != b[0] && gs <= 0x7fffffffu && threads % bs == 0) /* no thread added */
            out[n++] = (cand_t){{(unsigned)gs, 1, 1}, {bs, 1, 1}, false};
        for (uint64_t sg = gs / 4; stride && sg >= 1 && n < MAX_CANDIDATES; sg /= 4)
            out[n++] = (cand_t){{(unsigned)sg, 1, 1}, {bs, 1, 1}, true};
    }
    return n;
}

static void experiment(trial_t *t, const ga_kernel_t *k, const unsigned g[3],
                       const unsigned b[3], int cc)
{
    char why[480];
    snap_t orig = {0}, a = {0}, tmp = {0};
    uint64_t changed = 0;
    ga_tune_entry_t e = {k->name, cc, {g[0], g[1], g[2]}, {b[0], b[1], b[2]}, t->shmem,
                         {0, 0, 0}, {0, 0, 0}, false};
    CUcontext ctx = ga_current_ctx(t->rt);
    if (!snap_layout(ctx, &orig) || !snap_layout(ctx, &a) || !snap_layout(ctx, &tmp)) {
        add_result(k->name, &e, false, "not tried: its live memory exceeds 8 GiB or host memory ran out");
        snap_free(&orig), snap_free(&a), snap_free(&tmp);
        return;
    }
    int max_threads = ga_kernel_attr(t->rt, k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    bool ok = snap_read(t->rt, &orig);                      /* 1 */
    ok = ok && run_once(t, g, b) == CUDA_SUCCESS && snap_read(t->rt, &a); /* 2: A */
    ok = ok && snap_write(t->rt, &orig) && run_once(t, g, b) == CUDA_SUCCESS;
    if (!ok) {
        snprintf(why, sizeof why, "not tried: running the original failed");
        add_result(k->name, &e, false, why);
    } else if (!snap_equal(t->rt, &a, &tmp)) {
        add_result(k->name, &e, false, "rejected: its outputs differ between two runs of the "
                                       "original (not deterministic)");
    } else if ((changed = words_changed(&orig, &a)) == 0) {
        add_result(k->name, &e, false, "not tried: the launch changed no memory (its results "
                                       "were already in place), so a candidate that skipped "
                                       "work could not be told apart");
    } else {
        /* Every run starts from the program's own state (never from made-up
         * values: a kernel may take a changed word as an index or a count).
         * Is it grid-stride? A single thread must then produce A on its own
         * (one block would not do: a bounds-checked kernel whose data fit in
         * one block would pass, and its entry would later skip work); and the
         * launch must have changed at least a word per two of its threads,
         * so that what one thread happened to write cannot be all it changed. */
        const unsigned one[3] = {1, 1, 1};
        uint64_t threads = (uint64_t)g[0] * b[0];
        CUresult r1 = CUDA_SUCCESS;
        bool stride = changed * 2 >= threads && snap_write(t->rt, &orig) &&
                      (r1 = run_once(t, one, one)) == CUDA_SUCCESS && snap_equal(t->rt, &a, &tmp);
        if (ga_sticky_error(r1)) {
            faulted(k, &e, one, one, r1);
            goto out;
        }
        double base = time_config(t, &orig, g, b), best = base;
        static cand_t c[MAX_CANDIDATES]; /* experiments run one at a time (`busy`) */
        cand_t pick = {{0, 0, 0}, {0, 0, 0}, false};
        unsigned nc = candidates(g, b, max_threads, stride, t->rt->cfg.tuner_exhaustive, c);
        unsigned tried = 0, differ = 0, failed = 0;
        for (unsigned i = 0; i < nc; i++) {
            CUresult rc = CUDA_SUCCESS;
            if (!snap_write(t->rt, &orig) ||
                (rc = run_once(t, c[i].grid, c[i].block)) != CUDA_SUCCESS) {
                if (ga_sticky_error(rc)) {
                    faulted(k, &e, c[i].grid, c[i].block, rc);
                    goto out;
                }
                failed++;
                continue;
            }
            tried++;
            if (!snap_equal(t->rt, &a, &tmp)) {
                differ++;
                continue;
            }
            double us = time_config(t, &orig, c[i].grid, c[i].block);
            if (us > 0 && us < best)
                best = us, pick = c[i];
        }
        bool win = base > 0 && pick.block[0] && base / best >= MIN_GAIN;
        if (win) {
            memcpy(e.new_grid, pick.grid, sizeof e.new_grid);
            memcpy(e.new_block, pick.block, sizeof e.new_block);
            e.stride = pick.stride;
        }
        const char *verdict = win ? "verified"
                              : tried && differ == tried
                                  ? "rejected: every other configuration gave other results"
                                  : "kept as is (no configuration gains 5%)";
        snprintf(why, sizeof why,
                 "%s: %u candidates run, %u gave other results, %u failed to launch; %u "
                 "allocations (%s, %llu words changed) compared bit for bit; original %.2f us, "
                 "best %.2f us (%.2fx)",
                 verdict, tried, differ, failed, orig.n,
                 stride ? "grid-stride" : "not grid-stride", (unsigned long long)changed, base,
                 best, base > 0 ? base / best : 0);
        add_result(k->name, &e, win, why);
    }
    if (!snap_write(t->rt, &orig)) /* 4: the program's memory as it was */
        ga_error("tuner: restoring the program's memory failed; results are not to be trusted");
out:
    snap_free(&orig), snap_free(&a), snap_free(&tmp);
}

/* ---- the launch hook's part ------------------------------------------------------ */


/* Does `name` match one of the comma-separated globs of `list` (GPUACCEL_TUNER_KERNEL;
 * empty: every kernel)? Mangled names hold no comma. */
static bool wanted(const char *list, const char *name)
{
    if (!list || !*list)
        return true;
    char glob[512];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n && n < sizeof glob) {
            memcpy(glob, p, n);
            glob[n] = '\0';
            if (!fnmatch(glob, name, 0))
                return true;
        }
        p += n + (p[n] == ',');
    }
    return false;
}
/* Memory the snapshots would miss: the program made it through an entry
 * point whose allocations the tuner does not track (or with a capture open). */
static bool memory_unrestorable(void)
{
    static const ga_id_t untracked[] = {
        GA_ID_cuMemAllocManaged, GA_ID_cuMemAllocHost, GA_ID_cuMemHostRegister,
        GA_ID_cuMemHostRegister_v2, GA_ID_cuMemMap, GA_ID_cuIpcOpenMemHandle_v2,
        GA_ID_cuMemPoolImportPointer, GA_ID_cuGraphAddMemAllocNode};
    for (size_t i = 0; i < GA_ARRAY_LEN(untracked); i++)
        if (ga_stats_calls(untracked[i]))
            return true;
    return atomic_load(&graph_memory);
}

/* Does any 8-byte-aligned word of the launch's parameters point into
 * page-locked host memory the program allocated? */
static bool params_reach_host(const ga_kernel_t *k, void **params)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    for (live_t *l = lives; l && !found; l = l->hh.next) {
        if (!l->host)
            continue;
        for (unsigned i = 0; i < k->nparams && !found; i++)
            for (uint32_t off = 0; off + 8 <= k->size[i] && !found; off += 8) {
                CUdeviceptr v;
                memcpy(&v, (const char *)params[i] + off, sizeof v);
                found = v >= l->ptr && v - l->ptr < (l->size ? l->size : 1);
            }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* "NAME G,G,G B,B,B SHMEM": a launch as the table's "# no:" lines name it, and
 * the key of the launches an earlier run marked faulted (GPUACCEL_TUNER_SKIP). */
static void launch_text(char *out, size_t n, const char *name, const unsigned g[3],
                        const unsigned b[3], unsigned shmem)
{
    snprintf(out, n, "%s %u,%u,%u %u,%u,%u %u", name, g[0], g[1], g[2], b[0], b[1], b[2], shmem);
}

/* Why this launch is not tried, or NULL: into why (cap bytes). */
static const char *refusal(const ga_kernel_t *k, const unsigned g[3], const unsigned b[3],
                           unsigned shmem, void **params, void **extra, int static_shared,
                           char *why, size_t cap)
{
    if (extra)
        return "not tried: parameters passed with 'extra'";
    if (!one_d(g, b))
        return "not tried: a 2-D or 3-D launch";
    if (shmem || static_shared > 0) {
        snprintf(why, cap, "rejected: uses shared memory (%u dynamic, %d static bytes), whose "
                           "layout may follow the block size", shmem, static_shared);
        return why;
    }
    if (memory_unrestorable())
        return "not tried: the program has memory the tuner cannot restore (managed, "
               "registered, VMM-mapped, imported or a graph's)";
    char key[600];
    skip_t *sk = NULL;
    launch_text(key, sizeof key, k->name, g, b, shmem);
    HASH_FIND_STR(skips, key, sk);
    if (sk) /* a candidate faulted on an earlier run: its reason again */
        return sk->why;
    if (params && params_reach_host(k, params))
        return "not tried: a parameter points into page-locked host memory, which the tuner "
               "never restores (other threads may write it meanwhile)";
    return NULL;
}

/* A launch not to try is listed with the reason, and true returned. */
static bool refuse(const ga_kernel_t *k, const unsigned g[3], const unsigned b[3],
                   unsigned shmem, void **params, void **extra, int static_shared)
{
    char buf[200];
    const char *why = refusal(k, g, b, shmem, params, extra, static_shared, buf, sizeof buf);
    if (!why)
        return false;
    ga_tune_entry_t e = {k->name, 0, {g[0], g[1], g[2]}, {b[0], b[1], b[2]}, shmem,
                         {0, 0, 0}, {0, 0, 0}, false};
    add_result(k->name, &e, false, why);
    return true;
}

/* One "# no: NAME G B SHMEM: faulted..." line of an earlier table. */
static void read_skip(char *line)
{
    char *words[5];
    if (strncmp(line, "# no: ", 6))
        return;
    char *colon = strstr(line, ": faulted");
    if (!colon)
        return;
    *colon = '\0';
    char *why = colon + 2;
    if (ga_line_words(line + 6, words, 4) != 4)
        return;
    skip_t *sk = calloc(1, sizeof *sk);
    if (!sk)
        return;
    snprintf(sk->key, sizeof sk->key, "%s %s %s %s", words[0], words[1], words[2], words[3]);
    snprintf(sk->why, sizeof sk->why, "%s", why);
    skip_t *old;
    HASH_FIND_STR(skips, sk->key, old);
    if (old)
        free(sk);
    else
        HASH_ADD_STR(skips, key, sk);
}

/* The lines are walked here, not by ga_each_line: that one strips '#'
 * comments, and the lines wanted are the table's "# no:" comments. */
static void read_skips(const char *path)
{
    size_t len;
    char *text = path && *path ? ga_read_file(path, (size_t)16 << 20, &len) : NULL;
    if (path && *path && !text)
        ga_warn("GPUACCEL_TUNER_SKIP: cannot read '%s' (expected a table the tuner wrote); "
                "nothing is skipped", path);
    for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        read_skip(p);
    }
    free(text);
    if (skips)
        ga_info("tuner: %u launches faulted on an earlier run: left alone", HASH_COUNT(skips));
}

void ga_tuner_enter(void)
{
    pthread_rwlock_rdlock(&gate);
}

void ga_tuner_leave(void)
{
    pthread_rwlock_unlock(&gate);
}

void ga_tuner_before_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shmem, CUstream s, void **params,
                            void **extra)
{
    if (!ga_kernel_was_launched(f) || atomic_load(&busy) || atomic_load(&dead))
        return;
    config_t key;
    memset(&key, 0, sizeof key);
    key.key.f = f, key.key.shmem = shmem;
    memcpy(key.key.grid, grid, sizeof key.key.grid);
    memcpy(key.key.block, block, sizeof key.key.block);
    pthread_mutex_lock(&lock);
    config_t *c;
    HASH_FIND(hh, configs, &key.key, sizeof key.key, c);
    if (!c && (c = calloc(1, sizeof *c))) {
        c->key = key.key;
        HASH_ADD(hh, configs, key, sizeof c->key, c);
    }
    bool go = c && ++c->seen == TRIAL_LAUNCH - 1 && n_tried < MAX_CONFIGS; /* 1st went native */
    if (go)
        n_tried++;
    pthread_mutex_unlock(&lock);
    if (!go)
        return;
    const ga_kernel_t *k = ga_kernel_info(rt, f);
    if (!k || !k->params_known || !wanted(rt->cfg.tuner_kernel, k->name))
        return;
    bool was = false;
    if (!atomic_compare_exchange_strong(&busy, &was, true))
        return;
    ga_tuner_leave(); /* this call's shared hold, traded for the exclusive one */
    pthread_rwlock_wrlock(&gate);
    __typeof__(&cuEventCreate) ecreate = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    __typeof__(&cuEventDestroy_v2) edestroy = GA_REAL(rt, GA_ID_cuEventDestroy_v2, cuEventDestroy_v2);
    __typeof__(&cuCtxSynchronize) sync = GA_REAL(rt, GA_ID_cuCtxSynchronize, cuCtxSynchronize);
    trial_t t = {rt, f, s, params, shmem, {NULL, NULL}};
    int cc = ga_device_cc(rt);
    int static_shared = ga_kernel_attr(rt, k, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    bool refused = refuse(k, grid, block, shmem, params, extra, static_shared);
    /* The experiment synchronizes and copies: never while a capture is open.
     * Entered only now, with the gate held exclusively: a capture that begins
     * meanwhile waits for this stretch, and holds the gate shared itself. */
    bool entered = !refused && ga_own_calls_enter();
    if (entered && sync && sync() == CUDA_SUCCESS && ecreate &&
        ecreate(&t.ev[0], CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
        ecreate(&t.ev[1], CU_EVENT_DEFAULT) == CUDA_SUCCESS)
        experiment(&t, k, grid, block, cc);
    for (int i = 0; i < 2; i++)
        if (t.ev[i] && edestroy)
            edestroy(t.ev[i]);
    if (entered)
        ga_own_calls_leave();
    pthread_rwlock_unlock(&gate);
    ga_tuner_enter();
    atomic_store(&busy, false);
}

/* ---- the table it writes ------------------------------------------------------- */

void ga_tuner_init(const ga_rt_t *rt)
{
    out_path = rt->cfg.tuner;
    read_skips(rt->cfg.tuner_skip);
    ga_info("tuner: writing verified configurations to %s at exit", out_path);
}

void ga_tuner_write(void)
{
    if (!out_path)
        return;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        ga_error("tuner: cannot write '%s'", out_path);
        return;
    }
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(f, "# libgpuaccel tune table, written by the tuner on %s.\n"
               "# Each entry was run on the program's own data and compared bit for bit with\n"
               "# the original over every live allocation; use with GPUACCEL_TUNE=1\n"
               "# GPUACCEL_TUNE_TABLE=this file. Lines starting with '# no:' were not kept.\n",
            date);
    pthread_mutex_lock(&lock);
    for (result_t *r = results; r; r = r->next) {
        char line[1200];
        ga_tune_format(&r->e, line, sizeof line);
        if (r->accepted) {
            fprintf(f, "\n# %s\n%s\n", r->comment, line);
        } else {
            char what[600];
            launch_text(what, sizeof what, r->name, r->e.grid, r->e.block, r->e.shmem);
            fprintf(f, "\n# no: %s: %s\n", what, r->comment);
        }
    }
    pthread_mutex_unlock(&lock);
    fclose(f);
}

static void fork_child(void)
{
    lives = NULL;
    configs = NULL;
    results = NULL;
    out_path = NULL; /* the parent writes the table */
    atomic_store(&graph_memory, false);
    atomic_store(&dead, false);
    atomic_store(&busy, false);
}

static const ga_fork_ops_t fork_ops = {&gate, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

static void tuner_alloc_done(const ga_rt_t *rt, CUdeviceptr p, size_t bytes, uint64_t ns,
                             CUresult r)
{
    (void)ns;
    if (r == CUDA_SUCCESS)
        ga_tuner_alloc(rt, p, bytes);
}

static void tuner_free_done(const ga_rt_t *rt, CUdeviceptr p, uint64_t ns, CUresult r)
{
    (void)rt, (void)ns;
    if (r == CUDA_SUCCESS)
        ga_tuner_free(p);
}

static void tuner_host_alloc_done(const ga_rt_t *rt, void *p, size_t bytes, CUresult r)
{
    if (r == CUDA_SUCCESS && p)
        track(rt, (CUdeviceptr)(uintptr_t)p, bytes, true);
}

static void tuner_host_free_done(const ga_rt_t *rt, void *p, CUresult r)
{
    (void)rt;
    if (r == CUDA_SUCCESS && p)
        ga_tuner_free((CUdeviceptr)(uintptr_t)p);
}

/* The experiment runs on the program's own configuration, before a rewrite. */
static void tuner_before_launch(const ga_rt_t *rt, const ga_launch_t *l)
{
    ga_tuner_before_launch(rt, l->f, l->grid, l->block, l->shmem, l->stream, l->params,
                           l->extra);
}

static bool tuner_on(const ga_config_t *c)
{
    return c->tuner && *c->tuner;
}

static void tuner_off(ga_config_t *c)
{
    c->tuner = "";
}

const ga_feature_t ga_feature_tuner = {
    .summary = "proves faster launch configurations bit-identical and writes the tune table",
    .on = tuner_on,
    .off = tuner_off,
    /* Names and parameter layouts (CUDA 12.3, 12.4) to know a kernel and
     * restore its memory; events to time it; copies to snapshot and compare. */
    GA_NEEDS(GA_ID_cuFuncGetName, GA_ID_cuFuncGetParamInfo, GA_ID_cuLaunchKernel,
             GA_ID_cuCtxSynchronize, GA_ID_cuEventCreate, GA_ID_cuEventRecord,
             GA_ID_cuEventSynchronize, GA_ID_cuEventElapsedTime, GA_ID_cuMemcpyDtoH_v2,
             GA_ID_cuMemcpyHtoD_v2),
    .uses = GA_USES_CALLS,
    .init = ga_tuner_init,
    .exit = ga_tuner_write,
    .fork = &fork_ops,
    .call_enter = ga_tuner_enter,
    .call_leave = ga_tuner_leave,
    .alloc_done = tuner_alloc_done,
    .free_done = tuner_free_done,
    .host_alloc_done = tuner_host_alloc_done,
    .host_free_done = tuner_host_free_done,
    .before_launch = tuner_before_launch,
};
