/* tune.c - launch configurations rewritten from a verified table
 * (GPUACCEL_TUNE, GPUACCEL_TUNE_TABLE; the format is in tune.h).
 *
 * Only the two transformations that are sound without reading a kernel are
 * expressed: a bounds-checked 1-D kernel keeps its total thread count
 * (threads), a grid-stride kernel takes any grid (stride); the tuner wrote
 * only entries it proved bit-identical. At launch, an entry applies when the
 * kernel's name, device, grid, block and dynamic shared memory all match; it
 * is never applied past the kernel's own thread limit (__launch_bounds__).
 * Cooperative, cluster and attributed launches do not come through here.
 *
 * Owns: the table (uthash by name) and per-handle lookups, under `lock`.
 * Must never: call the driver holding `lock`. */
#define _GNU_SOURCE
#include "features/tune/tune.h"

#include <ctype.h>
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

/* ---- the table format ---------------------------------------------------------- */

static bool parse_uint(const char *s, unsigned *out, const char **end)
{
    if (!isdigit((unsigned char)*s))
        return false;
    unsigned long v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (unsigned long)(*s++ - '0');
        if (v > 0x7fffffffUL)
            return false;
    }
    *out = (unsigned)v;
    *end = s;
    return true;
}

/* "x" or "x,y,z", every part >= 1 */
static bool parse_dim(const char *s, unsigned d[3])
{
    const char *e;
    d[1] = d[2] = 1;
    for (int i = 0; i < 3; i++) {
        if (!parse_uint(s, &d[i], &e) || d[i] == 0)
            return false;
        if (*e == '\0')
            return i == 0 || i == 2;
        if (*e != ',' || i == 2)
            return false;
        s = e + 1;
    }
    return false;
}

static bool parse_cc(const char *s, int *cc)
{
    if (!strcmp(s, "*"))
        return *cc = 0, true;
    unsigned v;
    const char *e;
    if (strncmp(s, "sm_", 3) || !parse_uint(s + 3, &v, &e) || *e || v < 10 || v > 999)
        return false;
    *cc = (int)v;
    return true;
}

static bool valid_threads(const ga_tune_entry_t *e)
{
    bool one_d = e->grid[1] == 1 && e->grid[2] == 1 && e->block[1] == 1 && e->block[2] == 1 &&
                 e->new_grid[1] == 1 && e->new_grid[2] == 1 && e->new_block[1] == 1 &&
                 e->new_block[2] == 1;
    uint64_t total = (uint64_t)e->grid[0] * e->block[0];
    return one_d && e->new_grid[0] == (total + e->new_block[0] - 1) / e->new_block[0];
}

static bool parse_line(char *line, ga_tune_entry_t *e)
{
    char *tok[9];
    if (ga_line_words(line, tok, 9) != 9 || strcmp(tok[5], "->") || strlen(tok[0]) > 4096)
        return false;
    unsigned shmem;
    const char *end;
    e->name = tok[0];
    if (!parse_cc(tok[1], &e->cc) || !parse_dim(tok[2], e->grid) || !parse_dim(tok[3], e->block) ||
        !parse_uint(tok[4], &shmem, &end) || *end || !parse_dim(tok[6], e->new_grid) ||
        !parse_dim(tok[7], e->new_block))
        return false;
    e->shmem = shmem;
    if (!strcmp(tok[8], "stride"))
        e->stride = true;
    else if (!strcmp(tok[8], "threads"))
        e->stride = false;
    else
        return false;
    uint64_t threads = (uint64_t)e->new_block[0] * e->new_block[1] * e->new_block[2];
    return threads <= 1024 && (e->stride || valid_threads(e));
}

typedef struct {
    ga_tune_entry_fn add;
    void *arg;
} parse_ctx_t;

static bool table_line(void *arg, char *line)
{
    const parse_ctx_t *c = arg;
    ga_tune_entry_t e;
    memset(&e, 0, sizeof e);
    if (!parse_line(line, &e))
        return false;
    c->add(c->arg, &e);
    return true;
}

int ga_tune_parse(const char *text, size_t len, const char *source_name, ga_tune_entry_fn add,
                  void *arg)
{
    parse_ctx_t c = {add, arg};
    return ga_each_line(text, len, source_name,
                        "'<kernel> <sm_XY|*> <grid> <block> <shmem> -> <grid> <block> "
                        "threads|stride' (threads: 1-D, same thread count)",
                        table_line, &c);
}

int ga_tune_format(const ga_tune_entry_t *e, char *out, size_t cap)
{
    char dev[16];
    if (e->cc)
        snprintf(dev, sizeof dev, "sm_%d", e->cc);
    else
        snprintf(dev, sizeof dev, "*");
    return snprintf(out, cap, "%s %s %u,%u,%u %u,%u,%u %u -> %u,%u,%u %u,%u,%u %s", e->name, dev,
                    e->grid[0], e->grid[1], e->grid[2], e->block[0], e->block[1], e->block[2],
                    e->shmem, e->new_grid[0], e->new_grid[1], e->new_grid[2], e->new_block[0],
                    e->new_block[1], e->new_block[2], e->stride ? "stride" : "threads");
}

/* ---- the loaded table ---------------------------------------------------------- */

typedef struct rule {
    ga_tune_entry_t e; /* e.name points to `name` */
    struct rule *next; /* other entries of the same kernel */
} rule_t;

typedef struct kernel_rules {
    char *name;
    rule_t *rules;
    UT_hash_handle hh;
} kernel_rules_t;

