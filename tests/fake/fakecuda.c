/* fakecuda.c - a stand-in libcuda.so.1 for tests on machines without a GPU.
 *
 * Device memory is host memory, and the kernels are the ones
 * tests/progs/kernels.ptx defines, run on the host when launched ("fill" and
 * "add"), and those an image defines by their mangled names (see "kernels an
 * image defines" below). Enough of the driver API for the doors, the stream
 * tracker and the pass-through paths to be exercised end to end; the same
 * test programs run against the real driver on a GPU machine.
 * Exported names and prototypes come from cuda.h's exact-ELF-name mode, so the
 * compiler checks them against the real ABI.
 *
 * FAKECUDA_DRIVER_VERSION=12040 makes it an older driver (default 13000, CUDA
 * 13.0): cuDriverGetVersion reports that version, the PTX ISA it takes follows
 * it, and every entry point introduced after it is missing, as from a real
 * driver of that release: dlsym finds no such symbol and cuGetProcAddress
 * answers as the real one does (see "driver version" below).
 *
 * By default work enqueued on a stream is done when its call returns, and
 * every query says so. FAKECUDA_DEFER=N (N >= 1) makes work wait in its stream
 * until something waits for it, so that a missing wait reads stale data (see
 * "streams, events and deferred completion" below). FAKECUDA_DEVICES=2 gives
 * two devices, each with its own primary context, memory, streams and memory
 * pool, and peer access between them (see "devices and contexts"). */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/compat.h" /* newer entry points the library calls, for older headers */

#define FAKE_EXPORT __attribute__((visibility("default")))
/* For calls that use no stream: only the capture-unsafe rule applies. */
#define GA_NO_LEGACY ((CUstream)(uintptr_t)-1)

enum { MAX_DEV = 4, MAX_STREAMS = 64, MAX_EVENTS = 4096 };

static int initialized;
static int ctx_objects[MAX_DEV], module_object, stream_objects[MAX_STREAMS],
    event_objects[MAX_EVENTS];
static unsigned stream_flags[MAX_STREAMS];
static int stream_dev[MAX_STREAMS]; /* the device of the context it was made in */
static int nstreams, nevents;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- devices and contexts ----------------------------------------------------
 * FAKECUDA_DEVICES=N (1 to MAX_DEV, default 1) devices, each with one context
 * (its primary context), its own memory (FAKECUDA_MEM caps each), streams
 * and memory pool. A kernel that touches another device's memory faults
 * (CUDA_ERROR_ILLEGAL_ADDRESS, sticky) unless its context enabled peer access
 * to that device (cuCtxEnablePeerAccess); copies between devices need none,
 * as under unified addressing. */
static int ndevices(void)
{
    static _Atomic int n;
    int v = atomic_load(&n);
    if (!v) {
        const char *e = getenv("FAKECUDA_DEVICES");
        v = e ? atoi(e) : 1;
        v = v < 1 ? 1 : v > MAX_DEV ? MAX_DEV : v;
        atomic_store(&n, v);
    }
    return v;
}

static CUcontext ctx_of_dev(int dev)
{
    return (CUcontext)&ctx_objects[dev];
}

/* The device of a context, or -1 (NULL, or not one of ours). */
static int ctx_dev(CUcontext c)
{
    for (int d = 0; d < ndevices(); d++)
        if (c == ctx_of_dev(d))
            return d;
    return -1;
}

static bool peer_enabled[MAX_DEV][MAX_DEV]; /* [context's device][device it may reach] */
static int retained[MAX_DEV];               /* primary context retains, less releases */

/* Live allocations, to answer double frees and bad pointers as the driver does.
 * A device address is a reserved range the host cannot touch (PROT_NONE), as
 * on a GPU: a library that writes a device pointer as if it were host memory
 * faults here too. The fake itself works on each allocation's host backing. */
static void *allocs[4096];      /* device addresses */
static void *backing[4096];     /* what the fake reads and writes for them */
static size_t alloc_sizes[4096];
static bool sync_memops[4096];  /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set on it */
static int alloc_dev[4096];     /* the device whose memory it is */

/* Where the fake reads or writes a device address; a host address is itself. */
static void *xlate(const void *p)
{
    void *out = (void *)p;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] && (const char *)p >= (char *)allocs[i] &&
            (const char *)p < (char *)allocs[i] + alloc_sizes[i]) {
            out = (char *)backing[i] + ((const char *)p - (char *)allocs[i]);
            break;
        }
    pthread_mutex_unlock(&lock);
    return out;
}

/* The device whose memory address p is, or -1 (host memory, or not allocated). */
static int device_of(const void *p)
{
    int dev = -1;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0] && dev < 0; i++)
        if (allocs[i] && (const char *)p >= (char *)allocs[i] &&
            (const char *)p < (char *)allocs[i] + alloc_sizes[i])
            dev = alloc_dev[i];
    pthread_mutex_unlock(&lock);
    return dev;
}

/* The stream engine's lock (below); always taken before `lock`, never after. */
static pthread_mutex_t qlock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* Fork safety of the stand-in itself (the real driver has its own): take the
 * locks around fork so a child never inherits one held by a vanished thread. */
static void fake_prepare(void)
{
    pthread_mutex_lock(&qlock);
    pthread_mutex_lock(&lock);
}
static void fake_release(void)
{
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&qlock);
}
/* A recursive mutex is owned by a thread id, which the child's thread does not
 * have: made afresh there instead. */
static void fake_child(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_unlock(&lock);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&qlock, &a);
    pthread_mutexattr_destroy(&a);
}
__attribute__((constructor)) static void fake_init(void)
{
    pthread_atfork(fake_prepare, fake_release, fake_child);
}

/* A simulated device clock for event timing (the tuner's tests): every block
 * costs 0.2 us and every thread 1 ns, so fewer, larger blocks are faster. */
static double device_ms;
static double event_ms[MAX_EVENTS];

enum { K_FILL = 1, K_ADD = 2 };
static int kernel_fill = K_FILL, kernel_add = K_ADD;
/* Library kernels for the swap tests: ga_add does what add does; ga_wrong_abi
 * takes other parameters. */
static int kernel_ga_add = K_ADD, kernel_wrong = 0, library_object;
/* The library's own gather kernel (kernels/gather.cu): copies reads of at
 * most 16 bytes into 16-byte cells, zero past each read, one thread a read,
 * as the real one does; up to 128 in its parameters, more in a list. */
static int kernel_ga_gather;
typedef struct fake_gather_read {
    unsigned long long src;
    unsigned n, pad;
} fake_gather_read_t;
typedef struct fake_gather_args {
    unsigned long long dst, list;
    unsigned count, stamp;
    unsigned long long done; /* a word per block: stamp, once its cells landed */
    unsigned long long src[128];
    unsigned n[128];
} fake_gather_args_t;
static unsigned gather_launches; /* for fakecuda_gathers */
/* "fault" stands for a kernel that writes through a bad pointer: its launch
 * succeeds, then every call returns the sticky error until the primary context
 * is reset, as with the real driver. */
enum { K_FAULT = 3 };
static int kernel_fault = K_FAULT;
static _Atomic int sticky;
#define STICKY()                    \
    do {                            \
        if (sticky)                 \
            return (CUresult)sticky; \
    } while (0)

/* Stream capture (the section "stream capture" below): the rules the real
 * driver enforces, so that a library call that would invalidate a program's
 * capture does so here too. */
static CUresult capture_unsafe(void);
static CUresult capture_legacy(CUstream s, int pt);
static int capture_copy(CUstream s, int pt, void *dst, const void *src, size_t n);
static int capture_launch(CUstream s, int pt, CUfunction f, const unsigned g[3],
                          const unsigned b[3], void **params);
static CUresult stream_ok(CUstream s);
#define CAPTURE_RULES(unsafe, s, pt)                                                 \
    do {                                                                             \
        CUresult cr_ = (unsafe) ? capture_unsafe() : CUDA_SUCCESS;                   \
        if (cr_ == CUDA_SUCCESS)                                                     \
            cr_ = capture_legacy((s), (pt));                                         \
        if (cr_ != CUDA_SUCCESS)                                                     \
            return cr_;                                                              \
    } while (0)

static __thread CUcontext current;

/* ---- streams, events and deferred completion ------------------------------
 * Every stream is a queue of the work enqueued on it: kernel launches
 * (parameters copied at the launch, as the driver does), asynchronous copies,
 * memsets, host functions, event records, waits on events, graph launches
 * and stream-ordered frees. The legacy default stream of each context, the
 * per-thread default stream of each thread and context, and each created
 * stream have one.
 *
 * Without FAKECUDA_DEFER (or with 0), work runs when its call enqueues it, as
 * this stand-in always did. With FAKECUDA_DEFER=N it waits in its queue and
 * runs only when:
 *  - something waits for it: cuStreamSynchronize, cuCtxSynchronize (the
 *    context's every stream), cuEventSynchronize (up to the event's record),
 *    a synchronous call that orders with the stream (a synchronous copy to or
 *    from the host waits for what its default stream waits for; cuMemFree,
 *    cuMemFreeHost and cuMemcpyPeer for every stream, as the driver's implicit
 *    synchronization does), or work that depends on it runs;
 *  - or more than N further driver calls were made after it was enqueued (the
 *    calls that touch memory, streams, events or contexts count; attribute
 *    and name queries do not): the device got to it meanwhile. cuStreamQuery
 *    and cuEventQuery say CUDA_ERROR_NOT_READY while work they cover waits: a
 *    query loop right after the work was enqueued is told so N times, then
 *    sees it done.
 * Streams order as CUDA defines: work on a stream runs in the order it was
 * enqueued; the legacy default stream waits for all earlier work of the
 * context's blocking streams (created without CU_STREAM_NON_BLOCKING, and
 * every per-thread default stream), and their work waits for earlier legacy
 * work; non-blocking streams wait for neither; cuStreamWaitEvent makes a
 * stream wait for the event's record as it stood at the call (a later record
 * of the event changes nothing), as an event query or synchronization looks
 * at its latest record (an event never recorded is complete).
 *
 * Copies, as the CUDA runtime API's "API synchronization behavior" describes:
 *  - asynchronous copies between device memory and page-locked host memory
 *    (cuMemHostAlloc) or other device memory are fully asynchronous: deferred;
 *  - an asynchronous copy from pageable host memory to the device reads the
 *    host buffer when it is called (the driver stages it: "the driver may
 *    synchronize with the stream and stage the copy into pinned memory") and
 *    writes the device in stream order: a program may reuse its buffer at
 *    once, never assume the device written;
 *  - an asynchronous copy from the device to pageable host memory stays
 *    synchronous ("for transfers between device memory and pageable host
 *    memory, the function might be synchronous with respect to host"): it
 *    waits for its stream, then copies, as the real driver does; programs,
 *    this project's tests/progs/staging_prog among them, read the buffer on
 *    return, and a stand-in that deferred it would fail them natively;
 *  - synchronous copies to or from the host return with the copy done, after
 *    what their default stream waits for ("for transfers from device to
 *    either pageable or pinned host memory, the function returns only once
 *    the copy has completed"; a pageable upload "may not have" reached the
 *    device on return, but programs rely on it, and so does this stand-in);
 *    synchronous device-to-device copies ("no host-side synchronization is
 *    performed") and memsets are enqueued on the default stream.
 * A fault raised by deferred work (kernel "fault") is seen by the call that
 * waits for it, and sticks, as on a GPU. Work on a stream whose context faulted
 * does nothing. */
typedef enum {
    OP_KERNEL, OP_COPY, OP_MEMSET, OP_HOSTFN, OP_RECORD, OP_WAIT, OP_GRAPH, OP_FREE
} op_kind_t;

