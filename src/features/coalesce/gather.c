/* gather.c - coalesce's gathers: the library's own kernel (kernels/gather.cu,
 * embedded as PTX) copies up to GA_GATHER_MAX small reads straight into a
 * page-locked host buffer of the context, mapped into the device, and the
 * host waits until each of its blocks has stored the gather's stamp after its
 * cells. The kernel runs where the program's synchronous read would have run
 * (the legacy default stream, or the calling thread's with a per-thread
 * entry), so it sees every write the read would have seen and starts only
 * after everything the read would have waited for: once its words landed, all
 * of that has finished (a wait that outlasts SPIN_NS is the driver's).
 *
 * Why mapped memory and not a device buffer and a copy: a copy to the
 * program's pageable memory is a second round trip through the driver's
 * staging buffer after the kernel's; the kernel's 16-byte stores into mapped
 * memory land with the kernel (bench/probes/gatherprobe.c measures both).
 *
 * The PTX is loaded once per process as a context-independent library
 * (cuLibraryLoadData, CUDA 12.0 on); a driver without it, or one that refuses
 * the PTX, turns gathers off for good (one debug line).
 *
 * Owns: the library handle, the kernel, one mapped buffer per context, under
 * `glock`, which is held across the gather's driver calls (the buffer is
 * shared by the context's gathers; gathers are rare: one per query).
 * Must never: be called while a capture is open (the caller's own-calls
 * stretch guarantees it); take coalesce's lock. */
#include "features/coalesce/gather.h"

#include <pthread.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

/* gather_ptx.c: a fatbin built from kernels/gather.cu where nvcc was found
 * (machine code, no compilation at first use), else the PTX of
 * kernels/gather.ptx; the driver takes either. */
extern const unsigned char ga_gather_image[];

/* The kernel's parameter and list entry, as kernels/gather.cu declares them. */
typedef struct gather_read {
    unsigned long long src;
    unsigned n, pad;
} gather_read_t;

typedef struct gather_args {
    unsigned long long dst, list;
    unsigned count, stamp;
    unsigned long long done;
    unsigned long long src[GA_GATHER_INLINE];
    unsigned n[GA_GATHER_INLINE];
} gather_args_t;

/* A context's mapped buffer: the cells the kernel writes, the list of reads
 * it follows when they do not fit in its parameters, then each block's word
 * that says its cells landed. */
enum { THREADS = 128, BLOCKS = (GA_GATHER_MAX + THREADS - 1) / THREADS,
       CELLS_BYTES = GA_GATHER_MAX * GA_GATHER_CELL,
       LIST_BYTES = GA_GATHER_MAX * sizeof(gather_read_t),
       BUFFER_BYTES = CELLS_BYTES + LIST_BYTES + BLOCKS * sizeof(unsigned) };

/* How long the host spins on the blocks' words before it asks the driver to
 * wait (a gather queued behind long work, or one that never ran: the driver's
 * wait returns its error). */
enum { SPIN_NS = 200 * 1000 };

enum { N_CTX = 16 };

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static CUlibrary library;            /* guarded by glock */
static CUkernel kernel;              /* guarded by glock */
static bool unavailable;             /* guarded by glock: never again */
static struct {
    CUcontext ctx;
    unsigned char *host; /* page-locked, mapped: BUFFER_BYTES */
    CUdeviceptr dev; /* its address in the device */
} scratch[N_CTX];                    /* guarded by glock */
static unsigned stamp;               /* guarded by glock: the last gather's */

static bool load_locked(const ga_rt_t *rt)
{
    if (kernel || unavailable)
        return kernel != NULL;
    __typeof__(&cuLibraryLoadData) load = GA_REAL(rt, GA_ID_cuLibraryLoadData, cuLibraryLoadData);
    __typeof__(&cuLibraryGetKernel) get = GA_REAL(rt, GA_ID_cuLibraryGetKernel, cuLibraryGetKernel);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (load && get && (r = load(&library, ga_gather_image, NULL, NULL, 0, NULL, NULL, 0)) ==
                           CUDA_SUCCESS &&
        (r = get(&kernel, library, "ga_gather")) != CUDA_SUCCESS)
        kernel = NULL;
    if (!kernel) {
        unavailable = true;
        ga_debug("coalesce: gathers off: the gather kernel could not be loaded (%d)", (int)r);
    }
    return kernel != NULL;
}

/* The context's mapped buffer, allocated at its first gather; NULL if the
 * driver gives none (then no gather is made in this context). */
