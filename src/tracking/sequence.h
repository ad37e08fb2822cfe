/* sequence.h - the launch-sequence detector: the one place that cuts the
 * program's launches into segments, for every feature that learns from
 * repeated launch sequences (graphs replays them, the profile estimates what
 * graphs would save: both see the same boundaries).
 *
 * A segment is the run of launches one thread makes on one stream between
 * flush points. It ends
 *  - at a flush point on that thread (ga_seq_flush);
 *  - at a launch by that thread on another stream;
 *  - by the periodic cut: a segment that reaches GA_SEQ_MAX_SEGMENT launches
 *    and repeats one unit of at most GA_SEQ_MAX_PERIOD launches is cut into
 *    pieces of whole units (about GA_SEQ_CHUNK launches each, at least
 *    cfg.graph_min); two of them are handed over (two sightings of one
 *    sequence) and the rest, which starts on a unit boundary, stays open.
 * A segment that grows past GA_SEQ_MAX_SEGMENT without repeating is dropped
 * whole when it ends: no subscriber sees it.
 * Each launch is a node (function, grid, block, shared memory); a node's
 * padding is zeroed, so nodes compare and hash as bytes.
 *
 * Who feeds it: the hooks, once per launch and once per flush point, and only
 * when some enabled feature declares GA_USES_SEQUENCES (features/feature.h):
 * hooks/launch.c after every launch (a launch that cannot be part of a
 * sequence, ga_seq_learnable false, ends the segment first; a launch the
 * driver accepted, not held and not attributed, is appended), and ga_flush
 * (hooks/dispatch.h) at every flush point. Features never feed it, so no
 * launch is counted twice however many features subscribe.
 * Who listens: the features that use it subscribe a sink in their init; when a
 * segment ends, every sink gets its nodes, in subscription order, on the
 * thread that ended it. A sink may take its own lock; it must not call back
 * into the detector.
 *
 * Owns: the sinks (a fixed array written at init under its lock, before the
 * runtime is published, read without a lock after); each thread's segment
 * (thread-local: only its own thread touches it, no lock on the launch path). */
#ifndef GA_SEQUENCE_H
#define GA_SEQUENCE_H

#include <string.h>

#include "core/runtime.h"
#include "tracking/streams.h"

enum {
    GA_SEQ_MAX_SEGMENT = 4096, /* longer runs are not learned (but for the periodic cut) */
    GA_SEQ_MAX_PERIOD = 256,   /* longest repeating unit found inside a segment */
    GA_SEQ_CHUNK = 256,        /* a periodic segment is handed over in pieces of about this */
    GA_SEQ_MAX_SINKS = 4,
};

/* Compared and hashed as bytes, so it has no padding: `zero` fills what the
 * compiler would otherwise leave undefined in a copy (a struct assignment
 * need not copy padding: learning failed when it held junk). */
typedef struct ga_seq_node {
    const void *f;
    unsigned grid[3], block[3], shmem;
    unsigned zero;
} ga_seq_node_t;
_Static_assert(sizeof(ga_seq_node_t) == sizeof(void *) + 8 * sizeof(unsigned),
               "ga_seq_node_t must have no padding");

typedef void (*ga_seq_sink_fn)(const ga_seq_node_t *nodes, unsigned n, CUstream s);

/* A launch as a node: zeroed padding, so it compares and hashes as bytes. */
static inline ga_seq_node_t ga_seq_node(CUfunction f, const unsigned grid[3],
                                        const unsigned block[3], unsigned shmem)
{
    ga_seq_node_t k;
    memset(&k, 0, sizeof k);
    k.f = f;
    memcpy(k.grid, grid, sizeof k.grid);
    memcpy(k.block, block, sizeof k.block);
    k.shmem = shmem;
    return k;
}

/* Can this launch be part of a learned sequence? Not on a per-thread default
 * stream (only the launching thread can name it, and a flush point may come
 * from another thread), not with `extra` or without kernelParams (the
 * parameters cannot be copied for a replay), not while the library must not
 * answer calls itself (capture, a sticky error). */
static inline bool ga_seq_learnable(CUstream s, bool per_thread, void **params, void **extra)
{
    bool pt_stream = s == CU_STREAM_PER_THREAD || (s == NULL && per_thread);
    return !pt_stream && !extra && params && !ga_serving_off();
}

/* Subscribe `sink` (at init; subscribing it again changes nothing). False when
 * GA_SEQ_MAX_SINKS are taken. */
bool ga_seq_subscribe(ga_seq_sink_fn sink);

/* Forget every subscriber (the hooks, before the features' init subscribes
 * them again). */
void ga_seq_reset(void);

/* A launch of f with this configuration on s that the driver accepted. */
void ga_seq_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                   const unsigned block[3], unsigned shmem, CUstream s);

/* A flush point on this thread: its segment ends (nothing, if it is empty). */
void ga_seq_flush(const ga_rt_t *rt);

/* Hand this thread's open segment to `sink` alone, without ending it (a report
 * written at exit counts what was still open). */
void ga_seq_open(ga_seq_sink_fn sink);

/* A segment's hash over its nodes' bytes (FNV-1a over words, folded with n). */
uint64_t ga_seq_hash(const ga_seq_node_t *nodes, unsigned n);

extern const ga_fork_ops_t ga_seq_fork;

#endif
