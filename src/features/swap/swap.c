/* swap.c - faster replacement kernels launched in place of known hot kernels
 * (GPUACCEL_KERNELS), shipped inside the library and user-supplied.
 *
 * A table maps an original kernel's mangled name to a replacement in a fatbin:
 * the shipped one (kernels/, embedded at build time) and GPUACCEL_KERNELS_EXTRA
 * (FATBIN:TABLE). The first launch of every kernel handle goes to the driver
 * as the program made it; after that, if the handle's name is in a table, not
 * denied (GPUACCEL_KERNELS_DENY, a glob), and the replacement's parameter
 * count, offsets and sizes equal the original's exactly, the replacement is
 * launched with the program's own parameter pointers: with the program's grid
 * and block (grid=program) or a configuration of the library's choosing
 * (grid=any: grid-stride replacements, 256-thread blocks, as many as are
 * resident on every multiprocessor). A replacement that fails to launch is
 * dropped and the original launched instead.
 *
 * Owns: the parsed tables, the loaded libraries and the per-handle decisions,
 * under `lock`. Must never: swap a kernel whose ABI differs in the slightest;
 * call the driver holding `lock`. */
#define _GNU_SOURCE
#include "features/swap/swap.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/device.h"
#include "tracking/registry.h"
#include "tracking/streams.h"
#include "core/textfile.h"

/* The shipped fatbin and table (kernels_blob.c, generated at build time;
 * empty when the library was built without nvcc). */
extern const unsigned char ga_kernels_fatbin[];
extern const size_t ga_kernels_fatbin_size;
extern const char ga_kernels_table[];

typedef struct source {
    CUlibrary lib;
    bool loaded, failed;
    const void *image; /* the fatbin bytes */
    char *owned;       /* for user files: the buffer holding image */
    char name[256];    /* for messages */
} source_t;

typedef struct rule {
    char *original, *replacement;
    bool any_grid;
    int source; /* index into sources */
    UT_hash_handle hh;
} rule_t;

/* What to launch for one original handle: kept in the registry's slot for
 * the handle (read without a lock on every launch). */
typedef struct decision {
    const void *handle;   /* the original, as the program launches it */
    bool any_grid;        /* written before the decision is published */
    _Atomic(CUkernel) replacement; /* NULL: launch the original */
} decision_t;

enum { MAX_SOURCES = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static source_t sources[MAX_SOURCES]; /* guarded by lock */
static int n_sources;                 /* guarded by lock */
static rule_t *rules;                 /* guarded by lock */
static int slot = -1;                 /* the registry's decision slot: set at init */
static _Atomic uint64_t swapped, abi_mismatch, denied, failed_launch;

/* ---- the table ----------------------------------------------------------------- */

typedef struct {
    ga_swap_rule_fn add;
    void *arg;
} parse_ctx_t;

static bool table_line(void *arg, char *line)
{
    const parse_ctx_t *c = arg;
    char *w[3]; /* <original> <replacement> grid=program|grid=any */
    if (ga_line_words(line, w, 3) != 3 || strlen(w[0]) > 4096 || strlen(w[1]) > 4096)
        return false;
    bool any = !strcmp(w[2], "grid=any");
    if (!any && strcmp(w[2], "grid=program"))
        return false;
    c->add(c->arg, w[0], w[1], any);
    return true;
}

int ga_swap_parse_table(const char *text, size_t len, const char *source_name,
                        ga_swap_rule_fn add, void *arg)
{
    parse_ctx_t c = {add, arg};
    return ga_each_line(text, len, source_name,
                        "'<original> <replacement> grid=program|grid=any'", table_line, &c);
}

typedef struct {
    int source;
} add_ctx_t;

static void add_rule(void *arg, const char *orig, const char *repl, bool any)
{
    const add_ctx_t *c = arg;
    rule_t *r;
    HASH_FIND_STR(rules, orig, r);
    if (r) { /* a later table (the user's) overrides an earlier one */
        HASH_DEL(rules, r);
        free(r->original);
        free(r->replacement);
        free(r);
    }
    r = calloc(1, sizeof *r);
    if (!r || !(r->original = strdup(orig)) || !(r->replacement = strdup(repl))) {
        if (r)
            free(r->original), free(r);
        return;
    }
    r->any_grid = any;
    r->source = c->source;
    HASH_ADD_KEYPTR(hh, rules, r->original, strlen(r->original), r);
}

/* GPUACCEL_KERNELS_EXTRA=FATBIN:TABLE */
static void load_extra(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1]) {
        ga_warn("GPUACCEL_KERNELS_EXTRA='%s' is not valid: expected FATBIN:TABLE; ignored", spec);
        return;
    }
    char fatbin[4096];
    snprintf(fatbin, sizeof fatbin, "%.*s", (int)(colon - spec), spec);
    size_t flen = 0, tlen = 0;
    char *image = ga_read_file(fatbin, (size_t)256 << 20, &flen);
    char *table = image ? ga_read_file(colon + 1, (size_t)16 << 20, &tlen) : NULL;
    if (!image || !table || flen == 0) {
        ga_warn("GPUACCEL_KERNELS_EXTRA: cannot read '%s'; user replacements ignored",
                image ? colon + 1 : fatbin);
        free(image);
        free(table);
        return;
    }
    source_t *s = &sources[n_sources];
    s->image = image;
    s->owned = image;
    snprintf(s->name, sizeof s->name, "%.200s", fatbin);
    add_ctx_t c = {n_sources++};
    ga_swap_parse_table(table, tlen, colon + 1, add_rule, &c);
    free(table);
}

