/* launch.c - the kernel launch hooks: where swap, tune and graphs will decide
 * what to launch. Today: count, keep the epoch and stream tracker right, and
 * call the driver with the program's own arguments. */
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
    if (ga_profiling)
        ga_profile_kernel_begin(rt, hStream, pt);
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuLaunchKernel)(f, gridDimX, gridDimY, gridDimZ, blockDimX,
                                                 blockDimY, blockDimZ, sharedMemBytes, hStream,
                                                 kernelParams, extra);
    ga_work_end(rt, r, hStream, ga_entries[id].per_thread, true);
    if (r == CUDA_SUCCESS && ga_profiling) {
        const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
        const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
        ga_profile_launch(rt, f, grid, block, sharedMemBytes, hStream, pt);
    }
    if (r == CUDA_SUCCESS && ga_log_enabled(GA_LOG_DEBUG))
        (void)ga_kernel_info(rt, f); /* logs the name on first sight */
    return r;
}

CUresult ga_hook_launch_ex(const ga_rt_t *rt, ga_id_t id, const CUlaunchConfig *config,
                           CUfunction f, void **kernelParams, void **extra)
{
    bool pt = ga_entries[id].per_thread;
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
