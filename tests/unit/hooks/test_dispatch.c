/* test_dispatch.c - the feature list and its dispatch (hooks/dispatch.c): a
 * driver too old for a feature switches it off (with one warning naming the
 * driver's release and the missing entry point), the others stay as
 * configured; the dispatch holds exactly the enabled features' handlers, in
 * features.def order; what tracking keeps follows from them. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "hooks/dispatch.h"
#include "stub_driver.h"

static int dummy_fn;

static CUresult driver_12_2(int *v)
{
    *v = 12020;
    return CUDA_SUCCESS;
}

/* How many lines of the log file at `path` contain `text`. */
static int log_lines(const char *path, const char *text)
{
    char line[1024];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void check_and_enable(ga_rt_t *rt)
{
    bool on[GA_N_FEATURES];
    ga_hooks_check(rt, on);
    ga_hooks_enable(rt, on);
}

int main(void)
{
    static ga_rt_t rt;
    stub_runtime(&rt);
    for (int i = 0; i < GA_N_ENTRIES; i++)
        rt.drv.fn[i] = &dummy_fn; /* a driver with everything */
    rt.cfg.pool = rt.cfg.coalesce = rt.cfg.graphs = rt.cfg.kernels = rt.cfg.tune = true;
    check_and_enable(&rt);
    CHECK(rt.cfg.pool && rt.cfg.coalesce && rt.cfg.graphs && rt.cfg.kernels && rt.cfg.tune);
    CHECK(rt.track && rt.epochs && !rt.calls && rt.per_call);
    CHECK(ga_feature_on(GA_FEATURE_ID_pool) && !ga_feature_on(GA_FEATURE_ID_profile));
    /* served events in list order: kernels' rewrite before tune's */
    CHECK(ga_dispatch.n_rewrite == 2 && ga_dispatch.rewrite_of[0] == &ga_feature_kernels &&
          ga_dispatch.rewrite_of[1] == &ga_feature_tune);
    CHECK(ga_dispatch.n_alloc == 1 && ga_dispatch.alloc_of[0] == &ga_feature_pool);
    CHECK(ga_dispatch.n_read == 1 && ga_dispatch.n_hold == 1 && ga_dispatch.n_alloc_done == 0 &&
          !ga_dispatch.timed);
    CHECK(ga_dispatch.sequences); /* graphs learns from the sequence detector: the hooks feed it */

    char log[] = "/tmp/test_dispatch.XXXXXX";
    int fd = mkstemp(log);
    CHECK(fd >= 0);
    ga_log_configure(GA_LOG_WARN, log);
    rt.drv.fn[GA_ID_cuDriverGetVersion] = (void *)driver_12_2;
    rt.drv.fn[GA_ID_cuGraphExecKernelNodeSetParams_v2] = NULL; /* an old driver */
    rt.drv.fn[GA_ID_cuLibraryLoadData] = NULL;
    check_and_enable(&rt);
    ga_log_configure(GA_LOG_WARN, NULL);
    CHECK(log_lines(log, "gpuaccel: warning: ") == 2);
    CHECK(log_lines(log, "this driver (CUDA 12.2) has no cuGraphExecKernelNodeSetParams_v2, "
                         "which GPUACCEL_GRAPHS needs: the feature is off") == 1);
    CHECK(log_lines(log, "this driver (CUDA 12.2) has no cuLibraryLoadData, "
                         "which GPUACCEL_KERNELS needs: the feature is off") == 1);
    close(fd), unlink(log);
    CHECK(!rt.cfg.graphs && !rt.cfg.kernels);
    CHECK(rt.cfg.pool && rt.cfg.coalesce && rt.cfg.tune);
    CHECK(ga_dispatch.n_hold == 0 && ga_dispatch.n_rewrite == 1);
    CHECK(!ga_dispatch.sequences);

    rt.cfg.coalesce = false;
    rt.drv.fn[GA_ID_cuEventQuery] = NULL;
    check_and_enable(&rt);
    CHECK(!rt.cfg.pool && !rt.track && !rt.epochs); /* nothing left that reads the tracker */
    CHECK(ga_dispatch.n_alloc == 0 && ga_dispatch.n_read == 0);

    /* the profile and the tuner: observers, timed, every call seen */
    rt.cfg.profile = "/nonexistent/p";
    rt.cfg.tuner = "/nonexistent/t";
    check_and_enable(&rt);
    CHECK(rt.calls && ga_dispatch.timed && ga_dispatch.n_alloc_done == 2 && ga_dispatch.n_span == 1);
    CHECK(ga_dispatch.alloc_done_of[0] == &ga_feature_tuner &&
          ga_dispatch.alloc_done_of[1] == &ga_feature_profile);
    /* the profile takes no flush event: its sequences come from the detector,
     * which the flush points feed */
    CHECK(ga_dispatch.n_flush == 0 && ga_dispatch.sequences && rt.per_call);

    /* pass-through: nothing at all */
    rt.active = false;
    check_and_enable(&rt);
    CHECK(!rt.track && !rt.calls && !rt.per_call && ga_dispatch.n_flush == 0 &&
          ga_dispatch.n_launch_done == 0);
    CHECK(!ga_dispatch.sequences);
    return check_done("test_dispatch");
}
