/* modules.c - start the feature modules and fan core events out to them. */
#include "modules.h"

#include "coalesce.h"
#include "graphs.h"
#include "swap.h"
#include "tune.h"
#include "tuner.h"
#include "log.h"
#include "pool.h"

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
