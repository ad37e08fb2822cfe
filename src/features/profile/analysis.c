/* analysis.c - what would help the program: at write time, a summary of the
 * recorded tables and, from it, the estimate for each feature (a verdict, the
 * time it could save and the reason, in words both reports print); and the
 * orders the reports list entry points, kernels and sequences in.
 *
 * Owns: the estimates of what each feature's replacement costs; the writer's
 * scratch index arrays while sorting.
 * Must never: allocate or use stdio (it runs inside the write, which may be in
 * a signal handler); change the recorded tables. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <string.h>

/* Estimates, from measurements on an H200 (driver 580): what each feature's
 * replacement costs. */
#define COALESCED_READ_NS 500u /* a read served from the library's window */
#define POOLED_PAIR_NS 2000u   /* an allocation and free served from the cache */
#define GRAPH_NODE_NS 2500u    /* most a graph saves per replayed launch */
#define LAUNCH_FLOOR_NS 1000u  /* what a launch costs even in a graph */
#define LONG_KERNEL_NS 20000u  /* kernels this long hide their launch cost */

static bool worth(uint64_t saving, uint64_t wall)
{
    return saving >= 100000 && saving * 200 >= wall; /* 0.1 ms and 0.5% of the run */
}

void ga_prof_summarize(summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->wall = ga_now_ns() - ga_prof->t_base;
    s->small_n = ga_prof->copies[GA_COPY_DTOH][0].count;
    s->small_ns = ga_prof->copies[GA_COPY_DTOH][0].ns;
    s->follow_n = ga_prof->follow.n;
    s->follow_ns = ga_prof->follow.ns;
    s->pairs = ga_prof->mem.count < ga_prof->mem.frees ? ga_prof->mem.count : ga_prof->mem.frees;
    s->pair_ns = per(ga_prof->mem.ns, ga_prof->mem.count) +
                 per(ga_prof->mem.free_ns, ga_prof->mem.frees);
    static const ga_id_t launch_ids[] = {GA_ID_cuLaunchKernel, GA_ID_cuLaunchKernel_ptsz,
                                         GA_ID_cuLaunchKernelEx, GA_ID_cuLaunchKernelEx_ptsz};
    for (size_t i = 0; i < GA_ARRAY_LEN(launch_ids); i++) {
        s->launch_calls += ga_prof->calls[launch_ids[i]];
        s->launch_ns += ga_prof->ns[launch_ids[i]];
    }
    for (unsigned i = 0; i < MAX_SEQS; i++) {
        const seq_t *q = &ga_prof->seq[i];
        /* Graphs replay a sequence from its third sighting on. */
        if (q->hash && q->len >= ga_prof->graph_min && q->repeats >= 3) {
            s->seq_nodes += (uint64_t)q->len * (q->repeats - 2);
            s->seq_count++;
        }
    }
    for (unsigned i = 0; i <= MAX_KERNELS; i++) {
        s->gpu_ns += ga_prof->kern[i].gpu_ns;
        s->timed += ga_prof->kern[i].timed;
    }
}

/* The tail of a reason: what the feature would save, or why it is not worth it. */
static void o_gain(ga_out_t *w, const opp_t *op, const char *would, bool cheap)
{
    if (op->verdict == V_HELPS)
        ga_out_s(w, ": "), ga_out_s(w, would), ga_out_s(w, " ~"), ga_out_dur(w, op->saving_ns);
    else if (cheap)
        ga_out_s(w, ": already cheap");
    else
        ga_out_s(w, ": too little to gain (~"), ga_out_dur(w, op->saving_ns), ga_out_s(w, ")");
}

/* Only reads that follow another with no device work between can be served
 * (the first after work fills the window, and its time is mostly the wait
 * for that work: a public Groth16 pass's 72 reads after kernels once made
 * this estimate ~267 ms where coalescing gained nothing). */
