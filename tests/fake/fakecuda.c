/* fakecuda.c - a stand-in libcuda.so.1 for tests on machines without a GPU.
 *
 * Device memory is host memory, streams and events complete at once, and the
 * only kernels are the ones tests/progs/kernels.ptx defines, run on the host
 * when launched ("fill" and "add"). Enough of the driver API for the doors,
 * the stream tracker and the pass-through paths to be exercised end to end;
 * the same test programs run against the real driver on a GPU machine.
 * Exported names and prototypes come from cuda.h's exact-ELF-name mode, so the
 * compiler checks them against the real ABI. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static int initialized;
static int ctx_object, module_object, stream_objects[64], event_objects[256];
static unsigned stream_flags[64];
static int nstreams, nevents;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Live allocations, to answer double frees and bad pointers as the driver does. */
static void *allocs[4096];
static size_t alloc_sizes[4096];

/* Fork safety of the stand-in itself (the real driver has its own): take the
 * lock around fork so a child never inherits it held by a vanished thread. */
static void fake_prepare(void) { pthread_mutex_lock(&lock); }
static void fake_release(void) { pthread_mutex_unlock(&lock); }
__attribute__((constructor)) static void fake_init(void)
{
    pthread_atfork(fake_prepare, fake_release, fake_release);
}

/* A simulated device clock for event timing (the tuner's tests): every block
 * costs 0.2 us and every thread 1 ns, so fewer, larger blocks are faster. */
static double device_ms;
static double event_ms[256];

enum { K_FILL = 1, K_ADD = 2 };
static int kernel_fill = K_FILL, kernel_add = K_ADD;
/* Library kernels for the swap tests: ga_add does what add does; ga_wrong_abi
 * takes other parameters. */
static int kernel_ga_add = K_ADD, kernel_wrong = 0, library_object;
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

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    initialized = 1;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pctx = (CUcontext)&ctx_object;
    return CUDA_SUCCESS;
}

static __thread CUcontext current;

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

FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
    STICKY();
    return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Fault injection for the tests, read from the environment of the test build
 * only (the library itself injects nothing):
 *   FAKECUDA_MEM=BYTES       the device holds this much: an allocation that
 *                            would take the live total past it fails with
 *                            CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo says so
 *   FAKECUDA_FAULT=alloc:N   the Nth cuMemAlloc call (from 1) fails with
 *                            CUDA_ERROR_OUT_OF_MEMORY, whatever is free */
static size_t env_size(const char *name)
{
    const char *v = getenv(name);
    return v ? (size_t)strtoull(v, NULL, 0) : 0;
}

static size_t live_bytes_locked(void)
{
    size_t sum = 0;
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i])
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

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytesize > ((size_t)1 << 40) || injected_alloc_fault())
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t cap = env_size("FAKECUDA_MEM");
    void *p = aligned_alloc(256, (bytesize + 255) & ~(size_t)255);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (cap && live_bytes_locked() + bytesize > cap) {
        pthread_mutex_unlock(&lock);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (!allocs[i]) {
            allocs[i] = p;
            alloc_sizes[i] = bytesize;
            break;
        }
    pthread_mutex_unlock(&lock);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    STICKY();
    if (dptr == 0)
        return CUDA_SUCCESS;
    void *p = (void *)(uintptr_t)dptr;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] == p) {
            allocs[i] = NULL;
            pthread_mutex_unlock(&lock);
            free(p);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data,
                                            CUdeviceptr ptr)
{
    void *base = NULL;
    size_t size = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        if (allocs[i] && ptr >= (CUdeviceptr)(uintptr_t)allocs[i] &&
            ptr < (CUdeviceptr)(uintptr_t)allocs[i] + alloc_sizes[i]) {
            base = allocs[i];
            size = alloc_sizes[i];
        }
    pthread_mutex_unlock(&lock);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = base ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = (CUdeviceptr)(uintptr_t)base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = size; break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data[i] = 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags)
{
    (void)flags;
    *pp = malloc(n);
    return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    size_t cap = env_size("FAKECUDA_MEM");
    if (!cap) {
        *free_bytes = (size_t)8 << 30;
        *total = (size_t)16 << 30;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&lock);
    size_t live = live_bytes_locked();
    pthread_mutex_unlock(&lock);
    *free_bytes = live < cap ? cap - live : 0;
    *total = cap;
    return CUDA_SUCCESS;
}

