/* stub_more.h - the rest of a driver, for the features' unit tests: device
 * memory the host can read (allocations of every kind, what
 * cuPointerGetAttributes says of them, copies, asynchronous copies that
 * complete at the stream's sync, pinned host memory, IPC), kernels (names,
 * parameter layouts, __launch_bounds__, their modules, loaded from images the
 * library reads, a library to load replacements from),
 * launches the stub logs in the order the "device" runs them, graphs built
 * from kernel nodes, and a device (sm_90, 132 multiprocessors). Also the
 * test-side helpers: start the features as init would, capture the log, write
 * a table file. Include after stub_driver.h; stub_more() installs it all. */
#ifndef GA_STUB_MORE_H
#define GA_STUB_MORE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/log.h"
#include "core/textfile.h"

/* ---- device memory: real host memory at the addresses the program sees ------------ */

/* STUB_SYNCMEMOPS: plain device memory with CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set
 * (what a GPUDirect RDMA user sets on memory a NIC writes). */
typedef enum { STUB_DEVICE, STUB_MANAGED, STUB_MAPPED, STUB_SHAREABLE, STUB_SYNCMEMOPS } stub_kind_t;

enum { STUB_ALIGN = 1 << 20 }; /* allocations far apart: no window spans two */
static struct {
    CUdeviceptr base;
    size_t size;
    stub_kind_t kind;
} stub_mem_list[256];
static unsigned stub_nmem;

/* A fresh allocation of n zeroed bytes, of the given kind, at an address
 * aligned to 1 MiB (so a window's alignment is known). */
static inline CUdeviceptr stub_mem(size_t n, stub_kind_t kind)
{
    size_t cap = (n + STUB_ALIGN - 1) / STUB_ALIGN * STUB_ALIGN;
    void *p = aligned_alloc(STUB_ALIGN, cap);
    if (!p || stub_nmem == 256)
        abort();
    memset(p, 0, cap);
    stub_mem_list[stub_nmem].base = (CUdeviceptr)(uintptr_t)p;
    stub_mem_list[stub_nmem].size = n;
    stub_mem_list[stub_nmem++].kind = kind;
    return (CUdeviceptr)(uintptr_t)p;
}

/* The 32-bit word at device address d, as a kernel would read or write it. */
static inline uint32_t *stub_word(CUdeviceptr d)
{
    return (uint32_t *)(uintptr_t)d;
}

static int stub_find_mem(CUdeviceptr p)
{
    for (unsigned i = 0; i < stub_nmem; i++)
        if (p >= stub_mem_list[i].base && p < stub_mem_list[i].base + stub_mem_list[i].size)
            return (int)i;
    return -1;
}

/* cuPointerGetAttributes asked about host memory (threads of the staging test
 * ask at once: counted atomically) */
static unsigned stub_nhostq;

static CUresult stub_pointer_attributes(unsigned n, CUpointer_attribute *a, void **data,
                                        CUdeviceptr p)
{
    int i = stub_find_mem(p);
    if (i < 0)
        __atomic_fetch_add(&stub_nhostq, 1, __ATOMIC_RELAXED);
    stub_kind_t kind = i < 0 ? STUB_DEVICE : stub_mem_list[i].kind;
    for (unsigned k = 0; k < n; k++)
        switch (a[k]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: /* plain host memory: 0 */
            *(unsigned *)data[k] = i < 0 ? 0 : kind == STUB_MAPPED ? CU_MEMORYTYPE_HOST
                                                                   : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned *)data[k] = i >= 0 && kind == STUB_MANAGED;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[k] = i < 0 ? 0 : stub_mem_list[i].base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[k] = i < 0 ? 0 : stub_mem_list[i].size;
            break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            *(unsigned long long *)data[k] = i >= 0 && kind == STUB_SHAREABLE
                                                 ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                 : CU_MEM_HANDLE_TYPE_NONE;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data[k] = i < 0 ? -1 : 0;
            break;
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: /* a bool: one byte written */
            *(bool *)data[k] = i >= 0 && kind == STUB_SYNCMEMOPS;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    return CUDA_SUCCESS;
}

/* cuMemGetHandleForAddressRange: a dma-buf "file descriptor" for any range of
 * an allocation. */
