/* sequence.c - the launch-sequence detector (sequence.h): each thread's
 * current segment, ended at flush points, at a launch on another stream and by
 * the periodic cut, and handed to the subscribers.
 *
 * Owns: the sinks (under `lock` while they are written, at init); each
 * thread's segment, on the heap (growing as needed) and reached through a
 * pointer in thread-local storage: a large TLS block would keep the library
 * from being dlopen()ed, and the key's destructor frees it when the thread
 * ends (its open segment is dropped).
 * Must never: call a sink with a lock held; call the driver. */
#define _GNU_SOURCE
#include "tracking/sequence.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ga_seq_sink_fn sinks[GA_SEQ_MAX_SINKS];
static unsigned n_sinks;

typedef struct segment {
    CUstream stream;
    unsigned n, cap;
    ga_seq_node_t *nodes;
    bool overflow;
} segment_t;

static GA_TLS segment_t *tl_seg;
static pthread_key_t seg_key;
static pthread_once_t seg_once = PTHREAD_ONCE_INIT;

bool ga_seq_subscribe(ga_seq_sink_fn sink)
{
    pthread_mutex_lock(&lock);
    bool ok = true;
    unsigned i = 0;
    while (i < n_sinks && sinks[i] != sink)
        i++;
    if (i == n_sinks) {
        ok = n_sinks < GA_SEQ_MAX_SINKS;
        if (ok)
            sinks[n_sinks++] = sink;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

void ga_seq_reset(void)
{
    pthread_mutex_lock(&lock);
    n_sinks = 0;
    pthread_mutex_unlock(&lock);
}

static void seg_free(void *p)
{
    segment_t *sg = p;
    if (sg)
        free(sg->nodes);
    free(sg);
}

static void seg_key_init(void)
{
    pthread_key_create(&seg_key, seg_free);
}

static segment_t *segment(void)
{
    if (GA_LIKELY(tl_seg != NULL))
        return tl_seg;
    pthread_once(&seg_once, seg_key_init);
    tl_seg = calloc(1, sizeof *tl_seg);
    if (tl_seg)
        pthread_setspecific(seg_key, tl_seg);
    return tl_seg;
}

/* FNV-1a over 8-byte words, each product folded down so that a word's high
 * bits reach the low ones: an eighth of a byte-wise pass's multiplies, on
 * every segment a synchronization ends (a node is five words, no padding). */
uint64_t ga_seq_hash(const ga_seq_node_t *nodes, unsigned n)
{
    _Static_assert(sizeof(ga_seq_node_t) % 8 == 0, "nodes hash as whole words");
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)nodes;
    for (size_t i = 0; i < n * sizeof *nodes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 32;
    }
    return h ^ n;
}

static void hand_over(const ga_seq_node_t *nodes, unsigned n, CUstream s)
{
    for (unsigned i = 0; i < n_sinks; i++)
        sinks[i](nodes, n, s);
}

/* The segment this thread was recording ended: hand it over, unless it grew
 * past GA_SEQ_MAX_SEGMENT. */
static void end_segment(segment_t *sg)
{
    unsigned n = sg->n;
    bool over = sg->overflow;
    CUstream s = sg->stream;
    sg->n = 0;
    sg->overflow = false;
    sg->stream = NULL;
    if (!over && n > 0)
        hand_over(sg->nodes, n, s);
}

/* The smallest p <= GA_SEQ_MAX_PERIOD with nodes[i] == nodes[i - p] for every
 * i, or 0: n minus the longest proper border, from the KMP prefix function
 * (O(n)). */
static unsigned period_of(const ga_seq_node_t *nodes, unsigned n)
{
    unsigned *pi = n ? malloc(n * sizeof *pi) : NULL;
    if (!pi)
        return 0;
    pi[0] = 0;
    for (unsigned i = 1; i < n; i++) {
        unsigned k = pi[i - 1];
        while (k && memcmp(&nodes[i], &nodes[k], sizeof *nodes))
            k = pi[k - 1];
        pi[i] = k + !memcmp(&nodes[i], &nodes[k], sizeof *nodes);
    }
    unsigned p = n - pi[n - 1];
    free(pi);
    return p <= GA_SEQ_MAX_PERIOD && 2 * p <= n ? p : 0;
}

/* A segment that reached GA_SEQ_MAX_SEGMENT launches without a flush point
 * would be lost (a shorter one is handed over whole at its end). If it
 * repeats one unit (a loop launching the same kernels with no sync between
 * iterations), cut it into equal pieces of whole units (about GA_SEQ_CHUNK
 * launches each), hand two of them over as two sightings of one sequence, and
 * keep the rest, which starts on a unit boundary, where holding can begin. */
static void cut_periodic(const ga_rt_t *rt, segment_t *sg)
{
    unsigned p = period_of(sg->nodes, sg->n);
    unsigned c = p ? (GA_SEQ_CHUNK + p - 1) / p * p : 0;
    if (!p || 2 * c > sg->n || c < rt->cfg.graph_min)
        return;
    hand_over(sg->nodes, c, sg->stream);
    hand_over(sg->nodes + c, c, sg->stream);
    unsigned cut = sg->n / c * c;
    sg->n -= cut;
    memmove(sg->nodes, sg->nodes + cut, sg->n * sizeof *sg->nodes);
}

void ga_seq_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                   const unsigned block[3], unsigned shmem, CUstream s)
{
    if (!n_sinks)
        return;
    ga_seq_node_t k = ga_seq_node(f, grid, block, shmem);
    segment_t *sg = segment();
    if (!sg)
        return;
    if (sg->n && sg->stream != s)
        end_segment(sg); /* a launch on another stream ends this thread's segment */
    sg->stream = s;
    if (sg->n == sg->cap && sg->cap < GA_SEQ_MAX_SEGMENT) {
        unsigned cap = sg->cap ? 2 * sg->cap : 64;
        ga_seq_node_t *more = realloc(sg->nodes, cap * sizeof *more);
        if (more)
            sg->nodes = more, sg->cap = cap;
    }
    if (sg->n < sg->cap)
        sg->nodes[sg->n++] = k;
    else
        sg->overflow = true;
    if (!sg->overflow && sg->n == GA_SEQ_MAX_SEGMENT)
        cut_periodic(rt, sg);
}

void ga_seq_flush(const ga_rt_t *rt)
{
    (void)rt;
    if (n_sinks && tl_seg && tl_seg->n)
        end_segment(tl_seg);
}

void ga_seq_open(ga_seq_sink_fn sink)
{
    const segment_t *sg = tl_seg;
    if (sg && sg->n && !sg->overflow)
        sink(sg->nodes, sg->n, sg->stream);
}

/* No CUDA state in the child: the forking thread's segment starts over (the
 * other threads' are gone with them). */
static void fork_child(void)
{
    if (tl_seg) {
        tl_seg->n = 0;
        tl_seg->overflow = false;
        tl_seg->stream = NULL;
    }
}

const ga_fork_ops_t ga_seq_fork = {NULL, &lock, fork_child};