static CUresult copy(void *dst, const void *src, size_t n)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, src, n);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy((void *)(uintptr_t)dst, src, n);
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    return copy((void *)(uintptr_t)dst, src, n);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy(dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    return copy(dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    (void)s;
    return copy(dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    (void)s;
    return copy(dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    (void)s;
    return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    uint32_t *p = (uint32_t *)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    *module = (CUmodule)&module_object;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    if (m != (CUmodule)&module_object)
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
    return m == (CUmodule)&module_object ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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
    *lib = (CUlibrary)&library_object;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    if (lib != (CUlibrary)&library_object)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!strcmp(name, "ga_add"))
        *k = (CUkernel)&kernel_ga_add;
    else if (!strcmp(name, "ga_wrong_abi"))
        *k = (CUkernel)&kernel_wrong;
    else
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
    if (k == (CUkernel)&kernel_ga_add)
        *name = "ga_add";
    else if (k == (CUkernel)&kernel_wrong)
        *name = "ga_wrong_abi";
    else
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
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
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    /* fill is declared with __launch_bounds__(256) in this make-believe */
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? (f == (CUfunction)&kernel_fill ? 256 : 1024)
                                                     : 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f == (CUfunction)&kernel_fill ? "fill" : "add";
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    /* fill(u32 *p, u32 n, u32 v) and add(u32 *p, u32 n, u32 v): 8 + 4 + 4 bytes */
    static const size_t offs[] = {0, 8, 12}, sizes[] = {8, 4, 4};
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (i >= 3)
        return CUDA_ERROR_INVALID_VALUE;
    *off = offs[i];
    *size = sizes[i];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)&module_object;
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, void **params)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    STICKY();
    if (f == (CUfunction)&kernel_fault) {
        sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* seen by the next call */
        return CUDA_SUCCESS;
    }
    if (!is_kernel(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((uint64_t)bx * by * bz > 1024 || !gx || !gy || !gz || !bx || !by || !bz)
        return CUDA_ERROR_INVALID_VALUE;
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    uint32_t *p = *(uint32_t **)params[0];
    uint32_t n = *(uint32_t *)params[1], v = *(uint32_t *)params[2];
    uint64_t threads = (uint64_t)gx * gy * gz * bx * by * bz;
    device_ms += (double)gx * gy * gz * 0.0002 + (double)threads * 0.000001;
    for (uint64_t i = 0; i < threads && i < n; i++)
        p[i] = f == (CUfunction)&kernel_fill ? v : p[i] + v; /* add, ga_add */
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                    CUstream s, void **params, void **extra)
{
    (void)shmem, (void)s, (void)extra;
    return launch(f, gx, gy, gz, bx, by, bz, params);
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream s, void **params, void **extra)
{
    (void)shmem, (void)s, (void)extra;
    return launch(f, gx, gy, gz, bx, by, bz, params);
}

/* ---- graphs: kernel nodes only, run in order on launch ---- */
typedef struct fake_node {
    CUfunction f;
    unsigned g[3], b[3];
    unsigned char params[16]; /* fill/add: u32 *p, u32 n, u32 v */
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

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, void **params);

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    (void)s;
    fake_graph_t *fg = (fake_graph_t *)x;
    if (!fg)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < fg->n; i++) {
        fake_node_t *nd = &fg->nodes[i];
        void *args[] = {nd->params, nd->params + 8, nd->params + 12};
        CUresult r = launch(nd->f, nd->g[0], nd->g[1], nd->g[2], nd->b[0], nd->b[1], nd->b[2], args);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x) { free(x); return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph g) { free(g); return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    *ms = (float)(event_ms[(int *)b - event_objects] - event_ms[(int *)a - event_objects]);
    return CUDA_SUCCESS;
}

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
    for (int i = 0; i < nstreams; i++)
        if (s == (CUstream)&stream_objects[i])
            return i;
    return -1;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    int i = nstreams < 64 ? nstreams++ : -1;
    if (i >= 0)
        stream_flags[i] = flags;
    pthread_mutex_unlock(&lock);
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

FAKE_EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx)
{
    if (stream_ok(s) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_HANDLE;
    *pctx = (CUcontext)&ctx_object;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s) { return stream_ok(s); }
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { return stream_ok(s); }
FAKE_EXPORT CUresult cuStreamQuery(CUstream s) { return stream_ok(s); }
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    return stream_index(s) >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
    (void)flags;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    int i = nevents < 256 ? nevents++ : -1;
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pe = (CUevent)&event_objects[i];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    event_ms[(int *)e - event_objects] = device_ms;
    return stream_ok(s);
}
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    (void)flags;
    return e ? stream_ok(s) : CUDA_ERROR_INVALID_HANDLE; /* everything is already done */
}

