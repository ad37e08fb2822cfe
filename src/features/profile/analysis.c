/* analysis.c - what would help the program: at write time, a summary of the
 * recorded tables and, from it, the estimate for each feature (a verdict, the
 * time it could save, how many events it would act on, the reason, in words
 * both reports print, and the command that measures it); and the orders the
 * reports list entry points, kernels and sequences in.
 *
 * Every estimate says what it is based on: a measured time, or a figure
 * assumed (named as such) where the profile cannot measure the replacement.
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
#define POOLED_OP_NS 1000u     /* an allocation or a free served from the cache */
#define GRAPH_NODE_NS 2500u    /* most a graph saves per replayed launch */
#define LAUNCH_FLOOR_NS 1000u  /* what a launch costs even in a graph */
#define LONG_KERNEL_NS 20000u  /* kernels this long hide their launch cost */
#define STREAM_QUERY_NS 1000u   /* what handing out a kept stream costs (a cuStreamQuery) */
#define BUSIEST 3               /* kernels named in the kernels estimate */

/* The shipped replacement table (kernels_blob.c): "<original> <replacement>
 * ..." lines; empty in a build without nvcc (no fatbin). */
extern const char ga_kernels_table[];
extern const size_t ga_kernels_fatbin_size;

/* 0.1 ms and 0.5% of the time measured against: the run, or its windows */
static bool worth(uint64_t saving, uint64_t basis)
{
    return saving >= 100000 && saving * 200 >= basis;
}

void ga_prof_summarize(summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->wall = ga_now_ns() - ga_prof->t_base;
    /* With a window the counts are the windows': so is what a saving is
     * weighed against. */
    s->windowed = ga_prof_window_used(&s->window);
    s->basis = s->windowed ? s->window.inside_ns : s->wall;
    s->small_n = ga_prof->copies[GA_COPY_DTOH][0].count;
    s->small_ns = ga_prof->copies[GA_COPY_DTOH][0].ns;
    s->follow_n = ga_prof->follow.n;
    s->follow_ns = ga_prof->follow.ns;
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
    ga_prof_lazy_close(ga_now_ns()); /* exit observes the device: a deferred wait is paid */
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
 * this estimate ~267 ms where coalescing gained nothing); and of those, only
 * reads in a 64 KiB block read since that work: a window holds it. */
static void opp_coalesce(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t mean = per(s->small_ns, s->small_n), hmean = per(ga_prof->win.hit_ns, ga_prof->win.hits);
    op->acts_on = ga_prof->win.hits;
    op->saving_ns = ga_prof->win.hits * (hmean > COALESCED_READ_NS ? hmean - COALESCED_READ_NS : 0);
    if (!s->small_n) {
        op->verdict = V_NO;
        ga_out_s(w, "no device-to-host reads of 256 bytes or less");
        return;
    }
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    ga_out_count(w, s->small_n), ga_out_s(w, " small D2H reads took ~"), ga_out_dur(w, s->small_ns);
    ga_out_s(w, " (~"), ga_out_dur(w, mean), ga_out_s(w, " each)");
    if (!s->follow_n) {
        ga_out_s(w, ", each after device work: their time is its wait, which coalescing "
                    "cannot save");
        return;
    }
    ga_out_s(w, "; "), ga_out_count(w, ga_prof->win.hits);
    ga_out_s(w, " with no device work since the read before, in a 64 KiB block read since it (~");
    ga_out_dur(w, hmean), ga_out_s(w, " each; a window costs ~0.5 us, assumed)");
    o_gain(w, op, "coalescing could save", ga_prof->win.hits && hmean <= COALESCED_READ_NS);
}

/* Reads a window would miss (no device work since the read before, but in a
 * block not read since it): a mirror of the whole allocation serves them once
 * it is made (GPUACCEL_COALESCE_MIRRORS=1). The copies that make the mirrors
 * are not recorded: the estimate is before their cost. */
