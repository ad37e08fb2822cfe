/* test_sequence.c - the launch-sequence detector (tracking/sequence.h): a
 * segment ends at a flush point and at a launch on another stream; a segment
 * of GA_SEQ_MAX_SEGMENT launches is handed over whole, a longer one is dropped
 * unless it repeats one unit, when it is cut into pieces of whole units; every
 * subscriber sees each segment once; each thread has its own segment. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tracking/sequence.h"

enum { MAX_LOG = 64, KEEP = 8 };

/* What a sink was handed: each segment's length, stream, hash and first nodes. */
typedef struct seen {
    unsigned n;
    CUstream s;
    uint64_t hash;
    ga_seq_node_t first[KEEP];
} seen_t;

typedef struct seg_log {
    unsigned n;
    seen_t e[MAX_LOG];
} seg_log_t;

static seg_log_t log_a, log_b;

static void record(seg_log_t *l, const ga_seq_node_t *nodes, unsigned n, CUstream s)
{
    if (l->n >= MAX_LOG) {
        l->n++;
        return;
    }
    seen_t *e = &l->e[l->n++];
    e->n = n, e->s = s, e->hash = ga_seq_hash(nodes, n);
    memcpy(e->first, nodes, (n < KEEP ? n : KEEP) * sizeof *nodes);
}

static void sink_a(const ga_seq_node_t *nodes, unsigned n, CUstream s)
{
    record(&log_a, nodes, n, s);
}

static void sink_b(const ga_seq_node_t *nodes, unsigned n, CUstream s)
{
    record(&log_b, nodes, n, s);
}

/* Sinks that only take places. */
#define IDLE_SINK(name)                                                                   \
    static void name(const ga_seq_node_t *nodes, unsigned n, CUstream s)                 \
    {                                                                                     \
        (void)nodes, (void)n, (void)s;                                                    \
    }
IDLE_SINK(sink_c)
IDLE_SINK(sink_d)
IDLE_SINK(sink_e)

static ga_rt_t rt;
static int kern[8];
static CUstream s1 = (CUstream)0x1000, s2 = (CUstream)0x2000;

static CUfunction fn(unsigned k)
{
    return (CUfunction)&kern[k % 8];
}

/* A launch of kernel k with grid g on s, as the hooks feed it. */
static void go(unsigned k, unsigned g, CUstream s)
{
    const unsigned grid[3] = {g, 1, 1}, block[3] = {128, 1, 1};
    ga_seq_launch(&rt, fn(k), grid, block, 0, s);
}

static void clear(void)
{
    memset(&log_a, 0, sizeof log_a);
    memset(&log_b, 0, sizeof log_b);
}

/* Both subscribers saw the same segments, each once. */
static bool same_logs(void)
{
    if (log_a.n != log_b.n)
        return false;
    for (unsigned i = 0; i < log_a.n && i < MAX_LOG; i++)
        if (log_a.e[i].n != log_b.e[i].n || log_a.e[i].s != log_b.e[i].s ||
            log_a.e[i].hash != log_b.e[i].hash)
            return false;
    return true;
}

static void test_subscribe(void)
{
    ga_seq_reset();
    go(0, 1, s1); /* nobody listens: nothing is recorded */
    ga_seq_flush(&rt);
    CHECK(ga_seq_subscribe(sink_a) && ga_seq_subscribe(sink_a)); /* twice: once */
    CHECK(ga_seq_subscribe(sink_b));
    go(0, 1, s1);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 1 && log_a.e[0].n == 1 && same_logs());
}

static void test_flush_point(void)
{
    clear();
    go(0, 1, s1), go(1, 1, s1), go(2, 1, s1);
    CHECK(log_a.n == 0);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 1 && log_a.e[0].n == 3 && log_a.e[0].s == s1);
    CHECK(log_a.e[0].first[0].f == fn(0) && log_a.e[0].first[2].f == fn(2));
    ga_seq_flush(&rt); /* an empty segment is nothing */
    CHECK(log_a.n == 1 && same_logs());
}

static void test_stream_change(void)
{
    clear();
    go(0, 1, s1), go(1, 1, s1);
    go(2, 1, s2); /* ends the s1 segment */
    CHECK(log_a.n == 1 && log_a.e[0].n == 2 && log_a.e[0].s == s1);
    go(3, 1, s2);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 2 && log_a.e[1].n == 2 && log_a.e[1].s == s2);
    CHECK(log_a.e[1].first[0].f == fn(2) && log_a.e[1].first[1].f == fn(3));
    CHECK(same_logs());
}

static void test_nodes(void)
{
    /* padding is zeroed: nodes built alike are alike byte for byte */
    unsigned char a[sizeof(ga_seq_node_t)], b[sizeof(ga_seq_node_t)];
    const unsigned g[3] = {4, 2, 1}, bl[3] = {32, 1, 1};
    memset(a, 0xAA, sizeof a), memset(b, 0x55, sizeof b);
    ga_seq_node_t na = ga_seq_node(fn(1), g, bl, 16), nb = ga_seq_node(fn(1), g, bl, 16);
    memcpy(a, &na, sizeof na), memcpy(b, &nb, sizeof nb);
    CHECK(!memcmp(a, b, sizeof a));
    /* the same sequence twice hashes alike; another configuration does not */
    clear();
    for (int rep = 0; rep < 2; rep++) {
        go(0, 1, s1), go(1, 1, s1);
        ga_seq_flush(&rt);
    }
    go(0, 2, s1), go(1, 1, s1);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 3 && log_a.e[0].hash == log_a.e[1].hash);
    CHECK(log_a.e[0].hash != log_a.e[2].hash && same_logs());
}