FAKE_EXPORT CUresult cuEventQuery(CUevent e)
{
    STICKY();
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    STICKY();
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = current != NULL;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* A reset clears the sticky error; the fake keeps its one context object. */
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sticky = 0;
    return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

/* cuGetProcAddress: what cudart does. Base name plus version picks the ELF
 * variant; the per-thread flag picks _ptsz/_ptds where one exists. */
typedef struct {
    const char *base;
    void *legacy, *per_thread;
} proc_t;

static const proc_t procs[] = {
    {"cuInit", (void *)cuInit, NULL},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion, NULL},
    {"cuDeviceGet", (void *)cuDeviceGet, NULL},
    {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, NULL},
    {"cuCtxSetCurrent", (void *)cuCtxSetCurrent, NULL},
    {"cuCtxGetCurrent", (void *)cuCtxGetCurrent, NULL},
    {"cuCtxSynchronize", (void *)cuCtxSynchronize, NULL},
    {"cuMemAlloc", (void *)cuMemAlloc_v2, NULL},
    {"cuMemFree", (void *)cuMemFree_v2, NULL},
    {"cuMemGetInfo", (void *)cuMemGetInfo_v2, NULL},
    {"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2, (void *)cuMemcpyHtoD_v2_ptds},
    {"cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2, (void *)cuMemcpyDtoH_v2_ptds},
    {"cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2, (void *)cuMemcpyDtoHAsync_v2_ptsz},
    {"cuMemsetD32", (void *)cuMemsetD32_v2, NULL},
    {"cuMemcpy", (void *)cuMemcpy, (void *)cuMemcpy_ptds},
    {"cuModuleLoadData", (void *)cuModuleLoadData, NULL},
    {"cuModuleGetFunction", (void *)cuModuleGetFunction, NULL},
    {"cuModuleUnload", (void *)cuModuleUnload, NULL},
    {"cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
    {"cuStreamCreate", (void *)cuStreamCreate, NULL},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz},
    {"cuStreamDestroy", (void *)cuStreamDestroy_v2, NULL},
    {"cuEventCreate", (void *)cuEventCreate, NULL},
    {"cuEventRecord", (void *)cuEventRecord, NULL},
    {"cuEventSynchronize", (void *)cuEventSynchronize, NULL},
    {"cuFuncGetName", (void *)cuFuncGetName, NULL},
};

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    (void)version;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].base, symbol))
            continue;
        int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && procs[i].per_thread;
        *pfn = pt ? procs[i].per_thread : procs[i].legacy;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