static void opp_coalesce_mirrors(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t mmean = per(ga_prof->win.miss_ns, ga_prof->win.misses);
    op->acts_on = ga_prof->win.misses;
    op->saving_ns = ga_prof->win.misses * (mmean > COALESCED_READ_NS ? mmean - COALESCED_READ_NS : 0);
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!ga_prof->win.misses) {
        op->verdict = V_NO;
        ga_out_s(w, "no small read with no device work since the read before fell outside the "
                    "blocks already read");
        return;
    }
    ga_out_count(w, ga_prof->win.misses);
    ga_out_s(w, " small D2H reads with no device work since the read before fell outside the "
                "64 KiB blocks read since it (~"), ga_out_dur(w, mmean);
    ga_out_s(w, " each): a mirror of their allocation would serve them, at the cost of copying "
                "it once (not recorded)");
    o_gain(w, op, "mirrors could save, before that cost,", mmean <= COALESCED_READ_NS);
}

/* A block cache serves an allocation only where a block of its size was
 * freed before (churn: exact sizes, so at least what the cache would serve),
 * and takes every free without the driver. So it saves those allocations'
 * time and the frees' time, less its own cost for each. (Counting every
 * allocation and free as saved once estimated 11.6 ms for sppark's NTTs, where
 * the pool alone gained nothing: none of its sizes came back.) */
static void opp_pool(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t churn = ga_prof->mem.churn, frees = ga_prof->mem.frees;
    uint64_t spent = ga_prof->mem.churn_ns + ga_prof->mem.free_ns;
    uint64_t own = (churn + frees) * POOLED_OP_NS;
    op->acts_on = churn + frees;
    op->saving_ns = spent > own ? spent - own : 0;
    if (!ga_prof->mem.count) {
        op->verdict = V_NO;
        ga_out_s(w, "no cuMemAlloc calls");
        return;
    }
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    ga_out_count(w, ga_prof->mem.count);
    ga_out_s(w, ga_prof->mem.count == 1 ? " allocation, " : " allocations, ");
    ga_out_count(w, frees), ga_out_s(w, " frees (~"), ga_out_dur(w, ga_prof->mem.free_ns);
    ga_out_s(w, "); "), ga_out_count(w, churn);
    ga_out_s(w, " of a size freed before (~"), ga_out_dur(w, ga_prof->mem.churn_ns);
    ga_out_s(w, "), which a block cache would serve");
    if (!frees) {
        op->verdict = V_NO;
        ga_out_s(w, ": nothing is freed, so nothing would be reused");
        return;
    }
    o_gain(w, op, "it could save", spent <= own);
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
    op->acts_on = s->seq_nodes;
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
        op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
        ga_out_count(w, s->seq_nodes), ga_out_s(w, " launches could replay in ");
        ga_out_count(w, s->seq_count);
        ga_out_s(w, " repeated sequences, ~");
        ga_out_dur(w, s->launch_calls ? mean_launch : GRAPH_NODE_NS);
        ga_out_s(w, s->launch_calls ? " a launch" : " saved a launch (not measured: assumed)");
        o_gain(w, op, "graphs could save", node == 0);
    }
}

static void opp_tune(const summary_t *s, opp_t *op, ga_out_t *w)
{
    (void)s;
    unsigned configs = 0, kernels = 0;
    for (unsigned i = 0; i < MAX_KERNELS; i++)
        if (ga_prof->kern[i].launches)
            kernels++, configs += ga_prof->kern[i].ncfg;
    op->verdict = ga_prof->launches ? V_UNKNOWN : V_NO;
    op->acts_on = ga_prof->launches;
    if (!ga_prof->launches) {
        ga_out_s(w, "no kernel launches");
        return;
    }
    ga_out_u(w, kernels), ga_out_s(w, " kernels in "), ga_out_u(w, configs);
    ga_out_s(w, " launch configurations: only the tuner can tell (it proves each rewrite "
                "bit-identical)");
}

/* Is `name` an original of the shipped replacement table (its first word on
 * a line)? A name, not an identity: the library replaces a kernel only where
 * its code matches the one the row was verified against. */
static bool listed(const char *name)
{
    size_t n = strlen(name);
    if (!ga_kernels_fatbin_size || !n)
        return false;
    for (const char *l = ga_kernels_table; *l;) {
        if (!strncmp(l, name, n) && (l[n] == ' ' || l[n] == '\t'))
            return true;
        const char *nl = strchr(l, '\n');
        if (!nl)
            break;
        l = nl + 1;
    }
    return false;
}

