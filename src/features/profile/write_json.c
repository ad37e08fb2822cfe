/* write_json.c - FILE.json, the profile for programs (doc/profile-schema.json:
 * a change here changes the schema): the opportunities, entry points, copies,
 * allocations, page-locked memory, streams and synchronizations, kernels,
 * sequences and counters, and the text report; in a ranked process (job.c)
 * also its place in the job. Schema /3, or /4 with a window file: /3 plus
 * "window" (/1 and /2 were the earlier versions' files, without and with
 * "job").
 *
 * Owns: the JSON's keys and their order.
 * Must never: allocate, use stdio or take a lock (it runs inside the write,
 * which may be in a signal handler). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <unistd.h>

static const char *const verdict_name[] = {"helps", "no", "unknown"};

static void json_copies(ga_out_t *o)
{
    ga_out_key(o, "copies", false), ga_out_s(o, "{");
    ga_out_key(o, "small_dtoh_reads", true), ga_out_u(o, ga_prof->copies[GA_COPY_DTOH][0].count);
    ga_out_ku(o, "small_dtoh_ns", ga_prof->copies[GA_COPY_DTOH][0].ns);
    ga_out_ku(o, "small_dtoh_follow_reads", ga_prof->follow.n);
    ga_out_ku(o, "small_dtoh_follow_ns", ga_prof->follow.ns);
    ga_out_ku(o, "small_dtoh_window_hits", ga_prof->win.hits);
    ga_out_ku(o, "small_dtoh_window_hit_ns", ga_prof->win.hit_ns);
    ga_out_ku(o, "small_dtoh_window_misses", ga_prof->win.misses);
    ga_out_ku(o, "small_dtoh_window_miss_ns", ga_prof->win.miss_ns);
    ga_out_ku(o, "large_min_bytes", ga_prof->large_min);
    ga_out_key(o, "large", false), ga_out_s(o, "[");
    for (unsigned d = 0; d < 2; d++)
        for (unsigned k = 0; k < 2; k++) {
            const acc_t *a = &ga_prof->large[d][k];
            ga_out_s(o, d || k ? ",{" : "{");
            ga_out_key(o, "direction", true), ga_out_js(o, d ? "dtoh" : "htod");
            ga_out_key(o, "host", false), ga_out_js(o, k ? "page_locked" : "pageable");
            ga_out_ku(o, "count", a->count), ga_out_ku(o, "bytes", a->bytes);
            ga_out_ku(o, "ns", a->ns), ga_out_s(o, "}");
        }
    ga_out_s(o, "]");
    ga_out_key(o, "buckets", false), ga_out_s(o, "[");
    bool first = true;
    for (unsigned d = 0; d < N_DIRS; d++)
        for (unsigned b = 0; b < N_BUCKETS; b++) {
            const acc_t *a = &ga_prof->copies[d][b];
            if (!a->count)
                continue;
            ga_out_s(o, first ? "{" : ",{"), first = false;
            ga_out_key(o, "direction", true), ga_out_js(o, ga_prof_dir_name[d]);
            ga_out_key(o, "bucket", false), ga_out_js(o, ga_prof_bucket_name[b]);
            ga_out_ku(o, "max_bytes", ga_prof_bucket_max[b]);
            ga_out_ku(o, "count", a->count), ga_out_ku(o, "bytes", a->bytes);
            ga_out_ku(o, "ns", a->ns), ga_out_s(o, "}");
        }
    ga_out_s(o, "]}");
}

static void json_mem(ga_out_t *o)
{
    ga_out_key(o, "allocations", false), ga_out_s(o, "{");
    ga_out_key(o, "count", true), ga_out_u(o, ga_prof->mem.count);
    ga_out_ku(o, "bytes", ga_prof->mem.bytes), ga_out_ku(o, "ns", ga_prof->mem.ns);
    ga_out_ku(o, "failed", ga_prof->mem.failed), ga_out_ku(o, "frees", ga_prof->mem.frees);
    ga_out_ku(o, "free_bytes", ga_prof->mem.free_bytes);
    ga_out_ku(o, "free_ns", ga_prof->mem.free_ns);
    ga_out_ku(o, "frees_unknown_size", ga_prof->mem.frees_unknown);
    ga_out_ku(o, "live_bytes", ga_prof->mem.live);
    ga_out_ku(o, "peak_live_bytes", ga_prof->mem.peak);
    ga_out_ku(o, "churn", ga_prof->mem.churn);
    ga_out_ku(o, "churn_ns", ga_prof->mem.churn_ns);
    ga_out_ku(o, "stream_ordered", ga_prof->apool.n);
    ga_out_ku(o, "stream_ordered_ns", ga_prof->apool.ns);
    ga_out_ku(o, "stream_ordered_regrown", ga_prof->apool.regrown);
    ga_out_ku(o, "stream_ordered_regrown_ns", ga_prof->apool.regrown_ns);
    ga_out_ku(o, "stream_ordered_reserved", ga_prof->apool.reserved);
    ga_out_ku(o, "stream_ordered_reserved_ns", ga_prof->apool.reserved_ns), ga_out_s(o, "}");
}

static void json_tally(ga_out_t *o, const char *n_key, const char *ns_key, tally_t *t)
{
    ga_out_ku(o, n_key, atomic_load(&t->n)), ga_out_ku(o, ns_key, atomic_load(&t->ns));
}

/* What the spans told the estimates: page-locked host memory, streams, and
 * the synchronizations lazy_sync could defer. */
