/* modules.c - start the feature modules and fan core events out to them. */
#include "modules.h"

#include "coalesce.h"
#include "log.h"
#include "pool.h"

void ga_modules_init(const ga_rt_t *rt)
{
    ga_stats_timing = rt->cfg.profile && *rt->cfg.profile;
    ga_profile_init(rt);
}

void ga_modules_flush(const ga_rt_t *rt, ga_flush_t what, CUstream h)
{
    (void)rt, (void)what, (void)h; /* no module holds work back yet */
    if (ga_profiling)
        ga_profile_sync_point(what == GA_FLUSH_ALL ? GA_NOSTREAM : h);
}

void ga_modules_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    ga_pool_ctx_gone(ctx);
    ga_coalesce_ctx_gone(ctx);
    ga_ctx_forget(ctx);
}

void ga_modules_exit(void)
{
    ga_profile_write();
    ga_stats_log_summary();
    ga_pool_report();
    ga_coalesce_report();
}