static void opp_kernels(const summary_t *s, opp_t *op, ga_out_t *w)
{
    op->verdict = V_NO;
    if (!ga_prof->launches) {
        ga_out_s(w, "no kernel launches");
        return;
    }
    for (unsigned i = 0; i < MAX_KERNELS; i++)
        if (ga_prof->kern[i].launches && listed(ga_prof_kname(i)))
            op->acts_on += ga_prof->kern[i].launches;
    unsigned n = ga_prof_sorted_kernels(s->timed != 0), named = 0, hits = 0;
    ga_out_s(w, "busiest: ");
    for (unsigned i = 0; i < n && i < BUSIEST; i++) {
        uint32_t k = ga_prof->idx[i];
        bool has = k < MAX_KERNELS && listed(ga_prof_kname(k));
        hits += has;
        ga_out_s(w, named++ ? "; " : ""), ga_out_name(w, ga_prof_kname_text(k), 48);
        if (s->timed)
            ga_out_s(w, " ("), ga_out_dur(w, ga_prof->kern[k].gpu_ns), ga_out_s(w, " on the GPU");
        else
            ga_out_s(w, " ("), ga_out_count(w, ga_prof->kern[k].launches),
                ga_out_s(w, ga_prof->kern[k].launches == 1 ? " launch" : " launches");
        ga_out_s(w, has ? ", a replacement is listed)" : ")");
    }
    if (op->acts_on) {
        op->verdict = V_UNKNOWN;
        ga_out_s(w, hits ? "" : "; a replacement is listed for less busy kernels");
        ga_out_s(w, ": it applies where the code matches the verified one (gpuaccel kernels "
                    "list; gpuaccel kernels ids PROGRAM), and only a measurement can tell by how "
                    "much");
    } else {
        ga_out_s(w, ": no replacement is listed for any kernel launched (gpuaccel kernels list)");
    }
}

/* Page-locked host memory allocated and freed again: served from a cache,
 * a pair costs a lookup instead of the driver's pinning and unpinning. */
static void opp_pinned(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t na = atomic_load(&ga_prof->pin_alloc.n), nf = atomic_load(&ga_prof->pin_free.n);
    uint64_t ta = atomic_load(&ga_prof->pin_alloc.ns), tf = atomic_load(&ga_prof->pin_free.ns);
    uint64_t pairs = na < nf ? na : nf, pair_ns = per(ta, na) + per(tf, nf);
    op->acts_on = pairs;
    op->saving_ns = pairs * pair_ns;
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!na) {
        ga_out_s(w, "no cuMemHostAlloc or cuMemAllocHost calls");
        return;
    }
    ga_out_count(w, na), ga_out_s(w, " page-locked allocations and "), ga_out_count(w, nf);
    ga_out_s(w, " cuMemFreeHost took ~"), ga_out_dur(w, ta + tf);
    if (!pairs) {
        op->verdict = V_NO;
        ga_out_s(w, ": nothing is freed, so nothing would be reused");
        return;
    }
    ga_out_s(w, "; "), ga_out_count(w, pairs), ga_out_s(w, pairs == 1 ? " pair (~" : " pairs (~");
    ga_out_dur(w, pair_ns), ga_out_s(w, " each, measured) a cache would serve");
    o_gain(w, op, "pinned could save", false);
}

/* Large copies with pageable host memory go through the driver's own staging
 * at a few GB/s; staged through page-locked buffers they approach a DMA from
 * page-locked memory: the bandwidth measured on this program's large
 * page-locked copies, or ~50 GB/s (assumed) where it made none. */
/* What staging takes for a pageable copy, fitted to the pageable rows on an
 * H200 with the defaults (bench/results/NVIDIA-H200, 68d31b0): a fixed cost
 * (its driver calls, the helpers' wake-up, the wait for the last DMA), a rate
 * up to 1 MiB (where its chunks ramp up) and one beyond. Device to host: 64
 * KiB 15.2 us, 256 KiB 38.4, 1 MiB 111, 4 MiB 220 (the fit: 15.2, 34.5, 111,
 * 220). Host to device, staged from GPUACCEL_STAGING_UPLOAD_MIN (then 2 MiB): 4
 * MiB 207 us, 64 MiB 2.18 ms, 256 MiB 6.11 ms (b515ba9; the fit: 207, 1.83
 * ms, 7.01 ms: the rate rises with the size, as rings grow). A flat 50 GB/s
 * once estimated 78.6 ms for sppark's copies, where staging gained 54.1 ms.
 * Those rates copied into touched pages; a download into pages the program
 * never touched (stwo-gpu's Column::at reads into a new buffer each time)
 * pays a fault per page staged or not, at the cost the profile measured at
 * start (first_touch_ns): the driver's copy takes them one after another, in
 * its one thread, and its time holds them; staging's copy threads write the
 * pages, so they take them side by side (ga_config_staging_threads of them).
 * Without the faults the estimate for stwo-gpu's commitment was 378 ms, where
 * staging alone gained 198 ms (84fbb25, H200); with every fault in staging's
 * time too, 75.5 ms in the timed phase, where it gained 209 (e1374fc); with
 * the faults over staging's copy threads, 223 ms where ab measured 179
 * (a8d917a). The rings' slots and their making: ga_prof_staged_ns below. */
