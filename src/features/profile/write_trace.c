/* write_trace.c - FILE.trace.json, the timeline (Chrome trace-event format:
 * Perfetto, chrome://tracing): a track per host thread with its driver calls
 * (trace.c's blocks of the current generation) and, with kernel timing, a
 * track per stream with its kernels (ktime.c's GPU events).
 *
 * Owns: the tracks' ids and names; the trace's limits note.
 * Must never: allocate, use stdio or take a lock (it runs inside the write,
 * which may be in a signal handler); read past a block's published count. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

enum { GPU_TID_BASE = 1 << 30 };

static void trace_meta(ga_out_t *o, const char *what, uint64_t tid, const char *prefix,
                       uint64_t num, bool hex)
{
    ga_out_s(o, ",\n{\"name\":"), ga_out_js(o, what);
    ga_out_s(o, ",\"ph\":\"M\",\"ts\":0,\"pid\":"), ga_out_u(o, ga_prof->pid);
    ga_out_s(o, ",\"tid\":"), ga_out_u(o, tid);
    ga_out_s(o, ",\"args\":{\"name\":\""), ga_out_s(o, prefix);
    if (hex)
        ga_out_hex(o, num);
    else
        ga_out_u(o, num);
    ga_out_s(o, "\"}}");
}

static void trace_x(ga_out_t *o, const char *name, const char *cat, uint64_t tid, uint64_t t0,
                    uint64_t dur)
{
    ga_out_s(o, ",\n{\"name\":"), ga_out_js(o, name), ga_out_s(o, ",\"cat\":\""), ga_out_s(o, cat);
    ga_out_s(o, "\",\"ph\":\"X\",\"ts\":"), ga_out_fixed(o, t0, 1000, 3);
    ga_out_s(o, ",\"dur\":"), ga_out_fixed(o, dur, 1000, 3);
    ga_out_s(o, ",\"pid\":"), ga_out_u(o, ga_prof->pid);
    ga_out_s(o, ",\"tid\":"), ga_out_u(o, tid), ga_out_s(o, "}");
}

static uint64_t since_base(uint64_t t)
{
    return t > ga_prof->t_base ? t - ga_prof->t_base : 0;
}

static uint64_t trace_host(ga_out_t *o)
{
    unsigned g = atomic_load(&ga_prof_gen);
    uint64_t kept = 0;
    const span_block_t *head = ga_prof_spans();
    for (const span_block_t *b = head; b; b = b->next) {
        if (b->gen != g)
            continue;
        bool named = false; /* one thread_name per thread, not per block */
        for (const span_block_t *a = head; a != b && !named; a = a->next)
            named = a->gen == g && a->tid == b->tid;
        if (!named)
            trace_meta(o, "thread_name", b->tid, "host thread ", b->tid, false);
        uint32_t n = atomic_load_explicit(&b->n, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            const span_ev_t *e = &b->ev[i];
            trace_x(o, ga_entries[e->id].name, "driver", b->tid, since_base(e->t0),
                    e->t1 - e->t0);
        }
        kept += n;
    }
    return kept;
}

static void trace_gpu(ga_out_t *o)
{
    for (unsigned i = 0; i < ga_prof->ntrack_used && ga_prof->ngpu; i++) {
        unsigned si = ga_prof->track_used[i];
        const track_t *g = &ga_prof->track[si];
        if (g->s == CU_STREAM_PER_THREAD)
            trace_meta(o, "thread_name", GPU_TID_BASE + si, "GPU per-thread stream of thread ",
                       g->tid, false);
        else
            trace_meta(o, "thread_name", GPU_TID_BASE + si, "GPU stream ",
                       (uint64_t)(uintptr_t)g->s, true);
    }
    for (unsigned i = 0; i < ga_prof->ngpu; i++) {
        const gpu_ev_t *e = &ga_prof->gpu[i];
        trace_x(o, ga_prof_kname(e->kern), "kernel", GPU_TID_BASE + e->track, since_base(e->ts),
                e->dur);
    }
}

void ga_prof_trace_body(ga_out_t *o)
{
    uint64_t total = 0;
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        total += ga_prof->calls[id];
    ga_out_s(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    ga_out_s(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":");
    ga_out_u(o, ga_prof->pid);
    ga_out_s(o, ",\"tid\":0,\"args\":{\"name\":"), ga_out_js(o, ga_prof->command);
    ga_out_s(o, "}}");
    uint64_t kept = trace_host(o);
    trace_gpu(o);
    ga_out_s(o, "\n],\"otherData\":{");
    ga_out_key(o, "tool", true), ga_out_js(o, "gpuaccel " PACKAGE_VERSION);
    ga_out_ku(o, "driver_calls", total), ga_out_ku(o, "driver_events_kept", kept);
    ga_out_ku(o, "driver_events_dropped", total > kept ? total - kept : 0);
    ga_out_ku(o, "driver_event_limit", SPAN_LIMIT);
    ga_out_ku(o, "kernel_events_kept", ga_prof->ngpu);
    ga_out_ku(o, "kernel_events_dropped", ga_prof->gpu_dropped);
    ga_out_ku(o, "kernel_event_limit", GPU_LIMIT);
    ga_out_key(o, "note", false);
    ga_out_js(o, "times in microseconds from the first intercepted call; only the first events "
                 "up to each limit are kept. GPU tracks: each kernel starts at the later of its "
                 "launch and the end of the previous kernel on its stream; durations are measured "
                 "with events.");
    ga_out_s(o, "}}\n");
}
