/* launch.c - the kernel launch hooks: where the launch features decide what
 * is launched. Graphs may hold the launch as part of a known sequence;
 * otherwise the driver gets the program's own arguments. (Swap and tune will
 * choose the function and configuration here.) The epoch and the stream
 * tracker see a held launch as work at once: what it writes is not readable
 * until the next flush point issues it. */
#include "graphs.h"
#include "hooks.h"
#include "log.h"
#include "modules.h"
#include "profile.h"
#include "streams.h"

CUresult ga_hook_launch(const ga_rt_t *rt, ga_id_t id, CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                        void **extra)
{
    bool pt = ga_entries[id].per_thread;
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
    ga_work_begin(rt, true);
    CUresult r = CUDA_SUCCESS;
    if (!rt->cfg.graphs || ga_graphs_launch(rt, f, grid, block, sharedMemBytes, hStream, pt,
                                            kernelParams, extra) == GA_GRAPH_LAUNCH) {
        if (ga_profiling)
            ga_profile_kernel_begin(rt, hStream, pt);
        r = GA_REAL(rt, id, cuLaunchKernel)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                            blockDimZ, sharedMemBytes, hStream, kernelParams,
                                            extra);
        if (r == CUDA_SUCCESS && rt->cfg.graphs)
            ga_graphs_launched(rt, f, grid, block, sharedMemBytes, hStream);
    }
    ga_work_end(rt, r, hStream, pt, true);
    if (r == CUDA_SUCCESS && ga_profiling)
        ga_profile_launch(rt, f, grid, block, sharedMemBytes, hStream, pt);
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