static const struct {
    uint64_t fixed_ns, ramp_ns_mib, bulk_ns_mib;
} STAGED[2] = {{19000, 107000, 27000}, {8800, 102600, 36300}};

/* One copy of `bytes` through a warm ring whose slots hold it. */
static double staged_one(unsigned d, uint64_t bytes)
{
    const uint64_t mib = 1 << 20;
    uint64_t ramp = bytes < mib ? bytes : mib;
    return (double)STAGED[d].fixed_ns + (double)ramp * STAGED[d].ramp_ns_mib / mib +
           (double)(bytes - ramp) * STAGED[d].bulk_ns_mib / mib;
}

/* A copy larger than the ring's slots goes through it in pieces of a slot:
 * taken as that many copies of a slot's size (each with its own fixed cost:
 * an upper bound, the pieces' DMA and memcpy overlap). The rings grow with
 * the process's pageable traffic (core/config.h): a process that copies 80
 * MiB in four uploads (RISC Zero's Poseidon2 and SHA-256 programs) has rings
 * of 256 KiB to 1 MiB slots, where the warm fit's 27 us a MiB assumed 8 MiB
 * ones; taken at the warm rate, the estimate there was 7.6-12.1 ms where
 * staging alone gained 0-4.4 ms (H200, a8d917a and a6d598e). */
uint64_t ga_prof_staged_ns(unsigned d, uint64_t bytes, uint64_t chunk)
{
    if (!chunk || bytes <= chunk)
        return (uint64_t)staged_one(d, bytes);
    return (uint64_t)((double)bytes / (double)chunk * staged_one(d, chunk));
}

/* Making a ring in the copy that needs it (staging.c): registering its pages
 * (cuMemHostRegister: 1.3-1.9 ms for a small ring, 1.8-3.4 ms for 32 MiB on
 * an H200 host, so ~1.3 ms and ~50 us a MiB), and for the first ring
 * populating them too (~0.3 ms a MiB there; larger rings' pages are made by
 * a thread of their own, off the copies' path). */
uint64_t ga_prof_ring_ns(uint64_t chunk, bool first)
{
    double mib = (double)(chunk * GA_STAGING_SLOTS) / (1 << 20);
    return (uint64_t)(1300000.0 + 50000.0 * mib + (first ? 300000.0 * mib : 0.0));
}

/* The sizes staging takes: "64 KiB or more", or with a larger upload
 * threshold "64 KiB or more (uploads 256 KiB or more)". */
static void large_sizes(ga_out_t *w)
{
    ga_out_bytes(w, ga_prof->large_min), ga_out_s(w, " or more");
    if (ga_prof->large_up_min > ga_prof->large_min)
        ga_out_s(w, " (uploads "), ga_out_bytes(w, ga_prof->large_up_min), ga_out_s(w, " or more)");
}

