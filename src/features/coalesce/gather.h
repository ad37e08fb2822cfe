/* gather.h - coalesce's gathers: one launch of the library's own kernel
 * (kernels/gather.cu) fetches a query's predicted reads into one mapped host
 * buffer, so a query costs one round trip instead of one per read. */
#ifndef GA_COALESCE_GATHER_H
#define GA_COALESCE_GATHER_H

#include "core/runtime.h"

/* The most reads one gather fetches (a learned period's, pattern.h), the
 * most that travel in the launch's parameters (more go in a list in the
 * mapped buffer), and the bytes a read may have. */
enum { GA_GATHER_MAX = 2048, GA_GATHER_INLINE = 128, GA_GATHER_CELL = 16 };

typedef struct ga_gather_req {
    CUdeviceptr src;
    uint32_t n; /* at most GA_GATHER_CELL */
} ga_gather_req_t;

/* Fetch count reads in the current context ctx, ordered as the program's
 * synchronous read through entry `id` would be (on the legacy or the calling
 * thread's default stream, then that stream's synchronization), into out: read k at
 * out + k * GA_GATHER_CELL. Returns the driver's result, or
 * CUDA_ERROR_NOT_SUPPORTED when the kernel cannot be had (no library API, the
 * PTX refused): then nothing was issued. Call inside ga_own_calls_enter. */
CUresult ga_gather_run(const ga_rt_t *rt, ga_id_t id, CUcontext ctx, const ga_gather_req_t *req,
                       unsigned count, unsigned char *out);

/* The context is going: forget its mapped buffer (the context frees it). */
void ga_gather_ctx_gone(CUcontext ctx);

/* Fork: the child's reset (coalesce's fork hook calls it). */
void ga_gather_child(void);

#endif