typedef struct queue queue_t;
struct fake_node;

typedef struct op {
    op_kind_t kind;
    uint64_t seq;             /* the order of every enqueue, all streams together */
    uint64_t tick;            /* driver_calls when enqueued */
    queue_t *q;
    struct op *next;          /* in its queue */
    struct op *older, *newer; /* in the list of every waiting op */
    CUfunction f;             /* OP_KERNEL */
    unsigned g[3], b[3];
    void *pv[16];             /* its parameters, pointing into `owned` */
    void *dst;                /* OP_COPY, OP_MEMSET, OP_FREE: as the program named it */
    const void *src;          /* OP_COPY: as named, or a host snapshot in `owned` */
    size_t n;
    uint32_t value;           /* OP_MEMSET: 32-bit words */
    CUhostFn fn;              /* OP_HOSTFN */
    void *data;
    int event;                /* OP_RECORD */
    queue_t *wq;              /* OP_WAIT: wq's work up to wseq first */
    uint64_t wseq;
    const struct fake_node *nodes; /* OP_GRAPH: a copy, in `owned` */
    unsigned nnodes;
    void *owned;              /* freed with the op */
} op_t;

enum { Q_LEGACY, Q_PER_THREAD, Q_CREATED };
struct queue {
    int kind, dev;
    unsigned flags;           /* a created stream's */
    op_t *head, *tail;        /* waiting work, oldest first */
    uint64_t last_seq;        /* of the newest work enqueued */
    uint64_t done_seq;        /* of the newest work done: all before it is done */
    queue_t *next_q;
};

/* All under qlock. */
static queue_t *queues;                 /* every queue */
static queue_t *legacy_queues[MAX_DEV];
static queue_t *created_queues[MAX_STREAMS];
static __thread queue_t *thread_queues[MAX_DEV];
static op_t *oldest, *newest;           /* every waiting op, in enqueue order */
static uint64_t op_seq, driver_calls;
static queue_t *event_queue[MAX_EVENTS]; /* an event's latest record: queue and seq */
static uint64_t event_seq[MAX_EVENTS];

static CUresult exec_op(op_t *op);

/* FAKECUDA_DEFER: 0 runs work when enqueued. */
static unsigned long defer_calls(void)
{
    static _Atomic long n = -1;
    long v = atomic_load(&n);
    if (v < 0) {
        const char *e = getenv("FAKECUDA_DEFER");
        v = e ? (long)strtoul(e, NULL, 10) : 0;
        atomic_store(&n, v);
    }
    return (unsigned long)v;
}

static queue_t *new_queue_locked(int kind, int dev, unsigned flags)
{
    queue_t *q = calloc(1, sizeof *q);
    if (!q)
        abort(); /* a test driver: no way to go on */
    q->kind = kind, q->dev = dev, q->flags = flags;
    q->next_q = queues;
    queues = q;
    return q;
}

static bool blocking(const queue_t *q)
{
    return q->kind == Q_PER_THREAD || (q->kind == Q_CREATED && !(q->flags & CU_STREAM_NON_BLOCKING));
}

static queue_t *legacy_locked(int dev)
{
    if (!legacy_queues[dev])
        legacy_queues[dev] = new_queue_locked(Q_LEGACY, dev, 0);
    return legacy_queues[dev];
}

static int stream_index(CUstream s);

/* The queue of stream s as a call names it (pt: a per-thread entry point, for
 * which NULL is the per-thread default stream); NULL when a default stream is
 * named with no current context. */
static queue_t *queue_for(CUstream s, int pt)
{
    int i = stream_index(s);
    pthread_mutex_lock(&qlock);
    queue_t *q = i >= 0 ? created_queues[i] : NULL;
    int d = !current ? -1 : ctx_dev(current) < 0 ? 0 : ctx_dev(current);
    if (i < 0 && d >= 0) {
        if (s == CU_STREAM_PER_THREAD || (s == NULL && pt)) {
            if (!thread_queues[d])
                thread_queues[d] = new_queue_locked(Q_PER_THREAD, d, 0);
            q = thread_queues[d];
        } else {
            q = legacy_locked(d);
        }
    }
    pthread_mutex_unlock(&qlock);
    return q;
}

/* Run q's work up to seq (every op enqueued on it at or before seq), each op
 * after what it waits for: earlier legacy work for a blocking stream's,
 * earlier blocking streams' work for a legacy one's, the event's record for a
 * wait. What an op waits for was enqueued before it, so this ends; and none of
 * it is on q (q's own earlier work ran before it). Under qlock. */
static void run_upto_locked(queue_t *q, uint64_t seq)
{
    while (q->head && q->head->seq <= seq) {
        op_t *op = q->head;
        if (q->kind == Q_LEGACY) {
            for (queue_t *b = queues; b; b = b->next_q)
                if (b != q && b->dev == q->dev && blocking(b))
                    run_upto_locked(b, op->seq - 1);
        } else if (blocking(q)) {
            run_upto_locked(legacy_locked(q->dev), op->seq - 1);
        }
        if (op->kind == OP_WAIT)
            run_upto_locked(op->wq, op->wseq);
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        if (op->older)
            op->older->newer = op->newer;
        else
            oldest = op->newer;
        if (op->newer)
            op->newer->older = op->older;
        else
            newest = op->older;
        exec_op(op);
        q->done_seq = op->seq;
        free(op->owned);
        free(op);
    }
}

/* Run every waiting op that `pick` selects, oldest first (with what each
 * waits for), so that work no wait orders runs in the order it was issued. */
static void drain_picked(bool (*pick)(const queue_t *q, const queue_t *arg), const queue_t *arg)
{
    pthread_mutex_lock(&qlock);
    for (;;) {
        op_t *op = oldest;
        while (op && !pick(op->q, arg))
            op = op->newer;
        if (!op)
            break;
        run_upto_locked(op->q, op->seq);
    }
    pthread_mutex_unlock(&qlock);
}

/* What a synchronous call on default stream `on` waits for: its work, and
 * what new work on it would wait for. */
static bool before_sync(const queue_t *q, const queue_t *on)
{
    if (q == on)
        return true;
    if (q->dev != on->dev)
        return false;
    return on->kind == Q_LEGACY ? blocking(q) : blocking(on) && q->kind == Q_LEGACY;
}

static void settle_before(queue_t *q)
{
    drain_picked(before_sync, q);
}

static bool same_queue(const queue_t *q, const queue_t *arg)
{
    return q == arg;
}

static void drain_queue(queue_t *q)
{
    drain_picked(same_queue, q);
}

static bool of_device(const queue_t *q, const queue_t *dev)
{
    return !dev || q->dev == dev->dev;
}

/* Every stream of device dev (-1: of every device). */
static void drain_dev(int dev)
{
    queue_t probe = {.dev = dev};
    drain_picked(of_device, dev < 0 ? NULL : &probe);
}

static void drain_event(int e)
{
    pthread_mutex_lock(&qlock);
    if (event_queue[e])
        run_upto_locked(event_queue[e], event_seq[e]);
    pthread_mutex_unlock(&qlock);
}

static bool queue_waiting(queue_t *q)
{
    pthread_mutex_lock(&qlock);
    bool w = q->head != NULL;
    pthread_mutex_unlock(&qlock);
    return w;
}

static bool event_waiting(int e)
{
    pthread_mutex_lock(&qlock);
    bool w = event_queue[e] && event_queue[e]->done_seq < event_seq[e];
    pthread_mutex_unlock(&qlock);
    return w;
}

/* One driver call: the device gets to the work enqueued more than N calls ago. */
static void tick(void)
{
    unsigned long n = defer_calls();
    if (!n)
        return;
    pthread_mutex_lock(&qlock);
    driver_calls++;
    while (oldest && driver_calls - oldest->tick > n)
        run_upto_locked(oldest->q, oldest->seq);
    pthread_mutex_unlock(&qlock);
}

static op_t *new_op(op_kind_t kind)
{
    op_t *op = calloc(1, sizeof *op);
    if (!op)
        abort();
    op->kind = kind;
    return op;
}

static CUresult submit(queue_t *q, op_t *op);

/* The same on stream s as a legacy entry point names it; a default stream
 * with no current context is refused, as the driver does. */
static CUresult submit_on(CUstream s, op_t *op)
{
    queue_t *q = queue_for(s, 0);
    if (!q) {
        free(op->owned);
        free(op);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return submit(q, op);
}

/* Enqueue op on q: run at once without FAKECUDA_DEFER (its result returned),
 * else when waited for. */
static CUresult submit(queue_t *q, op_t *op)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&qlock);
    op->seq = ++op_seq;
    op->tick = driver_calls;
    op->q = q;
    q->last_seq = op->seq;
    if (op->kind == OP_RECORD)
        event_queue[op->event] = q, event_seq[op->event] = op->seq;
    if (!defer_calls()) {
        r = exec_op(op);
        q->done_seq = op->seq;
        free(op->owned);
        free(op);
    } else {
        if (q->tail)
            q->tail->next = op;
        else
            q->head = op;
        q->tail = op;
        op->older = newest;
        if (newest)
            newest->newer = op;
        else
            oldest = op;
        newest = op;
    }
    pthread_mutex_unlock(&qlock);
    return r;
}

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    initialized = 1;
    return CUDA_SUCCESS;
}

/* ---- driver version ----------------------------------------------------------
 * The CUDA release this fake driver is (FAKECUDA_DRIVER_VERSION, default 13000).
 * Read from `environ` with no libc call: an IFUNC resolver (FAKE_SINCE) may run
 * while the program is still being relocated, before libc can be called and
 * before `environ` is set (then the default applies). */
extern char **environ; /* POSIX: the program declares it */

static int driver_version(void)
{
    static const char key[] = "FAKECUDA_DRIVER_VERSION=";
    for (char **e = environ; e && *e; e++) {
        const char *s = *e;
        size_t i = 0;
        while (key[i] && s[i] == key[i])
            i++;
        if (key[i])
            continue;
        int v = 0;
        for (s += i; *s >= '0' && *s <= '9' && v < 100000; s++)
            v = v * 10 + (*s - '0');
        return *s == '\0' && v >= 2000 ? v : 13000;
    }
    return 13000;
}

/* FAKE_SINCE(version, name): export the static fake_<name> as entry point
 * <name>, which drivers have from CUDA `version` on. The export is an IFUNC:
 * dlsym calls its resolver, which answers NULL when the simulated driver is
 * older, so that dlsym finds nothing, as with a driver that lacks the symbol.
 * Code in this file refers to fake_<name>, never to <name>: a reference
 * resolved at load time would take the resolver's answer for good. */