static void opp_coalesce(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t mean = per(s->small_ns, s->small_n), fmean = per(s->follow_ns, s->follow_n);
    op->saving_ns = s->follow_n * (fmean > COALESCED_READ_NS ? fmean - COALESCED_READ_NS : 0);
    if (!s->small_n) {
        op->verdict = V_NO;
        ga_out_s(w, "no device-to-host reads of 256 bytes or less");
        return;
    }
    op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
    ga_out_count(w, s->small_n), ga_out_s(w, " small D2H reads took ~"), ga_out_dur(w, s->small_ns);
    ga_out_s(w, " (~"), ga_out_dur(w, mean), ga_out_s(w, " each)");
    if (!s->follow_n) {
        ga_out_s(w, ", each after device work: their time is its wait, which coalescing "
                    "cannot save");
        return;
    }
    ga_out_s(w, "; "), ga_out_count(w, s->follow_n);
    ga_out_s(w, " with no device work since the read before (~"), ga_out_dur(w, fmean);
    ga_out_s(w, " each)");
    o_gain(w, op, "coalescing could save", fmean <= COALESCED_READ_NS);
}

static void opp_pool(const summary_t *s, opp_t *op, ga_out_t *w)
{
    op->saving_ns = s->pairs * (s->pair_ns > POOLED_PAIR_NS ? s->pair_ns - POOLED_PAIR_NS : 0);
    if (!ga_prof->mem.count) {
        op->verdict = V_NO;
        ga_out_s(w, "no cuMemAlloc calls");
        return;
    }
    op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
    ga_out_count(w, ga_prof->mem.count);
    ga_out_s(w, ga_prof->mem.count == 1 ? " allocation, " : " allocations, ");
    ga_out_count(w, ga_prof->mem.frees);
    ga_out_s(w, " frees, ~"), ga_out_dur(w, s->pair_ns), ga_out_s(w, " a pair, churn ");
    ga_out_count(w, ga_prof->mem.churn);
    if (!ga_prof->mem.frees) {
        op->verdict = V_NO;
        ga_out_s(w, ": nothing is freed, so nothing would be reused");
        return;
    }
    o_gain(w, op, "a block cache could save", s->pair_ns <= POOLED_PAIR_NS);
}

static void opp_graphs(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t mean_launch = per(s->launch_ns, s->launch_calls);
    uint64_t node = s->launch_calls ? (mean_launch > LAUNCH_FLOOR_NS
                                           ? mean_launch - LAUNCH_FLOOR_NS : 0)
                                    : GRAPH_NODE_NS;
    if (node > GRAPH_NODE_NS)
        node = GRAPH_NODE_NS;
    op->saving_ns = s->seq_nodes * node;
    op->verdict = V_NO;
    uint64_t mean_gpu = per(s->gpu_ns, s->timed);
    if (!ga_prof->launches) {
        ga_out_s(w, "no kernel launches");
    } else if (!s->seq_nodes) {
        ga_out_s(w, "no launch sequence of "), ga_out_u(w, ga_prof->graph_min);
        ga_out_s(w, " or more kernels repeats 3 or more times between syncs");
    } else if (s->timed && mean_gpu > LONG_KERNEL_NS) {
        op->saving_ns = 0;
        ga_out_s(w, "kernels run ~"), ga_out_dur(w, mean_gpu);
        ga_out_s(w, " on average: their launch cost is already hidden");
    } else {
        op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
        ga_out_count(w, s->seq_nodes), ga_out_s(w, " launches could replay in ");
        ga_out_count(w, s->seq_count);
        ga_out_s(w, " repeated sequences, ~");
        ga_out_dur(w, s->launch_calls ? mean_launch : GRAPH_NODE_NS);
        ga_out_s(w, s->launch_calls ? " a launch" : " saved a launch (not measured: assumed)");
        o_gain(w, op, "graphs could save", node == 0);
    }
}

static void opp_tune(opp_t *op, ga_out_t *w)
{
    unsigned configs = 0, kernels = 0;
    for (unsigned i = 0; i < MAX_KERNELS; i++)
        if (ga_prof->kern[i].launches)
            kernels++, configs += ga_prof->kern[i].ncfg;
    op->verdict = ga_prof->launches ? V_UNKNOWN : V_NO;
    if (!ga_prof->launches) {
        ga_out_s(w, "no kernel launches");
        return;
    }
    ga_out_u(w, kernels), ga_out_s(w, " kernels in "), ga_out_u(w, configs);
    ga_out_s(w, " launch configurations: only the tuner can tell (it proves each rewrite "
                "bit-identical)");
}

