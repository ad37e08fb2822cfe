/* lazy_sync.c - synchronizations nothing on the host could observe return at
 * once; the wait is paid at the next call that could (GPUACCEL_LAZY_SYNC).
 *
 * Why: prover code synchronizes after nearly every kernel (stwo-gpu's
 * bit-reverse, FFT and Merkle-layer launches each end in
 * cudaDeviceSynchronize), so the CPU waits for the GPU and the GPU for the
 * next launch, and every repeated launch sequence is cut short. When all that
 * was enqueued since the last real wait is kernels, device-to-device copies
 * and memsets, and device code cannot reach host memory, the host cannot tell
 * whether the wait happened until it calls the driver again in a way that
 * observes the device: reads device memory, queries or waits for an event or
 * stream, launches a host function, uses IPC, changes or destroys a context,
 * begins a capture, or exits. Those calls (the gate, features/feature.h)
 * first wait for what is owed, then go on; an error a deferred kernel raised
 * is what that call returns, as the wait would have.
 *
 * When a synchronization is deferred (all must hold):
 *  - the process never made memory both sides reach (page-locked, mapped,
 *    registered or managed host memory, IPC or exported memory, external
 *    memory or semaphores, graphics resources, virtual-memory allocations,
 *    which may live on the host): `tainted`, for good, from the first such call;
 *  - no loaded code can fail on purpose: a kernel with device-side assert()
 *    reports through the synchronization (cuda-samples' simpleAssert checks
 *    for it), so an image that names __assertfail, and code loaded where the
 *    library cannot read it (from a file, cuModuleLoadFatBinary, or a
 *    compressed fatbin, which hides the name), means waiting for good;
 *  - the device cannot access pageable host memory
 *    (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: no HMM, no ATS);
 *  - nothing whose effect the host could see is pending in the context: no
 *    call of the "dirty" class (host functions, the program's graph
 *    launches, stream memory operations, anything not known) since the
 *    context's last real wait (`dirty_seq` against the context's `synced`);
 *  - no stream captures and none is about to, and no sticky error was seen;
 *  - no CUDA tool is attached (compute-sanitizer, Nsight Systems or Compute:
 *    their injection variables): a tool watches the program's waits where it
 *    made them. Under compute-sanitizer's synccheck (CUDA 13.0, H200) a
 *    deferred wait paid with cuCtxSynchronize let the reads that followed
 *    see a non-blocking stream's kernels unfinished, though the same
 *    cuCtxSynchronize in a program run alone under the tool waits for them
 *    (bench/probes/syncprobe.cu): the tool's own handling of launches and
 *    waits is not ours to second-guess, so under a tool every wait is made.
 * A deferred synchronization owes a wait on its whole context: the settle
 * waits for the context (cuCtxSynchronize), which may wait for work the
 * program issued after the deferred call, never for less.
 *
 * Owns: the contexts' records and the capture-opening count (under `lock`;
 * the settle holds it across its wait, so that a call that must observe the
 * device cannot pass a wait still in progress); the entry classes (written at
 * init, read-only after); counters (atomics).
 * Must never: defer while anything captures or a capture opens (a settle
 * during a capture would invalidate it). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "features/feature.h"
#include "tracking/capture.h"
#include "tracking/device.h"
#include "tracking/streams.h"

enum { MAX_CTX = 16 };

/* What a call is to a deferred synchronization. */
typedef enum {
    C_OBSERVE = 0, /* may observe the device: settle first (the default for reads) */
    C_SAFE,        /* stays on the device, or observes nothing of it: no settle */
    C_DIRTY,       /* may leave work the host can see (the default for writes) */
    C_TAINT,       /* makes memory both sides reach: never defer again */
    C_CAPTURE,     /* begins a capture: settle, and no deferral until it began */
} cls_t;