void ga_swap_init(const ga_rt_t *rt)
{
    if (slot < 0)
        slot = ga_kernel_slot_new();
    pthread_mutex_lock(&lock);
    if (ga_kernels_fatbin_size) {
        sources[0].image = ga_kernels_fatbin;
        snprintf(sources[0].name, sizeof sources[0].name, "the shipped kernels");
        add_ctx_t c = {n_sources++};
        ga_swap_parse_table(ga_kernels_table, strlen(ga_kernels_table), "kernels/table.txt",
                            add_rule, &c);
    } else {
        ga_info("kernels: this build ships no replacement kernels (built without nvcc)");
    }
    if (rt->cfg.kernels_extra && *rt->cfg.kernels_extra)
        load_extra(rt->cfg.kernels_extra);
    pthread_mutex_unlock(&lock);
}

/* ---- deciding for a handle ---------------------------------------------------------- */

static bool load_source(const ga_rt_t *rt, int i)
{
    pthread_mutex_lock(&lock);
    source_t *s = &sources[i];
    bool ready = s->loaded, failed = s->failed;
    pthread_mutex_unlock(&lock);
    if (ready || failed)
        return ready;
    __typeof__(&cuLibraryLoadData) load = GA_REAL(rt, GA_ID_cuLibraryLoadData, cuLibraryLoadData);
    CUlibrary lib = NULL;
    CUresult r = load ? load(&lib, s->image, NULL, NULL, 0, NULL, NULL, 0) : CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    if (r == CUDA_SUCCESS && !s->loaded)
        s->lib = lib, s->loaded = true;
    else if (r != CUDA_SUCCESS)
        s->failed = true;
    ready = s->loaded;
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS)
        ga_warn("kernels: cannot load %s (%d): no replacement from it", s->name, (int)r);
    return ready;
}

static bool same_abi(const ga_kernel_t *a, const ga_kernel_t *b)
{
    if (!a->params_known || !b->params_known || a->nparams != b->nparams)
        return false;
    for (unsigned i = 0; i < a->nparams; i++)
        if (a->offset[i] != b->offset[i] || a->size[i] != b->size[i])
            return false;
    return true;
}

/* Work out once whether this handle is swapped, and for what. */
static void decide(const ga_rt_t *rt, decision_t *d)
{
    const ga_kernel_t *orig = ga_kernel_info(rt, (CUfunction)d->handle);
    if (!orig)
        return;
    pthread_mutex_lock(&lock);
    rule_t *r;
    HASH_FIND_STR(rules, orig->name, r);
    char repl[4097] = "";
    int src = -1;
    bool any = false;
    if (r)
        snprintf(repl, sizeof repl, "%s", r->replacement), src = r->source, any = r->any_grid;
    pthread_mutex_unlock(&lock);
    if (src < 0)
        return;
    const char *deny = rt->cfg.kernels_deny;
    if (deny && *deny && fnmatch(deny, orig->name, 0) == 0) {
        atomic_fetch_add(&denied, 1);
        ga_info("kernels: %s not swapped: GPUACCEL_KERNELS_DENY", orig->name);
        return;
    }
    if (!load_source(rt, src))
        return;
    __typeof__(&cuLibraryGetKernel) get = GA_REAL(rt, GA_ID_cuLibraryGetKernel, cuLibraryGetKernel);
    CUkernel k = NULL;
    if (!get || get(&k, sources[src].lib, repl) != CUDA_SUCCESS) {
        ga_warn("kernels: %s: no kernel '%s' in %s", orig->name, repl, sources[src].name);
        return;
    }
    const ga_kernel_t *rk = ga_kernel_info(rt, (CUfunction)k);
    if (!rk || !same_abi(orig, rk)) {
        atomic_fetch_add(&abi_mismatch, 1);
        ga_info("kernels: %s not swapped: %s takes other parameters", orig->name, repl);
        return;
    }
    d->any_grid = any;
    atomic_store_explicit(&d->replacement, k, memory_order_release);
    ga_debug("kernels: %s -> %s (%s)", orig->name, repl, any ? "grid=any" : "grid=program");
}