#define FAKE_SINCE(version, name)                                                         \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), __typeof__(&fake_##name)), \
                   #name ": not the ABI cuda.h declares");                                  \
    static void *resolve_##name(void)                                                     \
    {                                                                                     \
        return driver_version() >= (version) ? (void *)fake_##name : NULL;                \
    }                                                                                     \
    FAKE_EXPORT __typeof__(name) name __attribute__((ifunc("resolve_" #name)))

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = driver_version();
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    __atomic_fetch_add(&retained[dev], 1, __ATOMIC_RELAXED);
    *pctx = ctx_of_dev(dev);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    current = ctx;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current;
    return CUDA_SUCCESS;
}

static void pool_settle(void);
static CUresult pool_free_now(int dev, CUdeviceptr dptr);
static unsigned waits; /* context and stream synchronizations, for fakecuda_waits */
FAKE_EXPORT unsigned fakecuda_waits(void)
{
    return __atomic_load_n(&waits, __ATOMIC_RELAXED);
}

/* Launches of the library's gather kernel (a test program reads it). */
FAKE_EXPORT unsigned fakecuda_gathers(void)
{
    return __atomic_load_n(&gather_launches, __ATOMIC_RELAXED);
}

/* Every stream of the context waited for; a fault its work raised is the answer. */
static CUresult ctx_sync(CUcontext ctx)
{
    tick();
    __atomic_fetch_add(&waits, 1, __ATOMIC_RELAXED);
    CUresult r = sticky ? (CUresult)sticky : capture_unsafe();
    if (r == CUDA_SUCCESS)
        r = capture_legacy(NULL, 0);
    if (r == CUDA_SUCCESS && ctx)
        drain_dev(ctx_dev(ctx) < 0 ? 0 : ctx_dev(ctx));
    pool_settle(); /* after the stream-ordered frees it waited for */
    if (r != CUDA_SUCCESS)
        return r;
    STICKY();
    return ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
    return ctx_sync(current);
}

/* CUDA 13.0: the context to wait for is an argument (NULL: the current one). */
static CUresult fake_cuCtxSynchronize_v2(CUcontext ctx)
{
    return ctx_sync(ctx ? ctx : current);
}
FAKE_SINCE(13000, cuCtxSynchronize_v2);

/* Fault injection for the tests, read from the environment of the test build
 * only (the library itself injects nothing):
 *   FAKECUDA_MEM=BYTES       each device holds this much: an allocation that
 *                            would take its live total past it fails with
 *                            CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo says so
 *   FAKECUDA_FAULT=alloc:N   the Nth cuMemAlloc call (from 1) fails with
 *                            CUDA_ERROR_OUT_OF_MEMORY, whatever is free */
static size_t env_size(const char *name)
{
    const char *v = getenv(name);
    return v ? (size_t)strtoull(v, NULL, 0) : 0;
}

static size_t live_bytes_locked(int dev)
{
    size_t sum = 0;
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] && alloc_dev[i] == dev)
            sum += alloc_sizes[i];
    return sum;
}

static bool injected_alloc_fault(void)
{
    static atomic_ulong calls;
    const char *v = getenv("FAKECUDA_FAULT");
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    return v && strncmp(v, "alloc:", 6) == 0 && strtoul(v + 6, NULL, 10) == n;
}

static size_t reserved_bytes(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

static CUresult device_alloc(CUdeviceptr *dptr, size_t bytesize, int ordinal)
{
    size_t cap = env_size("FAKECUDA_MEM");
    void *p = aligned_alloc(256, (bytesize + 255) & ~(size_t)255);
    void *dev = mmap(NULL, reserved_bytes(bytesize), PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!p || dev == MAP_FAILED) {
        free(p);
        if (dev != MAP_FAILED)
            munmap(dev, reserved_bytes(bytesize));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    size_t slot = sizeof allocs / sizeof allocs[0];
    if (!(cap && live_bytes_locked(ordinal) + bytesize > cap))
        for (slot = 0; slot < sizeof allocs / sizeof allocs[0] && allocs[slot]; slot++)
            ;
    if (slot < sizeof allocs / sizeof allocs[0]) {
        allocs[slot] = dev;
        backing[slot] = p;
        alloc_sizes[slot] = bytesize;
        sync_memops[slot] = false;
        alloc_dev[slot] = ordinal;
    }
    pthread_mutex_unlock(&lock);
    if (slot == sizeof allocs / sizeof allocs[0]) {
        free(p);
        munmap(dev, reserved_bytes(bytesize));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)dev;
    return CUDA_SUCCESS;
}

static CUresult device_free(CUdeviceptr dptr)
{
    void *p = (void *)(uintptr_t)dptr;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] == p) {
            void *b = backing[i];
            size_t n = alloc_sizes[i];
            allocs[i] = NULL;
            pthread_mutex_unlock(&lock);
            free(b);
            munmap(p, reserved_bytes(n));
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CAPTURE_RULES(1, GA_NO_LEGACY, 0);
    if (bytesize > ((size_t)1 << 40) || injected_alloc_fault())
        return CUDA_ERROR_OUT_OF_MEMORY;
    return device_alloc(dptr, bytesize, ctx_dev(current) < 0 ? 0 : ctx_dev(current));
}

/* cuMemFree synchronizes: what any stream still has to do is done first (a
 * fault it raises is the answer). */
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    tick();
    STICKY();
    if (dptr == 0)
        return CUDA_SUCCESS;
    CAPTURE_RULES(1, GA_NO_LEGACY, 0);
    drain_dev(-1);
    STICKY();
    return device_free(dptr);
}

/* Page-locked host memory (cuMemHostAlloc): the driver knows it, as HOST
 * memory; plain pageable memory it does not know (memory type 0). */
static void *pinned[1024];
static size_t pinned_sizes[1024];
static unsigned pinned_flags[1024];

static int pinned_locked(const void *p)
{
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i] && (const char *)p >= (char *)pinned[i] &&
            (const char *)p < (char *)pinned[i] + pinned_sizes[i])
            return 1;
    return 0;
}

/* The allocation holding device address p, as [*base, *base + *size); 0 if none. */
static int device_range(const void *p, void **base, size_t *size)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0] && !found; i++)
        if (allocs[i] && (const char *)p >= (char *)allocs[i] &&
            (const char *)p < (char *)allocs[i] + alloc_sizes[i]) {
            *base = allocs[i];
            *size = alloc_sizes[i];
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

FAKE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    void *base;
    size_t size;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!device_range((void *)(uintptr_t)dptr, &base, &size))
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)(uintptr_t)base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

/* The slot of the allocation holding ptr, or -1 (under lock). */
static int slot_of_locked(CUdeviceptr ptr)
{
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] && ptr >= (CUdeviceptr)(uintptr_t)allocs[i] &&
            ptr < (CUdeviceptr)(uintptr_t)allocs[i] + alloc_sizes[i])
            return (int)i;
    return -1;
}

/* Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, on device memory. */
FAKE_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr,
                                           CUdeviceptr ptr)
{
    if (!value || attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int i = slot_of_locked(ptr);
    if (i >= 0)
        sync_memops[i] = *(const unsigned *)value != 0;
    pthread_mutex_unlock(&lock);
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A dma-buf of device memory: a file descriptor (of /dev/null) for any range
 * inside one allocation. */
FAKE_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr ptr, size_t size,
                                                   CUmemRangeHandleType type,
                                                   unsigned long long flags)
{
    if (!handle || !size || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int i = slot_of_locked(ptr);
    int inside = i >= 0 && ptr + size <= (CUdeviceptr)(uintptr_t)allocs[i] + alloc_sizes[i];
    pthread_mutex_unlock(&lock);
    if (!inside)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    *(int *)handle = fd;
    return CUDA_SUCCESS;
}

/* For the tests: a write into device memory that no driver call makes, as a
 * network card's by GPUDirect RDMA. */
FAKE_EXPORT void fakecuda_dma_write(CUdeviceptr dst, const void *src, size_t n)
{
    memcpy(xlate((const void *)(uintptr_t)dst), src, n);
}

/* For the tests: device memory as the device holds it now, read without a
 * driver call (a host function may make none). */
FAKE_EXPORT void fakecuda_peek(void *dst, CUdeviceptr src, size_t n)
{
    memcpy(dst, xlate((const void *)(uintptr_t)src), n);
}

FAKE_EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data,
                                            CUdeviceptr ptr)
{
    void *base = NULL;
    size_t size = 0;
    bool marked = false;
    int dev = -1;
    pthread_mutex_lock(&lock);
    int slot = slot_of_locked(ptr);
    if (slot >= 0)
        base = allocs[slot], size = alloc_sizes[slot], marked = sync_memops[slot],
        dev = alloc_dev[slot];
    int locked = !base && pinned_locked((void *)(uintptr_t)ptr);
    pthread_mutex_unlock(&lock);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = base ? CU_MEMORYTYPE_DEVICE : locked ? CU_MEMORYTYPE_HOST : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = (CUdeviceptr)(uintptr_t)base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = size; break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = base ? dev : -1; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *(CUcontext *)data[i] = base ? ctx_of_dev(dev) : NULL;
            break;
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(bool *)data[i] = marked; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

static unsigned host_allocs; /* cuMemHostAlloc calls, for fakecuda_host_allocs */
FAKE_EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags)
{
    tick();
    CAPTURE_RULES(1, GA_NO_LEGACY, 0);
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = malloc(n ? n : 1);
    __atomic_fetch_add(&host_allocs, 1, __ATOMIC_RELAXED);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < sizeof pinned / sizeof pinned[0] && pinned[i])
        i++;
    if (i < sizeof pinned / sizeof pinned[0])
        pinned[i] = p, pinned_sizes[i] = n, pinned_flags[i] = flags;
    pthread_mutex_unlock(&lock);
    *pp = p;
    return CUDA_SUCCESS;
}

/* Page-locked memory's device address: under unified addressing, itself. */
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pd, void *p, unsigned flags)
{
    if (!pd || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int ok = pinned_locked(p);
    pthread_mutex_unlock(&lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pd = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* The flags of a page-locked allocation. With FAKECUDA_HOST_CHUNKS set, as
 * the real driver was seen to do (H100, driver 580): requests under 2 MiB
 * share chunks, and one placed while another small allocation lives reports
 * that one's portable and write-combined bits instead of its own (the oldest
 * such allocation stands for "the chunk"). */
FAKE_EXPORT CUresult cuMemHostGetFlags(unsigned *pflags, void *p)
{
    const size_t small = 2u << 20;
    const unsigned shared = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (!pflags)
        return r;
    pthread_mutex_lock(&lock);
    size_t me = sizeof pinned / sizeof pinned[0], first = me;
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        if (pinned[i] == p)
            me = i;
        else if (pinned[i] && pinned_sizes[i] < small && first == sizeof pinned / sizeof pinned[0])
            first = i;
    }
    if (me < sizeof pinned / sizeof pinned[0]) {
        unsigned f = pinned_flags[me] | CU_MEMHOSTALLOC_DEVICEMAP; /* unified addressing */
        if (getenv("FAKECUDA_HOST_CHUNKS") && pinned_sizes[me] < small && first < me)
            f = (f & ~shared) | (pinned_flags[first] & shared);
        *pflags = f;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Synchronizes, as cuMemFree: no copy still waiting may read or write it. */
FAKE_EXPORT CUresult cuMemFreeHost(void *p)
{
    tick();
    CAPTURE_RULES(1, GA_NO_LEGACY, 0);
    drain_dev(-1);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i] == p)
            pinned[i] = NULL;
    pthread_mutex_unlock(&lock);
    free(p);
    return CUDA_SUCCESS;
}

static size_t pool_kept_locked(int dev);
FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    size_t cap = env_size("FAKECUDA_MEM");
    int dev = ctx_dev(current) < 0 ? 0 : ctx_dev(current);
    tick();
    pthread_mutex_lock(&lock);
    size_t kept = pool_kept_locked(dev); /* the memory pool's reserve is not free */
    size_t live = live_bytes_locked(dev) + kept;
    pthread_mutex_unlock(&lock);
    if (!cap) {
        *free_bytes = ((size_t)8 << 30) - kept;
        *total = (size_t)16 << 30;
        return CUDA_SUCCESS;
    }
    *free_bytes = live < cap ? cap - live : 0;
    *total = cap;
    return CUDA_SUCCESS;
}

/* A device side that runs past its allocation is refused before anything is
 * copied, as the driver does. */
