/* report.c - gpuaccel report (report.h): one profile's own report, or the
 * profiles of several processes merged: a line per process (rank, pid, wall
 * time, calls, launches, synchronizations, copies), the totals, and the
 * driver calls, copies, kernels, counters and opportunities summed across the
 * processes; as text, or as JSON (schema gpuaccel-report/1, man gpuaccel-profile(5)).
 *
 * Owns: the merge (lists keyed by their undecoded names, which one writer
 * encodes the same way in every file) and both layouts of the merged view.
 * Must never: print anything before every file has been read and checked (a
 * bad file ends the command with its name and the reason, and no report). */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "features/profile/format.h"
#include "profiles.h"

enum { EX_OK = 0, EX_USAGE = 2 };

/* A row of a merged list: the sums under one name. */
typedef struct row {
    char *key; /* undecoded; a counter's is "feature\001name" */
    size_t len;
    uint64_t a, b, c; /* entry: calls, ns; kernel: launches, gpu_ns, timed; counter: value */
    unsigned procs;   /* how many processes have it */
    int last;         /* the last process counted in procs */
    UT_hash_handle hh;
} row_t;

typedef struct merge {
    pf_proc_t *procs;
    int n, cur;
    row_t *entries, *kernels, *counters;
    uint64_t copy[PF_DIRS][PF_BUCKETS][3]; /* count, bytes, ns */
    unsigned helps[PF_OPPS];
    uint64_t saving[PF_OPPS];
    bool seen[PF_OPPS]; /* some profile has an estimate for it (older ones lack some) */
    bool oom;
} merge_t;

/* ---- the merge -------------------------------------------------------------------- */
static row_t *row_of(merge_t *m, row_t **table, const char *key, size_t len)
{
    row_t *r;
    HASH_FIND(hh, *table, key, len, r);
    if (!r) {
        if (!(r = calloc(1, sizeof *r)) || !(r->key = malloc(len + 1))) {
            free(r);
            m->oom = true;
            return NULL;
        }
        memcpy(r->key, key, len);
        r->key[len] = '\0', r->len = len, r->last = -1;
        HASH_ADD_KEYPTR(hh, *table, r->key, len, r);
    }
    if (r->last != m->cur)
        r->procs++, r->last = m->cur;
    return r;
}

static void on_entry(void *ctx, json_slice_t name, uint64_t calls, uint64_t ns)
{
    merge_t *m = ctx;
    row_t *r = row_of(m, &m->entries, name.p, name.n);
    if (r)
        r->a += calls, r->b += ns;
}

static void on_kernel(void *ctx, json_slice_t name, uint64_t launches, uint64_t gpu_ns,
                      uint64_t timed)
{
    merge_t *m = ctx;
    row_t *r = row_of(m, &m->kernels, name.p, name.n);
    if (r)
        r->a += launches, r->b += gpu_ns, r->c += timed;
}

static void on_copy(void *ctx, unsigned d, unsigned b, uint64_t count, uint64_t bytes, uint64_t ns)
{
    merge_t *m = ctx;
    m->copy[d][b][0] += count, m->copy[d][b][1] += bytes, m->copy[d][b][2] += ns;
}

static void on_counter(void *ctx, json_slice_t feature, json_slice_t name, uint64_t value)
{
    merge_t *m = ctx;
    char key[512];
    int n = snprintf(key, sizeof key, "%.*s\001%.*s", (int)feature.n, feature.p, (int)name.n,
                     name.p);
    row_t *r = n > 0 && (size_t)n < sizeof key ? row_of(m, &m->counters, key, (size_t)n) : NULL;
    if (r)
        r->a += value;
}

static void on_opportunity(void *ctx, unsigned f, const pf_opp_t *o)
{
    merge_t *m = ctx;
    bool helps = o->verdict == PF_HELPS;
    m->helps[f] += helps;
    m->saving[f] += helps ? o->saving_ns : 0;
    m->seen[f] = true;
}

/* ---- reading the files ------------------------------------------------------------ */
static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* The files the arguments name: a FILE that is there is itself; otherwise
 * BASE (or BASE.json) stands for every profile of that run. */
