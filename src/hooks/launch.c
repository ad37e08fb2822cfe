/* launch.c - the kernel launch hooks: where the launch features decide what
 * is launched. The tuner may first run its experiment on the program's own
 * configuration; then a rewrite (kernels may replace the function, and for
 * grid-stride replacements the configuration; tune may give a launch not
 * swapped another configuration); then graphs may hold the launch as part of
 * a known sequence; otherwise the driver gets it. A rewritten launch that the
 * driver refuses is made again as the program asked. While a stream captures,
 * nothing is rewritten or held: the capture gets the program's own launch.
 * The epoch and the stream tracker see a held launch as work at once: what it
 * writes is not readable until the next flush point issues it. When a feature
 * uses the launch-sequence detector, it sees each launch once, here. */
#include "core/hooks.h"
#include "core/log.h"
#include "hooks/dispatch.h"
#include "tracking/registry.h"
#include "tracking/streams.h"

/* The sequence detector's feed (tracking/sequence.h): a launch that cannot be
 * part of a sequence ends this thread's segment; one the driver accepted as it
 * came (not held, not attributed) is appended. */
static void feed_sequences(const ga_rt_t *rt, const ga_launch_t *l, CUresult r)
{
    if (!ga_seq_learnable(l->stream, l->per_thread, l->params, l->extra))
        ga_seq_flush(rt);
    if (r == CUDA_SUCCESS && !l->held && !l->attributed)
        ga_seq_launch(rt, l->f, l->grid, l->block, l->shmem, l->stream);
}

/* Rewrite, hold or launch; returns the driver's (or the holder's) answer. */
static CUresult launch(const ga_rt_t *rt, ga_id_t id, ga_launch_t *l)
{
    __typeof__(&cuLaunchKernel) real = GA_REAL(rt, id, cuLaunchKernel);
    const ga_launch_t asked = *l;
    GA_EACH(before_launch, rt, l);
    if (ga_dispatch.n_rewrite && !ga_capture_active())
        for (unsigned i = 0; i < ga_dispatch.n_rewrite && !l->rewritten_by; i++)
            if (ga_dispatch.rewrite[i](rt, l))
                l->rewritten_by = ga_dispatch.rewrite_of[i];
    CUresult r = CUDA_SUCCESS;
    l->held = GA_SERVE(hold, rt, l, &r);
    if (l->held)
        return r;
    GA_EACH(launch_begin, rt, l);
    r = real(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
             l->shmem, l->stream, l->params, l->extra);
    if (l->rewritten_by) {
        l->rewrite_result = r;
        if (r != CUDA_SUCCESS) { /* the program's own launch, as it asked */
            const void *by = l->rewritten_by;
            *l = asked;
            l->rewritten_by = by, l->rewrite_result = r;
            r = real(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                     l->block[2], l->shmem, l->stream, l->params, l->extra);
        }
    }
    return r;
}

CUresult ga_hook_launch(const ga_rt_t *rt, ga_id_t id, CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                        void **extra)
{
    ga_launch_t l = {
        .f = f, .original = f,
        .grid = {gridDimX, gridDimY, gridDimZ}, .block = {blockDimX, blockDimY, blockDimZ},
        .shmem = sharedMemBytes, .stream = hStream, .per_thread = ga_entries[id].per_thread,
        .params = kernelParams, .extra = extra,
    };
    ga_data_begin(rt);
    CUresult r = launch(rt, id, &l);
    /* Now the features that read kernels may ask the driver about the
     * function it accepted. */
    if (r == CUDA_SUCCESS && !l.held && l.f == l.original &&
        (ga_dispatch.n_rewrite || ga_dispatch.n_before_launch))
        ga_kernel_note_launched(l.original);
    GA_EACH(launch_done, rt, &l, r);
    if (ga_dispatch.sequences)
        feed_sequences(rt, &l, r);
    ga_data_end(rt, r, hStream, l.per_thread);
    if (r == CUDA_SUCCESS && ga_log_enabled(GA_LOG_DEBUG))
        (void)ga_kernel_info(rt, f); /* logs the name on first sight */
    return r;
}

/* cuLaunchKernelEx with attributes (clusters, cooperative, priorities)
 * are never rewritten or held; they are flush points for what is held. */
CUresult ga_hook_launch_ex(const ga_rt_t *rt, ga_id_t id, const CUlaunchConfig *config,
                           CUfunction f, void **kernelParams, void **extra)
{
    bool pt = ga_entries[id].per_thread;
    /* No attribute: the very launch cuLaunchKernel makes (cudart's
     * cudaLaunchKernelEx and Triton's launcher often pass none), so it is one
     * to the features too: rewritten, held, learned. */
    ga_id_t plain = pt ? GA_ID_cuLaunchKernel_ptsz : GA_ID_cuLaunchKernel;
    if (config && config->numAttrs == 0 && rt->drv.fn[plain])
        return ga_hook_launch(rt, plain, f, config->gridDimX, config->gridDimY, config->gridDimZ,
                              config->blockDimX, config->blockDimY, config->blockDimZ,
                              config->sharedMemBytes, config->hStream, kernelParams, extra);
    CUstream s = config ? config->hStream : GA_NOSTREAM;
    ga_launch_t l = {.f = f, .original = f, .stream = s, .per_thread = pt,
                     .params = kernelParams, .extra = extra, .attributed = true};
    if (config) {
        l.grid[0] = config->gridDimX, l.grid[1] = config->gridDimY, l.grid[2] = config->gridDimZ;
        l.block[0] = config->blockDimX, l.block[1] = config->blockDimY,
        l.block[2] = config->blockDimZ, l.shmem = config->sharedMemBytes;
    }
    ga_flush(rt, GA_FLUSH_STREAM, s);
    if (config)
        GA_EACH(launch_begin, rt, &l);
    ga_data_begin(rt);
    CUresult r = GA_REAL(rt, id, cuLaunchKernelEx)(config, f, kernelParams, extra);
    ga_data_end(rt, r, s, pt);
    if (config)
        GA_EACH(launch_done, rt, &l, r);
    return r;
}
