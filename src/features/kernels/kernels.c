/* kernels.c - faster replacement kernels launched in place of known hot kernels
 * (GPUACCEL_KERNELS), shipped inside the library and user-supplied.
 *
 * A table maps an original kernel's mangled name, and the code identities it
 * was verified against (code=, tracking/codeid.h), to a replacement in a
 * fatbin: the shipped one (kernels/, embedded at build time) and
 * GPUACCEL_KERNELS_EXTRA (FATBIN:TABLE). A name and a parameter layout do not
 * identify code, so each image the program loads from memory is read once, at
 * load, for the tables' names only, and what it holds under them is recorded
 * per module or library; loads from files are never seen, so never swapped.
 * The first launch of every kernel handle goes to the driver as the program
 * made it; after that, if the handle's name is in a table, not denied
 * (GPUACCEL_KERNELS_DENY, a glob), its module's code for that name is one the
 * rule lists, and the replacement's parameter count, offsets and sizes equal
 * the original's exactly, the replacement is launched with the program's own
 * parameter pointers: with the program's grid and block (grid=program) or a
 * configuration of the library's choosing (grid=any: grid-stride replacements,
 * 256-thread blocks, as many as are resident on every multiprocessor and the
 * program's launch has threads for). A
 * replacement that fails to launch is dropped and the original launched
 * instead.
 *
 * Owns: the parsed tables, the loaded libraries, the identities of the loaded
 * code and the per-handle decisions, under `lock`. Must never: swap a kernel
 * whose code is not the code verified, or whose ABI differs in the slightest;
 * call the driver holding `lock`. */
#define _GNU_SOURCE
#include "features/kernels/kernels.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/codeid.h"
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
    int source;      /* index into sources */
    uint64_t *codes; /* the identities of the code the replacement was verified against */
    unsigned ncodes; /* 0: never applies */
    ga_kernels_write_t writes[GA_KERNELS_MAX_WRITES]; /* for GPUACCEL_KERNELS_VERIFY */
    unsigned nwrites;
    UT_hash_handle hh;
} rule_t;

/* What a loaded module or library holds under the tables' names: the
 * identity of each that it holds and that could be read. */
typedef struct known {
    const void *owner; /* its CUmodule or CUlibrary */
    bool library;      /* libraries outlive contexts */
    unsigned n;
    const rule_t **rule;
    uint64_t *id;
    UT_hash_handle hh;
} known_t;

/* What to launch for one original handle: kept in the registry's slot for
 * the handle (read without a lock on every launch). */
typedef struct decision {
    const void *handle;   /* the original, as the program launches it */
    bool any_grid;        /* written before the decision is published */
    _Atomic(CUkernel) replacement; /* NULL: launch the original */
    /* GPUACCEL_KERNELS_VERIFY: launches still to check, and what to compare
     * (written before the decision is published) */
    _Atomic unsigned verify_left;
    unsigned nwrites;
    ga_kernels_write_t writes[GA_KERNELS_MAX_WRITES];
    char name[128];       /* the original's, for messages */
} decision_t;

