/* launch.c - the kernel launch hooks: where the launch features decide what
 * is launched. Swap may replace the function (and, for grid-stride
 * replacements, the configuration); a launch not swapped may get another
 * configuration from the tune table; graphs may then hold the launch as part
 * of a known sequence; otherwise the driver gets the launch. The epoch and the stream
 * tracker see a held launch as work at once: what it writes is not readable
 * until the next flush point issues it. */
#include "features/graphs/graphs.h"
#include "core/hooks.h"
#include "core/log.h"
#include "hooks/modules.h"
#include "features/profile/profile.h"
#include "tracking/streams.h"
#include "features/swap/swap.h"
#include "features/tune/tune.h"
#include "features/tuner/tuner.h"

CUresult ga_hook_launch(const ga_rt_t *rt, ga_id_t id, CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                        void **extra)
{
    bool pt = ga_entries[id].per_thread;
    unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
    unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
    __typeof__(&cuLaunchKernel) real = GA_REAL(rt, id, cuLaunchKernel);
    ga_work_begin(rt, true);
    if (GA_UNLIKELY(rt->tuning))
        ga_tuner_before_launch(rt, f, grid, block, sharedMemBytes, hStream, kernelParams, extra);
    /* Swap, else tune; graphs then hold what is really launched. */
    CUfunction fn = f;
    bool capturing = ga_capture_active(); /* a captured launch reaches the graph untouched */
    bool swapped = rt->cfg.kernels && !extra && !capturing &&
                   ga_swap_choose(rt, &fn, grid, block, sharedMemBytes);
    bool tuned = !swapped && rt->cfg.tune && !capturing &&
                 ga_tune_choose(rt, f, grid, block, sharedMemBytes);
    CUresult r = CUDA_SUCCESS;
    if (!rt->cfg.graphs || ga_graphs_launch(rt, fn, grid, block, sharedMemBytes, hStream, pt,
                                            kernelParams, extra) == GA_GRAPH_LAUNCH) {
        if (ga_profiling)
            ga_profile_kernel_begin(rt, hStream, pt);
        r = real(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMemBytes,
                 hStream, kernelParams, extra);
        if (rt->cfg.kernels)
            ga_swap_launched(rt, f, swapped, r);
        if (r == CUDA_SUCCESS && !swapped && !tuned &&
            (rt->cfg.kernels || rt->cfg.tune || rt->tuning))
            ga_kernel_note_launched(f); /* now swap and tune may ask about it */
        if (r != CUDA_SUCCESS && (swapped || tuned)) { /* the program's own launch, as it asked */
            r = real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                     sharedMemBytes, hStream, kernelParams, extra);
            fn = f;
            grid[0] = gridDimX, grid[1] = gridDimY, grid[2] = gridDimZ;
            block[0] = blockDimX, block[1] = blockDimY, block[2] = blockDimZ;
        }
        if (r == CUDA_SUCCESS && rt->cfg.graphs)
            ga_graphs_launched(rt, fn, grid, block, sharedMemBytes, hStream);
    }
    ga_work_end(rt, r, hStream, pt, true);
    if (r == CUDA_SUCCESS && ga_profiling)
        ga_profile_launch(rt, fn, grid, block, sharedMemBytes, hStream, pt);
    if (r == CUDA_SUCCESS && ga_log_enabled(GA_LOG_DEBUG))
        (void)ga_kernel_info(rt, f); /* logs the name on first sight */
    return r;
}

CUresult ga_hook_launch_ex(const ga_rt_t *rt, ga_id_t id, const CUlaunchConfig *config,
                           CUfunction f, void **kernelParams, void **extra)
{
    bool pt = ga_entries[id].per_thread;
    if (rt->cfg.graphs) /* attributed launches are never held */
        ga_graphs_flush(rt);
    if (ga_profiling && config)
        ga_profile_kernel_begin(rt, config->hStream, pt);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuLaunchKernelEx)(config, f, kernelParams, extra);
    ga_work_end(rt, r, config ? config->hStream : GA_NOSTREAM, pt, true);
    if (r == CUDA_SUCCESS && ga_profiling && config) {
        const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
        const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
        ga_profile_launch(rt, f, grid, block, config->sharedMemBytes, config->hStream, pt);
    }
    return r;
}
