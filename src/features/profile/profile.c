/* profile.c - GPUACCEL_PROFILE: record what the program does, and at exit write
 * FILE.txt, FILE.json and FILE.trace.json with an opportunities section.
 *
 * This file is the feature itself: its state's lifecycle (init, starting over,
 * a fork child's fresh state), the generation that makes thread-local caches
 * stale, and the descriptor whose handlers turn the hooks' events into the
 * recorder's calls. The other files, each one concern (internal.h lists what
 * they share): recorder.c (the events' tables), ktime.c (kernel timing with
 * events), trace.c (driver-call spans), analysis.c (what would help),
 * write_text.c, write_json.c and write_trace.c (the three files), format.c
 * (their formatter), job.c (the rank in a multi-process job), window.c (the
 * window file that limits what counts to the program's phase) and output.c
 * (paths, signals, the write).
 *
 * Owns: the state (ga_prof), its lock and generation; the thread id cache.
 * Must never: call the driver while holding ga_prof_lock; free a state a
 * signal handler might still read (a fork child leaks its parent's; only
 * starting over, in the tests, frees the old one); write to stdout. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/stats.h"
#include "tracking/capture.h"
#include "tracking/memkind.h"

bool ga_profiling;
prof_t *ga_prof;
pthread_mutex_t ga_prof_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic unsigned ga_prof_gen = 1;

static GA_TLS uint32_t tl_tid;
static GA_TLS unsigned tl_tid_gen;

uint32_t ga_prof_thread_id(void)
{
    unsigned g = atomic_load_explicit(&ga_prof_gen, memory_order_relaxed);
    if (GA_UNLIKELY(tl_tid_gen != g)) {
        tl_tid = (uint32_t)syscall(SYS_gettid);
        tl_tid_gen = g;
    }
    return tl_tid;
}

/* The program's command line, for the reports. */
static void read_command(prof_t *p)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, p->command, sizeof p->command - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        strcpy(p->command, "?");
        return;
    }
    while (n > 0 && p->command[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (p->command[i] == '\0')
            p->command[i] = ' ';
    p->command[n] = '\0';
}

/* What the first touch of a host page costs here: fresh anonymous pages
 * written once each, as a program's new buffers are (malloc takes large
 * blocks from mmap) and as a copy into them faults them in; the median of
 * three 2 MiB regions. With transparent huge pages on, one fault may map a
 * whole region, as it would the program's buffers. 0 when nothing could be
 * mapped. `page`: the page size, as init read it. */
static uint64_t first_touch_ns(size_t page)
{
    const size_t len = 2u << 20;
    uint64_t t[3];
    for (int i = 0; i < 3; i++) {
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return 0;
        uint64_t t0 = ga_now_ns();
        for (size_t o = 0; o < len; o += page)
            ((volatile char *)m)[o] = 1;
        t[i] = (ga_now_ns() - t0) / (len / page);
        munmap(m, len);
    }
    uint64_t lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}

/* Publish p. Starting over (tests): the old state goes with the old generation. */
static void start(prof_t *p)
{
    ga_profiling = false;
    prof_t *old = ga_prof;
    ga_prof_trace_reset();
    atomic_fetch_add(&ga_prof_gen, 1);
    ga_prof_output_reset();
    p->t_base = ga_now_ns();
    ga_prof = p;
    free(old);
    ga_stats_timing = true;
    ga_profiling = true;
}

void ga_profile_init(const ga_rt_t *rt)
{
    const char *cfg = rt->cfg.profile;
    if (!cfg || !*cfg)
        return;
    prof_t *p = calloc(1, sizeof *p);
    if (!p || !ga_prof_absolute_base(cfg, p->base, sizeof p->base)) {
        ga_warn("GPUACCEL_PROFILE='%s': %s; not profiling", cfg,
                p ? "path too long" : "out of memory");
        free(p);
        return;
    }
    ga_prof_read_job(&p->job);
    ga_prof_claim_path(p);
    p->graph_min = rt->cfg.graph_min ? rt->cfg.graph_min : 5;
    p->large_min = rt->cfg.staging_min ? rt->cfg.staging_min : 4u << 20;
    /* uploads: staging's own rule (staging.c min_of), the features being apart */
    p->large_up_min = rt->cfg.staging_adapt && rt->cfg.staging_upload_min > p->large_min
                          ? rt->cfg.staging_upload_min
                          : p->large_min;
    long page = sysconf(_SC_PAGESIZE);
    p->page = page > 0 ? (uint64_t)page : 4096;
    p->fault_ns = first_touch_ns(p->page);
    p->copy_threads = ga_config_staging_threads(&rt->cfg);
    p->stg.max = ga_config_staging_chunk(&rt->cfg);
    ga_prof_classify(p);
    read_command(p);
    ga_prof_resolve_timing(p, rt);
    ga_prof_window_open(rt->cfg.profile_window); /* before the first event counts */
    start(p);
    if (!ga_seq_subscribe(ga_prof_sequence))
        ga_warn("profile: the sequence detector has no room for another subscriber: no "
                "repeated sequences are counted");
    ga_prof_install_signals();
    ga_debug("profiling to %s.{txt,json,trace.json}; kernel timing %s", p->path, p->knote);
}

/* The child profiles itself into PATH.<pid> (PATH.rank<R>.<pid> in a job, the
 * parent's rank): nothing of the parent's carries over (its events belong to
 * the parent's contexts). */
static void fork_child(void)
{
    if (!ga_profiling)
        return;
    /* A fresh state, not a memset: the parent's pages stay shared, untouched. */
    prof_t *p = calloc(1, sizeof *p);
    if (!p) {
        ga_profiling = false;
        return;
    }
    memcpy(p->base, ga_prof->base, sizeof p->base);
    p->job = ga_prof->job;
    ga_prof_own_path(p);
    memcpy(p->command, ga_prof->command, sizeof p->command);
    p->graph_min = ga_prof->graph_min;
    p->large_min = ga_prof->large_min, p->large_up_min = ga_prof->large_up_min;
    p->fault_ns = ga_prof->fault_ns, p->page = ga_prof->page;
    p->copy_threads = ga_prof->copy_threads;
    p->stg.max = ga_prof->stg.max; /* staging starts over in the child too */
    memcpy(p->kind, ga_prof->kind, sizeof p->kind);
    p->ktiming = false; /* the parent's events are not the child's */
    p->knote = ga_prof->ktiming ? "off in a forked child: its events belong to the parent"
                                : ga_prof->knote;
    p->t_base = ga_now_ns();
    ga_prof = p; /* the parent's copy is leaked: a signal handler might still read it */
    ga_prof_trace_reset();
    atomic_fetch_add(&ga_prof_gen, 1);
    ga_prof_output_reset();
    ga_prof_ktime_reset();
}

static const ga_fork_ops_t fork_ops = {NULL, &ga_prof_lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

/* A large copy's host memory: pageable (0: the driver does not know it) or
 * page-locked (1), as staging decides; -1 for anything else, for a copy
 * smaller than staging's threshold for its direction (not asked: a driver
 * call each) and while a capture is open. */
static int host_kind(const ga_rt_t *rt, ga_copy_dir_t dir, const void *host, size_t bytes)
{
    unsigned type;
    bool managed;
    uint64_t min = dir == GA_COPY_HTOD ? ga_prof->large_up_min : ga_prof->large_min;
    if (!host || bytes < min || (dir != GA_COPY_HTOD && dir != GA_COPY_DTOH) ||
        ga_capture_active() || !ga_pointer_kind(rt, (uintptr_t)host, &type, &managed) || managed)
        return -1;
    return type == 0 ? 0 : type == CU_MEMORYTYPE_HOST ? 1 : -1;
}

/* Pages of [p, p + n) not resident now (mincore), a chunk of pages a call;
 * 0 when the kernel cannot tell (part of the range is not mapped). */
static uint64_t untouched_pages(const void *p, size_t n)
{
    unsigned char vec[1024];
    uintptr_t page = ga_prof->page;
    uintptr_t a = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + n;
    uint64_t out = 0;
    while (a < end) {
        size_t pages = (end - a + page - 1) / page;
        if (pages > sizeof vec)
            pages = sizeof vec;
        if (mincore((void *)a, pages * page, vec) != 0)
            return 0;
        for (size_t i = 0; i < pages; i++)
            out += !(vec[i] & 1);
        a += pages * page;
    }
    return out;
}

/* The thread's copy about to be made (copy_begin, which the hooks call
 * before every HtoD and DtoH copy_done): its host memory's kind, and for a
 * large pageable download its destination's pages not yet resident. A copy
 * into fresh memory (a new std::vector or Vec per read) faults each page in,
 * whoever copies; staging's rates were measured into touched pages, so its
 * estimate adds the faults. */
static GA_TLS struct {
    int kind;
    uint64_t untouched;
} tl_copy;

static void prof_copy_begin(const ga_rt_t *rt, ga_copy_dir_t dir, const void *host,
                            CUdeviceptr dev, size_t bytes)
{
    (void)dev;
    tl_copy.kind = ga_profiling ? host_kind(rt, dir, host, bytes) : -1;
    tl_copy.untouched = dir == GA_COPY_DTOH && tl_copy.kind == 0 ? untouched_pages(host, bytes) : 0;
}

static void prof_copy_done(const ga_rt_t *rt, ga_copy_dir_t dir, const void *host,
                           CUdeviceptr dev, size_t bytes, uint64_t ns, CUresult r)
{
    (void)rt, (void)host;
    bool begun = dir == GA_COPY_HTOD || dir == GA_COPY_DTOH;
    int kind = begun ? tl_copy.kind : -1;
    if (r != CUDA_SUCCESS || !ga_profiling)
        return;
    ga_profile_copy_at(dir, bytes, ns, dir == GA_COPY_OTHER ? 0 : dev, kind);
    if (dir == GA_COPY_DTOH && kind == 0)
        ga_profile_untouched(tl_copy.untouched);
}

/* A stream-ordered allocation: its pool's reservation before it (the thread's
 * own, until its alloc_done). Told only while serving is on: never in a
 * capture. */
static GA_TLS struct {
    bool on;
    CUmemoryPool pool;
    cuuint64_t before;
} tl_async;

static bool pool_reserved(const ga_rt_t *rt, CUmemoryPool pool, cuuint64_t *v)
{
    __typeof__(&cuMemPoolGetAttribute) get =
        GA_REAL(rt, GA_ID_cuMemPoolGetAttribute, cuMemPoolGetAttribute);
    return get && get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, v) == CUDA_SUCCESS;
}

static void prof_alloc_async_begin(const ga_rt_t *rt, CUmemoryPool pool, CUstream s, bool pt)
{
    (void)s, (void)pt;
    tl_async.on = false;
    CUdevice dev;
    __typeof__(&cuCtxGetDevice) getdev = GA_REAL(rt, GA_ID_cuCtxGetDevice, cuCtxGetDevice);
    __typeof__(&cuDeviceGetMemPool) cur = GA_REAL(rt, GA_ID_cuDeviceGetMemPool, cuDeviceGetMemPool);
    __typeof__(&cuDeviceGetDefaultMemPool) def =
        GA_REAL(rt, GA_ID_cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool);
    if (!pool && (!getdev || getdev(&dev) != CUDA_SUCCESS ||
                  ((!cur || cur(&pool, dev) != CUDA_SUCCESS) &&
                   (!def || def(&pool, dev) != CUDA_SUCCESS))))
        return;
    if (pool_reserved(rt, pool, &tl_async.before))
        tl_async.pool = pool, tl_async.on = true;
}

static void prof_alloc_done(const ga_rt_t *rt, CUdeviceptr p, size_t bytes, uint64_t ns,
                            CUresult r)
{
    bool async = tl_async.on;
    tl_async.on = false;
    ga_profile_alloc(r == CUDA_SUCCESS ? p : 0, bytes, ns, r);
    cuuint64_t after;
    if (async && r == CUDA_SUCCESS && pool_reserved(rt, tl_async.pool, &after))
        ga_profile_async_alloc(tl_async.pool, tl_async.before, after, ns);
}

static void prof_free_done(const ga_rt_t *rt, CUdeviceptr p, uint64_t ns, CUresult r)
{
    (void)rt;
    if (r == CUDA_SUCCESS)
        ga_profile_free(p, 0, ns);
}

static void prof_launch_begin(const ga_rt_t *rt, const ga_launch_t *l)
{
    ga_profile_kernel_begin(rt, l->stream, l->per_thread);
}

static void prof_launch_done(const ga_rt_t *rt, const ga_launch_t *l, CUresult r)
{
    if (r == CUDA_SUCCESS)
        ga_profile_launch(rt, l->f, l->grid, l->block, l->shmem, l->stream, l->per_thread);
}

static bool prof_on(const ga_config_t *c)
{
    return c->profile && *c->profile;
}

static void prof_off(ga_config_t *c)
{
    c->profile = "";
}

const ga_feature_t ga_feature_profile = {
    .summary = "what the program did on the GPU and which features would help it",
    .on = prof_on,
    .off = prof_off,
    .init = ga_profile_init,
    .exit = ga_profile_write,
    .fork = &fork_ops,
    .uses = GA_USES_SEQUENCES,
    .alloc_async_begin = prof_alloc_async_begin,
    .alloc_done = prof_alloc_done,
    .free_done = prof_free_done,
    .copy_begin = prof_copy_begin,
    .copy_done = prof_copy_done,
    .launch_begin = prof_launch_begin,
    .launch_done = prof_launch_done,
    .span = ga_profile_span,
};