static int past_end(const void *p, size_t n)
{
    void *base;
    size_t size;
    return device_range(p, &base, &size) && n > size - (size_t)((const char *)p - (char *)base);
}

/* Where the copy's host side is pageable (neither device memory nor
 * cuMemHostAlloc's). */
static bool pageable(const void *p)
{
    if (device_of(p) >= 0)
        return false;
    pthread_mutex_lock(&lock);
    bool locked = pinned_locked(p);
    pthread_mutex_unlock(&lock);
    return !locked;
}

static CUresult copy_check(void *dst, const void *src, size_t n)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (!dst || !src || past_end(dst, n) || past_end(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A copy in q's order; from pageable memory, its bytes read now. */
static CUresult enqueue_copy(queue_t *q, void *dst, const void *src, size_t n)
{
    op_t *op = new_op(OP_COPY);
    op->dst = dst, op->src = src, op->n = n;
    if (defer_calls() && n && pageable(src)) {
        if (!(op->owned = malloc(n)))
            abort();
        memcpy(op->owned, src, n);
        op->src = op->owned;
    }
    return submit(q, op);
}

/* A synchronous copy on the default stream (pt: the per-thread one): to or
 * from the host, done on return after what that stream waits for; between
 * device addresses, enqueued there. */
static CUresult copy(void *dst, const void *src, size_t n, int pt)
{
    tick();
    CUresult r = copy_check(dst, src, n);
    if (r != CUDA_SUCCESS)
        return r;
    queue_t *q = queue_for(NULL, pt);
    if (device_of(dst) >= 0 && device_of(src) >= 0)
        return enqueue_copy(q, dst, src, n);
    settle_before(q);
    STICKY();
    memcpy(xlate(dst), xlate(src), n);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    CAPTURE_RULES(1, NULL, 0);
    return copy((void *)(uintptr_t)dst, src, n, 0);
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    CAPTURE_RULES(1, NULL, 1);
    return copy((void *)(uintptr_t)dst, src, n, 1);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    CAPTURE_RULES(1, NULL, 0);
    return copy(dst, (const void *)(uintptr_t)src, n, 0);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    CAPTURE_RULES(1, NULL, 1);
    return copy(dst, (const void *)(uintptr_t)src, n, 1);
}

/* An asynchronous copy on a capturing stream becomes a node of its graph.
 * Otherwise: to pageable memory, done on return after the stream's work;
 * else in the stream's order (see "streams, events and deferred completion"). */
static CUresult copy_async(void *dst, const void *src, size_t n, CUstream s, int pt)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    CAPTURE_RULES(0, s, pt);
    if (capture_copy(s, pt, dst, src, n))
        return CUDA_SUCCESS;
    CUresult r = copy_check(dst, src, n);
    if (r != CUDA_SUCCESS)
        return r;
    r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    queue_t *q = queue_for(s, pt);
    if (!pageable(dst))
        return enqueue_copy(q, dst, src, n);
    settle_before(q);
    STICKY();
    memcpy(xlate(dst), xlate(src), n);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return copy_async((void *)(uintptr_t)dst, src, n, s, 0);
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n,
                                               CUstream s)
{
    return copy_async((void *)(uintptr_t)dst, src, n, s, 1);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_async(dst, (const void *)(uintptr_t)src, n, s, 0);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_async(dst, (const void *)(uintptr_t)src, n, s, 1);
}

FAKE_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    CAPTURE_RULES(1, NULL, 0);
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 0);
}

FAKE_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    CAPTURE_RULES(1, NULL, 1);
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 1);
}

FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, 0);
}

FAKE_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    CAPTURE_RULES(1, NULL, 0);
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 0);
}

FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, 0);
}

/* Between devices: everything pending on any stream first, as the driver
 * serializes it with the work of both devices and the current one. */
FAKE_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                  CUcontext src_ctx, size_t n)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (ctx_dev(dst_ctx) < 0 || ctx_dev(src_ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CAPTURE_RULES(1, NULL, 0);
    CUresult r = copy_check((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    if (r != CUDA_SUCCESS)
        return r;
    drain_dev(-1);
    STICKY();
    memcpy(xlate((void *)(uintptr_t)dst), xlate((const void *)(uintptr_t)src), n);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                       CUcontext src_ctx, size_t n, CUstream s)
{
    if (ctx_dev(dst_ctx) < 0 || ctx_dev(src_ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, 0);
}

/* Asynchronous with the host: enqueued on the default stream. */
FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    CAPTURE_RULES(1, NULL, 0);
    op_t *op = new_op(OP_MEMSET);
    op->dst = (void *)(uintptr_t)dst, op->value = v, op->n = n;
    return submit(queue_for(NULL, 0), op);
}

/* The PTX ISA a driver of this release takes (the PTX ISA manual's release
 * notes): 9.0 for CUDA 13.0, 8.4 for 12.4, 8.5 for 12.5 and 12.6. */
static void driver_isa(unsigned *major, unsigned *minor)
{
    static const struct { int cuda; unsigned major, minor; } isa[] = {
        {13000, 9, 0}, {12090, 8, 8}, {12080, 8, 7}, {12070, 8, 6}, {12050, 8, 5},
        {12040, 8, 4}, {12030, 8, 3}, {12020, 8, 2}, {12010, 8, 1}, {12000, 8, 0},
    };
    int v = driver_version();
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++)
        if (v >= isa[i].cuda) {
            *major = isa[i].major, *minor = isa[i].minor;
            return;
        }
    *major = 7, *minor = 8; /* older than the tests go */
}

/* PTX text as the driver's JIT judges it: a `.version` above what this driver
 * takes (FAKECUDA_PTX_MAX, default the driver release's, 9.0 for CUDA 13.0) is refused as
 * unsupported; an instruction this JIT does not know (the marker
 * `fake.newinstr`) fails compilation. Anything else (a cubin, a fatbin) loads. */
static CUresult fake_jit(const void *image)
{
    const char *t = image, *v = strstr(t, ".version ");
    if (!v || memchr(t, '\0', (size_t)(v - t)))
        return CUDA_SUCCESS; /* not PTX text */
    unsigned major = 0, minor = 0, mmax, nmax;
    if (sscanf(v + 9, "%u.%u", &major, &minor) != 2)
        return CUDA_ERROR_INVALID_PTX;
    driver_isa(&mmax, &nmax);
    const char *env = getenv("FAKECUDA_PTX_MAX");
    if (env)
        (void)sscanf(env, "%u.%u", &mmax, &nmax);
    if (major > mmax || (major == mmax && minor > nmax))
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    return strstr(t, "fake.newinstr") ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
}

/* ---- kernels an image defines ----------------------------------------------
 * For the namesake tests: kernels the fake runs by their mangled name, with
 * the arithmetic their image gives them, so that two images may hold kernels
 * of one name and one parameter list that compute different things. PTX text
 * defines them: each .entry whose body holds `fake.arith A C;` is a kernel
 * taking its .param list (.u64/.b64/.s64: 8 bytes, .u32/.b32/.s32: 4) that
 * computes y[i] = x[i] * A + C + s (mod 2^32) for i below n and below its
 * thread count, where x and y are the u32 array of its first parameter (one
 * pointer: in place) or of its first two (input, output), n is its first
 * 32-bit parameter and s its last (0 when it has one). An image the fake
 * cannot read (a cubin or fatbin: the library's shipped kernels, a program's
 * real fatbin) gets the kernels of the PTX file FAKECUDA_KERNELS names, when
 * set. Each load of such an image is a module or library of its own, with its
 * own kernel handles; any other image loads as before (fill, add, fault and
 * the library kernels below). The real driver never sees these images. */
typedef struct arith {
    char name[128];
    unsigned np;
    size_t off[16], size[16];
    uint32_t mul, add;
    bool library; /* a CUkernel of a library, not a module's CUfunction */
    const struct arith_image *owner;
} arith_t;
typedef struct arith_image {
    unsigned n;
    arith_t k[32];
} arith_image_t;
static arith_image_t *arith_images[256];
static unsigned n_arith_images;

static bool is_ptx(const void *image)
{
    const char *t = image, *v = strstr(t, ".version ");
    return v && !memchr(t, '\0', (size_t)(v - t));
}

/* The kernels of PTX text t into im (those with a fake.arith body). */
static void arith_parse(const char *t, arith_image_t *im, bool library)
{
    for (const char *e = t; (e = strstr(e, ".entry ")) && im->n < 32;) {
        e += strlen(".entry ");
        arith_t *k = &im->k[im->n];
        memset(k, 0, sizeof *k);
        size_t len = strcspn(e, "( \t\n");
        const char *open = e + len, *close = strchr(open, ')');
        const char *body = close ? strchr(close, '{') : NULL, *next = strstr(e, ".entry ");
        const char *op = body ? strstr(body, "fake.arith") : NULL;
        if (!len || len >= sizeof k->name || *open != '(' || !op || (next && op > next))
            continue;
        memcpy(k->name, e, len);
        size_t at = 0;
        for (const char *q = open; (q = strstr(q, ".param")) && q < close && k->np < 16; q++) {
            size_t sz = strncmp(q + 7, ".u64", 4) && strncmp(q + 7, ".b64", 4) &&
                                strncmp(q + 7, ".s64", 4) ? 4 : 8;
            at = (at + sz - 1) / sz * sz;
            k->off[k->np] = at, k->size[k->np++] = sz;
            at += sz;
        }
        if (sscanf(op, "fake.arith %u %u", &k->mul, &k->add) != 2 || !k->np || k->size[0] != 8)
            continue;
        k->library = library;
        k->owner = im;
        im->n++;
    }
}

/* A new module or library for `image` if it defines kernels, else NULL. */
static arith_image_t *arith_load(const void *image, bool library)
{
    char *file = NULL;
    const char *text = image;
    if (!is_ptx(image)) {
        const char *path = getenv("FAKECUDA_KERNELS");
        FILE *f = path && *path ? fopen(path, "r") : NULL;
        if (!f)
            return NULL;
        size_t cap = 1 << 20, n = 0;
        file = calloc(1, cap);
        if (file)
            n = fread(file, 1, cap - 1, f);
        fclose(f);
        if (!file)
            return NULL;
        file[n] = '\0';
        text = file;
    }
    arith_image_t *im = calloc(1, sizeof *im);
    if (im)
        arith_parse(text, im, library);
    free(file);
    pthread_mutex_lock(&lock);
    if (im && im->n && n_arith_images < 256)
        arith_images[n_arith_images++] = im;
    else
        free(im), im = NULL;
    pthread_mutex_unlock(&lock);
    return im;
}

static arith_image_t *arith_image_of(const void *h)
{
    arith_image_t *found = NULL;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n_arith_images && !found; i++)
        if (h == (const void *)arith_images[i])
            found = arith_images[i];
    pthread_mutex_unlock(&lock);
    return found;
}

/* The kernel behind handle h, if it is one of these. */
static const arith_t *arith_of(const void *h)
{
    const arith_t *found = NULL;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n_arith_images && !found; i++)
        for (unsigned j = 0; j < arith_images[i]->n; j++)
            if (h == (const void *)&arith_images[i]->k[j])
                found = &arith_images[i]->k[j];
    pthread_mutex_unlock(&lock);
    return found;
}

static const arith_t *arith_find(const arith_image_t *im, const char *name)
{
    for (unsigned j = 0; j < im->n; j++)
        if (!strcmp(im->k[j].name, name))
            return &im->k[j];
    return NULL;
}

static CUresult arith_param(const arith_t *k, size_t i, size_t *off, size_t *size)
{
    if (i >= k->np)
        return CUDA_ERROR_INVALID_VALUE;
    *off = k->off[i], *size = k->size[i];
    return CUDA_SUCCESS;
}