static CUresult stub_range_handle(void *handle, CUdeviceptr p, size_t n, CUmemRangeHandleType t,
                                  unsigned long long flags)
{
    (void)t, (void)flags;
    if (stub_find_mem(p) < 0 || !n)
        return CUDA_ERROR_INVALID_VALUE;
    *(int *)handle = 3;
    return CUDA_SUCCESS;
}

/* cuIpcGetMemHandle succeeds; cuIpcOpenMemHandle maps a fresh allocation. */
static CUresult stub_ipc_get(CUipcMemHandle *h, CUdeviceptr d)
{
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &d, sizeof d);
    return CUDA_SUCCESS;
}

static CUresult stub_ipc_open(CUdeviceptr *d, CUipcMemHandle h, unsigned flags)
{
    (void)h, (void)flags;
    *d = stub_mem(65536, STUB_DEVICE);
    return CUDA_SUCCESS;
}

/* Pinned host memory, counted. */
static int stub_pinned;
static CUresult stub_host_alloc(void **pp, size_t n, unsigned flags)
{
    (void)flags;
    stub_pinned++;
    *pp = malloc(n);
    return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult stub_host_free(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}

/* ---- copies: every one logged; asynchronous ones land at their stream's sync ----- */

typedef struct stub_copy {
    void *dst;
    CUdeviceptr src;
    size_t n;
    CUstream stream; /* asynchronous: its stream; synchronous: GA_NOSTREAM */
} stub_copy_t;
enum { STUB_COPIES = 4096 }; /* the log keeps the last 4096 */
static stub_copy_t stub_copies[STUB_COPIES], stub_queued[64];
static unsigned stub_ncopies, stub_nqueued;

static void stub_log_copy(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    stub_copies[stub_ncopies++ % STUB_COPIES] = (stub_copy_t){dst, src, n, s};
}

/* Copy number i (counted from 0; one of the last 4096). */
static inline const stub_copy_t *stub_copy_at(unsigned i)
{
    return &stub_copies[i % STUB_COPIES];
}

/* The last copy the driver was asked for. */
static inline const stub_copy_t *stub_last_copy(void)
{
    return stub_copy_at(stub_ncopies - 1);
}

/* Run once after the next synchronous device-to-host copy has read the
 * device (a kernel of another stream that ends just then, another thread's
 * write), if set; what it returns is the copy's result. */
static CUresult (*stub_after_dtoh)(void);

static CUresult stub_dtoh(void *dst, CUdeviceptr src, size_t n)
{
    stub_log_copy(dst, src, n, GA_NOSTREAM);
    memcpy(dst, (const void *)(uintptr_t)src, n);
    CUresult (*after)(void) = stub_after_dtoh;
    stub_after_dtoh = NULL;
    return after ? after() : CUDA_SUCCESS;
}

static CUresult stub_dtoh_async(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    stub_log_copy(dst, src, n, s);
    if (stub_nqueued == 64)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stub_queued[stub_nqueued++] = (stub_copy_t){dst, src, n, s};
    return CUDA_SUCCESS;
}

/* Complete the queued copies of stream s (GA_NOSTREAM: of every stream),
 * reading the device as it is now. */
static void stub_complete(CUstream s)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < stub_nqueued; i++) {
        stub_copy_t *c = &stub_queued[i];
        if (s == GA_NOSTREAM || c->stream == s)
            memcpy(c->dst, (const void *)(uintptr_t)c->src, c->n);
        else
            stub_queued[kept++] = *c;
    }
    stub_nqueued = kept;
}

/* Streams with a kernel still running (by index into stub_streams; the
 * legacy stream is never left running). */
static int stub_running[8];

static CUresult stub_stream_query(CUstream s)
{
    int i = stub_stream_index(s);
    if (i >= 0 && stub_running[i])
        return CUDA_ERROR_NOT_READY;
    stub_complete(s);
    return CUDA_SUCCESS;
}

static unsigned stub_nsyncs; /* stream synchronizations the driver was asked for */