enum { MAX_SOURCES = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static source_t sources[MAX_SOURCES]; /* guarded by lock */
static int n_sources;                 /* guarded by lock */
static rule_t *rules;                 /* guarded by lock */
static known_t *knowns;               /* guarded by lock */
/* The names to look for in each image (the rules with codes) and whether a
 * whole-image identity is listed: fixed at init. */
static ga_codeid_want_t *wants;
static const rule_t **want_rule;
static unsigned n_wants;
static bool whole_listed;
static int slot = -1;                 /* the registry's decision slot: set at init */
/* Set once loaded code may hold a kernel a row names (an image where one was
 * identified, one loaded from a file, one with entries the library cannot
 * search), never cleared. Until then no launch can be swapped and launches
 * skip the registry: ~110 instructions a launch on the fake driver, paid by
 * every program under the defaults. */
static _Atomic bool may_swap;
static _Atomic uint64_t swapped, other_code, unidentified, abi_mismatch, denied, failed_launch;
static _Atomic uint64_t shadow_same_n, shadow_differed_n; /* shadow checks (GPUACCEL_KERNELS_VERIFY) */

/* ---- the table ----------------------------------------------------------------- */

typedef struct {
    int source;
    const char *table; /* for messages */
} add_ctx_t;

static void free_rule(rule_t *r)
{
    free(r->original);
    free(r->replacement);
    free(r->codes);
    free(r);
}

static void add_rule(void *arg, const ga_kernels_rule_t *in)
{
    const add_ctx_t *c = arg;
    rule_t *r;
    HASH_FIND_STR(rules, in->original, r);
    if (r) { /* a later table (the user's) overrides an earlier one */
        HASH_DEL(rules, r);
        free_rule(r);
    }
    r = calloc(1, sizeof *r);
    if (!r || !(r->original = strdup(in->original)) ||
        !(r->replacement = strdup(in->replacement)) ||
        (in->ncodes && !(r->codes = malloc(in->ncodes * sizeof *r->codes)))) {
        if (r)
            free_rule(r);
        return;
    }
    r->any_grid = in->any_grid;
    r->source = c->source;
    r->nwrites = in->nwrites;
    if (in->nwrites)
        memcpy(r->writes, in->writes, in->nwrites * sizeof *r->writes);
    r->ncodes = in->ncodes;
    if (in->ncodes)
        memcpy(r->codes, in->codes, in->ncodes * sizeof *r->codes);
    else /* told once, here: such a rule is never looked at again */
        ga_info("kernels: %s: %s lists no code= identity: never swapped "
                "(gpuaccel kernels ids prints a program's)", c->table, in->original);
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
    add_ctx_t c = {n_sources++, colon + 1};
    ga_kernels_parse_table(table, tlen, colon + 1, add_rule, &c);
    free(table);
}

/* The names to look for in loaded images: those of the rules with codes. */
static void make_wants(void)
{
    unsigned n = HASH_COUNT(rules);
    wants = calloc(n ? n : 1, sizeof *wants);
    want_rule = calloc(n ? n : 1, sizeof *want_rule);
    if (!wants || !want_rule) {
        free(wants), free(want_rule);
        wants = NULL, want_rule = NULL;
        return;
    }
    for (rule_t *r = rules; r; r = r->hh.next) {
        if (!r->ncodes)
            continue;
        for (unsigned i = 0; i < r->ncodes; i++)
            whole_listed |= (r->codes[i] & GA_CODEID_WHOLE_IMAGE) != 0;
        want_rule[n_wants] = r;
        wants[n_wants++].name = r->original;
    }
}

void ga_kernels_init(const ga_rt_t *rt)
{
    if (slot < 0)
        slot = ga_kernel_slot_new();
    pthread_mutex_lock(&lock);
    if (ga_kernels_fatbin_size) {
        sources[0].image = ga_kernels_fatbin;
        snprintf(sources[0].name, sizeof sources[0].name, "the shipped kernels");
        add_ctx_t c = {n_sources++, "kernels/table.txt"};
        ga_kernels_parse_table(ga_kernels_table, strlen(ga_kernels_table), "kernels/table.txt",
                            add_rule, &c);
    } else {
        ga_info("kernels: this build ships no replacement kernels (built without nvcc)");
    }
    if (rt->cfg.kernels_extra && *rt->cfg.kernels_extra)
        load_extra(rt->cfg.kernels_extra);
    make_wants();
    pthread_mutex_unlock(&lock);
}

/* ---- the code the program loads ------------------------------------------------------ */

static void free_known(known_t *k)
{
    free(k->rule);
    free(k->id);
    free(k);
}

/* Could every kernel of the image be looked for by name? (No: a file's,
 * unreadable, or compressed entries with no whole-image identity listed.) */
static bool searchable(const void *image)
{
    unsigned compressed = 0;
    return image && ga_codeid_names(image, GA_CODEID_IN_PROCESS, NULL, NULL, &compressed) >= 0 &&
           compressed == 0;
}

/* The identities of the tables' names in an image the driver just accepted,
 * kept for its handle (replacing what a reused handle held before). Only the
 * tables' names are looked for; an image holding none costs a walk of its
 * section headers and .entry lines. */
static void kernels_code_loaded(const ga_rt_t *rt, const void *owner, bool library, const void *image)
{
    (void)rt;
    known_t *k = NULL;
    if (n_wants && image) {
        ga_codeid_want_t *w = malloc(n_wants * sizeof *w);
        unsigned got = 0;
        if (w) {
            memcpy(w, wants, n_wants * sizeof *w);
            got = ga_codeid_find(image, GA_CODEID_IN_PROCESS, w, n_wants,
                                 whole_listed ? GA_CODEID_WHOLE : 0);
        }
        if (got && (k = calloc(1, sizeof *k)) && (k->rule = calloc(got, sizeof *k->rule)) &&
            (k->id = calloc(got, sizeof *k->id))) {
            k->owner = owner, k->library = library;
            for (unsigned i = 0; i < n_wants; i++)
                if (w[i].got) {
                    k->rule[k->n] = want_rule[i], k->id[k->n++] = w[i].id;
                    ga_debug("kernels: %s in %p: code=%016llx", w[i].name, owner,
                             (unsigned long long)w[i].id);
                }
        } else if (k) {
            free_known(k), k = NULL;
        }
        free(w);
    }
    if (n_wants && (k || !searchable(image)))
        atomic_store_explicit(&may_swap, true, memory_order_release);
    pthread_mutex_lock(&lock);
    known_t *old;
    HASH_FIND_PTR(knowns, &owner, old);
    if (old)
        HASH_DEL(knowns, old);
    if (k)
        HASH_ADD_PTR(knowns, owner, k);
    pthread_mutex_unlock(&lock);
    if (old)
        free_known(old);
}

static void kernels_unload(const ga_rt_t *rt, const void *owner)
{
    (void)rt;
    pthread_mutex_lock(&lock);
    known_t *k;
    HASH_FIND_PTR(knowns, &owner, k);
    if (k)
        HASH_DEL(knowns, k);
    pthread_mutex_unlock(&lock);
    if (k)
        free_known(k);
}

/* The context's modules went with it; which context a module was loaded into
 * is not kept, so every module's identities go (libraries stay). */
static void kernels_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt, (void)ctx;
    pthread_mutex_lock(&lock);
    known_t *k, *tmp;
    HASH_ITER(hh, knowns, k, tmp) {
        if (!k->library) {
            HASH_DEL(knowns, k);
            free_known(k);
        }
    }
    pthread_mutex_unlock(&lock);
}