static int resolve(char *const *args, int n, char ***files, const char **base)
{
    *base = NULL;
    if (n == 1 && !is_file(args[0])) {
        char b[4096];
        snprintf(b, sizeof b, "%s", args[0]);
        if (ends_with(b, ".json"))
            b[strlen(b) - 5] = '\0';
        int k = pf_find_run(b, files);
        if (k > 0)
            return *base = args[0], k;
        if (k == 0)
            pf_free_list(*files, 0);
        fprintf(stderr, "gpuaccel: report: %s: %s\n", args[0],
                k < 0 ? strerror(errno) : "no such file, and no profile of that name "
                                          "(NAME.json, NAME.PID.json, NAME.rankR.PID.json)");
        return -1;
    }
    if (!(*files = calloc((size_t)n, sizeof **files)))
        return -1;
    for (int i = 0; i < n; i++)
        if (!((*files)[i] = strdup(args[i])))
            return pf_free_list(*files, i), -1;
    return n;
}

/* Reads every file into m; keeps the text of the first (a single profile's
 * report) in *keep. False after one line naming the bad file. */
static bool read_all(merge_t *m, char **files, int n, char **keep)
{
    const pf_sink_t sink = {m, on_entry, on_kernel, on_copy, on_counter, on_opportunity};
    if (!(m->procs = calloc((size_t)n, sizeof *m->procs)))
        return false;
    for (m->cur = 0; m->cur < n; m->cur++) {
        char why[256];
        char *text = pf_read(files[m->cur], &m->procs[m->cur], &sink, why, sizeof why);
        if (!text) {
            fprintf(stderr, "gpuaccel: report: %s: %s\n", files[m->cur], why);
            return false;
        }
        if (m->oom) {
            fprintf(stderr, "gpuaccel: report: out of memory\n");
            return free(text), false;
        }
        if (m->cur == 0)
            *keep = text;
        else
            free(text);
    }
    m->n = n;
    return true;
}