static CUresult arith_run(const arith_t *k, uint64_t threads, void **params)
{
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    bool two = k->np > 1 && k->size[1] == 8;
    uint32_t n = 0, s = 0;
    unsigned words = 0;
    for (unsigned i = 0; i < k->np; i++)
        if (k->size[i] == 4) {
            uint32_t v;
            memcpy(&v, params[i], 4);
            if (!words++)
                n = v;
            else
                s = v;
        }
    void *in_dev, *out_dev;
    memcpy(&in_dev, params[0], 8);
    memcpy(&out_dev, params[two ? 1 : 0], 8);
    uint32_t *in = xlate(in_dev), *out = xlate(out_dev);
    for (uint64_t i = 0; i < threads && i < n; i++)
        out[i] = in[i] * k->mul + k->add + s;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult jit = fake_jit(image);
    if (jit != CUDA_SUCCESS)
        return jit;
    arith_image_t *im = arith_load(image, false);
    *module = im ? (CUmodule)im : (CUmodule)&module_object;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned n,
                                        CUjit_option *o, void **ov)
{
    (void)n, (void)o, (void)ov;
    return cuModuleLoadData(module, image);
}

/* cudart's fatbin wrapper {magic, version, fatbin, ...} or a fatbin. */
FAKE_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    uint32_t magic = 0;
    if (fatCubin)
        memcpy(&magic, fatCubin, 4);
    if (magic != 0x466243b1u && magic != 0xba55ed50u)
        return CUDA_ERROR_INVALID_IMAGE;
    return cuModuleLoadData(module, fatCubin);
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    const arith_image_t *im = arith_image_of(m);
    const arith_t *k = im ? arith_find(im, name) : NULL;
    if (k && !k->library) {
        *f = (CUfunction)k;
        return CUDA_SUCCESS;
    }
    if (m != (CUmodule)&module_object && !im)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!strcmp(name, "fill"))
        *f = (CUfunction)&kernel_fill;
    else if (!strcmp(name, "add"))
        *f = (CUfunction)&kernel_add;
    else if (!strcmp(name, "fault"))
        *f = (CUfunction)&kernel_fault;
    else
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule m)
{
    return m == (CUmodule)&module_object || arith_image_of(m) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_HANDLE;
}

static int is_kernel(CUfunction f)
{
    return f == (CUfunction)&kernel_fill || f == (CUfunction)&kernel_add ||
           f == (CUfunction)&kernel_ga_add;
}

FAKE_EXPORT CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *o,
                                       void **ov, unsigned no, CUlibraryOption *lo, void **lov,
                                       unsigned nlo)
{
    (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    if (!lib || !code)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult jit = fake_jit(code);
    if (jit != CUDA_SUCCESS)
        return jit;
    arith_image_t *im = arith_load(code, true);
    *lib = im ? (CUlibrary)im : (CUlibrary)&library_object;
    return CUDA_SUCCESS;
}

/* A library's kernels: its image's, then the library kernels below (the
 * library's own gather kernel loads from an image the fake cannot read). */
FAKE_EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    const arith_image_t *im = arith_image_of(lib);
    const arith_t *a = im ? arith_find(im, name) : NULL;
    if (a && a->library) {
        *k = (CUkernel)a;
        return CUDA_SUCCESS;
    }
    if (lib != (CUlibrary)&library_object && !im)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!strcmp(name, "ga_add"))
        *k = (CUkernel)&kernel_ga_add;
    else if (!strcmp(name, "ga_gather"))
        *k = (CUkernel)&kernel_ga_gather;
    else if (!strcmp(name, "ga_wrong_abi"))
        *k = (CUkernel)&kernel_wrong;
    else
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}

static CUresult fake_cuKernelGetName(const char **name, CUkernel k)
{
    const arith_t *a = arith_of(k);
    if (a && a->library)
        *name = a->name;
    else if (k == (CUkernel)&kernel_ga_add)
        *name = "ga_add";
    else if (k == (CUkernel)&kernel_wrong)
        *name = "ga_wrong_abi";
    else
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
FAKE_SINCE(12030, cuKernelGetName);

static CUresult fake_cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    const arith_t *a = arith_of(k);
    if (a && a->library)
        return arith_param(a, i, off, size);
    if (k == (CUkernel)&kernel_ga_add && i < 3) { /* like fill/add: 8 + 4 + 4 */
        *off = i == 0 ? 0 : 4 + 4 * i;
        *size = i == 0 ? 8 : 4;
        return CUDA_SUCCESS;
    }
    if (k == (CUkernel)&kernel_wrong && i < 2) { /* two 8-byte parameters */
        *off = 8 * i;
        *size = 8;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
FAKE_SINCE(12040, cuKernelGetParamInfo);

static CUresult fake_cuKernelGetLibrary(CUlibrary *lib, CUkernel k)
{
    const arith_t *a = arith_of(k);
    if (a && a->library)
        *lib = (CUlibrary)a->owner;
    else if (k == (CUkernel)&kernel_ga_add || k == (CUkernel)&kernel_wrong ||
             k == (CUkernel)&kernel_ga_gather)
        *lib = (CUlibrary)&library_object;
    else
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
FAKE_SINCE(12050, cuKernelGetLibrary);

FAKE_EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    *f = (CUfunction)k;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int b,
                                                                 size_t shmem)
{
    (void)f, (void)b, (void)shmem;
    *n = 8;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    *d = 0;
    return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break; /* an "sm_90" */
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    if (arith_of(f)) {
        *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
        return CUDA_SUCCESS;
    }
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    /* fill is declared with __launch_bounds__(256) in this make-believe */
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? (f == (CUfunction)&kernel_fill ? 256 : 1024)
                                                     : 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuFuncGetName(const char **name, CUfunction f)
{
    const arith_t *a = arith_of(f);
    if (a && !a->library) {
        *name = a->name;
        return CUDA_SUCCESS;
    }
    if (!is_kernel(f)) /* what the driver says of a CUkernel, too */
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f == (CUfunction)&kernel_fill ? "fill" : "add";
    return CUDA_SUCCESS;
}
FAKE_SINCE(12030, cuFuncGetName);

static CUresult fake_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    /* fill(u32 *p, u32 n, u32 v) and add(u32 *p, u32 n, u32 v): 8 + 4 + 4 bytes */
    static const size_t offs[] = {0, 8, 12}, sizes[] = {8, 4, 4};
    const arith_t *a = arith_of(f);
    if (a && !a->library)
        return arith_param(a, i, off, size);
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (i >= 3)
        return CUDA_ERROR_INVALID_VALUE;
    *off = offs[i];
    *size = sizes[i];
    return CUDA_SUCCESS;
}
FAKE_SINCE(12040, cuFuncGetParamInfo);

FAKE_EXPORT CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
    const arith_t *a = arith_of(f);
    if (a && !a->library) {
        *m = (CUmodule)a->owner;
        return CUDA_SUCCESS;
    }
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)&module_object;
    return CUDA_SUCCESS;
}