static void test_max_segment(void)
{
    /* not periodic (every grid differs): exactly the limit is handed over whole */
    clear();
    for (unsigned i = 0; i < GA_SEQ_MAX_SEGMENT; i++)
        go(i, i + 1, s1);
    CHECK(log_a.n == 0);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 1 && log_a.e[0].n == GA_SEQ_MAX_SEGMENT);
    /* one more: the segment overflows and is dropped whole at its end */
    clear();
    for (unsigned i = 0; i <= GA_SEQ_MAX_SEGMENT; i++)
        go(i, i + 1, s1);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 0);
    go(0, 1, s1); /* the next segment is a segment again */
    ga_seq_flush(&rt);
    CHECK(log_a.n == 1 && log_a.e[0].n == 1 && same_logs());
}

static void test_periodic(void)
{
    enum { UNIT = 6 };
    const unsigned c = (GA_SEQ_CHUNK + UNIT - 1) / UNIT * UNIT; /* whole units */
    clear();
    for (unsigned i = 0; i < GA_SEQ_MAX_SEGMENT; i++)
        go(i % UNIT, 1, s1);
    /* at the limit: two pieces of whole units, one sequence twice */
    CHECK(log_a.n == 2 && log_a.e[0].n == c && log_a.e[1].n == c && c % UNIT == 0);
    CHECK(log_a.e[0].hash == log_a.e[1].hash && log_a.e[0].s == s1);
    for (unsigned j = 0; j < KEEP; j++)
        CHECK(log_a.e[0].first[j].f == fn(j % UNIT) && log_a.e[1].first[j].f == fn(j % UNIT));
    /* the rest stays open, and starts on a unit boundary */
    ga_seq_flush(&rt);
    CHECK(log_a.n == 3 && log_a.e[2].n == GA_SEQ_MAX_SEGMENT % c);
    CHECK(log_a.e[2].first[0].f == fn(0) && log_a.e[2].first[1].f == fn(1) && same_logs());
    /* pieces shorter than GPUACCEL_GRAPH_MIN are not cut: the run overflows */
    clear();
    rt.cfg.graph_min = c + 1;
    for (unsigned i = 0; i < GA_SEQ_MAX_SEGMENT + UNIT; i++)
        go(i % UNIT, 1, s1);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 0);
    rt.cfg.graph_min = 5;
}

static void *other_thread(void *arg)
{
    (void)arg;
    go(2, 1, s1), go(3, 1, s1); /* the same stream as the main thread's segment */
    ga_seq_flush(&rt);          /* ends this thread's segment only */
    go(4, 1, s2);
    go(5, 1, s2); /* left open: dropped when the thread ends */
    return NULL;
}

static void test_threads(void)
{
    clear();
    go(0, 1, s1), go(1, 1, s1);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
    pthread_join(t, NULL);
    CHECK(log_a.n == 1 && log_a.e[0].n == 2 && log_a.e[0].first[0].f == fn(2));
    go(6, 1, s1); /* the main thread's segment goes on */
    ga_seq_flush(&rt);
    CHECK(log_a.n == 2 && log_a.e[1].n == 3 && log_a.e[1].first[0].f == fn(0) &&
          log_a.e[1].first[2].f == fn(6));
    CHECK(same_logs());
}

static void test_learnable(void)
{
    int x;
    void *params[] = {&x}, *extra[] = {NULL};
    CHECK(ga_seq_learnable(s1, false, params, NULL));
    CHECK(ga_seq_learnable(s1, true, params, NULL)); /* a _ptsz entry, a named stream */
    CHECK(ga_seq_learnable(NULL, false, params, NULL));
    CHECK(!ga_seq_learnable(NULL, true, params, NULL)); /* the per-thread default stream */
    CHECK(!ga_seq_learnable(CU_STREAM_PER_THREAD, false, params, NULL));
    CHECK(!ga_seq_learnable(s1, false, params, extra));
    CHECK(!ga_seq_learnable(s1, false, NULL, NULL));
}

static void test_open_fork_reset(void)
{
    /* the open segment to one sink, without ending it */
    clear();
    go(0, 1, s1), go(1, 1, s1);
    ga_seq_open(sink_b);
    CHECK(log_a.n == 0 && log_b.n == 1 && log_b.e[0].n == 2);
    ga_seq_flush(&rt);
    CHECK(log_a.n == 1 && log_b.n == 2 && log_a.e[0].hash == log_b.e[1].hash);
    /* a fork child starts with no segment */
    clear();
    go(0, 1, s1);
    ga_seq_fork.child();
    ga_seq_flush(&rt);
    CHECK(log_a.n == 0);
    /* no subscribers: nothing is kept */
    ga_seq_reset();
    go(0, 1, s1);
    CHECK(ga_seq_subscribe(sink_a));
    ga_seq_flush(&rt);
    CHECK(log_a.n == 0);
    /* a fixed number of places */
    CHECK(ga_seq_subscribe(sink_b) && ga_seq_subscribe(sink_c) && ga_seq_subscribe(sink_d));
    CHECK(!ga_seq_subscribe(sink_e));
}

int main(void)
{
    rt.cfg.graph_min = 5;
    test_subscribe();
    test_flush_point();
    test_stream_change();
    test_nodes();
    test_max_segment();
    test_periodic();
    test_threads();
    test_learnable();
    test_open_fork_reset();
    return check_done("test_sequence");
}
