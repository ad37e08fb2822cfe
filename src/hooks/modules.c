/* modules.c - start the feature modules and fan core events out to them. */
#include "hooks/modules.h"

#include <stddef.h>

#include "features/coalesce/coalesce.h"
#include "features/graphs/graphs.h"
#include "features/swap/swap.h"
#include "features/tune/tune.h"
#include "features/tuner/tuner.h"
#include "core/log.h"
#include "features/pool/pool.h"

/* The driver entry points each feature cannot work without. A driver too old
 * to have one gets the feature switched off, with a warning, and everything
 * else passes through as before. */
typedef struct needs {
    const char *variable;
    size_t flag; /* offset of the feature's bool in ga_config_t */
    ga_id_t ids[8];
    unsigned n;
} needs_t;

#define GA_NEEDS(var, field, ...)                                                              {#var, offsetof(ga_config_t, field), {__VA_ARGS__},                                         sizeof((ga_id_t[]){__VA_ARGS__}) / sizeof(ga_id_t)}

static const needs_t needs[] = {
    GA_NEEDS(GPUACCEL_POOL, pool, GA_ID_cuEventCreate, GA_ID_cuEventRecord, GA_ID_cuEventQuery,
             GA_ID_cuStreamWaitEvent, GA_ID_cuStreamGetFlags, GA_ID_cuStreamGetCtx,
             GA_ID_cuCtxPushCurrent_v2, GA_ID_cuCtxPopCurrent_v2),
    GA_NEEDS(GPUACCEL_COALESCE, coalesce, GA_ID_cuPointerGetAttributes, GA_ID_cuMemHostAlloc,
             GA_ID_cuMemFreeHost, GA_ID_cuStreamQuery, GA_ID_cuStreamGetFlags,
             GA_ID_cuStreamGetCtx),
    GA_NEEDS(GPUACCEL_GRAPHS, graphs, GA_ID_cuGraphCreate, GA_ID_cuGraphAddKernelNode_v2,
             GA_ID_cuGraphInstantiateWithFlags, GA_ID_cuGraphExecKernelNodeSetParams_v2,
             GA_ID_cuGraphLaunch, GA_ID_cuFuncGetParamInfo, GA_ID_cuKernelGetParamInfo),
    GA_NEEDS(GPUACCEL_KERNELS, kernels, GA_ID_cuLibraryLoadData, GA_ID_cuLibraryGetKernel,
             GA_ID_cuKernelGetName, GA_ID_cuKernelGetParamInfo, GA_ID_cuFuncGetParamInfo),
    GA_NEEDS(GPUACCEL_TUNE, tune, GA_ID_cuFuncGetAttribute, GA_ID_cuFuncGetName),
};

void ga_modules_check(ga_rt_t *rt)
{
    for (size_t i = 0; i < GA_ARRAY_LEN(needs); i++) {
        bool *on = (bool *)((char *)&rt->cfg + needs[i].flag);
        for (unsigned k = 0; *on && k < needs[i].n; k++)
            if (!rt->drv.fn[needs[i].ids[k]]) {
                ga_warn("%s=1 but this driver has no %s: the feature is off", needs[i].variable,
                        ga_entries[needs[i].ids[k]].name);
                *on = false;
            }
    }
    ga_rt_derive(rt);
}

void ga_modules_init(const ga_rt_t *rt)
{
    ga_stats_timing = rt->cfg.profile && *rt->cfg.profile;
    ga_profile_init(rt);
    if (rt->cfg.graphs)
        ga_graphs_init(rt);
    if (rt->cfg.kernels)
        ga_swap_init(rt);
    if (rt->cfg.tune)
        ga_tune_init(rt);
    if (rt->tuning)
        ga_tuner_init(rt);
}

void ga_modules_flush(const ga_rt_t *rt, ga_flush_t what, CUstream h)
{
    (void)what, (void)h; /* graphs hold one sequence at most: flush it whatever asked */
    if (rt->cfg.graphs)
        ga_graphs_flush(rt);
    if (ga_profiling)
        ga_profile_sync_point(what == GA_FLUSH_ALL ? GA_NOSTREAM : h);
}

void ga_modules_unload(const ga_rt_t *rt)
{
    if (rt->cfg.graphs)
        ga_graphs_unload(rt);
    if (rt->cfg.kernels)
        ga_swap_unload();
    if (rt->cfg.tune)
        ga_tune_unload();
}

void ga_modules_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    ga_graphs_ctx_gone(rt, ctx);
    ga_pool_ctx_gone(ctx);
    ga_coalesce_ctx_gone(ctx);
    ga_ctx_forget(ctx);
}

void ga_modules_stream_gone(const ga_rt_t *rt, CUstream h)
{
    ga_coalesce_stream_gone(rt, h);
}

void ga_modules_exit(void)
{
    ga_profile_write();
    ga_tuner_write();
    ga_stats_log_summary();
    ga_pool_report();
    ga_coalesce_report();
    ga_graphs_report();
    ga_swap_report();
    ga_tune_report();
}