/* The errors a launch returns at once; 0 when it is one the fake can run. */
static CUresult launch_check(CUfunction f, const unsigned g[3], const unsigned b[3],
                             void **params)
{
    STICKY();
    uint64_t threads = (uint64_t)g[0] * g[1] * g[2] * b[0] * b[1] * b[2];
    if (f == (CUfunction)&kernel_fault)
        return CUDA_SUCCESS;
    if (f == (CUfunction)&kernel_ga_gather && params) {
        const fake_gather_args_t *a = params[0];
        if ((!a->list && a->count > 128) || threads < a->count)
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    const arith_t *a = arith_of(f); /* a CUkernel launched as a CUfunction too */
    if (!a && !is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((uint64_t)b[0] * b[1] * b[2] > 1024 || !threads)
        return CUDA_ERROR_INVALID_VALUE;
    return params ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The sizes of f's parameters (a checked launch): how many. */
static unsigned launch_layout(CUfunction f, size_t size[16])
{
    if (f == (CUfunction)&kernel_fault)
        return 0;
    if (f == (CUfunction)&kernel_ga_gather) {
        size[0] = sizeof(fake_gather_args_t);
        return 1;
    }
    const arith_t *a = arith_of(f);
    if (a) {
        for (unsigned i = 0; i < a->np; i++)
            size[i] = a->size[i];
        return a->np;
    }
    size[0] = 8, size[1] = 4, size[2] = 4; /* fill, add, ga_add */
    return 3;
}

/* Memory of another device, which a kernel of `dev` may not touch. */
static bool foreign(int dev, const void *p)
{
    int owner = device_of(p);
    return owner >= 0 && owner != dev && !peer_enabled[dev][owner];
}

/* What a checked launch does, on device dev. */
static CUresult launch_run(CUfunction f, int dev, const unsigned g[3], const unsigned b[3],
                           void **params)
{
    STICKY();
    uint64_t threads = (uint64_t)g[0] * g[1] * g[2] * b[0] * b[1] * b[2];
    if (f == (CUfunction)&kernel_fault) {
        sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* seen by the next call */
        return CUDA_SUCCESS;
    }
    if (f == (CUfunction)&kernel_ga_gather) {
        const fake_gather_args_t *a = params[0];
        const fake_gather_read_t *list = a->list ? xlate((void *)(uintptr_t)a->list) : NULL;
        for (unsigned k = 0; k < a->count; k++) {
            unsigned char *cell = xlate((void *)(uintptr_t)(a->dst + 16 * k));
            unsigned long long src = list ? list[k].src : a->src[k];
            unsigned n = list ? list[k].n : a->n[k];
            memset(cell, 0, 16);
            memcpy(cell, xlate((void *)(uintptr_t)src), n < 16 ? n : 16);
        }
        /* FAKECUDA_GATHER_SILENT=1: the blocks never say they landed (the
         * library's wait must fall back to the driver's and give up). */
        const char *silent = getenv("FAKECUDA_GATHER_SILENT");
        for (unsigned k = 0; k < g[0] && !(silent && *silent == '1'); k++)
            __atomic_store_n((unsigned *)xlate((void *)(uintptr_t)(a->done + 4 * k)), a->stamp,
                             __ATOMIC_RELEASE);
        __atomic_fetch_add(&gather_launches, 1, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
    }
    void *p0, *p1;
    memcpy(&p0, params[0], 8);
    const arith_t *a = arith_of(f);
    if (a && a->np > 1 && a->size[1] == 8)
        memcpy(&p1, params[1], 8);
    else
        p1 = p0;
    if (foreign(dev, p0) || foreign(dev, p1)) {
        sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* no peer access: the kernel faults */
        return CUDA_SUCCESS;
    }
    if (a)
        return arith_run(a, threads, params);
    /* FAKECUDA_TRAP_BLOCK=N: add traps with N threads a block, as a kernel that
     * asserts on its block size (the tuner's candidates). */
    const char *trap = getenv("FAKECUDA_TRAP_BLOCK");
    if (trap && f == (CUfunction)&kernel_add && b[0] == (unsigned)atoi(trap)) {
        sticky = CUDA_ERROR_ASSERT; /* seen by the next call */
        return CUDA_SUCCESS;
    }
    uint32_t *p = xlate(p0);
    uint32_t n = *(uint32_t *)params[1], v = *(uint32_t *)params[2];
    device_ms += (double)g[0] * g[1] * g[2] * 0.0002 + (double)threads * 0.000001;
    for (uint64_t i = 0; i < threads && i < n; i++)
        p[i] = f == (CUfunction)&kernel_fill ? v : p[i] + v; /* add, ga_add */
    return CUDA_SUCCESS;
}

/* A launch on a capturing stream becomes a node of its graph; any other is
 * checked, its parameters copied, and enqueued. */
static CUresult launch_on(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, CUstream s, int pt, void **params)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    CAPTURE_RULES(0, s, pt);
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    if (is_kernel(f) && params && capture_launch(s, pt, f, g, b, params))
        return CUDA_SUCCESS;
    CUresult r = launch_check(f, g, b, params);
    if (r != CUDA_SUCCESS)
        return r;
    r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    op_t *op = new_op(OP_KERNEL);
    op->f = f;
    memcpy(op->g, g, sizeof g);
    memcpy(op->b, b, sizeof b);
    size_t size[16], at = 0;
    unsigned np = launch_layout(f, size);
    if (np && !(op->owned = malloc(16 * 16 + sizeof(fake_gather_args_t))))
        abort();
    for (unsigned i = 0; i < np; i++) {
        at = (at + 7) / 8 * 8;
        op->pv[i] = (char *)op->owned + at;
        memcpy(op->pv[i], params[i], size[i]);
        at += size[i];
    }
    return submit(queue_for(s, pt), op);
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                    CUstream s, void **params, void **extra)
{
    (void)shmem, (void)extra;
    return launch_on(f, gx, gy, gz, bx, by, bz, s, 0, params);
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream s, void **params, void **extra)
{
    (void)shmem, (void)extra;
    return launch_on(f, gx, gy, gz, bx, by, bz, s, 1, params);
}

/* cuLaunchKernelEx: attributes are accepted and change nothing here. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, int pt)
{
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch_on(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                     c->blockDimZ, c->hStream, pt, params);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                      void **extra)
{
    (void)extra;
    return launch_ex(c, f, params, 0);
}
FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
                                           void **extra)
{
    (void)extra;
    return launch_ex(c, f, params, 1);
}

/* ---- graphs: kernel nodes only, run in order on launch ---- */
typedef struct fake_node {
    CUfunction f; /* NULL: a copy node */
    unsigned g[3], b[3];
    unsigned char params[16]; /* fill/add: u32 *p, u32 n, u32 v */
    void *dst;                /* copy nodes (captured asynchronous copies) */
    const void *src;
    size_t n;
} fake_node_t;

typedef struct fake_graph {
    unsigned n;
    fake_node_t nodes[4096];
} fake_graph_t;

static void node_from(fake_node_t *nd, const CUDA_KERNEL_NODE_PARAMS *p)
{
    nd->f = p->func ? p->func : (CUfunction)p->kern;
    nd->g[0] = p->gridDimX, nd->g[1] = p->gridDimY, nd->g[2] = p->gridDimZ;
    nd->b[0] = p->blockDimX, nd->b[1] = p->blockDimY, nd->b[2] = p->blockDimZ;
    memcpy(nd->params, p->kernelParams[0], 8);
    memcpy(nd->params + 8, p->kernelParams[1], 4);
    memcpy(nd->params + 12, p->kernelParams[2], 4);
}

FAKE_EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned flags)
{
    (void)flags;
    *g = (CUgraph)calloc(1, sizeof(fake_graph_t));
    return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                             size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    fake_graph_t *fg = (fake_graph_t *)g;
    (void)deps, (void)ndeps;
    if (!fg || fg->n >= 4096 || !p || !p->kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    node_from(&fg->nodes[fg->n], p);
    *node = (CUgraphNode)(uintptr_t)(fg->n + 1);
    fg->n++;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long f)
{
    (void)f;
    fake_graph_t *copy = malloc(sizeof *copy);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(copy, g, sizeof *copy);
    *x = (CUgraphExec)copy;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode node,
                                                       const CUDA_KERNEL_NODE_PARAMS *p)
{
    fake_graph_t *fg = (fake_graph_t *)x;
    uintptr_t i = (uintptr_t)node - 1;
    if (!fg || i >= fg->n)
        return CUDA_ERROR_INVALID_VALUE;
    node_from(&fg->nodes[i], p);
    return CUDA_SUCCESS;
}

/* A graph's nodes in order, on device dev; the first error stops it. */
static CUresult graph_run(const fake_node_t *nodes, unsigned n, int dev)
{
    for (unsigned i = 0; i < n; i++) {
        const fake_node_t *nd = &nodes[i];
        if (!nd->f) {
            STICKY();
            memcpy(xlate(nd->dst), xlate(nd->src), nd->n);
            continue;
        }
        void *args[] = {(void *)nd->params, (void *)(nd->params + 8), (void *)(nd->params + 12)};
        CUresult r = launch_check(nd->f, nd->g, nd->b, args);
        if (r == CUDA_SUCCESS)
            r = launch_run(nd->f, dev, nd->g, nd->b, args);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* The nodes as they are now, enqueued: a later cuGraphExecKernelNodeSetParams
 * changes the next launch only. */
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    tick();
    fake_graph_t *fg = (fake_graph_t *)x;
    if (!fg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    CAPTURE_RULES(0, s, 0);
    CUresult r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    op_t *op = new_op(OP_GRAPH);
    if (fg->n && !(op->owned = malloc(fg->n * sizeof(fake_node_t))))
        abort();
    if (fg->n)
        memcpy(op->owned, fg->nodes, fg->n * sizeof(fake_node_t));
    op->nodes = op->owned, op->nnodes = fg->n;
    return submit_on(s, op);
}

/* What enqueued work does when it runs (under qlock). */
static CUresult exec_op(op_t *op)
{
    switch (op->kind) {
    case OP_KERNEL: return launch_run(op->f, op->q->dev, op->g, op->b, op->pv);
    case OP_GRAPH: return graph_run(op->nodes, op->nnodes, op->q->dev);
    case OP_COPY:
        STICKY();
        memcpy(xlate(op->dst), xlate(op->src), op->n);
        return CUDA_SUCCESS;
    case OP_MEMSET: {
        STICKY();
        uint32_t *p = xlate(op->dst);
        for (size_t i = 0; i < op->n; i++)
            p[i] = op->value;
        return CUDA_SUCCESS;
    }
    case OP_HOSTFN:
        STICKY();
        op->fn(op->data);
        return CUDA_SUCCESS;
    case OP_RECORD: event_ms[op->event] = device_ms; return CUDA_SUCCESS;
    case OP_WAIT: return CUDA_SUCCESS;
    case OP_FREE: return pool_free_now(op->q->dev, (CUdeviceptr)(uintptr_t)op->dst);
    }
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x) { free(x); return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph g) { free(g); return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    if (event_waiting((int)((int *)a - event_objects)) ||
        event_waiting((int)((int *)b - event_objects)))
        return CUDA_ERROR_NOT_READY;
    *ms = (float)(event_ms[(int *)b - event_objects] - event_ms[(int *)a - event_objects]);
    return CUDA_SUCCESS;
}

/* The same answer: what _v2 changed does not arise here. */
static CUresult fake_cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    return cuEventElapsedTime(ms, a, b);
}
FAKE_SINCE(12080, cuEventElapsedTime_v2);

static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;
FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
    if (ctx_depth >= 16)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = current;
    current = c;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *out)
{
    if (ctx_depth <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (out)
        *out = current;
    current = ctx_stack[--ctx_depth];
    return CUDA_SUCCESS;
}

static int stream_index(CUstream s)
{
    int n = __atomic_load_n(&nstreams, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (s == (CUstream)&stream_objects[i])
            return i;
    return -1;
}

static unsigned stream_creates; /* cuStreamCreate calls, for fakecuda_stream_creates */
FAKE_EXPORT unsigned fakecuda_stream_creates(void)
{
    return __atomic_load_n(&stream_creates, __ATOMIC_RELAXED);
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
    tick();
    int dev = ctx_dev(current);
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    __atomic_fetch_add(&stream_creates, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&qlock);
    pthread_mutex_lock(&lock);
    int i = nstreams < MAX_STREAMS ? nstreams : -1;
    if (i >= 0) {
        stream_flags[i] = flags;
        stream_dev[i] = dev < 0 ? 0 : dev;
        created_queues[i] = new_queue_locked(Q_CREATED, stream_dev[i], flags);
        __atomic_store_n(&nstreams, i + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&qlock);
    if (i < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ps = (CUstream)&stream_objects[i];
    return CUDA_SUCCESS;
}

static CUresult stream_ok(CUstream s)
{
    STICKY();
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || stream_index(s) >= 0)
        return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuStreamGetFlags(CUstream s, unsigned int *flags)
{
    int i = stream_index(s);
    if (stream_ok(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    *flags = i >= 0 ? stream_flags[i] : 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID attr,
                                          const CUstreamAttrValue *v)
{
    (void)attr;
    if (!v || stream_index(s) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx)
{
    if (stream_ok(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    int i = stream_index(s);
    *pctx = i >= 0 ? ctx_of_dev(stream_dev[i]) : current;
    return CUDA_SUCCESS;
}

static CUresult capture_wait(CUstream s, int pt);
static void capture_stream_destroyed(CUstream s);
static void pool_settle(void);
/* The stream's work done; a fault it raised is the answer. */
static CUresult stream_sync(CUstream s, int pt)
{
    tick();
    __atomic_fetch_add(&waits, 1, __ATOMIC_RELAXED);
    CUresult r = capture_wait(s, pt);
    if (r != CUDA_SUCCESS) {
        pool_settle();
        return r;
    }
    queue_t *q = queue_for(s, pt);
    if (q)
        drain_queue(q);
    pool_settle(); /* after the stream-ordered frees it waited for */
    if (!q)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s) { return stream_sync(s, 0); }
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { return stream_sync(s, 1); }

/* Not ready while work waits in it (FAKECUDA_DEFER). */
FAKE_EXPORT CUresult cuStreamQuery(CUstream s)
{
    tick();
    CUresult r = capture_wait(s, 0);
    if (r != CUDA_SUCCESS)
        return r;
    queue_t *q = queue_for(s, 0);
    if (!q)
        return CUDA_ERROR_INVALID_CONTEXT;
    return queue_waiting(q) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

/* Its waiting work still runs (when something waits for it). */
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    tick();
    if (stream_index(s) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    capture_stream_destroyed(s);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
    (void)flags;
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    int i = nevents < MAX_EVENTS ? nevents++ : -1;
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pe = (CUevent)&event_objects[i];
    return CUDA_SUCCESS;
}

static bool capture_record(CUevent e, CUstream s);
static bool capture_member(CUstream s);
static CUresult capture_join(CUstream s, CUevent e);
static CUresult capture_event_wait(CUevent e);

FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    tick();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    CAPTURE_RULES(0, s, 0);
    if (capture_record(e, s))
        return CUDA_SUCCESS;
    op_t *op = new_op(OP_RECORD);
    op->event = (int)((int *)e - event_objects);
    return submit_on(s, op);
}

/* Binds to the event's latest record, as it stands now. */
static unsigned event_waits; /* cuStreamWaitEvent calls, for fakecuda_event_waits */
FAKE_EXPORT unsigned fakecuda_event_waits(void)
{
    return __atomic_load_n(&event_waits, __ATOMIC_RELAXED);
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    (void)flags;
    tick();
    __atomic_fetch_add(&event_waits, 1, __ATOMIC_RELAXED);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = stream_ok(s);
    if (r == CUDA_SUCCESS)
        r = capture_join(s, e);
    if (r != CUDA_SUCCESS || capture_member(s))
        return r;
    int i = (int)((int *)e - event_objects);
    op_t *op = new_op(OP_WAIT);
    pthread_mutex_lock(&qlock);
    op->wq = event_queue[i], op->wseq = event_seq[i];
    pthread_mutex_unlock(&qlock);
    if (!op->wq) { /* never recorded: nothing to wait for */
        free(op);
        return CUDA_SUCCESS;
    }
    return submit_on(s, op);
}

/* Runs in the stream's order; during a capture, at once (no graph node). */
FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    tick();
    STICKY();
    CUresult r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    CAPTURE_RULES(0, s, 0);
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    if (capture_member(s)) {
        fn(data);
        return CUDA_SUCCESS;
    }
    op_t *op = new_op(OP_HOSTFN);
    op->fn = fn, op->data = data;
    return submit_on(s, op);
}

/* Not ready while its latest record waits (FAKECUDA_DEFER). */
FAKE_EXPORT CUresult cuEventQuery(CUevent e)
{
    tick();
    STICKY();
    CUresult r = e ? capture_event_wait(e) : CUDA_ERROR_INVALID_HANDLE;
    if (r != CUDA_SUCCESS)
        return r;
    return event_waiting((int)((int *)e - event_objects)) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    tick();
    STICKY();
    CUresult r = e ? capture_event_wait(e) : CUDA_ERROR_INVALID_HANDLE;
    if (r != CUDA_SUCCESS)
        return r;
    drain_event((int)((int *)e - event_objects));
    STICKY();
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    if (dev < 0 || dev >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = current == ctx_of_dev(dev) || __atomic_load_n(&retained[dev], __ATOMIC_RELAXED) > 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (dev < 0 || dev >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    if (__atomic_load_n(&retained[dev], __ATOMIC_RELAXED) > 0)
        __atomic_fetch_sub(&retained[dev], 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

/* A reset ends the device's work (after a fault, none of it does anything)
 * and clears the sticky error; the fake keeps its context objects. */
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    if (dev < 0 || dev >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    drain_dev(dev);
    sticky = 0;
    return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }


/* ---- stream capture ----
 * What the real driver enforces (CUDA programming guide, "Prohibited and
 * unhandled operations", and cuThreadExchangeStreamCaptureMode): a capture
 * records what is enqueued on its streams into a graph instead of running it;
 * a stream joins a capture by waiting on an event recorded in it; a
 * "potentially unsafe" call (synchronous allocation, free, copy or memset,
 * page-locked host allocation, any query or synchronization) from a thread
 * that the capture's mode forbids it to, work on the legacy stream while a
 * blocking stream captures, and waiting for captured work all invalidate the
 * capture: the call fails and cuStreamEndCapture then returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. */
typedef struct fake_capture {
    int active, invalid;
    CUstreamCaptureMode mode;
    pthread_t thread;  /* the thread that began it */
    int origin;        /* index of its created origin stream, or -1: */
    int origin_pt;     /* ... the per-thread default stream of `thread` */
    uint64_t members;  /* created streams in it (bit per index) */
    fake_graph_t *g;
} fake_capture_t;

static fake_capture_t caps[8];          /* guarded by lock */
static int event_cap[MAX_EVENTS];              /* guarded by lock: capture + 1 of a captured record */
static __thread CUstreamCaptureMode thread_mode; /* CU_STREAM_CAPTURE_MODE_GLOBAL is 0 */

static int is_legacy(CUstream s, int pt)
{
    return s == CU_STREAM_LEGACY || (s == NULL && !pt);
}

/* The capture stream s is in, or -1 (under lock). */
static int capture_of_locked(CUstream s, int pt)
{
    int i = stream_index(s);
    int per_thread = s == CU_STREAM_PER_THREAD || (s == NULL && pt);
    for (int c = 0; c < 8; c++) {
        if (!caps[c].active)
            continue;
        if (i >= 0 && (caps[c].members >> i & 1))
            return c;
        if (per_thread && caps[c].origin_pt && pthread_equal(caps[c].thread, pthread_self()))
            return c;
    }
    return -1;
}

static CUresult capture_unsafe(void)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (int c = 0; c < 8; c++) {
        if (!caps[c].active || thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
            continue;
        int mine = pthread_equal(caps[c].thread, pthread_self());
        if ((mine && caps[c].mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && caps[c].mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            caps[c].invalid = 1;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Work on the legacy stream waits for every blocking stream: a capturing one
 * cannot be waited for. */
static CUresult capture_legacy(CUstream s, int pt)
{
    if (s == GA_NO_LEGACY || !is_legacy(s, pt))
        return CUDA_SUCCESS;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (int c = 0; c < 8; c++) {
        if (!caps[c].active)
            continue;
        int blocking = caps[c].origin_pt;
        for (int i = 0; i < MAX_STREAMS; i++)
            if ((caps[c].members >> i & 1) && !(stream_flags[i] & CU_STREAM_NON_BLOCKING))
                blocking = 1;
        if (blocking) {
            caps[c].invalid = 1;
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static fake_node_t *capture_node_locked(int c)
{
    fake_graph_t *g = caps[c].g;
    return g->n < 4096 ? &g->nodes[g->n++] : NULL;
}

static int capture_copy(CUstream s, int pt, void *dst, const void *src, size_t n)
{
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, pt);
    fake_node_t *nd = c >= 0 ? capture_node_locked(c) : NULL;
    if (nd)
        memset(nd, 0, sizeof *nd), nd->dst = dst, nd->src = src, nd->n = n;
    pthread_mutex_unlock(&lock);
    return c >= 0;
}

static int capture_launch(CUstream s, int pt, CUfunction f, const unsigned g[3],
                          const unsigned b[3], void **params)
{
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, pt);
    fake_node_t *nd = c >= 0 ? capture_node_locked(c) : NULL;
    if (nd) {
        memset(nd, 0, sizeof *nd);
        nd->f = f;
        memcpy(nd->g, g, sizeof nd->g);
        memcpy(nd->b, b, sizeof nd->b);
        memcpy(nd->params, params[0], 8);
        memcpy(nd->params + 8, params[1], 4);
        memcpy(nd->params + 12, params[2], 4);
    }
    pthread_mutex_unlock(&lock);
    return c >= 0;
}

/* True when the record joins a capture (and so is not enqueued). */
static bool capture_record(CUevent e, CUstream s)
{
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, 0);
    event_cap[(int *)e - event_objects] = c + 1;
    pthread_mutex_unlock(&lock);
    return c >= 0;
}

/* Is s (named by a legacy entry point) in an open capture? */
static bool capture_member(CUstream s)
{
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, 0);
    pthread_mutex_unlock(&lock);
    return c >= 0;
}

static CUresult capture_join(CUstream s, CUevent e)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    int c = event_cap[(int *)e - event_objects] - 1;
    if (c >= 0 && caps[c].active) {
        int i = stream_index(s);
        if (i >= 0)
            caps[c].members |= (uint64_t)1 << i;
        else if (!(caps[c].origin_pt && s == CU_STREAM_PER_THREAD))
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, caps[c].invalid = 1;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Synchronizing with or querying captured work is illegal; any other wait is
 * merely unsafe. */
static CUresult capture_wait(CUstream s, int pt)
{
    CUresult r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, pt);
    if (c >= 0)
        caps[c].invalid = 1;
    pthread_mutex_unlock(&lock);
    if (c >= 0)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CAPTURE_RULES(1, s, pt);
    return CUDA_SUCCESS;
}

static CUresult capture_event_wait(CUevent e)
{
    pthread_mutex_lock(&lock);
    int c = event_cap[(int *)e - event_objects] - 1;
    if (c >= 0 && caps[c].active)
        caps[c].invalid = 1;
    else
        c = -1;
    pthread_mutex_unlock(&lock);
    if (c >= 0)
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    return capture_unsafe();
}

static void capture_stream_destroyed(CUstream s)
{
    int i = stream_index(s);
    pthread_mutex_lock(&lock);
    for (int c = 0; c < 8; c++)
        if (caps[c].active && (caps[c].members >> i & 1)) {
            caps[c].members &= ~((uint64_t)1 << i);
            if (caps[c].origin == i)
                caps[c].invalid = 1;
        }
    pthread_mutex_unlock(&lock);
}

static CUresult begin_capture(CUstream s, int pt, CUstreamCaptureMode mode)
{
    STICKY();
    if (is_legacy(s, pt))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    int i = stream_index(s), per_thread = s == CU_STREAM_PER_THREAD || s == NULL;
    if (i < 0 && !per_thread)
        return CUDA_ERROR_INVALID_HANDLE;
    if (mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    fake_graph_t *g = calloc(1, sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
    pthread_mutex_lock(&lock);
    if (capture_of_locked(s, pt) < 0) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        for (int c = 0; c < 8; c++)
            if (!caps[c].active) {
                caps[c] = (fake_capture_t){1, 0, mode, pthread_self(), i, per_thread,
                                           i >= 0 ? (uint64_t)1 << i : 0, g};
                g = NULL;
                r = CUDA_SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    free(g);
    return r;
}

FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    return begin_capture(s, 0, mode);
}

FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    return begin_capture(s, 1, mode);
}

static CUresult end_capture(CUstream s, int pt, CUgraph *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, pt), i = stream_index(s);
    CUresult r = CUDA_SUCCESS;
    if (c < 0)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (caps[c].origin != i || (i < 0 && !caps[c].origin_pt))
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    else if (caps[c].mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
             !pthread_equal(caps[c].thread, pthread_self()))
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (r == CUDA_SUCCESS) {
        if (caps[c].invalid) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            free(caps[c].g);
        } else {
            *out = (CUgraph)caps[c].g;
        }
        for (int e = 0; e < MAX_EVENTS; e++)
            if (event_cap[e] == c + 1)
                event_cap[e] = 0;
        memset(&caps[c], 0, sizeof caps[c]);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

FAKE_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return end_capture(s, 0, g); }
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return end_capture(s, 1, g); }

static CUresult is_capturing(CUstream s, int pt, CUstreamCaptureStatus *st)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    int c = capture_of_locked(s, pt);
    *st = c < 0 ? CU_STREAM_CAPTURE_STATUS_NONE
                : caps[c].invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    return is_capturing(s, 0, st);
}

FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    return is_capturing(s, 1, st);
}

FAKE_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static void pool_note_locked(int dev, CUdeviceptr p, size_t n, int add);

/* Stream-ordered allocation: in a capture, a memory node (the fake maps it at
 * once and keeps it); otherwise an allocation as any other, at once (memory
 * there earlier than the stream needs it is harmless), on the stream's device. */
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    tick();
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (!dptr || stream_ok(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    CAPTURE_RULES(0, s, 0);
    int dev = queue_for(s, 0)->dev;
    CUresult r = device_alloc(dptr, n ? n : 1, dev);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        pool_note_locked(dev, *dptr, n ? n : 1, 1);
        pthread_mutex_unlock(&lock);
    }
    return r;
}

/* The memory goes back when the stream gets to the free. */
static CUresult pool_free_now(int dev, CUdeviceptr dptr)
{
    pthread_mutex_lock(&lock);
    pool_note_locked(dev, dptr, 0, 0);
    pthread_mutex_unlock(&lock);
    return device_free(dptr);
}

FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    tick();
    STICKY();
    if (stream_ok(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    CAPTURE_RULES(0, s, 0);
    if (capture_member(s) || !dptr) /* a captured free happens when the graph runs: never, here */
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    bool live = false;
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0] && !live; i++)
        live = allocs[i] == (void *)(uintptr_t)dptr;
    pthread_mutex_unlock(&lock);
    if (!live)
        return CUDA_ERROR_INVALID_VALUE;
    op_t *op = new_op(OP_FREE);
    op->dst = (void *)(uintptr_t)dptr;
    return submit_on(s, op);
}

/* Each device's one memory pool, as far as tests look at it: stream-ordered
 * allocations count as used; what they freed stays reserved until a
 * synchronization releases all but the release threshold (0 by default, as
 * the driver's). The memory itself is the fake's ordinary allocations. */
static struct fake_pool {
    cuuint64_t threshold, reserved, used;
    CUdeviceptr ptr[1024];
    size_t size[1024];
} fake_pools[MAX_DEV]; /* under lock */
static unsigned pool_grows; /* allocations that grew a pool's reserve: under lock */

/* The device of a pool handle, or -1. */
static int pool_dev(CUmemoryPool pool)
{
    for (int d = 0; d < ndevices(); d++)
        if (pool == (CUmemoryPool)&fake_pools[d])
            return d;
    return -1;
}

static void pool_note_locked(int dev, CUdeviceptr p, size_t n, int add)
{
    struct fake_pool *fp = &fake_pools[dev];
    for (int i = 0; i < 1024; i++) {
        if (add && !fp->ptr[i]) {
            fp->ptr[i] = p, fp->size[i] = n;
            fp->used += n;
            if (fp->reserved < fp->used)
                fp->reserved = fp->used, pool_grows++;
            return;
        }
        if (!add && p && fp->ptr[i] == p) {
            fp->used -= fp->size[i];
            fp->ptr[i] = 0;
            return;
        }
    }
}

static size_t pool_kept_locked(int dev)
{
    return (size_t)(fake_pools[dev].reserved - fake_pools[dev].used);
}

static void pool_settle(void)
{
    pthread_mutex_lock(&lock);
    for (int d = 0; d < MAX_DEV; d++) {
        struct fake_pool *fp = &fake_pools[d];
        cuuint64_t keep = fp->reserved < fp->threshold ? fp->reserved : fp->threshold;
        fp->reserved = keep > fp->used ? keep : fp->used;
    }
    pthread_mutex_unlock(&lock);
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = ndevices();
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    if (!pool || dev < 0 || dev >= ndevices())
        return CUDA_ERROR_INVALID_VALUE;
    *pool = (CUmemoryPool)&fake_pools[dev];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                           void *value)
{
    int d = pool_dev(pool);
    if (d < 0 || !value || attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    fake_pools[d].threshold = *(cuuint64_t *)value;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                           void *value)
{
    int d = pool_dev(pool);
    if (d < 0 || !value)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_pool *fp = &fake_pools[d];
    pthread_mutex_lock(&lock);
    cuuint64_t v = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD  ? fp->threshold
                   : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? fp->reserved
                   : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ? fp->used
                                                               : (cuuint64_t)-1;
    pthread_mutex_unlock(&lock);
    if (v == (cuuint64_t)-1)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value = v;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    int d = pool_dev(pool);
    if (d < 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_pool *fp = &fake_pools[d];
    pthread_mutex_lock(&lock);
    cuuint64_t k = fp->reserved < keep ? fp->reserved : keep;
    fp->reserved = k > fp->used ? k : fp->used;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                             CUstream s)
{
    int d = pool_dev(pool);
    if (d < 0 || d != ctx_dev(current))
        return CUDA_ERROR_INVALID_VALUE;
    return cuMemAllocAsync(dptr, n, s);
}

/* ---- peer access ---------------------------------------------------------- */

FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    if (!can)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices() || peer < 0 || peer >= ndevices())
        return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}

/* The current context's kernels may touch peer's memory from now on. */
FAKE_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    int d = ctx_dev(current), p = ctx_dev(peer);
    if (d < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (p < 0 || p == d)
        return p < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_DEVICE;
    if (__atomic_exchange_n(&peer_enabled[d][p], true, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    int d = ctx_dev(current), p = ctx_dev(peer);
    if (d < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (p < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!__atomic_exchange_n(&peer_enabled[d][p], false, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    return CUDA_SUCCESS;
}

/* Page-locked host memory: plain malloc, counted (fakecuda_host_allocs, for
 * tests that check a cache spared the driver its calls). */
/* Stream-ordered allocations that found too little freed memory kept in
 * their pool and mapped more (a synchronization had given it back). */
FAKE_EXPORT unsigned fakecuda_pool_grows(void)
{
    pthread_mutex_lock(&lock);
    unsigned n = pool_grows;
    pthread_mutex_unlock(&lock);
    return n;
}

FAKE_EXPORT unsigned fakecuda_host_allocs(void)
{
    return __atomic_load_n(&host_allocs, __ATOMIC_RELAXED);
}

FAKE_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
    return cuMemHostAlloc(pp, n, 0);
}

/* cuGetProcAddress: what cudart does. Base name plus version picks the ELF
 * variant (one row per ABI, with the release that introduced it); the
 * per-thread flag picks _ptsz/_ptds where one exists. As the real driver:
 *  - a cudaVersion above the driver's own: CUDA_ERROR_INVALID_VALUE;
 *  - a name this driver release does not have: CUDA_ERROR_NOT_FOUND, *pfn NULL,
 *    status CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
 *  - a name whose every ABI is newer than cudaVersion: CUDA_ERROR_NOT_FOUND,
 *    *pfn NULL, status CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
 * The library relays whatever the driver answers; the tests compare. */
typedef struct {
    const char *base;
    int since;
    void *legacy, *per_thread;
} proc_t;

static const proc_t procs[] = {
    {"cuInit", 2000, (void *)cuInit, NULL},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion, NULL},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet, NULL},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain, NULL},
    {"cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent, NULL},
    {"cuCtxGetCurrent", 4000, (void *)cuCtxGetCurrent, NULL},
    {"cuCtxSynchronize", 2000, (void *)cuCtxSynchronize, NULL},
    {"cuCtxSynchronize", 13000, (void *)fake_cuCtxSynchronize_v2, NULL},
    {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2, NULL},
    {"cuMemFree", 3020, (void *)cuMemFree_v2, NULL},
    {"cuMemGetInfo", 3020, (void *)cuMemGetInfo_v2, NULL},
    {"cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2, (void *)cuMemcpyHtoD_v2_ptds},
    {"cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2, (void *)cuMemcpyDtoH_v2_ptds},
    {"cuMemcpyDtoHAsync", 3020, (void *)cuMemcpyDtoHAsync_v2, (void *)cuMemcpyDtoHAsync_v2_ptsz},
    {"cuMemHostAlloc", 2020, (void *)cuMemHostAlloc, NULL},
    {"cuMemHostGetFlags", 2030, (void *)cuMemHostGetFlags, NULL},
    {"cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2, NULL},
    {"cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2, NULL},
    {"cuMemFreeHost", 2000, (void *)cuMemFreeHost, NULL},
    {"cuMemAllocAsync", 11020, (void *)cuMemAllocAsync, NULL},
    {"cuMemFreeAsync", 11020, (void *)cuMemFreeAsync, NULL},
    {"cuDeviceGetDefaultMemPool", 11020, (void *)cuDeviceGetDefaultMemPool, NULL},
    {"cuMemPoolSetAttribute", 11020, (void *)cuMemPoolSetAttribute, NULL},
    {"cuMemPoolGetAttribute", 11020, (void *)cuMemPoolGetAttribute, NULL},
    {"cuMemcpyHtoDAsync", 3020, (void *)cuMemcpyHtoDAsync_v2, (void *)cuMemcpyHtoDAsync_v2_ptsz},
    {"cuMemGetAddressRange", 3020, (void *)cuMemGetAddressRange_v2, NULL},
    {"cuPointerGetAttributes", 7000, (void *)cuPointerGetAttributes, NULL},
    {"cuPointerSetAttribute", 6000, (void *)cuPointerSetAttribute, NULL},
    {"cuMemGetHandleForAddressRange", 11070, (void *)cuMemGetHandleForAddressRange, NULL},
    {"cuStreamGetCtx", 9020, (void *)cuStreamGetCtx, NULL},
    {"cuEventQuery", 2000, (void *)cuEventQuery, NULL},
    {"cuEventDestroy", 4000, (void *)cuEventDestroy_v2, NULL},
    {"cuMemsetD32", 3020, (void *)cuMemsetD32_v2, NULL},
    {"cuMemcpyDtoD", 3020, (void *)cuMemcpyDtoD_v2, NULL},
    {"cuMemcpy", 4000, (void *)cuMemcpy, (void *)cuMemcpy_ptds},
    {"cuModuleLoadData", 2000, (void *)cuModuleLoadData, NULL},
    {"cuModuleLoadDataEx", 2010, (void *)cuModuleLoadDataEx, NULL},
    {"cuModuleLoadFatBinary", 2000, (void *)cuModuleLoadFatBinary, NULL},
    {"cuModuleGetFunction", 2000, (void *)cuModuleGetFunction, NULL},
    {"cuModuleUnload", 2000, (void *)cuModuleUnload, NULL},
    {"cuLaunchKernel", 4000, (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
    {"cuLaunchKernelEx", 11080, (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz},
    {"cuStreamCreate", 2000, (void *)cuStreamCreate, NULL},
    {"cuStreamSetAttribute", 11000, (void *)cuStreamSetAttribute, NULL},
    {"cuLaunchHostFunc", 10000, (void *)cuLaunchHostFunc, NULL},
    {"cuStreamSynchronize", 2000, (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz},
    {"cuStreamDestroy", 4000, (void *)cuStreamDestroy_v2, NULL},
    {"cuEventCreate", 2000, (void *)cuEventCreate, NULL},
    {"cuEventRecord", 2000, (void *)cuEventRecord, NULL},
    {"cuEventSynchronize", 2000, (void *)cuEventSynchronize, NULL},
    {"cuEventElapsedTime", 2000, (void *)cuEventElapsedTime, NULL},
    {"cuEventElapsedTime", 12080, (void *)fake_cuEventElapsedTime_v2, NULL},
    {"cuFuncGetName", 12030, (void *)fake_cuFuncGetName, NULL},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount, NULL},
    {"cuDeviceCanAccessPeer", 4000, (void *)cuDeviceCanAccessPeer, NULL},
    {"cuCtxEnablePeerAccess", 4000, (void *)cuCtxEnablePeerAccess, NULL},
    {"cuCtxDisablePeerAccess", 4000, (void *)cuCtxDisablePeerAccess, NULL},
    {"cuMemcpyPeer", 4000, (void *)cuMemcpyPeer, NULL},
    {"cuMemcpyPeerAsync", 4000, (void *)cuMemcpyPeerAsync, NULL},
    {"cuStreamQuery", 2000, (void *)cuStreamQuery, NULL},
    {"cuStreamWaitEvent", 3020, (void *)cuStreamWaitEvent, NULL},
    {"cuCtxPushCurrent", 4000, (void *)cuCtxPushCurrent_v2, NULL},
    {"cuCtxPopCurrent", 4000, (void *)cuCtxPopCurrent_v2, NULL},
};

/* The newest row for `symbol` that this driver has and `version` asks for;
 * *known tells whether this driver has the name at all. */
static const proc_t *find_proc(const char *symbol, int version, bool *known)
{
    const proc_t *best = NULL;
    *known = false;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const proc_t *p = &procs[i];
        if (strcmp(p->base, symbol) || p->since > driver_version())
            continue;
        *known = true;
        if (p->since <= version && (!best || p->since > best->since))
            best = p;
    }
    return best;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || version > driver_version())
        return CUDA_ERROR_INVALID_VALUE;
    bool known;
    const proc_t *p = find_proc(symbol, version, &known);
    *pfn = NULL;
    if (!p) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && p->per_thread;
    *pfn = pt ? p->per_thread : p->legacy;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