static void opp_kernels(const summary_t *s, opp_t *op, ga_out_t *w)
{
    op->verdict = ga_prof->launches ? V_UNKNOWN : V_NO;
    if (!ga_prof->launches) {
        ga_out_s(w, "no kernel launches");
        return;
    }
    unsigned best = 0;
    for (unsigned i = 1; i <= MAX_KERNELS; i++) {
        const kern_t *a = &ga_prof->kern[i], *b = &ga_prof->kern[best];
        if (s->timed ? a->gpu_ns > b->gpu_ns : a->launches > b->launches)
            best = i;
    }
    ga_out_s(w, "helps only kernels with a replacement; busiest: ");
    ga_out_name(w, ga_prof_kname_text(best), 60);
    if (s->timed)
        ga_out_s(w, " ("), ga_out_dur(w, ga_prof->kern[best].gpu_ns), ga_out_s(w, " on the GPU)");
    else
        ga_out_s(w, " ("), ga_out_count(w, ga_prof->kern[best].launches), ga_out_s(w, " launches)");
}

void ga_prof_analyze(const summary_t *s, opp_t ops[N_OPPS])
{
    static const char *const names[N_OPPS] = {"coalesce", "pool", "graphs", "tune", "kernels"};
    for (unsigned i = 0; i < N_OPPS; i++) {
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].feature = names[i];
        ga_out_t w = {-1, ops[i].why, sizeof ops[i].why - 1, 0, false};
        switch (i) {
        case 0: opp_coalesce(s, &ops[i], &w); break;
        case 1: opp_pool(s, &ops[i], &w); break;
        case 2: opp_graphs(s, &ops[i], &w); break;
        case 3: opp_tune(&ops[i], &w); break;
        default: opp_kernels(s, &ops[i], &w); break;
        }
        ops[i].why[w.len] = '\0';
    }
}

/* ---- the reports' orders: shell sort on index arrays, without allocation --------- */
static void sort_desc(uint32_t *idx, const uint64_t *key, unsigned n)
{
    static const unsigned gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (unsigned g = 0; g < GA_ARRAY_LEN(gaps); g++)
        for (unsigned i = gaps[g]; i < n; i++) {
            uint32_t t = idx[i];
            unsigned j = i;
            for (; j >= gaps[g] && key[idx[j - gaps[g]]] < key[t]; j -= gaps[g])
                idx[j] = idx[j - gaps[g]];
            idx[j] = t;
        }
}

unsigned ga_prof_sorted_entries(void)
{
    unsigned n = 0;
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        if (ga_prof->calls[id]) {
            ga_prof->idx[n++] = id;
            uint64_t calls = ga_prof->calls[id] < 4096 ? ga_prof->calls[id] : 4095;
            ga_prof->key[id] = ga_prof->ns[id] * 4096 + calls;
        }
    sort_desc(ga_prof->idx, ga_prof->key, n);
    return n;
}

unsigned ga_prof_sorted_kernels(bool by_gpu)
{
    unsigned n = 0;
    for (unsigned i = 0; i <= MAX_KERNELS; i++)
        if (ga_prof->kern[i].launches) {
            ga_prof->idx[n++] = i;
            ga_prof->key[i] = by_gpu ? ga_prof->kern[i].gpu_ns : ga_prof->kern[i].launches;
        }
    sort_desc(ga_prof->idx, ga_prof->key, n);
    return n;
}

unsigned ga_prof_sorted_seqs(void) /* repeated sequences, by launches covered */
{
    unsigned n = 0;
    for (unsigned i = 0; i < MAX_SEQS; i++)
        if (ga_prof->seq[i].hash && ga_prof->seq[i].repeats >= 2) {
            ga_prof->idx[n++] = i;
            ga_prof->key[i] = ga_prof->seq[i].len * ga_prof->seq[i].repeats;
        }
    sort_desc(ga_prof->idx, ga_prof->key, n);
    return n;
}

const char *ga_prof_kname(uint32_t k)
{
    const char *name = ga_prof->kern[k].name;
    return k == MAX_KERNELS ? "(other kernels)" : name ? name : "?";
}

/* For the text report: the demangled name where there is one. */
const char *ga_prof_kname_text(uint32_t k)
{
    const char *pretty = k < MAX_KERNELS ? ga_prof->kern[k].pretty : NULL;
    return pretty ? pretty : ga_prof_kname(k);
}

