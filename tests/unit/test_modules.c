/* test_modules.c - a driver too old for a feature: the feature is switched off
 * (with a warning), the others stay as configured. */
#include "check.h"
#include "hooks/modules.h"
#include "stub_driver.h"

static int dummy_fn;

int main(void)
{
    static ga_rt_t rt;
    stub_runtime(&rt);
    for (int i = 0; i < GA_N_ENTRIES; i++)
        rt.drv.fn[i] = &dummy_fn; /* a driver with everything */
    rt.cfg.pool = rt.cfg.coalesce = rt.cfg.graphs = rt.cfg.kernels = rt.cfg.tune = true;
    ga_modules_check(&rt);
    CHECK(rt.cfg.pool && rt.cfg.coalesce && rt.cfg.graphs && rt.cfg.kernels && rt.cfg.tune);
    CHECK(rt.track);

    rt.drv.fn[GA_ID_cuGraphExecKernelNodeSetParams_v2] = NULL; /* an old driver */
    rt.drv.fn[GA_ID_cuLibraryLoadData] = NULL;
    ga_modules_check(&rt);
    CHECK(!rt.cfg.graphs && !rt.cfg.kernels);
    CHECK(rt.cfg.pool && rt.cfg.coalesce && rt.cfg.tune);

    rt.cfg.coalesce = false;
    rt.drv.fn[GA_ID_cuEventQuery] = NULL;
    ga_modules_check(&rt);
    CHECK(!rt.cfg.pool && !rt.track); /* nothing left that reads the tracker */
    return check_done("test_modules");
}