static void opp_staging(const summary_t *s, opp_t *op, ga_out_t *w)
{
    const acc_t *pg[2] = {&ga_prof->large[0][0], &ga_prof->large[1][0]};
    uint64_t pin_bytes = ga_prof->large[0][1].bytes + ga_prof->large[1][1].bytes;
    uint64_t pin_ns = ga_prof->large[0][1].ns + ga_prof->large[1][1].ns;
    uint64_t n = pg[0]->count + pg[1]->count, bytes = pg[0]->bytes + pg[1]->bytes;
    uint64_t ns = pg[0]->ns + pg[1]->ns, staged = 0;
    /* Downloads into pages the program had not touched fault each page in,
     * staged or not (staging's rates were measured into touched pages), in
     * staging's copy threads side by side. */
    unsigned threads = ga_prof->copy_threads ? ga_prof->copy_threads : 1;
    uint64_t faults = ga_prof->untouched_pages * ga_prof->fault_ns / threads;
    for (unsigned d = 0; d < 2; d++) {
        uint64_t t = ga_prof->stg.est_ns[d] + (d ? faults : 0);
        /* never faster than the program's own page-locked copies ran */
        if (pin_bytes && pin_ns && (double)pg[d]->bytes * pin_ns / pin_bytes > (double)t)
            t = (uint64_t)((double)pg[d]->bytes * pin_ns / pin_bytes);
        staged += t;
        op->saving_ns += pg[d]->ns > t ? pg[d]->ns - t : 0;
    }
    /* the rings made for them, in the copies' time */
    uint64_t rings = ga_prof->stg.ring_ns;
    staged += rings;
    op->saving_ns = op->saving_ns > rings ? op->saving_ns - rings : 0;
    op->acts_on = n;
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!n) {
        ga_out_s(w, "no copy between pageable host memory and the device of ");
        large_sizes(w);
        return;
    }
    ga_out_count(w, n), ga_out_s(w, " pageable copies of "), large_sizes(w);
    ga_out_s(w, ", "), ga_out_bytes(w, bytes), ga_out_s(w, " in all, took ~"), ga_out_dur(w, ns);
    ga_out_s(w, "; staged they would take ~"), ga_out_dur(w, staged);
    ga_out_s(w, " (staging's rates measured on an H200 host, in the slots its rings would have"
                " for this process's pageable traffic");
    if (rings) {
        ga_out_s(w, ", and ~"), ga_out_dur(w, rings), ga_out_s(w, " making ");
        ga_out_count(w, ga_prof->stg.rings);
        ga_out_s(w, ga_prof->stg.rings == 1 ? " ring" : " rings of them");
    }
    if (faults) {
        ga_out_s(w, ", and ~"), ga_out_dur(w, faults), ga_out_s(w, " faulting in ");
        ga_out_bytes(w, ga_prof->untouched_pages * ga_prof->page);
        ga_out_s(w, " of host memory the program had not touched, at ~");
        ga_out_dur(w, ga_prof->fault_ns), ga_out_s(w, " a page as measured here, over ");
        ga_out_count(w, threads), ga_out_s(w, threads == 1 ? " copy thread" : " copy threads");
    }
    ga_out_s(w, ")");
    o_gain(w, op, "staging could save", false);
}

/* Streams created and destroyed again: kept and handed out, each pair costs
 * a cuStreamQuery (~1 us, assumed) instead of the driver's create and destroy. */
static void opp_streams(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t nc = atomic_load(&ga_prof->stream_new.n), nd = atomic_load(&ga_prof->stream_gone.n);
    uint64_t tc = atomic_load(&ga_prof->stream_new.ns), td = atomic_load(&ga_prof->stream_gone.ns);
    uint64_t pairs = nc < nd ? nc : nd, pair_ns = per(tc, nc) + per(td, nd);
    op->acts_on = pairs;
    op->saving_ns = pairs * (pair_ns > STREAM_QUERY_NS ? pair_ns - STREAM_QUERY_NS : 0);
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!nc) {
        ga_out_s(w, "no streams created");
        return;
    }
    ga_out_count(w, nc), ga_out_s(w, nc == 1 ? " stream created, " : " streams created, ");
    ga_out_count(w, nd), ga_out_s(w, " destroyed, ~"), ga_out_dur(w, pair_ns);
    ga_out_s(w, " a pair (measured; a kept stream costs a cuStreamQuery, ~1 us, assumed)");
    if (!pairs) {
        op->verdict = V_NO;
        ga_out_s(w, ": none is destroyed, so none would be reused");
        return;
    }
    o_gain(w, op, "streams could save", pair_ns <= STREAM_QUERY_NS);
}

/* Stream-ordered allocations that mapped memory again after their pool had
 * released it at a synchronization (the default threshold, 0): with the
 * memory kept they cost what the others cost. */