typedef struct lctx {
    CUcontext ctx;
    bool owed;       /* a synchronization of it was deferred */
    uint64_t synced; /* dirty_seq as of its last real wait */
} lctx_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static lctx_t ctxs[MAX_CTX]; /* under lock */
static unsigned n_ctx;       /* under lock */
static unsigned opening;     /* under lock: capture begins in flight */
static _Atomic unsigned n_owed;   /* contexts owed: the gate reads it without lock */
static _Atomic bool tainted;
static _Atomic(const char *) taint_why; /* why it was set: for the report */
static _Atomic uint64_t dirty_seq; /* dirty-class calls begun */
static _Atomic int dirty_in_flight; /* dirty-class calls not yet returned */
static unsigned char cls[GA_N_ENTRIES]; /* by entry id: written at init */
static _Atomic uint64_t deferred, waited, settles;
/* pageable-memory access per device ordinal: 0 unknown, 1 no, 2 yes */
static _Atomic unsigned char pageable[64];

/* A ctx sync this thread let through, to learn its context clean on success. */
static GA_TLS struct {
    bool armed, clean;
    CUcontext ctx;
    uint64_t seq;
} pending;

/* ---- the entry classes ---- */

/* Names and the families they stand for: an entry matches a name when it is
 * the name or a variant of it (_v2, _ptsz, _ptds...), or, for a name ending in
 * '*', any entry it begins. Later tables win over earlier ones. */
static const char *const safe_names[] = {
    "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuLaunch", "cuLaunchGrid",
    "cuLaunchGridAsync", "cuMemsetD*", "cuMemcpyDtoD", "cuMemcpyDtoDAsync", "cuMemcpyPeer",
    "cuMemcpyPeerAsync", "cuMemcpyAtoA", "cuMemcpyDtoA", "cuMemcpyAtoD", "cuEventRecord",
    "cuEventRecordWithFlags", "cuStreamWaitEvent", "cuEventCreate", "cuEventDestroy",
    "cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
    "cuMemGetAddressRange",
    "cuDeviceGet*", "cuDeviceSetMemPool", "cuDeviceCanAccessPeer", "cuDeviceTotalMem",
    "cuDeviceComputeCapability", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxGetState",
    "cuStreamCreate", "cuStreamCreateWithPriority", "cuStreamGet*",
    "cuStreamIsCapturing", "cuStreamSynchronize", "cuCtxSynchronize", "cuCtxGet*", "cuInit",
    "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuGetProcAddress",
    "cuGetExportTable", "cuFunc*", "cuKernel*", "cuLibraryLoadData", "cuLibraryLoadFromFile",
    "cuLibraryGetKernel", "cuLibraryGetModule", "cuLibraryGetGlobal", "cuLibraryGetKernelCount",
    "cuLibraryEnumerateKernels", "cuLibraryGetUnifiedFunction", "cuModuleLoad*",
    "cuModuleGetFunction", "cuModuleGetGlobal", "cuModuleGetLoadingMode",
    "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuOccupancy*",
    "cuPointerGetAttribute", "cuPointerGetAttributes", "cuMemGetAllocationGranularity",
    "cuMemAddressReserve", "cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuMemRelease",
    "cuMemSetAccess", "cuMemGetAccess", "cuMemGetAllocationPropertiesFromHandle",
    "cuMemRetainAllocationHandle", "cuCtxRecordEvent", "cuCtxWaitEvent", "cuGraph*", "cuStreamEndCapture", "cuLinkCreate",
    "cuLinkAddData", "cuLinkAddFile", "cuLinkComplete", "cuLinkDestroy",
};
/* cuMemGetInfo and the memory pools' calls (cuMemPool*) are left to the
 * defaults, observing (a read) or dirty (a write): a synchronization gives a
 * stream-ordered pool's reserve back down to its release threshold, so free
 * memory and a pool's reserved bytes are what a deferred wait would change.
 * Copies between host and device memory: in a process with no page-locked
 * memory the host side is pageable, and such a copy is done with the host's
 * buffer by the time it returns (the CUDA runtime API's "API synchronization
 * behavior"): it observes the device, and leaves nothing the host could see. */