/* ---- order -------------------------------------------------------------------------- */
static int proc_order(const void *x, const void *y)
{
    const pf_proc_t *a = x, *b = y;
    if (a->ranked != b->ranked)
        return a->ranked ? 1 : -1; /* the processes without a rank first: the launcher */
    if (a->ranked && a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int by_b_then_a(const void *x, const void *y)
{
    const row_t *a = *(row_t *const *)x, *b = *(row_t *const *)y;
    if (a->b != b->b)
        return a->b > b->b ? -1 : 1;
    if (a->a != b->a)
        return a->a > b->a ? -1 : 1;
    return strcmp(a->key, b->key);
}

static int by_a_then_b(const void *x, const void *y)
{
    const row_t *a = *(row_t *const *)x, *b = *(row_t *const *)y;
    if (a->a != b->a)
        return a->a > b->a ? -1 : 1;
    if (a->b != b->b)
        return a->b > b->b ? -1 : 1;
    return strcmp(a->key, b->key);
}

static int by_key(const void *x, const void *y)
{
    return strcmp((*(row_t *const *)x)->key, (*(row_t *const *)y)->key);
}

/* The table's rows as a sorted array (malloc'd; NULL when empty or no memory). */
static row_t **sorted(row_t *table, unsigned *n, int (*cmp)(const void *, const void *))
{
    *n = HASH_COUNT(table);
    row_t **v = *n ? malloc(*n * sizeof *v) : NULL;
    if (!v)
        return *n = 0, NULL;
    unsigned i = 0;
    for (row_t *r = table; r; r = r->hh.next)
        v[i++] = r;
    qsort(v, *n, sizeof *v, cmp);
    return v;
}

/* ---- what the processes were ------------------------------------------------------ */
typedef struct ranks {
    unsigned ranked, distinct, missing;
    int64_t world; /* the world size all ranked processes agree on, else -1 */
} ranks_t;

/* Over the processes sorted by proc_order (the ranked ones last, by rank). */
static void count_ranks(const merge_t *m, ranks_t *k)
{
    memset(k, 0, sizeof *k);
    k->world = -1;
    bool agree = true;
    const pf_proc_t *prev = NULL;
    for (int i = 0; i < m->n; i++) {
        const pf_proc_t *p = &m->procs[i];
        if (!p->ranked)
            continue;
        k->distinct += !prev || prev->rank != p->rank;
        if (!prev)
            k->world = p->world_size;
        agree = agree && p->world_size == k->world;
        k->ranked++, prev = p;
    }
    if (!agree)
        k->world = -1;
    if (k->world > (int64_t)k->distinct)
        k->missing = (unsigned)(k->world - (int64_t)k->distinct);
}

/* "0-3, 5, 7-8": the distinct ranks of the (sorted) processes. */
static void rank_list(ga_out_t *o, const merge_t *m)
{
    bool first = true;
    for (int i = 0; i < m->n; i++) {
        const pf_proc_t *p = &m->procs[i];
        if (!p->ranked || (i && m->procs[i - 1].ranked && m->procs[i - 1].rank == p->rank))
            continue;
        uint64_t end = p->rank;
        int j = i + 1;
        for (; j < m->n && m->procs[j].rank <= end + 1; j++)
            end = m->procs[j].rank;
        ga_out_s(o, first ? "" : ", "), ga_out_u(o, p->rank), first = false;
        if (end > p->rank)
            ga_out_s(o, end > p->rank + 1 ? "-" : ", "), ga_out_u(o, end);
        i = j - 1;
    }
}

static void text_header(ga_out_t *o, const merge_t *m, const char *base)
{
    ranks_t k;
    count_ranks(m, &k);
    ga_out_s(o, "gpuaccel report: "), ga_out_u(o, (uint64_t)m->n);
    ga_out_s(o, " processes merged from "), ga_out_s(o, base ? base : "the files given");
    if (k.ranked) {
        ga_out_s(o, k.distinct == 1 ? " (rank " : " (ranks "), rank_list(o, m);
        if (k.world >= 0)
            ga_out_s(o, " of world size "), ga_out_u(o, (uint64_t)k.world);
        if (k.missing)
            ga_out_s(o, ", "), ga_out_u(o, k.missing), ga_out_s(o, " without a profile");
        if (k.ranked < (unsigned)m->n)
            ga_out_s(o, "; "), ga_out_u(o, (uint64_t)m->n - k.ranked),
                ga_out_s(o, m->n - k.ranked == 1 ? " process without a rank" :
                                                    " processes without a rank");
        ga_out_s(o, ")");
    }
    ga_out_s(o, "\n");
}

/* ---- the text report ---------------------------------------------------------------- */
static void cell_u(ga_out_t *o, uint64_t v, unsigned w)
{
    ga_cell_t c;
    ga_out_count(ga_cell(&c), v), ga_out_cell(o, &c, w, true);
}

static void cell_dur(ga_out_t *o, uint64_t ns, unsigned w)
{
    ga_cell_t c;
    ga_out_dur(ga_cell(&c), ns), ga_out_cell(o, &c, w, true);
}

static void cell_bytes(ga_out_t *o, uint64_t b, unsigned w)
{
    ga_cell_t c;
    ga_out_bytes(ga_cell(&c), b), ga_out_cell(o, &c, w, true);
}

static void proc_line(ga_out_t *o, const pf_proc_t *p)
{
    ga_cell_t c;
    ga_out_s(o, "  ");
    if (p->ranked)
        ga_out_u(ga_cell(&c), p->rank);
    else
        ga_out_s(ga_cell(&c), "-");
    ga_out_cell(o, &c, 6, false);
    ga_out_u(ga_cell(&c), p->pid), ga_out_cell(o, &c, 8, true);
    cell_dur(o, p->wall_ns, 11), cell_u(o, p->calls, 11), cell_u(o, p->launches, 10);
    cell_u(o, p->syncs, 8), cell_u(o, p->copies, 9), cell_bytes(o, p->copy_bytes, 12);
    cell_u(o, p->allocs, 8);
    const char *slash = strrchr(p->file, '/');
    ga_out_s(o, "  "), ga_out_s(o, slash ? slash + 1 : p->file);
    ga_out_s(o, p->by_signal ? " (stopped by a signal)\n" : "\n");
}

static void text_processes(ga_out_t *o, const merge_t *m, const pf_proc_t *t)
{
    ga_out_s(o, "\nProcesses\n  rank       pid        wall      calls  launches   syncs"
                "   copies      copied  allocs  file\n");
    for (int i = 0; i < m->n; i++)
        proc_line(o, &m->procs[i]);
    ga_out_s(o, "  total          "), cell_dur(o, t->wall_ns, 11), cell_u(o, t->calls, 11);
    cell_u(o, t->launches, 10), cell_u(o, t->syncs, 8), cell_u(o, t->copies, 9);
    cell_bytes(o, t->copy_bytes, 12), cell_u(o, t->allocs, 8);
    ga_out_s(o, "  (wall: the longest)\n");
}

static void text_totals(ga_out_t *o, const merge_t *m, const pf_proc_t *t)
{
    ga_out_s(o, "\nTotals over "), ga_out_u(o, (uint64_t)m->n), ga_out_s(o, " processes\n");
    ga_out_s(o, "  driver calls "), ga_out_count(o, t->calls), ga_out_s(o, " (");
    ga_out_dur(o, t->call_ns), ga_out_s(o, " inside them), synchronizing calls ");
    ga_out_count(o, t->syncs), ga_out_s(o, "\n  kernel launches "), ga_out_count(o, t->launches);
    if (t->timed)
        ga_out_s(o, " ("), ga_out_dur(o, t->gpu_ns), ga_out_s(o, " GPU time)");
    ga_out_s(o, "\n  copies "), ga_out_count(o, t->copies), ga_out_s(o, " (");
    ga_out_bytes(o, t->copy_bytes), ga_out_s(o, ", "), ga_out_dur(o, t->copy_ns);
    ga_out_s(o, "), small device-to-host reads "), ga_out_count(o, t->small_reads);
    ga_out_s(o, "\n  cuMemAlloc "), ga_out_count(o, t->allocs), ga_out_s(o, " (");
    ga_out_bytes(o, t->alloc_bytes), ga_out_s(o, "), "), ga_out_count(o, t->alloc_failed);
    ga_out_s(o, " failed; cuMemFree "), ga_out_count(o, t->frees), ga_out_s(o, " (");
    ga_out_bytes(o, t->free_bytes), ga_out_s(o, "); peak live, summed over the processes ");
    ga_out_bytes(o, t->peak_live), ga_out_s(o, "\n");
}

static void text_opps(ga_out_t *o, const merge_t *m)
{
    ga_out_s(o, "\nOpportunities (in how many processes each feature would help; estimates "
                "summed, the largest first)\n  feature           helps in     saving\n");
    unsigned order[PF_OPPS], n = 0;
    for (unsigned f = 0; f < PF_OPPS; f++) { /* by the saving summed, then in the list's order */
        if (!m->seen[f])
            continue;
        unsigned j = n++;
        for (; j > 0 && m->saving[order[j - 1]] < m->saving[f]; j--)
            order[j] = order[j - 1];
        order[j] = f;
    }
    for (unsigned k = 0; k < n; k++) {
        unsigned f = order[k];
        ga_cell_t c;
        ga_out_s(o, "  "), ga_out_s(ga_cell(&c), pf_opp_name[f]), ga_out_cell(o, &c, 18, false);
        ga_out_t *w = ga_cell(&c);
        ga_out_u(w, m->helps[f]), ga_out_s(w, " of "), ga_out_u(w, (uint64_t)m->n);
        ga_out_cell(o, &c, 10, false);
        w = ga_cell(&c);
        if (m->helps[f])
            ga_out_s(w, "~"), ga_out_dur(w, m->saving[f]);
        else
            ga_out_s(w, "-");
        ga_out_cell(o, &c, 11, true), ga_out_s(o, "\n");
    }
}

/* A name from a row's key, decoded and cut for a table. */
static void out_name(ga_out_t *o, const char *key, size_t len, size_t max)
{
    char *d = json_strdup((json_slice_t){key, len});
    ga_out_name(o, d ? d : "?", max);
    free(d);
}

static void text_entries(ga_out_t *o, const merge_t *m)
{
    unsigned n;
    row_t **v = sorted(m->entries, &n, by_b_then_a);
    ga_out_s(o, "\nDriver calls (summed, busiest first)\n  entry point                 "
                "          calls        time        mean  processes\n");
    for (unsigned i = 0; i < n && i < 25; i++) {
        ga_cell_t c;
        ga_out_s(o, "  "), out_name(ga_cell(&c), v[i]->key, v[i]->len, 32);
        ga_out_cell(o, &c, 32, false), cell_u(o, v[i]->a, 11), cell_dur(o, v[i]->b, 12);
        cell_dur(o, v[i]->a ? v[i]->b / v[i]->a : 0, 12), cell_u(o, v[i]->procs, 11);
        ga_out_s(o, "\n");
    }
    if (n > 25)
        ga_out_s(o, "  ... "), ga_out_u(o, n - 25), ga_out_s(o, " more in --json\n");
    if (!n)
        ga_out_s(o, "  none\n");
    free(v);
}

static void text_copies(ga_out_t *o, const merge_t *m)
{
    ga_out_s(o, "\nCopies (summed)\n  direction  size            count        bytes        time"
                "        mean\n");
    bool any = false;
    for (unsigned d = 0; d < PF_DIRS; d++)
        for (unsigned b = 0; b < PF_BUCKETS; b++) {
            const uint64_t *a = m->copy[d][b];
            if (!a[0])
                continue;
            ga_cell_t c;
            ga_out_s(o, "  "), ga_out_s(ga_cell(&c), pf_dir_name[d]), ga_out_cell(o, &c, 11, false);
            ga_out_s(ga_cell(&c), pf_bucket_name[b]), ga_out_cell(o, &c, 10, false);
            cell_u(o, a[0], 11), cell_bytes(o, a[1], 13), cell_dur(o, a[2], 12);
            cell_dur(o, a[2] / a[0], 12), ga_out_s(o, "\n");
            any = true;
        }
    if (!any)
        ga_out_s(o, "  none\n");
}

static void text_kernels(ga_out_t *o, const merge_t *m, bool timed)
{
    unsigned n;
    row_t **v = sorted(m->kernels, &n, timed ? by_b_then_a : by_a_then_b);
    ga_out_s(o, "\nKernels (summed by name, "), ga_out_s(o, timed ? "by GPU time" : "by launches");
    ga_out_s(o, ")\n    launches     GPU time  processes  name\n");
    for (unsigned i = 0; i < n && i < 20; i++) {
        ga_out_s(o, "  "), cell_u(o, v[i]->a, 10);
        if (v[i]->c)
            cell_dur(o, v[i]->b, 13);
        else
            ga_out_s(o, "            -");
        cell_u(o, v[i]->procs, 11), ga_out_s(o, "  ");
        out_name(o, v[i]->key, v[i]->len, 80), ga_out_s(o, "\n");
    }
    if (n > 20)
        ga_out_s(o, "  ... "), ga_out_u(o, n - 20), ga_out_s(o, " more in --json\n");
    if (!n)
        ga_out_s(o, "  none\n");
    free(v);
}

static void text_counters(ga_out_t *o, const merge_t *m)
{
    unsigned n;
    row_t **v = sorted(m->counters, &n, by_key);
    if (n)
        ga_out_s(o, "\nFeature counters (summed)\n");
    for (unsigned i = 0; i < n; i++) {
        char *sep = strchr(v[i]->key, '\001');
        ga_out_s(o, "  "), out_name(o, v[i]->key, (size_t)(sep - v[i]->key), 40);
        ga_out_s(o, "."), out_name(o, sep + 1, strlen(sep + 1), 40);
        ga_out_s(o, " "), ga_out_count(o, v[i]->a), ga_out_s(o, "\n");
    }
    free(v);
}

/* The sums of the per-process figures (wall: the longest). */
static void totals(const merge_t *m, pf_proc_t *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < m->n; i++) {
        const pf_proc_t *p = &m->procs[i];
        t->wall_ns = p->wall_ns > t->wall_ns ? p->wall_ns : t->wall_ns;
        t->calls += p->calls, t->call_ns += p->call_ns, t->syncs += p->syncs;
        t->launches += p->launches, t->gpu_ns += p->gpu_ns, t->timed += p->timed;
        t->copies += p->copies, t->copy_bytes += p->copy_bytes, t->copy_ns += p->copy_ns;
        t->small_reads += p->small_reads, t->allocs += p->allocs;
        t->alloc_bytes += p->alloc_bytes, t->alloc_failed += p->alloc_failed;
        t->frees += p->frees, t->free_bytes += p->free_bytes, t->peak_live += p->peak_live;
    }
}

static void print_text(ga_out_t *o, const merge_t *m, const char *base)
{
    pf_proc_t t;
    totals(m, &t);
    text_header(o, m, base);
    text_processes(o, m, &t);
    text_totals(o, m, &t);
    text_opps(o, m);
    text_entries(o, m);
    text_copies(o, m);
    text_kernels(o, m, t.timed != 0);
    text_counters(o, m);
    ga_out_s(o, "\nEach process's own report: gpuaccel report FILE (a file named above)\n");
}

/* ---- the JSON ------------------------------------------------------------------------ */
static void js_key(ga_out_t *o, const char *key, size_t len)
{
    char *d = json_strdup((json_slice_t){key, len});
    ga_out_js(o, d ? d : "?");
    free(d);
}

static void json_proc(ga_out_t *o, const pf_proc_t *p)
{
    ga_out_s(o, "{"), ga_out_key(o, "file", true), ga_out_js(o, p->file);
    ga_out_ku(o, "pid", p->pid);
    if (p->ranked)
        ga_out_ku(o, "rank", p->rank);
    if (p->world_size >= 0)
        ga_out_ku(o, "world_size", (uint64_t)p->world_size);
    if (p->local_rank >= 0)
        ga_out_ku(o, "local_rank", (uint64_t)p->local_rank);
    ga_out_key(o, "written_on", false), ga_out_js(o, p->by_signal ? "signal" : "exit");
}

static void json_sums(ga_out_t *o, const pf_proc_t *p)
{
    ga_out_ku(o, "wall_ns", p->wall_ns), ga_out_ku(o, "calls", p->calls);
    ga_out_ku(o, "call_ns", p->call_ns), ga_out_ku(o, "syncs", p->syncs);
    ga_out_ku(o, "launches", p->launches), ga_out_ku(o, "gpu_ns", p->gpu_ns);
    ga_out_ku(o, "copies", p->copies), ga_out_ku(o, "copy_bytes", p->copy_bytes);
    ga_out_ku(o, "copy_ns", p->copy_ns), ga_out_ku(o, "small_dtoh_reads", p->small_reads);
    ga_out_ku(o, "allocations", p->allocs), ga_out_ku(o, "allocation_bytes", p->alloc_bytes);
    ga_out_ku(o, "allocations_failed", p->alloc_failed), ga_out_ku(o, "frees", p->frees);
    ga_out_ku(o, "free_bytes", p->free_bytes), ga_out_ku(o, "peak_live_bytes", p->peak_live);
}

static void json_rows(ga_out_t *o, const char *name, row_t *table, bool kernel)
{
    unsigned n;
    row_t **v = sorted(table, &n, kernel ? by_a_then_b : by_b_then_a);
    ga_out_key(o, name, false), ga_out_s(o, "[");
    for (unsigned i = 0; i < n; i++) {
        ga_out_s(o, i ? ",{" : "{"), ga_out_key(o, "name", true);
        js_key(o, v[i]->key, v[i]->len);
        ga_out_ku(o, kernel ? "launches" : "calls", v[i]->a);
        ga_out_ku(o, kernel ? "gpu_ns" : "ns", v[i]->b);
        if (kernel)
            ga_out_ku(o, "timed_launches", v[i]->c);
        ga_out_ku(o, "processes", v[i]->procs), ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
    free(v);
}

static void json_counters(ga_out_t *o, const merge_t *m)
{
    unsigned n;
    row_t **v = sorted(m->counters, &n, by_key);
    ga_out_key(o, "counters", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < n; i++) {
        char *sep = strchr(v[i]->key, '\001');
        ga_out_s(o, i ? ",{" : "{"), ga_out_key(o, "feature", true);
        js_key(o, v[i]->key, (size_t)(sep - v[i]->key));
        ga_out_key(o, "name", false), js_key(o, sep + 1, strlen(sep + 1));
        ga_out_ku(o, "value", v[i]->a), ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
    free(v);
}

static void json_lists(ga_out_t *o, const merge_t *m)
{
    ga_out_key(o, "opportunities", false), ga_out_s(o, "[");
    for (unsigned f = 0, first = 1; f < PF_OPPS; f++) {
        if (!m->seen[f])
            continue;
        ga_out_s(o, first ? "{" : ",{"), first = 0;
        ga_out_key(o, "feature", true), ga_out_js(o, pf_opp_name[f]);
        ga_out_ku(o, "helps_in", m->helps[f]), ga_out_ku(o, "saving_ns", m->saving[f]);
        ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
    json_rows(o, "entry_points", m->entries, false);
    ga_out_key(o, "copies", false), ga_out_s(o, "[");
    bool first = true;
    for (unsigned d = 0; d < PF_DIRS; d++)
        for (unsigned b = 0; b < PF_BUCKETS; b++)
            if (m->copy[d][b][0]) {
                ga_out_s(o, first ? "{" : ",{"), first = false;
                ga_out_key(o, "direction", true), ga_out_js(o, pf_dir_name[d]);
                ga_out_key(o, "bucket", false), ga_out_js(o, pf_bucket_name[b]);
                ga_out_ku(o, "count", m->copy[d][b][0]), ga_out_ku(o, "bytes", m->copy[d][b][1]);
                ga_out_ku(o, "ns", m->copy[d][b][2]), ga_out_s(o, "}");
            }
    ga_out_s(o, "]");
    json_rows(o, "kernels", m->kernels, true);
    json_counters(o, m);
}

static void print_json(ga_out_t *o, const merge_t *m)
{
    ranks_t k;
    count_ranks(m, &k);
    pf_proc_t t;
    totals(m, &t);
    ga_out_s(o, "{"), ga_out_key(o, "schema", true), ga_out_js(o, "gpuaccel-report/1");
    ga_out_ku(o, "process_count", (uint64_t)m->n), ga_out_ku(o, "ranks", k.distinct);
    if (k.world >= 0)
        ga_out_ku(o, "world_size", (uint64_t)k.world);
    ga_out_key(o, "processes", false), ga_out_s(o, "[");
    for (int i = 0; i < m->n; i++)
        ga_out_s(o, i ? "," : ""), json_proc(o, &m->procs[i]), json_sums(o, &m->procs[i]),
            ga_out_s(o, "}");
    ga_out_s(o, "]"), ga_out_key(o, "totals", false), ga_out_s(o, "{");
    ga_out_key(o, "processes", true), ga_out_u(o, (uint64_t)m->n);
    json_sums(o, &t), ga_out_s(o, "}");
    json_lists(o, m);
    ga_out_s(o, "}\n");
}

/* ---- the command -------------------------------------------------------------------- */
static void free_table(row_t **table)
{
    row_t *r, *tmp;
    HASH_ITER(hh, *table, r, tmp) {
        HASH_DEL(*table, r);
        free(r->key);
        free(r);
    }
}

/* A single FILE.json whose run has other processes' profiles: say how to see all. */
static void note_siblings(const char *file)
{
    char base[4096], **list;
    if (!ends_with(file, ".json") || strlen(file) >= sizeof base)
        return;
    snprintf(base, sizeof base, "%.*s", (int)(strlen(file) - 5), file);
    int n = pf_find_run(base, &list);
    if (n > 1)
        fprintf(stderr, "gpuaccel: report: %d more profiles of this run beside %s; gpuaccel "
                        "report %s merges them\n", n - 1, file, base);
    if (n >= 0)
        pf_free_list(list, n);
}

int report_main(char *const *args, int n, bool json)
{
    char **files, *first = NULL;
    const char *base;
    int k = resolve(args, n, &files, &base);
    if (k < 0)
        return EX_USAGE;
    merge_t m = {0};
    bool ok = read_all(&m, files, k, &first);
    if (ok) {
        qsort(m.procs, (size_t)m.n, sizeof *m.procs, proc_order);
        static char stage[1 << 16];
        ga_out_t o = {STDOUT_FILENO, stage, sizeof stage, 0, false};
        fflush(stdout);
        if (json)
            print_json(&o, &m);
        else if (m.n == 1)
            json_fput(m.procs[0].text, stdout), fflush(stdout);
        else
            print_text(&o, &m, base);
        ga_out_flush(&o);
        if (m.n == 1 && !base && !json)
            note_siblings(files[0]);
    }
    free(first);
    free(m.procs);
    free_table(&m.entries), free_table(&m.kernels), free_table(&m.counters);
    pf_free_list(files, k);
    return ok ? EX_OK : EX_USAGE;
}