static CUresult stub_stream_sync(CUstream s)
{
    stub_nsyncs++;
    if (s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD &&
        stub_stream_index(s) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    stub_complete(s);
    return CUDA_SUCCESS;
}

/* ---- kernels ------------------------------------------------------------------ */

/* A kernel, its handle the address of its record: a CUfunction of a module,
 * or (library) a CUkernel of the library replacements load from. */
typedef struct stub_kernel {
    char name[64];
    bool library;
    CUmodule module; /* a module kernel's, as cuFuncGetModule says (NULL: none) */
    unsigned nparams;
    size_t offset[4], size[4];
    int max_threads; /* its __launch_bounds__ */
    bool fail_launch; /* the driver refuses every launch of it */
    int attempts;    /* launches the driver was asked for */
} stub_kernel_t;

static stub_kernel_t stub_kpool[256];
static unsigned stub_nk;

/* A fresh kernel taking (a pointer, a 32-bit value), up to 1024 threads a
 * block; name NULL: a new name. */
static inline stub_kernel_t *stub_kernel(const char *name, bool library)
{
    if (stub_nk == 256)
        abort();
    stub_kernel_t *k = &stub_kpool[stub_nk];
    if (name)
        snprintf(k->name, sizeof k->name, "%s", name);
    else
        snprintf(k->name, sizeof k->name, "_Z5k%04uPjj", stub_nk);
    k->library = library;
    k->nparams = 2;
    k->offset[0] = 0, k->size[0] = 8;
    k->offset[1] = 8, k->size[1] = 4;
    k->max_threads = 1024;
    stub_nk++;
    return k;
}

static stub_kernel_t *stub_kernel_of(const void *h)
{
    for (unsigned i = 0; i < stub_nk; i++)
        if (h == (const void *)&stub_kpool[i])
            return &stub_kpool[i];
    return NULL;
}

static CUresult stub_func_name(const char **name, CUfunction f)
{
    stub_kernel_t *k = stub_kernel_of(f);
    if (!k || k->library)
        return CUDA_ERROR_INVALID_HANDLE; /* what the driver says of a CUkernel */
    *name = k->name;
    return CUDA_SUCCESS;
}

static CUresult stub_kernel_name(const char **name, CUkernel h)
{
    stub_kernel_t *k = stub_kernel_of(h);
    if (!k || !k->library)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = k->name;
    return CUDA_SUCCESS;
}

static CUresult stub_param(const stub_kernel_t *k, size_t i, size_t *off, size_t *size)
{
    if (!k || i >= k->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    *off = k->offset[i];
    *size = k->size[i];
    return CUDA_SUCCESS;
}

static CUresult stub_func_param(CUfunction f, size_t i, size_t *off, size_t *size)
{
    stub_kernel_t *k = stub_kernel_of(f);
    return stub_param(k && !k->library ? k : NULL, i, off, size);
}

static CUresult stub_kernel_param(CUkernel h, size_t i, size_t *off, size_t *size)
{
    stub_kernel_t *k = stub_kernel_of(h);
    return stub_param(k && k->library ? k : NULL, i, off, size);
}

static CUresult stub_threads(const stub_kernel_t *k, int attr, int *v)
{
    if (!k || attr != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        return CUDA_ERROR_INVALID_VALUE;
    *v = k->max_threads;
    return CUDA_SUCCESS;
}

static CUresult stub_func_attr(int *v, CUfunction_attribute a, CUfunction f)
{
    stub_kernel_t *k = stub_kernel_of(f);
    return stub_threads(k && !k->library ? k : NULL, a, v);
}

static CUresult stub_kernel_attr(int *v, CUfunction_attribute a, CUkernel h, CUdevice d)
{
    (void)d;
    stub_kernel_t *k = stub_kernel_of(h);
    return stub_threads(k && k->library ? k : NULL, a, v);
}

/* The library replacements load from: whatever the image, the stub's library
 * kernels. */
static int stub_library;
static CUresult stub_library_load(CUlibrary *lib, const void *code, CUjit_option *o, void **ov,
                                  unsigned no, CUlibraryOption *lo, void **lov, unsigned nlo)
{
    (void)code, (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    *lib = (CUlibrary)&stub_library;
    return CUDA_SUCCESS;
}

static CUresult stub_library_kernel(CUkernel *out, CUlibrary lib, const char *name)
{
    for (unsigned i = 0; lib == (CUlibrary)&stub_library && i < stub_nk; i++)
        if (stub_kpool[i].library && !strcmp(stub_kpool[i].name, name)) {
            *out = (CUkernel)&stub_kpool[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult stub_kernel_function(CUfunction *f, CUkernel k)
{
    *f = (CUfunction)k;
    return CUDA_SUCCESS;
}

/* Modules: each load of an image is a new module (its kernels are the
 * stub_kernel()s the test gives it); an unload only says so. */
static int stub_modules[64];
static unsigned stub_nmodules;
static CUresult stub_module_load(CUmodule *m, const void *image)
{
    if (!image || stub_nmodules == 64)
        return CUDA_ERROR_INVALID_VALUE;
    *m = (CUmodule)&stub_modules[stub_nmodules++];
    return CUDA_SUCCESS;
}

static CUresult stub_module_unload(CUmodule m)
{
    (void)m;
    return CUDA_SUCCESS;
}

static CUresult stub_func_module(CUmodule *m, CUfunction f)
{
    stub_kernel_t *k = stub_kernel_of(f);
    if (!k || k->library || !k->module)
        return CUDA_ERROR_INVALID_HANDLE;
    *m = k->module;
    return CUDA_SUCCESS;
}

/* A module loaded from `image` through the library's hook (as the program's
 * cuModuleLoadData reaches it): the features read the image. */
static inline CUmodule stub_load(const ga_rt_t *rt, const char *image)
{
    CUmodule m = NULL;
    return ga_hook_module_load(rt, GA_ID_cuModuleLoadData, &m, image) == CUDA_SUCCESS ? m : NULL;
}

/* ---- the device: sm_90, 132 multiprocessors, 4 resident 256-thread blocks each ---- */

enum { STUB_SMS = 132, STUB_PER_SM = 4 };

static CUresult stub_ctx_device(CUdevice *d)
{
    *d = 0;
    return CUDA_SUCCESS;
}

static CUresult stub_device_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = STUB_SMS; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static unsigned stub_occupancy_calls; /* how often the library asked */

static CUresult stub_occupancy(int *n, CUfunction f, int block, size_t shmem)
{
    (void)f, (void)shmem;
    stub_occupancy_calls++;
    *n = block == 256 ? STUB_PER_SM : 1;
    return CUDA_SUCCESS;
}

/* ---- what ran: kernels launched one by one, and graph nodes, in order ----------- */

typedef struct stub_run {
    const stub_kernel_t *k;
    unsigned grid[3], block[3], shmem;
    CUstream stream;
    uint64_t arg[4]; /* each parameter's bytes, as the kernel received them */
    bool graph;      /* ran as a node of a launched graph */
} stub_run_t;
static stub_run_t stub_ran[8192];
static unsigned stub_nran;

static stub_run_t stub_run_of(const stub_kernel_t *k, const unsigned g[3], const unsigned b[3],
                              unsigned shmem, void **params)
{
    stub_run_t r;
    memset(&r, 0, sizeof r);
    r.k = k;
    memcpy(r.grid, g, sizeof r.grid);
    memcpy(r.block, b, sizeof r.block);
    r.shmem = shmem;
    for (unsigned i = 0; params && i < k->nparams && i < 4; i++)
        memcpy(&r.arg[i], params[i], k->size[i]);
    return r;
}

static void stub_ran_add(stub_run_t r)
{
    if (stub_nran < 8192)
        stub_ran[stub_nran] = r;
    stub_nran++;
}

/* The i-th launch the device ran (i counted from 0). */
static inline const stub_run_t *stub_ran_at(unsigned i)
{
    static const stub_run_t none;
    return i < stub_nran && i < 8192 ? &stub_ran[i] : &none;
}

/* The one launch run since launch number `from`, or an empty record. */
static inline const stub_run_t *stub_ran_one(unsigned from)
{
    return stub_ran_at(stub_nran == from + 1 ? from : (unsigned)-1);
}

static CUresult stub_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                            void **extra)
{
    (void)extra;
    stub_kernel_t *k = stub_kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    k->attempts++;
    if (k->fail_launch)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    stub_run_t r = stub_run_of(k, g, b, shmem, params);
    r.stream = s;
    stub_ran_add(r);
    return CUDA_SUCCESS;
}

/* The program's launch of k through the launch hook, with the arguments
 * (stub_arg, v): they live in this frame only, so what the library keeps of
 * them it must have copied. Room is left for a kernel that would read more. */
static uint64_t stub_arg = 0x7000;
static inline CUresult stub_call(const ga_rt_t *rt, ga_id_t id, stub_kernel_t *k,
                                 const unsigned grid[3], const unsigned block[3], unsigned shmem,
                                 CUstream st, uint32_t v, void **extra)
{
    uint32_t pad = 0;
    void *args[] = {&stub_arg, &v, &pad, &pad};
    return ga_hook_launch(rt, id, (CUfunction)k, grid[0], grid[1], grid[2], block[0], block[1],
                          block[2], shmem, st, args, extra);
}

/* ---- graphs: kernel nodes in a chain, instantiated as a copy ---------------------- */

/* A graph runs its nodes in the order they were added: right only for a
 * chain (each node after the one before, as on a stream), so that is all the
 * stub accepts. */
enum { STUB_NODES = 512 };
typedef struct stub_graph {
    unsigned n;
    stub_run_t node[STUB_NODES];
    const struct stub_graph *from; /* an exec: the graph it was made from */
} stub_graph_t;
static int stub_graph_sets, stub_graph_launches;
static unsigned stub_last_graph_n; /* nodes of the last graph launched */

static stub_run_t stub_node_run(const CUDA_KERNEL_NODE_PARAMS *p)
{
    stub_kernel_t *k = stub_kernel_of(p->func ? (const void *)p->func : (const void *)p->kern);
    const unsigned g[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    const unsigned b[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    if (!k) {
        stub_run_t none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return stub_run_of(k, g, b, p->sharedMemBytes, p->kernelParams);
}

static CUresult stub_graph_create(CUgraph *g, unsigned flags)
{
    (void)flags;
    stub_graph_t *sg = calloc(1, sizeof *sg);
    if (!sg)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *g = (CUgraph)sg;
    return CUDA_SUCCESS;
}

static CUresult stub_graph_add(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                               const CUDA_KERNEL_NODE_PARAMS *p)
{
    stub_graph_t *sg = (stub_graph_t *)g;
    stub_run_t r = stub_node_run(p);
    bool chain = ndeps == (sg->n ? 1u : 0u) &&
                 (!ndeps || deps[0] == (CUgraphNode)&sg->node[sg->n - 1]);
    if (!r.k || sg->n == STUB_NODES || !chain)
        return CUDA_ERROR_INVALID_VALUE;
    sg->node[sg->n] = r;
    *node = (CUgraphNode)&sg->node[sg->n++];
    return CUDA_SUCCESS;
}

static CUresult stub_graph_instantiate(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    (void)flags;
    stub_graph_t *e = malloc(sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *e = *(stub_graph_t *)g;
    e->from = (stub_graph_t *)g;
    *x = (CUgraphExec)e;
    return CUDA_SUCCESS;
}

static CUresult stub_graph_set(CUgraphExec x, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
    stub_graph_t *e = (stub_graph_t *)x;
    unsigned i = (unsigned)((stub_run_t *)node - e->from->node);
    stub_run_t r = stub_node_run(p);
    if (i >= e->n || r.k != e->node[i].k)
        return CUDA_ERROR_INVALID_VALUE;
    stub_graph_sets++;
    e->node[i] = r;
    return CUDA_SUCCESS;
}

static CUresult stub_graph_launch(CUgraphExec x, CUstream s)
{
    stub_graph_t *e = (stub_graph_t *)x;
    stub_graph_launches++;
    stub_last_graph_n = e->n;
    for (unsigned i = 0; i < e->n; i++) {
        stub_run_t r = e->node[i];
        r.stream = s, r.graph = true;
        stub_ran_add(r);
    }
    return CUDA_SUCCESS;
}

static CUresult stub_graph_free(CUgraph g)
{
    free(g);
    return CUDA_SUCCESS;
}

/* Between two events: what the test says a replay took. */
static float stub_elapsed_ms = 0.001f;
static CUresult stub_elapsed(float *ms, CUevent a, CUevent b)
{
    (void)a, (void)b;
    *ms = stub_elapsed_ms;
    return CUDA_SUCCESS;
}

/* ---- the whole driver ------------------------------------------------------------ */

static void stub_more(ga_rt_t *rt)
{
    static const struct {
        ga_id_t id;
        void *fn;
    } fns[] = {
        {GA_ID_cuPointerGetAttributes, (void *)stub_pointer_attributes},
        {GA_ID_cuIpcGetMemHandle, (void *)stub_ipc_get},
        {GA_ID_cuIpcOpenMemHandle_v2, (void *)stub_ipc_open},
        {GA_ID_cuMemGetHandleForAddressRange, (void *)stub_range_handle},
        {GA_ID_cuMemHostAlloc, (void *)stub_host_alloc},
        {GA_ID_cuMemFreeHost, (void *)stub_host_free},
        {GA_ID_cuMemcpyDtoH_v2, (void *)stub_dtoh},
        {GA_ID_cuMemcpyDtoHAsync_v2, (void *)stub_dtoh_async},
        {GA_ID_cuStreamQuery, (void *)stub_stream_query},
        {GA_ID_cuStreamSynchronize, (void *)stub_stream_sync},
        {GA_ID_cuFuncGetName, (void *)stub_func_name},
        {GA_ID_cuKernelGetName, (void *)stub_kernel_name},
        {GA_ID_cuFuncGetParamInfo, (void *)stub_func_param},
        {GA_ID_cuKernelGetParamInfo, (void *)stub_kernel_param},
        {GA_ID_cuFuncGetAttribute, (void *)stub_func_attr},
        {GA_ID_cuKernelGetAttribute, (void *)stub_kernel_attr},
        {GA_ID_cuLibraryLoadData, (void *)stub_library_load},
        {GA_ID_cuLibraryGetKernel, (void *)stub_library_kernel},
        {GA_ID_cuKernelGetFunction, (void *)stub_kernel_function},
        {GA_ID_cuModuleLoadData, (void *)stub_module_load},
        {GA_ID_cuModuleUnload, (void *)stub_module_unload},
        {GA_ID_cuFuncGetModule, (void *)stub_func_module},
        {GA_ID_cuCtxGetDevice, (void *)stub_ctx_device},
        {GA_ID_cuDeviceGetAttribute, (void *)stub_device_attr},
        {GA_ID_cuOccupancyMaxActiveBlocksPerMultiprocessor, (void *)stub_occupancy},
        {GA_ID_cuLaunchKernel, (void *)stub_launch},
        {GA_ID_cuLaunchKernel_ptsz, (void *)stub_launch},
        {GA_ID_cuGraphCreate, (void *)stub_graph_create},
        {GA_ID_cuGraphAddKernelNode_v2, (void *)stub_graph_add},
        {GA_ID_cuGraphInstantiateWithFlags, (void *)stub_graph_instantiate},
        {GA_ID_cuGraphExecKernelNodeSetParams_v2, (void *)stub_graph_set},
        {GA_ID_cuGraphLaunch, (void *)stub_graph_launch},
        {GA_ID_cuGraphDestroy, (void *)stub_graph_free},
        {GA_ID_cuGraphExecDestroy, (void *)stub_graph_free},
        {GA_ID_cuEventElapsedTime_v2, (void *)stub_elapsed},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        rt->drv.fn[fns[i].id] = fns[i].fn;
}

/* The stub runtime with this driver and the features its configuration
 * switches on, started as ga_hooks_start does (without the driver check). */
static inline void stub_start(ga_rt_t *rt)
{
    stub_more(rt);
    stub_features(rt);
    GA_EACH(init, rt);
}

/* ---- files: tables to load, the log to read back --------------------------------- */

/* A temporary file holding text, in slot 0-2 (3 is the log's); returns its
 * path. stub_files_remove deletes them all. */
static char stub_paths[4][64];
static inline const char *stub_file(int slot, const char *text)
{
    snprintf(stub_paths[slot], sizeof stub_paths[slot], "/tmp/ga-unit-XXXXXX");
    int fd = mkstemp(stub_paths[slot]);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        abort();
    close(fd);
    return stub_paths[slot];
}

/* Send the library's warnings to a fresh file; stub_logged tells whether it
 * holds `what`. */
static inline void stub_log_capture(void)
{
    ga_log_configure(GA_LOG_WARN, stub_file(3, ""));
}

static inline bool stub_logged(const char *what)
{
    size_t n = 0;
    char *text = ga_read_file(stub_paths[3], 1 << 20, &n);
    bool found = text && strstr(text, what);
    free(text);
    return found;
}

static inline void stub_files_remove(void)
{
    for (int i = 0; i < 4; i++)
        if (*stub_paths[i])
            unlink(stub_paths[i]);
}

#endif