/* For grid=any: 256-thread blocks, as many as are resident at once. */
static void choose_config(const ga_rt_t *rt, CUkernel k, unsigned shmem, unsigned grid[3],
                          unsigned block[3])
{
    __typeof__(&cuKernelGetFunction) kf = GA_REAL(rt, GA_ID_cuKernelGetFunction, cuKernelGetFunction);
    __typeof__(&cuOccupancyMaxActiveBlocksPerMultiprocessor) occ =
        GA_REAL(rt, GA_ID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
                cuOccupancyMaxActiveBlocksPerMultiprocessor);
    CUfunction f;
    int per_sm = 0, sms = ga_device_attr(rt, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    if (!kf || !occ || kf(&f, k) != CUDA_SUCCESS ||
        occ(&per_sm, f, 256, shmem) != CUDA_SUCCESS || per_sm <= 0 || sms <= 0)
        return; /* keep the program's configuration: correct for grid-stride too */
    grid[0] = (unsigned)(per_sm * sms), grid[1] = 1, grid[2] = 1;
    block[0] = 256, block[1] = 1, block[2] = 1;
}

bool ga_swap_choose(const ga_rt_t *rt, CUfunction *f, unsigned grid[3], unsigned block[3],
                    unsigned shmem)
{
    /* Asked about only once the driver has accepted the original (registry.h). */
    if (!ga_kernel_was_launched(*f))
        return false;
    decision_t *d = ga_kernel_decision(*f, slot);
    if (!d) { /* first sight: decide (two threads may both: the first to record wins) */
        decision_t *mine = calloc(1, sizeof *mine);
        if (!mine)
            return false;
        mine->handle = *f;
        decide(rt, mine);
        if ((d = ga_kernel_decide(*f, slot, mine)) != mine)
            free(mine);
        if (!d)
            return false;
    }
    CUkernel k = atomic_load_explicit(&d->replacement, memory_order_acquire);
    if (!k)
        return false;
    if (d->any_grid)
        choose_config(rt, k, shmem, grid, block);
    *f = (CUfunction)k;
    return true;
}

void ga_swap_launched(const ga_rt_t *rt, CUfunction original, bool was_swapped, CUresult r)
{
    (void)rt;
    if (!was_swapped)
        return;
    if (r == CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&swapped, 1, memory_order_relaxed);
        return;
    }
    decision_t *d = ga_kernel_decision(original, slot);
    if (d) /* never again: the original runs */
        atomic_store(&d->replacement, NULL);
    atomic_fetch_add(&failed_launch, 1);
    ga_warn("kernels: a replacement failed to launch (%d); the original runs instead", (int)r);
}

static void swap_report(void)
{
    uint64_t s = atomic_load(&swapped), m = atomic_load(&abi_mismatch), dn = atomic_load(&denied),
             fl = atomic_load(&failed_launch);
    if (s + m + dn + fl)
        ga_info("kernels: swapped=%llu abi_mismatch=%llu denied=%llu failed=%llu",
                (unsigned long long)s, (unsigned long long)m, (unsigned long long)dn,
                (unsigned long long)fl);
}

static void fork_child(void)
{
    /* Loaded libraries belong to the parent's CUDA: load again (the registry
     * forgets the decisions). */
    for (int i = 0; i < n_sources; i++)
        sources[i].loaded = sources[i].failed = false, sources[i].lib = NULL;
    atomic_store(&swapped, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

/* Launches with `extra` carry their parameters in one blob whose layout the
 * replacement need not share: never swapped. */
static bool swap_rewrite(const ga_rt_t *rt, ga_launch_t *l)
{
    return !l->extra && ga_swap_choose(rt, &l->f, l->grid, l->block, l->shmem);
}

static void swap_launch_done(const ga_rt_t *rt, const ga_launch_t *l, CUresult r)
{
    (void)r; /* the replacement's own result: the original may have run after it */
    if (!l->held)
        ga_swap_launched(rt, l->original, l->rewritten_by == &ga_feature_swap, l->rewrite_result);
}

GA_SWITCH(kernels)

const ga_feature_t ga_feature_swap = {
    .summary = "known kernels replaced by faster ones with the same parameters",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuLibraryLoadData, GA_ID_cuLibraryGetKernel, GA_ID_cuKernelGetName,
             GA_ID_cuKernelGetParamInfo, GA_ID_cuFuncGetParamInfo),
    .init = ga_swap_init,
    .report = swap_report,
    .fork = &fork_ops,
    .rewrite = swap_rewrite,
    .launch_done = swap_launch_done,
};