static unsigned char *scratch_locked(const ga_rt_t *rt, CUcontext ctx, CUdeviceptr *dev)
{
    int free_at = -1;
    for (int i = 0; i < N_CTX; i++) {
        if (scratch[i].ctx == ctx)
            return *dev = scratch[i].dev, scratch[i].host;
        if (!scratch[i].ctx && free_at < 0)
            free_at = i;
    }
    __typeof__(&cuMemHostAlloc) alloc = GA_REAL(rt, GA_ID_cuMemHostAlloc, cuMemHostAlloc);
    __typeof__(&cuMemHostGetDevicePointer_v2) map =
        GA_REAL(rt, GA_ID_cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer_v2);
    __typeof__(&cuMemFreeHost) hfree = GA_REAL(rt, GA_ID_cuMemFreeHost, cuMemFreeHost);
    void *p = NULL;
    if (free_at < 0 || !alloc || !map ||
        alloc(&p, BUFFER_BYTES, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS)
        return NULL;
    if (map(dev, p, 0) != CUDA_SUCCESS) {
        if (hfree)
            hfree(p);
        return NULL;
    }
    scratch[free_at].ctx = ctx, scratch[free_at].host = p, scratch[free_at].dev = *dev;
    return p;
}

static unsigned cell_len(uint32_t n)
{
    return n < GA_GATHER_CELL ? n : GA_GATHER_CELL;
}

/* The reads where the kernel finds them: up to GA_GATHER_INLINE in its
 * parameter, more in the list after the cells of the mapped buffer. */
static void place_reads(gather_args_t *a, unsigned char *host, CUdeviceptr dev,
                        const ga_gather_req_t *req, unsigned count)
{
    a->dst = dev, a->list = 0, a->count = count, a->stamp = ++stamp ? stamp : ++stamp;
    a->done = dev + CELLS_BYTES + LIST_BYTES;
    /* The blocks' words start at 0, never a stamp (a fresh buffer's memory
     * is anything; the kernel writes them only after this launch). */
    memset(host + CELLS_BYTES + LIST_BYTES, 0, BLOCKS * sizeof(unsigned));
    if (count <= GA_GATHER_INLINE) {
        for (unsigned k = 0; k < count; k++)
            a->src[k] = req[k].src, a->n[k] = cell_len(req[k].n);
        return;
    }
    gather_read_t *list = (gather_read_t *)(host + CELLS_BYTES);
    for (unsigned k = 0; k < count; k++)
        list[k] = (gather_read_t){req[k].src, cell_len(req[k].n), 0};
    a->list = dev + CELLS_BYTES;
}

/* Have all `blocks` words reached `want`? (acquire: the cells are read after) */
static bool landed(const unsigned char *host, unsigned blocks, unsigned want)
{
    const unsigned *done = (const unsigned *)(host + CELLS_BYTES + LIST_BYTES);
    for (unsigned b = 0; b < blocks; b++)
        if (__atomic_load_n(&done[b], __ATOMIC_ACQUIRE) != want)
            return false;
    return true;
}

/* Wait for the gather: spin on its words (a launch and a spin cost 8 us on an
 * H100 where a stream synchronization costs 10.9), and after SPIN_NS let the
 * driver wait, whose answer (an error of earlier work, of the gather) counts. */
static CUresult await(const ga_rt_t *rt, CUstream s, const unsigned char *host, unsigned blocks,
                      unsigned want)
{
    uint64_t t0 = ga_now_ns();
    for (unsigned spins = 0; !landed(host, blocks, want); spins++)
        if ((spins & 63) == 63 && ga_now_ns() - t0 > SPIN_NS) {
            CUresult r = GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize)(s);
            if (r == CUDA_SUCCESS && !landed(host, blocks, want))
                r = CUDA_ERROR_UNKNOWN; /* (cannot be: the kernel ran) */
            return r;
        }
    return CUDA_SUCCESS;
}

CUresult ga_gather_run(const ga_rt_t *rt, ga_id_t id, CUcontext ctx, const ga_gather_req_t *req,
                       unsigned count, unsigned char *out)
{
    __typeof__(&cuLaunchKernel) launch = GA_REAL(rt, GA_ID_cuLaunchKernel, cuLaunchKernel);
    if (!count || count > GA_GATHER_MAX || !launch ||
        !GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize))
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&glock);
    CUdeviceptr dev = 0;
    unsigned char *host = load_locked(rt) ? scratch_locked(rt, ctx, &dev) : NULL;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (host) {
        gather_args_t a;
        place_reads(&a, host, dev, req, count);
        void *params[] = {&a};
        CUstream s = ga_entries[id].per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
        unsigned blocks = (count + THREADS - 1) / THREADS;
        r = launch((CUfunction)kernel, blocks, 1, 1, THREADS, 1, 1, 0, s, params, NULL);
        if (r == CUDA_SUCCESS)
            r = await(rt, s, host, blocks, a.stamp);
        if (r == CUDA_SUCCESS)
            memcpy(out, host, (size_t)count * GA_GATHER_CELL);
    }
    pthread_mutex_unlock(&glock);
    return r;
}

void ga_gather_ctx_gone(CUcontext ctx)
{
    /* Its buffer goes with it: destroying or resetting a context frees every
     * allocation in it, page-locked ones too, so there is nothing to free here. */
    pthread_mutex_lock(&glock);
    for (int i = 0; i < N_CTX; i++)
        if (scratch[i].ctx == ctx)
            scratch[i].ctx = NULL, scratch[i].host = NULL, scratch[i].dev = 0;
    pthread_mutex_unlock(&glock);
}

/* The child has none of the parent's CUDA state; a gather in flight in
 * another thread at fork left glock taken, so it is made anew. */
void ga_gather_child(void)
{
    pthread_mutex_init(&glock, NULL);
    library = NULL, kernel = NULL, unavailable = false;
    memset(scratch, 0, sizeof scratch);
}