/* Is the code `owner` holds under r's name the code r was verified against?
 * (under lock) 1 yes, 0 other code (*id: which), -1 not identified. */
static int verified_locked(const void *owner, const rule_t *r, uint64_t *id)
{
    known_t *k = NULL;
    if (owner)
        HASH_FIND_PTR(knowns, &owner, k);
    for (unsigned i = 0; k && i < k->n; i++) {
        if (k->rule[i] != r)
            continue;
        *id = k->id[i];
        for (unsigned j = 0; j < r->ncodes; j++)
            if (r->codes[j] == k->id[i])
                return 1;
        return 0;
    }
    return -1;
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
    int src = -1, verified = -1;
    bool any = false;
    uint64_t id = 0;
    if (r && r->ncodes) {
        snprintf(repl, sizeof repl, "%s", r->replacement), src = r->source, any = r->any_grid;
        verified = verified_locked(orig->owner, r, &id);
        d->nwrites = r->nwrites;
        memcpy(d->writes, r->writes, sizeof d->writes);
    }
    pthread_mutex_unlock(&lock);
    if (src < 0)
        return;
    const char *deny = rt->cfg.kernels_deny;
    if (deny && *deny && fnmatch(deny, orig->name, 0) == 0) {
        atomic_fetch_add(&denied, 1);
        ga_info("kernels: %s not swapped: GPUACCEL_KERNELS_DENY", orig->name);
        return;
    }
    if (verified < 0) {
        atomic_fetch_add(&unidentified, 1);
        ga_info("kernels: %s not swapped: its code could not be identified (loaded from a "
                "file, or an image the library cannot read)", orig->name);
        return;
    }
    if (!verified) {
        atomic_fetch_add(&other_code, 1);
        ga_info("kernels: %s not swapped: its code (code=%016llx) is not the code %s was "
                "verified against", orig->name, (unsigned long long)id, repl);
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
    snprintf(d->name, sizeof d->name, "%s", orig->name);
    if (rt->cfg.kernels_verify && d->nwrites)
        atomic_store_explicit(&d->verify_left, rt->cfg.kernels_verify, memory_order_relaxed);
    atomic_store_explicit(&d->replacement, k, memory_order_release);
    ga_debug("kernels: %s -> %s (%s)", orig->name, repl, any ? "grid=any" : "grid=program");
}

/* The blocks of 256 threads of k resident at once on the current device:
 * one occupancy query per replacement, context and shared-memory size, kept
 * in a small per-thread cache (a transform launches the same few kernels
 * layer after layer: four driver calls a launch otherwise). A context
 * destroyed and another made at its address may read a stale count: any grid
 * is correct for these kernels, so that costs speed at worst. 0: unknown. */
enum { OCC_CACHE = 4 };
typedef struct occ_entry {
    CUkernel k;
    CUcontext ctx;
    unsigned shmem, resident;
} occ_entry_t;
static GA_TLS occ_entry_t occ_cache[OCC_CACHE]; /* per thread: no lock */
static GA_TLS unsigned occ_next;

static unsigned resident_blocks(const ga_rt_t *rt, CUkernel k, unsigned shmem)
{
    CUcontext ctx = ga_current_ctx(rt);
    for (unsigned i = 0; i < OCC_CACHE; i++)
        if (occ_cache[i].k == k && occ_cache[i].ctx == ctx && occ_cache[i].shmem == shmem)
            return occ_cache[i].resident;
    __typeof__(&cuKernelGetFunction) kf = GA_REAL(rt, GA_ID_cuKernelGetFunction, cuKernelGetFunction);
    __typeof__(&cuOccupancyMaxActiveBlocksPerMultiprocessor) occ =
        GA_REAL(rt, GA_ID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
                cuOccupancyMaxActiveBlocksPerMultiprocessor);
    CUfunction f;
    int per_sm = 0, sms = ga_device_attr(rt, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    if (!ctx || !kf || !occ || kf(&f, k) != CUDA_SUCCESS ||
        occ(&per_sm, f, 256, shmem) != CUDA_SUCCESS || per_sm <= 0 || sms <= 0)
        return 0;
    occ_entry_t *e = &occ_cache[occ_next++ % OCC_CACHE];
    *e = (occ_entry_t){k, ctx, shmem, (unsigned)per_sm * (unsigned)sms};
    return e->resident;
}

/* For grid=any: 256-thread blocks, as many as are resident at once, but no
 * more than the program's own launch has threads for: a small launch stays
 * small (a grid-stride kernel with a full device of blocks for a few hundred
 * elements spends its time starting blocks that find no work). */
static void choose_config(const ga_rt_t *rt, CUkernel k, unsigned shmem, unsigned grid[3],
                          unsigned block[3])
{
    uint64_t threads = (uint64_t)grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2];
    unsigned resident = resident_blocks(rt, k, shmem);
    if (!resident || !threads)
        return; /* keep the program's configuration: correct for grid-stride too */
    uint64_t need = (threads + 255) / 256;
    grid[0] = need < resident ? (unsigned)need : resident, grid[1] = 1, grid[2] = 1;
    block[0] = 256, block[1] = 1, block[2] = 1;
}

bool ga_kernels_choose(const ga_rt_t *rt, CUfunction *f, unsigned grid[3], unsigned block[3],
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

void ga_kernels_launched(const ga_rt_t *rt, CUfunction original, CUresult r)
{
    (void)rt;
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

/* swapped counts launches; the others, kernel handles (each decided once). */
static void kernels_report(void)
{
    uint64_t s = atomic_load(&swapped), o = atomic_load(&other_code),
             u = atomic_load(&unidentified), m = atomic_load(&abi_mismatch),
             dn = atomic_load(&denied), fl = atomic_load(&failed_launch);
    if (s + o + u + m + dn + fl)
        ga_info("kernels: swapped=%llu other_code=%llu unidentified=%llu abi_mismatch=%llu "
                "denied=%llu failed=%llu",
                (unsigned long long)s, (unsigned long long)o, (unsigned long long)u,
                (unsigned long long)m, (unsigned long long)dn, (unsigned long long)fl);
    uint64_t v = atomic_load(&shadow_same_n), x = atomic_load(&shadow_differed_n);
    if (v + x)
        ga_info("kernels: checked beside the original (GPUACCEL_KERNELS_VERIFY): same=%llu "
                "differed=%llu", (unsigned long long)v, (unsigned long long)x);
}

static void fork_child(void)
{
    /* Loaded libraries belong to the parent's CUDA: load again (the registry
     * forgets the decisions). */
    for (int i = 0; i < n_sources; i++)
        sources[i].loaded = sources[i].failed = false, sources[i].lib = NULL;
    known_t *k, *tmp; /* and no module or library of the parent's */
    HASH_ITER(hh, knowns, k, tmp) {
        HASH_DEL(knowns, k);
        free_known(k);
    }
    atomic_store(&swapped, 0);
    atomic_store(&shadow_same_n, 0);
    atomic_store(&shadow_differed_n, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

/* ---- the shadow check (GPUACCEL_KERNELS_VERIFY) ---------------------------------------
 * On a replacement's first N launches whose row says what it writes: before
 * it, on the program's stream, the bytes it will write are saved, the
 * original runs (with the program's own configuration), its bytes are kept
 * aside and the saved ones put back; the replacement then runs as usual.
 * After its launch the stream is waited for and the two results compared:
 * where they differ the original's bytes are put back and the replacement is
 * dropped for good. Not while graphs may hold launches (the wait would be for
 * a launch not yet made). */

typedef struct shadow {
    decision_t *d;      /* NULL: no check pending on this thread */
    CUstream s;
    unsigned n;
    struct {
        CUdeviceptr at, save, out;
        size_t len;
    } w[GA_KERNELS_MAX_WRITES];
} shadow_t;
/* Begun in the launch's rewrite, ended in its launch_done: one thread. */
static GA_TLS shadow_t pending;

static void shadow_free(const ga_rt_t *rt, shadow_t *sh)
{
    __typeof__(&cuMemFree_v2) mfree = GA_REAL(rt, GA_ID_cuMemFree_v2, cuMemFree_v2);
    for (unsigned i = 0; i < sh->n; i++) {
        if (sh->w[i].save)
            mfree(sh->w[i].save);
        if (sh->w[i].out)
            mfree(sh->w[i].out);
    }
    memset(sh, 0, sizeof *sh);
}

/* The bytes write w of the launch covers: [*at, *at + *len). */
static bool write_range(const ga_kernel_t *k, const ga_launch_t *l, const ga_kernels_write_t *w,
                        CUdeviceptr *at, size_t *len)
{
    if (w->ptr >= k->nparams || w->count >= k->nparams || k->size[w->ptr] != 8 ||
        (k->size[w->count] != 4 && k->size[w->count] != 8))
        return false; /* a row that does not fit the kernel: nothing checked */
    uint64_t count = 0;
    uint32_t c32;
    memcpy(at, l->params[w->ptr], 8);
    if (k->size[w->count] == 4)
        memcpy(&c32, l->params[w->count], 4), count = c32;
    else
        memcpy(&count, l->params[w->count], 8);
    if (count > ((uint64_t)1 << 40) / w->scale)
        return false;
    *len = (size_t)(count * w->scale);
    return true;
}

static void shadow_begin(const ga_rt_t *rt, decision_t *d, const ga_launch_t *l,
                         const unsigned grid[3], const unsigned block[3])
{
    const ga_kernel_t *k = ga_kernel_info(rt, l->original);
    if (!k || !k->params_known || !l->params || !ga_own_calls_enter())
        return;
    __typeof__(&cuMemAlloc_v2) alloc = GA_REAL(rt, GA_ID_cuMemAlloc_v2, cuMemAlloc_v2);
    __typeof__(&cuMemcpyDtoDAsync_v2) dd =
        GA_REAL(rt, GA_ID_cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2);
    __typeof__(&cuLaunchKernel) launch =
        GA_REAL(rt, l->per_thread ? GA_ID_cuLaunchKernel_ptsz : GA_ID_cuLaunchKernel, cuLaunchKernel);
    shadow_t sh = {.d = d, .s = l->per_thread && !l->stream ? CU_STREAM_PER_THREAD : l->stream};
    bool ok = alloc && dd && launch;
    for (unsigned i = 0; ok && i < d->nwrites; i++) {
        CUdeviceptr at;
        size_t len;
        if (!(ok = write_range(k, l, &d->writes[i], &at, &len)) || !len)
            continue;
        unsigned j = sh.n++;
        sh.w[j].at = at, sh.w[j].len = len;
        ok = alloc(&sh.w[j].save, len) == CUDA_SUCCESS && alloc(&sh.w[j].out, len) == CUDA_SUCCESS &&
             dd(sh.w[j].save, at, len, sh.s) == CUDA_SUCCESS;
    }
    ok = ok && sh.n &&
         launch(l->original, grid[0], grid[1], grid[2], block[0], block[1], block[2], l->shmem,
                l->stream, l->params, NULL) == CUDA_SUCCESS;
    for (unsigned j = 0; ok && j < sh.n; j++)
        ok = dd(sh.w[j].out, sh.w[j].at, sh.w[j].len, sh.s) == CUDA_SUCCESS &&
             dd(sh.w[j].at, sh.w[j].save, sh.w[j].len, sh.s) == CUDA_SUCCESS;
    if (ok)
        pending = sh;
    else
        shadow_free(rt, &sh);
    ga_own_calls_leave();
}

/* Are the replacement's bytes the original's? -1 unknown (an error). */
static int shadow_same(const ga_rt_t *rt, const shadow_t *sh)
{
    __typeof__(&cuMemcpyDtoH_v2) dh = GA_REAL(rt, GA_ID_cuMemcpyDtoH_v2, cuMemcpyDtoH_v2);
    int same = 1;
    for (unsigned j = 0; same == 1 && j < sh->n; j++) {
        char *a = malloc(sh->w[j].len), *b = malloc(sh->w[j].len);
        if (!a || !b || dh(a, sh->w[j].at, sh->w[j].len) != CUDA_SUCCESS ||
            dh(b, sh->w[j].out, sh->w[j].len) != CUDA_SUCCESS)
            same = -1;
        else if (memcmp(a, b, sh->w[j].len))
            same = 0;
        free(a), free(b);
    }
    return same;
}

/* Out of line, as rewrite: inlined, its register saves came before every
 * launch's test for a pending check. */
__attribute__((noinline)) static void shadow_end(const ga_rt_t *rt, const ga_launch_t *l)
{
    shadow_t sh = pending;
    memset(&pending, 0, sizeof pending);
    if (!sh.d || !ga_own_calls_enter()) { /* (a capture opening: the scratch stays) */
        return;
    }
    decision_t *d = sh.d;
    bool ran = l->rewritten_by == &ga_feature_kernels && l->rewrite_result == CUDA_SUCCESS;
    __typeof__(&cuStreamSynchronize) sync = GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize);
    __typeof__(&cuMemcpyDtoDAsync_v2) dd =
        GA_REAL(rt, GA_ID_cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2);
    int same = ran && sync(sh.s) == CUDA_SUCCESS ? shadow_same(rt, &sh) : -1;
    if (same == 0) {
        for (unsigned j = 0; j < sh.n; j++) /* the original's bytes, as without the library */
            dd(sh.w[j].at, sh.w[j].out, sh.w[j].len, sh.s);
        sync(sh.s);
        atomic_store_explicit(&d->replacement, NULL, memory_order_release);
        atomic_store(&d->verify_left, 0);
        atomic_fetch_add(&shadow_differed_n, 1);
        ga_warn("kernels: %s: its replacement wrote other bytes than the original "
                "(GPUACCEL_KERNELS_VERIFY): the original's kept, the replacement dropped",
                d->name);
    } else if (same == 1) {
        atomic_fetch_add(&shadow_same_n, 1);
        unsigned left = atomic_load(&d->verify_left);
        while (left && !atomic_compare_exchange_weak(&d->verify_left, &left, left - 1))
            ;
        if (left == 1)
            ga_info("kernels: %s: its replacement wrote the original's bytes on every launch "
                    "checked", d->name);
    }
    shadow_free(rt, &sh);
    ga_own_calls_leave();
}

/* Launches with `extra` carry their parameters in one blob whose layout the
 * replacement need not share: never swapped. */
/* Out of line: inlined, its register saves came before the test that ends
 * most launches (kernels_rewrite). */
__attribute__((noinline)) static bool rewrite(const ga_rt_t *rt, ga_launch_t *l)
{
    if (!rt->cfg.kernels_verify || rt->cfg.graphs) /* every launch: nothing more */
        return ga_kernels_choose(rt, &l->f, l->grid, l->block, l->shmem);
    unsigned grid[3] = {l->grid[0], l->grid[1], l->grid[2]}; /* the program's, for the original */
    unsigned block[3] = {l->block[0], l->block[1], l->block[2]};
    if (!ga_kernels_choose(rt, &l->f, l->grid, l->block, l->shmem))
        return false;
    decision_t *d = ga_kernel_decision(l->original, slot);
    if (d && atomic_load_explicit(&d->verify_left, memory_order_relaxed))
        shadow_begin(rt, d, l, grid, block);
    return true;
}

static bool kernels_rewrite(const ga_rt_t *rt, ga_launch_t *l)
{
    if (GA_LIKELY(!atomic_load_explicit(&may_swap, memory_order_acquire)) || l->extra)
        return false;
    return rewrite(rt, l);
}

static void kernels_launch_done(const ga_rt_t *rt, const ga_launch_t *l, CUresult r)
{
    (void)r; /* the replacement's own result: the original may have run after it */
    if (GA_UNLIKELY(pending.d))
        shadow_end(rt, l);
    if (l->rewritten_by == &ga_feature_kernels && !l->held) /* a swap: counted, or undone */
        ga_kernels_launched(rt, l->original, l->rewrite_result);
}

GA_SWITCH(kernels)

const ga_feature_t ga_feature_kernels = {
    .summary = "known kernels replaced by faster ones with the same parameters",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuLibraryLoadData, GA_ID_cuLibraryGetKernel, GA_ID_cuKernelGetName,
             GA_ID_cuKernelGetParamInfo, GA_ID_cuFuncGetParamInfo),
    .init = ga_kernels_init,
    .report = kernels_report,
    .fork = &fork_ops,
    .rewrite = kernels_rewrite,
    .launch_done = kernels_launch_done,
    .code_loaded = kernels_code_loaded,
    .unload = kernels_unload,
    .ctx_gone = kernels_ctx_gone,
};