/* cuStreamDestroy observes nothing, but a stream the driver destroys with work
 * of its own still queued costs the tracker an event recorded on it and a wait
 * of the legacy stream (tracking/streams.c ga_stream_outlive, so that the
 * pool's next fence covers that work; a stream the streams feature keeps costs
 * neither): after a deferred synchronization of that
 * stream, the usual pattern (a stream per call: work, synchronize, destroy,
 * ICICLE's and bench_msm_loop's), that pair cost more than the wait deferred
 * (on an H200 every feature ran bench_msm_loop 4.5 us a call slower than the
 * defaults). The owed wait is paid first instead: the stream is then idle.
 * cuMemFreeAsync: a synchronization gives a pool's freed memory back down to
 * its release threshold (0 for the driver's default pool). A program that
 * synchronizes, then frees its scratch (ICICLE v2's MSM, bench_msm_loop)
 * keeps that memory natively: the wait came before the free, and the next
 * cuMemAllocAsync on the stream reuses it. Paid after the free, the deferred
 * wait gave it back and every call mapped it again (with the driver's pool,
 * lazy_sync alone made bench_msm_loop as slow as native on an H200: 169.6 us
 * a call against streams alone's 42.9; on the fake driver, lazy_prog
 * percall-pool's scratch was mapped anew at each of 20 calls against once).
 * The owed wait is paid before the free. */
static const char *const observe_names[] = {
    "cuMemcpy", "cuMemcpyAsync", "cuMemcpyHtoD", "cuMemcpyHtoDAsync", "cuMemcpyHtoA",
    "cuMemcpyHtoAAsync", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy3D", "cuMemcpy3DPeer",
    "cuStreamDestroy", "cuMemFreeAsync",
};
static const char *const dirty_names[] = {
    "cuLaunchHostFunc", "cuStreamAddCallback", "cuGraphLaunch", "cuStreamWaitValue*",
    "cuStreamWriteValue*", "cuStreamBatchMemOp", "cuMemcpy2DAsync", "cuMemcpy3DAsync",
    "cuMemcpy3DPeerAsync", "cuMemcpyBatchAsync", "cuMemcpy3DBatchAsync",
};
static const char *const taint_names[] = {
    "cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister", "cuMemAllocManaged",
    "cuLibraryGetManaged", "cuIpcGetMemHandle", "cuIpcOpenMemHandle", "cuIpcGetEventHandle",
    "cuIpcOpenEventHandle", "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle",
    "cuMemPoolExportToShareableHandle", "cuMemPoolImportFromShareableHandle",
    "cuMemPoolExportPointer", "cuMemPoolImportPointer", "cuImportExternal*",
    "cuSignalExternalSemaphoresAsync", "cuWaitExternalSemaphoresAsync", "cuGraphics*",
    "cuMemCreate", "cuMemGetHandleForAddressRange",
};
static const char *const capture_names[] = {"cuStreamBeginCapture*"};
/* Code loaded where the library cannot look into it. */
static const char *const unseen_code_names[] = {
    "cuModuleLoad", "cuModuleLoadFatBinary", "cuLibraryLoadFromFile",
};

static bool name_matches(const char *entry, const char *name)
{
    size_t n = strlen(name);
    if (n && name[n - 1] == '*')
        return !strncmp(entry, name, n - 1);
    return !strncmp(entry, name, n) && (entry[n] == '\0' || entry[n] == '_');
}

static void classify(const char *const *names, size_t count, cls_t c)
{
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        for (size_t k = 0; k < count; k++)
            if (name_matches(ga_entries[id].name, names[k]))
                cls[id] = (unsigned char)c;
}

static void classify_all(void)
{
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        cls[id] = ga_entries[id].writes ? C_DIRTY : C_OBSERVE;
    classify(safe_names, GA_ARRAY_LEN(safe_names), C_SAFE);
    classify(observe_names, GA_ARRAY_LEN(observe_names), C_OBSERVE);
    classify(dirty_names, GA_ARRAY_LEN(dirty_names), C_DIRTY);
    classify(taint_names, GA_ARRAY_LEN(taint_names), C_TAINT);
    classify(capture_names, GA_ARRAY_LEN(capture_names), C_CAPTURE);
    classify(unseen_code_names, GA_ARRAY_LEN(unseen_code_names), C_TAINT);
}