static void opp_async_pool(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t n = ga_prof->apool.n, r = ga_prof->apool.regrown, k = ga_prof->apool.reserved;
    uint64_t kept_mean = per(ga_prof->apool.reserved_ns, k);
    uint64_t rmean = per(ga_prof->apool.regrown_ns, r);
    op->acts_on = r;
    op->saving_ns = r * (rmean > kept_mean ? rmean - kept_mean : 0);
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!n) {
        ga_out_s(w, "no stream-ordered allocations seen (cuMemAllocAsync)");
        return;
    }
    ga_out_count(w, n), ga_out_s(w, " stream-ordered allocations; ");
    ga_out_count(w, r), ga_out_s(w, " mapped memory their pool had released at a synchronization");
    if (!r) {
        op->verdict = V_NO;
        return;
    }
    ga_out_s(w, " (~"), ga_out_dur(w, rmean), ga_out_s(w, " each, against ~");
    ga_out_dur(w, kept_mean);
    ga_out_s(w, k ? " for those the reservation served, measured)"
                  : ", none from the reservation seen: counted as free)");
    o_gain(w, op, "async_pool could save", false);
}

/* Synchronizations after which nothing the host could see was pending (only
 * kernels, device copies and memsets since the last wait): lazy_sync returns
 * at once and the wait is paid at the next call that observes the device; the
 * host's work until then overlaps the GPU's. That work, each capped by its
 * wait, is the estimate. */
static void opp_lazy_sync(const summary_t *s, opp_t *op, ga_out_t *w)
{
    uint64_t n = atomic_load(&ga_prof->syncs.n), q = atomic_load(&ga_prof->lazy.quiet.n);
    uint64_t qns = atomic_load(&ga_prof->lazy.quiet.ns);
    op->acts_on = q;
    op->saving_ns = atomic_load(&ga_prof->lazy.overlap_ns);
    op->verdict = worth(op->saving_ns, s->basis) ? V_HELPS : V_NO;
    if (!n) {
        ga_out_s(w, "no cuCtxSynchronize or cuStreamSynchronize calls");
        return;
    }
    ga_out_count(w, n), ga_out_s(w, " synchronizations, ");
    ga_out_count(w, q), ga_out_s(w, " with nothing host-visible pending (~");
    ga_out_dur(w, qns), ga_out_s(w, " waiting in them)");
    if (atomic_load(&ga_prof->lazy.tainted)) {
        op->verdict = V_NO;
        ga_out_s(w, "; the program made page-locked, managed or shared memory, after which "
                    "lazy_sync never defers");
        return;
    }
    if (q)
        ga_out_s(w, "; the host worked ~"), ga_out_dur(w, op->saving_ns),
            ga_out_s(w, " after them, up to their waits, before looking at the device");
    o_gain(w, op, "deferring them could save", false);
}

/* The command that measures a feature's estimate: that feature alone against
 * the native run. */
static void check_of(opp_t *op)
{
    ga_out_t c = {-1, op->check, sizeof op->check - 1, 0, false};
    if (!strcmp(op->feature, "tune")) {
        ga_out_s(&c, "gpuaccel tune -o T -- COMMAND, then GPUACCEL_TUNE_TABLE=T gpuaccel ab "
                     "--feature tune -- COMMAND");
    } else if (!strcmp(op->feature, "coalesce_mirrors")) {
        ga_out_s(&c, "GPUACCEL_COALESCE_MIRRORS=1 gpuaccel ab --feature coalesce -- COMMAND");
    } else {
        ga_out_s(&c, "gpuaccel ab --feature "), ga_out_s(&c, op->feature);
        ga_out_s(&c, " -- COMMAND");
    }
    op->check[c.len] = '\0';
}

void ga_prof_analyze(const summary_t *s, opp_t ops[N_OPPS])
{
    typedef void (*opp_fn)(const summary_t *, opp_t *, ga_out_t *);
    static const struct {
        const char *name;
        opp_fn fn;
    } table[N_OPPS] = {
#define GA_PROF_OPP_ROW(name) {#name, opp_##name},
        GA_PROF_OPPS(GA_PROF_OPP_ROW)
#undef GA_PROF_OPP_ROW
    };
    for (unsigned i = 0; i < N_OPPS; i++) {
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].feature = table[i].name;
        ga_out_t w = {-1, ops[i].why, sizeof ops[i].why - 1, 0, false};
        table[i].fn(s, &ops[i], &w);
        ops[i].why[w.len] = '\0';
        check_of(&ops[i]);
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

