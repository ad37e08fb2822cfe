/* write_text.c - FILE.txt, the report a person reads: the opportunities, then
 * driver calls, copies, allocations, kernels, repeated launch sequences and
 * the features' counters, as aligned tables; with a window file, a header
 * line says which windows the counts are from. It is built into the state's
 * text buffer (FILE.json carries it too, for `gpuaccel report`).
 *
 * Owns: the report's layout and wording.
 * Must never: allocate, use stdio or take a lock (it runs inside the write,
 * which may be in a signal handler); outgrow the buffer (a report that would
 * is cut, and says so). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

/* The estimates in the order they pay: those that would help, the largest
 * saving first; then those only a measurement can tell; then the rest. */
static void opp_order(const opp_t ops[N_OPPS], unsigned order[N_OPPS])
{
    static const unsigned rank[] = {[V_HELPS] = 0, [V_UNKNOWN] = 1, [V_NO] = 2};
    for (unsigned i = 0; i < N_OPPS; i++) {
        unsigned j = i;
        for (; j > 0; j--) {
            const opp_t *a = &ops[order[j - 1]], *b = &ops[i];
            if (rank[a->verdict] < rank[b->verdict] ||
                (rank[a->verdict] == rank[b->verdict] &&
                 (b->verdict != V_HELPS || a->saving_ns >= b->saving_ns)))
                break;
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
}

static void text_opps(ga_out_t *o, const summary_t *s, const opp_t ops[N_OPPS])
{
    static const char *const label[] = {"would help", "no", "unknown"};
    unsigned order[N_OPPS];
    opp_order(ops, order);
    ga_out_s(o, s->windowed ? "\nOpportunities in the windows (estimates from the counts inside "
                              "them, the largest first; check each with the command under it)\n"
                            : "\nOpportunities (estimates from the measured counts, the largest "
                              "first; check each with the command under it)\n");
    ga_out_s(o, "  feature           verdict     saving     why\n");
    for (unsigned k = 0; k < N_OPPS; k++) {
        const opp_t *op = &ops[order[k]];
        ga_cell_t c;
        ga_out_s(o, "  ");
        ga_out_s(ga_cell(&c), op->feature), ga_out_cell(o, &c, 18, false);
        ga_out_s(ga_cell(&c), label[op->verdict]), ga_out_cell(o, &c, 12, false);
        ga_out_t *w = ga_cell(&c);
        if (op->verdict == V_HELPS)
            ga_out_s(w, "~"), ga_out_dur(w, op->saving_ns);
        else
            ga_out_s(w, "-");
        ga_out_cell(o, &c, 10, false);
        ga_out_s(o, " "), ga_out_s(o, op->why), ga_out_s(o, "\n");
        if (op->verdict != V_NO)
            ga_out_s(o, "                    check: "), ga_out_s(o, op->check), ga_out_s(o, "\n");
    }
}

/* What to run next: the measurement of the estimate that pays most, or advise. */
static void text_next(ga_out_t *o, const opp_t ops[N_OPPS])
{
    unsigned helps = 0;
    for (unsigned i = 0; i < N_OPPS; i++)
        helps += ops[i].verdict == V_HELPS;
    ga_out_s(o, "\nNext: ");
    if (helps == 1) {
        for (unsigned i = 0; i < N_OPPS; i++)
            if (ops[i].verdict == V_HELPS)
                ga_out_s(o, ops[i].check);
        ga_out_s(o, "   (measures what the estimate says)\n");
    } else {
        ga_out_s(o, "gpuaccel advise -- COMMAND   (measures each feature and picks a setting)\n");
    }
}

static void text_entries(ga_out_t *o)
{
    unsigned n = ga_prof_sorted_entries();
    ga_out_s(o, "\nDriver calls (time inside the call, busiest first)\n");
    ga_out_s(o, "  entry point                           calls        time        mean\n");
    for (unsigned i = 0; i < n && i < 25; i++) {
        unsigned id = ga_prof->idx[i];
        ga_cell_t c;
        ga_out_s(o, "  ");
        ga_out_s(ga_cell(&c), ga_entries[id].name), ga_out_cell(o, &c, 32, false);
        ga_out_count(ga_cell(&c), ga_prof->calls[id]), ga_out_cell(o, &c, 11, true);
        ga_out_dur(ga_cell(&c), ga_prof->ns[id]), ga_out_cell(o, &c, 12, true);
        ga_out_dur(ga_cell(&c), per(ga_prof->ns[id], ga_prof->calls[id]));
        ga_out_cell(o, &c, 12, true);
        ga_out_s(o, "\n");
    }
    if (n > 25)
        ga_out_s(o, "  ... "), ga_out_u(o, n - 25), ga_out_s(o, " more in the JSON\n");
    if (!n)
        ga_out_s(o, "  none\n");
}

static void text_copies(ga_out_t *o)
{
    ga_out_s(o, "\nCopies\n"
                "  direction  size            count        bytes        time        mean\n");
    bool any = false;
    for (unsigned d = 0; d < N_DIRS; d++)
        for (unsigned b = 0; b < N_BUCKETS; b++) {
            const acc_t *a = &ga_prof->copies[d][b];
            if (!a->count)
                continue;
            any = true;
            ga_cell_t c;
            ga_out_s(o, "  ");
            ga_out_s(ga_cell(&c), ga_prof_dir_name[d]), ga_out_cell(o, &c, 11, false);
            ga_out_s(ga_cell(&c), ga_prof_bucket_name[b]), ga_out_cell(o, &c, 10, false);
            ga_out_count(ga_cell(&c), a->count), ga_out_cell(o, &c, 11, true);
            ga_out_bytes(ga_cell(&c), a->bytes), ga_out_cell(o, &c, 13, true);
            ga_out_dur(ga_cell(&c), a->ns), ga_out_cell(o, &c, 12, true);
            ga_out_dur(ga_cell(&c), per(a->ns, a->count)), ga_out_cell(o, &c, 12, true);
            ga_out_s(o, "\n");
        }
    if (!any)
        ga_out_s(o, "  none\n");
    ga_out_s(o, "  small device-to-host reads (<=256 B): ");
    ga_out_count(o, ga_prof->copies[GA_COPY_DTOH][0].count);
    ga_out_s(o, ", "), ga_out_count(o, ga_prof->follow.n);
    ga_out_s(o, " with no device work since the read before\n");
}

static void text_mem(ga_out_t *o)
{
    ga_out_s(o, "\nAllocations\n  cuMemAlloc: "), ga_out_count(o, ga_prof->mem.count);
    ga_out_s(o, " ("), ga_out_bytes(o, ga_prof->mem.bytes);
    ga_out_s(o, ", "), ga_out_dur(o, ga_prof->mem.ns), ga_out_s(o, ")");
    if (ga_prof->mem.failed)
        ga_out_s(o, ", "), ga_out_count(o, ga_prof->mem.failed), ga_out_s(o, " failed");
    ga_out_s(o, "\n  cuMemFree:  "), ga_out_count(o, ga_prof->mem.frees);
    ga_out_s(o, " ("), ga_out_bytes(o, ga_prof->mem.free_bytes);
    ga_out_s(o, ", "), ga_out_dur(o, ga_prof->mem.free_ns), ga_out_s(o, ")");
    if (ga_prof->mem.frees_unknown)
        ga_out_s(o, ", "), ga_out_count(o, ga_prof->mem.frees_unknown),
            ga_out_s(o, " of unknown size");
    ga_out_s(o, "\n  peak live "), ga_out_bytes(o, ga_prof->mem.peak);
    ga_out_s(o, ", live at exit "), ga_out_bytes(o, ga_prof->mem.live);
    ga_out_s(o, ", churn "), ga_out_count(o, ga_prof->mem.churn);
    ga_out_s(o, " (a size freed and asked for again)\n");
}

/* (x,y,z) */
static void text_dims(ga_out_t *o, const unsigned d[3])
{
    ga_out_s(o, "("), ga_out_u(o, d[0]), ga_out_s(o, ","), ga_out_u(o, d[1]);
    ga_out_s(o, ","), ga_out_u(o, d[2]), ga_out_s(o, ")");
}

/* One kernel: its launches, GPU time, name and first configurations. */
static void text_kernel(ga_out_t *o, uint32_t ki)
{
    const kern_t *k = &ga_prof->kern[ki];
    ga_cell_t c;
    ga_out_s(o, "  ");
    ga_out_count(ga_cell(&c), k->launches), ga_out_cell(o, &c, 10, true);
    ga_out_s(o, k->launches == 1 ? " launch  " : " launches");
    if (k->timed) {
        ga_out_s(o, "  "), ga_out_dur(o, k->gpu_ns), ga_out_s(o, " GPU, ");
        ga_out_dur(o, per(k->gpu_ns, k->timed)), ga_out_s(o, " mean");
    }
    ga_out_s(o, "  "), ga_out_name(o, ga_prof_kname_text(ki), 80), ga_out_s(o, "\n");
    for (unsigned j = 0; j < k->ncfg && j < 3; j++) {
        const kcfg_t *g = &k->cfg[j];
        ga_out_s(o, "      grid "), text_dims(o, g->grid);
        ga_out_s(o, " block "), text_dims(o, g->block);
        ga_out_s(o, " shmem "), ga_out_u(o, g->shmem);
        ga_out_s(o, ": "), ga_out_count(o, g->launches), ga_out_s(o, "\n");
    }
    if (k->ncfg > 3 || k->cfg_dropped)
        ga_out_s(o, "      ... "), ga_out_u(o, k->ncfg - (k->ncfg > 3 ? 3 : k->ncfg)),
            ga_out_s(o, k->cfg_dropped ? " more configurations, and others not kept\n"
                                       : " more configurations\n");
}

static void text_kernels(ga_out_t *o, const summary_t *s)
{
    unsigned n = ga_prof_sorted_kernels(s->timed != 0);
    ga_out_s(o, "\nKernels ("), ga_out_count(o, ga_prof->launches);
    ga_out_s(o, ga_prof->launches == 1 ? " launch, " : " launches, "), ga_out_u(o, n);
    ga_out_s(o, n == 1 ? " kernel" : " kernels");
    ga_out_s(o, s->timed ? "; by GPU time)\n" : "; by launches)\n");
    for (unsigned i = 0; i < n && i < 20; i++)
        text_kernel(o, ga_prof->idx[i]);
    if (n > 20)
        ga_out_s(o, "  ... "), ga_out_u(o, n - 20), ga_out_s(o, " more in the JSON\n");
    if (!ga_prof->ktiming)
        ga_out_s(o, "  GPU time: "), ga_out_s(o, ga_prof->knote), ga_out_s(o, "\n");
}

static void text_seqs(ga_out_t *o)
{
    unsigned n = ga_prof_sorted_seqs();
    ga_out_s(o, "\nRepeated launch sequences (same kernels and configurations, by one thread on "
                "one stream between flush points)\n  segments ");
    ga_out_count(o, ga_prof->segments), ga_out_s(o, " ("), ga_out_count(o, ga_prof->singles);
    ga_out_s(o, " of one launch), distinct sequences "), ga_out_count(o, ga_prof->nseq);
    ga_out_s(o, "\n");
    if (n)
        ga_out_s(o, "  length   repeats   launches  kernels\n");
    for (unsigned i = 0; i < n && i < 10; i++) {
        const seq_t *q = &ga_prof->seq[ga_prof->idx[i]];
        ga_cell_t c;
        ga_out_s(o, "  ");
        ga_out_u(ga_cell(&c), q->len), ga_out_cell(o, &c, 6, true);
        ga_out_count(ga_cell(&c), q->repeats), ga_out_cell(o, &c, 10, true);
        ga_out_count(ga_cell(&c), (uint64_t)q->len * q->repeats), ga_out_cell(o, &c, 11, true);
        ga_out_s(o, "  ");
        for (unsigned j = 0; j < SEQ_NAMES && j < q->len; j++)
            ga_out_s(o, j ? ", " : ""), ga_out_name(o, ga_prof_kname_text(q->first[j]), 24);
        ga_out_s(o, q->len > SEQ_NAMES ? ", ...\n" : "\n");
    }
}

static void text_counters(ga_out_t *o)
{
    if (!ga_prof->ncounters)
        return;
    ga_out_s(o, "\nFeature counters\n");
    for (unsigned i = 0; i < ga_prof->ncounters; i++) {
        const counter_t *c = &ga_prof->counters[i];
        ga_out_s(o, "  "), ga_out_s(o, c->feature), ga_out_s(o, "."), ga_out_s(o, c->name);
        ga_out_s(o, " "), ga_out_count(o, c->value), ga_out_s(o, "\n");
    }
}

/* With a window file: which lines bounded the windows, how many and how long,
 * and what counts inside them only. */
static void text_window(ga_out_t *o, const summary_t *s)
{
    const window_state_t *w = &s->window;
    if (!s->windowed)
        return;
    ga_out_s(o, "window: from a line matching '"), ga_out_s(o, w->start);
    ga_out_s(o, "' to one matching '"), ga_out_s(o, w->end), ga_out_s(o, "': ");
    ga_out_count(o, w->windows), ga_out_s(o, w->windows == 1 ? " window" : " windows");
    ga_out_s(o, w->open ? " closed and one open at the write, " : ", ");
    ga_out_dur(o, w->inside_ns), ga_out_s(o, w->open ? " inside (the open one's so far)" : " inside");
    ga_out_s(o, "\n  copies, allocations, kernels, sequences, page-locked memory, streams,\n"
                "  synchronizations and the estimates count only inside the windows; driver\n"
                "  calls and feature counters cover the whole process\n");
}

void ga_prof_build_text(const summary_t *s, const opp_t ops[N_OPPS], bool from_signal)
{
    ga_out_t o = {-1, ga_prof->text, TEXT_CAP - 64, 0, false};
    ga_out_s(&o, "gpuaccel profile: pid "), ga_out_u(&o, ga_prof->pid);
    if (ga_prof->job.ranked) {
        ga_out_s(&o, ", rank "), ga_out_u(&o, (uint64_t)ga_prof->job.rank);
        if (ga_prof->job.world_size >= 0)
            ga_out_s(&o, " of "), ga_out_u(&o, (uint64_t)ga_prof->job.world_size);
    }
    ga_out_s(&o, ", "), ga_out_dur(&o, s->wall);
    ga_out_s(&o, from_signal ? " profiled, stopped by a signal\n" : " profiled\n");
    ga_out_s(&o, "command: "), ga_out_s(&o, ga_prof->command), ga_out_s(&o, "\n");
    text_window(&o, s);
    text_opps(&o, s, ops);
    text_next(&o, ops);
    text_entries(&o);
    text_copies(&o);
    text_mem(&o);
    text_kernels(&o, s);
    text_seqs(&o);
    text_counters(&o);
    if (o.failed) {
        o.len = TEXT_CAP - 64;
        o.cap = TEXT_CAP - 1;
        o.failed = false;
        ga_out_s(&o, "\n... report truncated\n");
    }
    ga_prof->text_len = o.len;
}