/* ---- loaded code ---- */

enum { SCAN_MAX = 256u << 20 }; /* bytes of code read in all: past it, code counts as unseen */
static _Atomic uint64_t scanned;

/* The bytes of a CUDA image as the driver would read them: cudart's fatbin
 * wrapper (magic 0x466243b1) points at the fatbin; a fatbin (0xBA55ED50) is
 * its header and payload; an ELF cubin ends with its section headers; PTX is
 * text. 0 when it cannot be told. */
static size_t image_span(const void *image, const unsigned char **start)
{
    const unsigned char *p = image;
    uint32_t magic;
    memcpy(&magic, p, 4);
    if (magic == 0x466243b1u) {
        const void *data;
        memcpy(&data, p + 8, sizeof data);
        if (!data)
            return 0;
        p = data;
        memcpy(&magic, p, 4);
    }
    *start = p;
    if (magic == 0xBA55ED50u) {
        uint16_t head;
        uint64_t body;
        memcpy(&head, p + 6, 2), memcpy(&body, p + 8, 8);
        return body < SCAN_MAX ? head + (size_t)body : 0;
    }
    if (magic == 0x464c457fu && p[4] == 2) { /* ELF64 */
        uint64_t shoff;
        uint16_t shentsize, shnum;
        memcpy(&shoff, p + 0x28, 8), memcpy(&shentsize, p + 0x3a, 2), memcpy(&shnum, p + 0x3c, 2);
        return shoff < SCAN_MAX ? (size_t)shoff + (size_t)shentsize * shnum : 0;
    }
    return strnlen((const char *)p, SCAN_MAX);
}

/* Can the code of a fatbin (header at p, n bytes) be read? Each entry: u16
 * kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size, ...,
 * u64 flags at 0x28; flag 0x8000 marks a compressed (zstd) payload. CUDA
 * 13.0's nvcc compresses the PTX it embeds but not the cubins (and with
 * -Xfatbin -compress-all, both): one plain entry shows what its source
 * calls, and the others come from the same source. */
static bool fatbin_readable(const unsigned char *p, size_t n)
{
    uint16_t head;
    bool plain = false;
    memcpy(&head, p + 6, 2);
    for (size_t pos = head; pos + 0x30 <= n;) {
        uint16_t kind;
        uint32_t eh;
        uint64_t size, flags;
        memcpy(&kind, p + pos, 2), memcpy(&eh, p + pos + 4, 4), memcpy(&size, p + pos + 8, 8);
        memcpy(&flags, p + pos + 0x28, 8);
        if (!eh || size > n)
            return false; /* not what it should be */
        plain |= (kind == 1 || kind == 2) && !(flags & 0x8000);
        pos += eh + (size_t)size;
    }
    return plain;
}

/* Never defer again, for `why` (a literal); true for the call that set it. */
static bool taint(const char *why)
{
    if (atomic_exchange(&tainted, true))
        return false;
    atomic_store(&taint_why, why);
    return true;
}

/* Code that may fail on purpose (device assert) or that cannot be read. */
static void ls_code_loaded(const ga_rt_t *rt, const void *owner, bool library, const void *image)
{
    (void)rt, (void)owner, (void)library;
    static const char mark[] = "__assertfail";
    if (!image || atomic_load(&tainted))
        return;
    const unsigned char *p = NULL;
    size_t n = image_span(image, &p);
    const char *why = NULL;
    uint32_t magic = 0;
    if (n)
        memcpy(&magic, p, 4);
    if (!n || atomic_fetch_add(&scanned, n) + n > SCAN_MAX ||
        (magic == 0xBA55ED50u && !fatbin_readable(p, n)))
        why = "code it cannot read";
    else if (memmem(p, n, mark, sizeof mark - 1))
        why = "a kernel with device-side assertions";
    if (why && taint(why))
        ga_log(GA_LOG_INFO, "lazy_sync: the program loaded %s: every synchronization waits", why);
}