/* What the table holds for one handle: kept in the registry's slot for the
 * handle (read without a lock on every launch). */
typedef struct handle {
    const void *f;
    const kernel_rules_t *k; /* NULL: not in the table */
    int max_threads;         /* the kernel's own limit */
} handle_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Built at init, before the runtime is published; read-only after, so read
 * without the lock. */
static kernel_rules_t *table;
static int slot = -1; /* the registry's decision slot */
static _Atomic uint64_t rewritten, over_limit;

static void add_rule(void *arg, const ga_tune_entry_t *e)
{
    (void)arg;
    kernel_rules_t *k;
    HASH_FIND_STR(table, e->name, k);
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k || !(k->name = strdup(e->name))) {
            free(k);
            return;
        }
        HASH_ADD_KEYPTR(hh, table, k->name, strlen(k->name), k);
    }
    rule_t *r = calloc(1, sizeof *r);
    if (!r)
        return;
    r->e = *e;
    r->e.name = k->name;
    r->next = k->rules;
    k->rules = r;
}

void ga_tune_init(const ga_rt_t *rt)
{
    if (slot < 0)
        slot = ga_kernel_slot_new();
    const char *path = rt->cfg.tune_table;
    if (!path || !*path) {
        ga_info("tune: GPUACCEL_TUNE=1 but no GPUACCEL_TUNE_TABLE: nothing to rewrite");
        return;
    }
    size_t n = 0;
    char *text = ga_read_file(path, (size_t)16 << 20, &n);
    if (!text) {
        ga_warn("GPUACCEL_TUNE_TABLE: cannot read '%s' as a table (missing, unreadable or over "
                "16 MiB); no launch is rewritten", path);
        return;
    }
    pthread_mutex_lock(&lock);
    int good = ga_tune_parse(text, n, path, add_rule, NULL);
    pthread_mutex_unlock(&lock);
    ga_debug("tune: %d entries from %s", good, path);
    free(text);
}

/* ---- at launch ------------------------------------------------------------------ */

/* The most threads a block of this kernel may have (its __launch_bounds__). */
static int thread_limit(const ga_rt_t *rt, const ga_kernel_t *k)
{
    int v = ga_kernel_attr(rt, k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    return v > 0 ? v : 0;
}

static void resolve(const ga_rt_t *rt, handle_t *h)
{
    const ga_kernel_t *k = ga_kernel_info(rt, (CUfunction)h->f);
    if (!k)
        return;
    kernel_rules_t *kr;
    HASH_FIND_STR(table, k->name, kr);
    h->k = kr;
    h->max_threads = kr ? thread_limit(rt, k) : 0;
}

/* The handle's rules: decided once (two threads may both: the first to
 * record wins). */
static const handle_t *rules_of(const ga_rt_t *rt, CUfunction f)
{
    handle_t *h = ga_kernel_decision(f, slot);
    if (h)
        return h;
    handle_t *mine = calloc(1, sizeof *mine);
    if (!mine)
        return NULL;
    mine->f = f;
    resolve(rt, mine);
    if ((h = ga_kernel_decide(f, slot, mine)) != mine)
        free(mine);
    return h;
}

bool ga_tune_choose(const ga_rt_t *rt, CUfunction f, unsigned grid[3], unsigned block[3],
                    unsigned shmem)
{
    /* Asked about only after the driver accepted one launch (registry.h). */
    if (!table || !ga_kernel_was_launched(f))
        return false;
    const handle_t *h = rules_of(rt, f);
    if (!h || !h->k)
        return false;
    int cc = ga_device_cc(rt);
    const ga_tune_entry_t *hit = NULL;
    for (rule_t *r = h->k->rules; r && !hit; r = r->next)
        if ((!r->e.cc || r->e.cc == cc) && !memcmp(r->e.grid, grid, sizeof r->e.grid) &&
            !memcmp(r->e.block, block, sizeof r->e.block) && r->e.shmem == shmem)
            hit = &r->e; /* entries for another device are ignored */
    if (!hit)
        return false;
    const ga_tune_entry_t e = *hit;
    if ((int)(e.new_block[0] * e.new_block[1] * e.new_block[2]) > h->max_threads) {
        atomic_fetch_add(&over_limit, 1);
        return false; /* past the kernel's __launch_bounds__: never */
    }
    memcpy(grid, e.new_grid, sizeof e.new_grid);
    memcpy(block, e.new_block, sizeof e.new_block);
    atomic_fetch_add_explicit(&rewritten, 1, memory_order_relaxed);
    return true;
}

static void tune_report(void)
{
    uint64_t r = atomic_load(&rewritten), o = atomic_load(&over_limit);
    if (r + o)
        ga_info("tune: rewritten=%llu refused_over_launch_bounds=%llu", (unsigned long long)r,
                (unsigned long long)o);
}

static void fork_child(void)
{
    /* The table stays: it is plain text, not CUDA state; the registry forgets
     * the decisions. */
    atomic_store(&rewritten, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

static bool tune_rewrite(const ga_rt_t *rt, ga_launch_t *l)
{
    return ga_tune_choose(rt, l->f, l->grid, l->block, l->shmem);
}

GA_SWITCH(tune)

const ga_feature_t ga_feature_tune = {
    .summary = "launch configurations rewritten from a verified table",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuFuncGetAttribute, GA_ID_cuFuncGetName),
    .init = ga_tune_init,
    .report = tune_report,
    .fork = &fork_ops,
    .rewrite = tune_rewrite,
};