static void json_calls(ga_out_t *o)
{
    ga_out_key(o, "page_locked", false), ga_out_s(o, "{");
    ga_out_key(o, "allocations", true), ga_out_u(o, atomic_load(&ga_prof->pin_alloc.n));
    ga_out_ku(o, "allocation_ns", atomic_load(&ga_prof->pin_alloc.ns));
    json_tally(o, "frees", "free_ns", &ga_prof->pin_free), ga_out_s(o, "}");
    ga_out_key(o, "streams", false), ga_out_s(o, "{");
    ga_out_key(o, "created", true), ga_out_u(o, atomic_load(&ga_prof->stream_new.n));
    ga_out_ku(o, "create_ns", atomic_load(&ga_prof->stream_new.ns));
    json_tally(o, "destroyed", "destroy_ns", &ga_prof->stream_gone), ga_out_s(o, "}");
    ga_out_key(o, "synchronizations", false), ga_out_s(o, "{");
    ga_out_key(o, "count", true), ga_out_u(o, atomic_load(&ga_prof->syncs.n));
    ga_out_ku(o, "ns", atomic_load(&ga_prof->syncs.ns));
    json_tally(o, "quiet", "quiet_ns", &ga_prof->lazy.quiet);
    ga_out_ku(o, "quiet_overlap_ns", atomic_load(&ga_prof->lazy.overlap_ns));
    ga_out_key(o, "shared_memory_made", false);
    ga_out_s(o, atomic_load(&ga_prof->lazy.tainted) ? "true}" : "false}");
}

static void json_dims(ga_out_t *o, const char *k, const unsigned d[3])
{
    ga_out_key(o, k, false), ga_out_s(o, "[");
    ga_out_u(o, d[0]), ga_out_s(o, ","), ga_out_u(o, d[1]), ga_out_s(o, ",");
    ga_out_u(o, d[2]), ga_out_s(o, "]");
}