/* ---- contexts ---- */

static lctx_t *find_locked(CUcontext ctx, bool add)
{
    for (unsigned i = 0; i < n_ctx; i++)
        if (ctxs[i].ctx == ctx)
            return &ctxs[i];
    if (!add || n_ctx == MAX_CTX)
        return NULL;
    ctxs[n_ctx] = (lctx_t){ctx, false, 0};
    return &ctxs[n_ctx++];
}

/* A real wait on c succeeded: nothing is owed there, and if no dirty call was
 * in flight when it began (seq read then), the context is clean as of seq. */
static void waited_locked(lctx_t *c, uint64_t seq, bool clean)
{
    c->owed = false;
    if (clean && seq > c->synced)
        c->synced = seq;
}

static void count_owed_locked(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < n_ctx; i++)
        n += ctxs[i].owed;
    atomic_store(&n_owed, n);
}

/* Can device code of the current context reach pageable host memory? */
static bool device_reaches_pageable(const ga_rt_t *rt)
{
    int dev = ga_current_device(rt);
    if (dev < 0 || dev >= 64)
        return true;
    unsigned char v = atomic_load_explicit(&pageable[dev], memory_order_relaxed);
    if (!v) {
        int a = ga_device_attr(rt, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
        v = a == 0 ? 1 : 2; /* unknown counts as yes */
        atomic_store_explicit(&pageable[dev], v, memory_order_relaxed);
        if (v == 2)
            ga_log(GA_LOG_INFO, "lazy_sync: device %d reaches pageable host memory: "
                                "every synchronization waits", (int)dev);
    }
    return v == 2;
}

/* The context a synchronization of h (as the program named it) waits in: the
 * current one; NULL for a stream of another context (waited for as asked). */
static CUcontext sync_ctx(const ga_rt_t *rt, CUstream h)
{
    CUcontext cur = ga_current_ctx(rt);
    if (!cur || h == GA_NOSTREAM || !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
        return cur;
    CUcontext sc = NULL;
    __typeof__(&cuStreamGetCtx) get = GA_REAL(rt, GA_ID_cuStreamGetCtx, cuStreamGetCtx);
    return get && get(h, &sc) == CUDA_SUCCESS && sc == cur ? cur : NULL;
}

/* ---- the served synchronization ---- */

static bool may_defer(void)
{
    return !atomic_load(&tainted) && !ga_serving_off() && !ga_capture_active();
}

static bool ls_sync(const ga_rt_t *rt, CUstream h, bool pt, CUresult *r)
{
    (void)pt;
    pending.armed = false;
    CUcontext ctx = may_defer() ? sync_ctx(rt, h) : NULL;
    if (!ctx || device_reaches_pageable(rt)) {
        atomic_fetch_add(&waited, 1);
        return false;
    }
    uint64_t seq = atomic_load(&dirty_seq);
    bool defer = false;
    pthread_mutex_lock(&lock);
    lctx_t *c = find_locked(ctx, true);
    if (c && c->synced == seq && !opening && may_defer()) {
        c->owed = defer = true;
        count_owed_locked();
    }
    pthread_mutex_unlock(&lock);
    if (!defer) {
        atomic_fetch_add(&waited, 1);
        if (h == GA_NOSTREAM) /* a whole-context wait: learn it clean */
            pending.armed = true, pending.ctx = ctx, pending.seq = seq,
            pending.clean = atomic_load(&dirty_in_flight) == 0;
        return false;
    }
    if (atomic_fetch_add(&deferred, 1) < 8)
        ga_log(GA_LOG_DEBUG, "lazy_sync: a synchronization of stream %p deferred (context %p)",
               (void *)h, (void *)ctx);
    *r = CUDA_SUCCESS;
    return true;
}

/* The program's own whole-context wait succeeded: what was dirty before it
 * began is done, and nothing is owed there any more. */
static void ls_synced(const ga_rt_t *rt, CUstream h, bool pt, CUcontext ctx, uint64_t began)
{
    (void)rt, (void)pt, (void)began;
    if (h != GA_NOSTREAM || !pending.armed || pending.ctx != ctx)
        return;
    pending.armed = false;
    pthread_mutex_lock(&lock);
    lctx_t *c = find_locked(ctx, false);
    if (c) {
        waited_locked(c, pending.seq, pending.clean);
        count_owed_locked();
    }
    pthread_mutex_unlock(&lock);
}

/* ---- the gate ---- */

static unsigned ls_gate(const ga_rt_t *rt, ga_id_t id)
{
    (void)rt;
    unsigned settle = atomic_load(&n_owed) ? GA_GATE_SETTLE : 0;
    switch ((cls_t)cls[id]) {
    case C_SAFE:
        return 0;
    case C_TAINT: /* (a load first: the exchange is a locked write on every such call) */
        if (!atomic_load(&tainted) && taint("host and device shared memory"))
            ga_log(GA_LOG_INFO, "lazy_sync: %s: host and device share memory from now "
                                "on, every synchronization waits", ga_entries[id].name);
        return settle;
    case C_DIRTY:
        atomic_fetch_add(&dirty_in_flight, 1);
        if (atomic_fetch_add(&dirty_seq, 1) < 8)
            ga_log(GA_LOG_DEBUG, "lazy_sync: after %s the next whole-context "
                                 "synchronization waits", ga_entries[id].name);
        return settle | GA_GATE_AFTER;
    case C_CAPTURE:
        pthread_mutex_lock(&lock);
        opening++;
        pthread_mutex_unlock(&lock);
        return GA_GATE_SETTLE | GA_GATE_AFTER;
    case C_OBSERVE:
    default:
        return settle;
    }
}

/* Safe and observing calls matter only while a wait is owed (n_owed). */
static bool ls_gate_sees(ga_id_t id)
{
    return cls[id] == C_TAINT || cls[id] == C_DIRTY || cls[id] == C_CAPTURE;
}

static void ls_gate_done(const ga_rt_t *rt, ga_id_t id)
{
    (void)rt;
    if (cls[id] == C_DIRTY) {
        atomic_fetch_sub(&dirty_in_flight, 1);
    } else if (cls[id] == C_CAPTURE) {
        pthread_mutex_lock(&lock);
        opening--;
        pthread_mutex_unlock(&lock);
    }
}

/* Wait for one context, current or not. The tracker learns its streams idle,
 * as from the program's own wait: features that wait for idle streams (a
 * coalescing window's fill, a read served only on an idle stream) must see
 * a deferred wait once it is paid, or deferring would stop them serving. */
static CUresult wait_ctx(const ga_rt_t *rt, CUcontext ctx)
{
    ga_ctx_scope_t scope;
    bool log = atomic_load(&settles) < 8 && ga_log_enabled(GA_LOG_DEBUG);
    if (!ga_ctx_enter(rt, ctx, &scope)) {
        if (log)
            ga_log(GA_LOG_DEBUG, "lazy_sync: context %p is gone: nothing to wait for", (void *)ctx);
        return CUDA_SUCCESS; /* gone (its destroy waited for it) */
    }
    ga_ctx_mark_t m = ga_ctx_mark(rt, ctx);
    uint64_t t0 = log ? ga_now_ns() : 0;
    CUresult r = GA_REAL(rt, GA_ID_cuCtxSynchronize, cuCtxSynchronize)();
    if (log)
        ga_log(GA_LOG_DEBUG, "lazy_sync: waited for context %p%s: error %d after %llu us",
               (void *)ctx, scope.pushed ? " (pushed)" : "", (int)r,
               (unsigned long long)((ga_now_ns() - t0) / 1000));
    ga_ctx_mark_idle(&m, r == CUDA_SUCCESS);
    ga_ctx_leave(rt, &scope);
    return r;
}

/* Pay every owed wait; the first error is the caller's. */
static CUresult ls_settle(const ga_rt_t *rt)
{
    if (!atomic_load(&n_owed))
        return CUDA_SUCCESS;
    CUresult first = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    uint64_t seq = atomic_load(&dirty_seq);
    bool clean = atomic_load(&dirty_in_flight) == 0;
    for (unsigned i = 0; i < n_ctx; i++) {
        if (!ctxs[i].owed)
            continue;
        CUresult r = wait_ctx(rt, ctxs[i].ctx);
        atomic_fetch_add(&settles, 1);
        waited_locked(&ctxs[i], seq, clean && r == CUDA_SUCCESS);
        if (r != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = r;
    }
    count_owed_locked();
    pthread_mutex_unlock(&lock);
    return first;
}

/* ---- lifecycle ---- */

/* The environment variables through which CUDA's tools inject themselves. */
static const char *const tool_vars[] = {
    "CUDA_INJECTION64_PATH",            /* Nsight Systems, Nsight Compute, CUPTI tools */
    "NV_SANITIZER_INJECTION_PORT_BASE", /* compute-sanitizer */
    "NVTX_INJECTION64_PATH",            /* compute-sanitizer, Nsight Systems */
};

static void ls_init(const ga_rt_t *rt)
{
    (void)rt;
    classify_all();
    for (size_t i = 0; i < GA_ARRAY_LEN(tool_vars); i++) {
        const char *v = getenv(tool_vars[i]);
        if (v && *v) {
            taint("a CUDA tool is attached");
            ga_log(GA_LOG_INFO, "lazy_sync: a CUDA tool is attached (%s is set): every "
                                "synchronization waits", tool_vars[i]);
            break;
        }
    }
}

static void ls_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    pthread_mutex_lock(&lock);
    lctx_t *c = find_locked(ctx, false);
    if (c)
        *c = ctxs[--n_ctx];
    count_owed_locked();
    pthread_mutex_unlock(&lock);
}

/* At exit, what is still owed is waited for (device printf output appears),
 * and an error nobody could see any more is said. */
static void ls_exit(void)
{
    const ga_rt_t *rt = ga_rt();
    if (!rt || !atomic_load(&n_owed) || ga_capture_active())
        return;
    CUresult r = ls_settle(rt);
    if (r != CUDA_SUCCESS)
        ga_warn("lazy_sync: work after the program's last synchronization failed with "
                "CUDA error %d, seen at exit", (int)r);
}

static void ls_report(void)
{
    uint64_t d = atomic_load(&deferred), n = d + atomic_load(&waited);
    const char *why = atomic_load(&taint_why);
    if (n)
        ga_log(GA_LOG_INFO, "lazy_sync: %llu of %llu synchronizations deferred, %llu waits "
                            "made at calls that observe the device%s%s%s",
               (unsigned long long)d, (unsigned long long)n,
               (unsigned long long)atomic_load(&settles), why ? " (" : "", why ? why : "",
               why ? ")" : "");
}

static void fork_child(void)
{
    n_ctx = 0; /* the child cannot use the parent's CUDA state */
    opening = 0;
    atomic_store(&n_owed, 0);
    atomic_store(&dirty_in_flight, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

GA_SWITCH(lazy_sync)

const ga_feature_t ga_feature_lazy_sync = {
    .summary = "synchronizations nothing on the host could observe deferred to the next call that can",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuCtxSynchronize, GA_ID_cuCtxGetCurrent, GA_ID_cuCtxGetDevice,
             GA_ID_cuStreamGetCtx, GA_ID_cuDeviceGetAttribute, GA_ID_cuCtxPushCurrent_v2,
             GA_ID_cuCtxPopCurrent_v2),
    .init = ls_init,
    .report = ls_report,
    .fork = &fork_ops,
    .sync = ls_sync,
    .gate = ls_gate,
    .settle = ls_settle,
    .gate_done = ls_gate_done,
    .gate_sees = ls_gate_sees,
    .owed = &n_owed,
    .gate_retired = &tainted, /* never defers again: only a wait still owed matters */
    .synced = ls_synced,
    .ctx_gone = ls_ctx_gone,
    .code_loaded = ls_code_loaded,
    .exit = ls_exit,
};