static void json_configs(ga_out_t *o, const kern_t *k)
{
    ga_out_key(o, "configs", false), ga_out_s(o, "[");
    for (unsigned j = 0; j < k->ncfg; j++) {
        ga_out_s(o, j ? ",{" : "{");
        ga_out_key(o, "shmem", true), ga_out_u(o, k->cfg[j].shmem);
        json_dims(o, "grid", k->cfg[j].grid);
        json_dims(o, "block", k->cfg[j].block);
        ga_out_ku(o, "launches", k->cfg[j].launches), ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
}

static void json_kernels(ga_out_t *o, const summary_t *s)
{
    unsigned n = ga_prof_sorted_kernels(s->timed != 0);
    ga_out_key(o, "kernels", false), ga_out_s(o, "{");
    ga_out_key(o, "distinct", true), ga_out_u(o, n);
    ga_out_ku(o, "launches", ga_prof->launches);
    ga_out_ku(o, "overflow_launches", ga_prof->kern[MAX_KERNELS].launches);
    ga_out_key(o, "list", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < n && i < LIST_JSON; i++) {
        const kern_t *k = &ga_prof->kern[ga_prof->idx[i]];
        ga_out_s(o, i ? ",{" : "{");
        ga_out_key(o, "name", true), ga_out_js(o, ga_prof_kname(ga_prof->idx[i]));
        ga_out_ku(o, "launches", k->launches), ga_out_ku(o, "gpu_ns", k->gpu_ns);
        ga_out_ku(o, "timed_launches", k->timed);
        json_configs(o, k);
        ga_out_ku(o, "configs_dropped", k->cfg_dropped), ga_out_s(o, "}");
    }
    ga_out_s(o, "]}");
}

static void json_seqs(ga_out_t *o)
{
    unsigned n = ga_prof_sorted_seqs();
    ga_out_key(o, "sequences", false), ga_out_s(o, "{");
    ga_out_key(o, "segments", true), ga_out_u(o, ga_prof->segments);
    ga_out_ku(o, "single_launch_segments", ga_prof->singles);
    ga_out_ku(o, "distinct", ga_prof->nseq), ga_out_ku(o, "dropped", ga_prof->seq_dropped);
    ga_out_ku(o, "graph_min", ga_prof->graph_min);
    ga_out_key(o, "list", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < n && i < LIST_JSON; i++) {
        const seq_t *q = &ga_prof->seq[ga_prof->idx[i]];
        ga_out_s(o, i ? ",{" : "{");
        ga_out_key(o, "length", true), ga_out_u(o, q->len);
        ga_out_ku(o, "repeats", q->repeats);
        ga_out_ku(o, "launches", (uint64_t)q->len * q->repeats);
        ga_out_key(o, "kernels", false), ga_out_s(o, "[");
        for (unsigned j = 0; j < SEQ_NAMES && j < q->len; j++)
            ga_out_s(o, j ? "," : ""), ga_out_js(o, ga_prof_kname(q->first[j]));
        ga_out_s(o, "]}");
    }
    ga_out_s(o, "]}");
}

static void json_opps(ga_out_t *o, const opp_t ops[N_OPPS])
{
    ga_out_key(o, "opportunities", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < N_OPPS; i++) {
        ga_out_s(o, i ? ",{" : "{");
        ga_out_key(o, "feature", true), ga_out_js(o, ops[i].feature);
        ga_out_key(o, "verdict", false), ga_out_js(o, verdict_name[ops[i].verdict]);
        ga_out_ku(o, "saving_ns", ops[i].saving_ns);
        ga_out_ku(o, "acts_on", ops[i].acts_on);
        ga_out_key(o, "reason", false), ga_out_js(o, ops[i].why);
        ga_out_key(o, "check", false), ga_out_js(o, ops[i].check), ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
}

static void json_entries(ga_out_t *o)
{
    unsigned n = ga_prof_sorted_entries();
    ga_out_key(o, "entry_points", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < n; i++) {
        unsigned id = ga_prof->idx[i];
        ga_out_s(o, i ? ",{" : "{");
        ga_out_key(o, "name", true), ga_out_js(o, ga_entries[id].name);
        ga_out_ku(o, "calls", ga_prof->calls[id]), ga_out_ku(o, "ns", ga_prof->ns[id]);
        ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
}

static void json_counters(ga_out_t *o)
{
    ga_out_key(o, "counters", false), ga_out_s(o, "[");
    for (unsigned i = 0; i < ga_prof->ncounters; i++) {
        const counter_t *c = &ga_prof->counters[i];
        ga_out_s(o, i ? ",{" : "{");
        ga_out_key(o, "feature", true), ga_out_js(o, c->feature);
        ga_out_key(o, "name", false), ga_out_js(o, c->name);
        ga_out_ku(o, "value", c->value), ga_out_s(o, "}");
    }
    ga_out_s(o, "]");
}

/* "window": the window file's patterns, its windows and the time inside
 * them. Only with a window file (schema /4). */
static void json_window(ga_out_t *o, const window_state_t *w)
{
    ga_out_key(o, "window", false), ga_out_s(o, "{");
    ga_out_key(o, "start", true), ga_out_js(o, w->start);
    ga_out_key(o, "end", false), ga_out_js(o, w->end);
    ga_out_ku(o, "windows", w->windows);
    ga_out_ku(o, "inside_ns", w->inside_ns);
    ga_out_key(o, "open_at_exit", false), ga_out_s(o, w->open ? "true}" : "false}");
}

/* "job": the rank and what else the launcher said. Only in a ranked process. */
static void json_job(ga_out_t *o)
{
    const prof_job_t *j = &ga_prof->job;
    ga_out_key(o, "job", false), ga_out_s(o, "{");
    ga_out_key(o, "rank_variable", true), ga_out_js(o, j->rank_variable);
    ga_out_ku(o, "rank", (uint64_t)j->rank);
    if (j->world_size >= 0)
        ga_out_ku(o, "world_size", (uint64_t)j->world_size);
    if (j->local_rank >= 0)
        ga_out_ku(o, "local_rank", (uint64_t)j->local_rank);
    ga_out_s(o, "}");
}

void ga_prof_json_body(ga_out_t *o, const summary_t *s, const opp_t ops[N_OPPS],
                       bool from_signal)
{
    bool ranked = ga_prof->job.ranked;
    ga_out_s(o, "{"), ga_out_key(o, "schema", true);
    ga_out_js(o, s->windowed ? "gpuaccel-profile/4" : "gpuaccel-profile/3");
    ga_out_key(o, "library_version", false), ga_out_js(o, PACKAGE_VERSION);
    ga_out_ku(o, "pid", (uint64_t)getpid());
    if (ranked)
        json_job(o);
    ga_out_key(o, "command", false), ga_out_js(o, ga_prof->command);
    ga_out_ku(o, "wall_ns", s->wall);
    if (s->windowed)
        json_window(o, &s->window);
    ga_out_key(o, "written_on", false), ga_out_js(o, from_signal ? "signal" : "exit");
    ga_out_key(o, "kernel_timing", false), ga_out_s(o, "{");
    ga_out_key(o, "enabled", true), ga_out_s(o, ga_prof->ktiming ? "true" : "false");
    ga_out_key(o, "note", false), ga_out_js(o, ga_prof->knote);
    ga_out_ku(o, "timed_launches", ga_prof->timed);
    ga_out_ku(o, "untimed_launches", ga_prof->untimed), ga_out_s(o, "}");
    json_opps(o, ops);
    json_entries(o);
    json_copies(o);
    json_mem(o);
    json_calls(o);
    json_kernels(o, s);
    json_seqs(o);
    json_counters(o);
    ga_prof->text[ga_prof->text_len] = '\0';
    ga_out_key(o, "text", false), ga_out_js(o, ga_prof->text);
    ga_out_s(o, "}\n");
}
