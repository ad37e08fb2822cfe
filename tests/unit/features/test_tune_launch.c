/* test_tune_launch.c - the tune feature's decisions, through the launch hook over
 * the stub driver (tests/unit/stub_more.h: an sm_90 device) with a table
 * (GPUACCEL_TUNE_TABLE): an entry applies only to the same kernel name,
 * device (sm_XY or *), grid, block and shared memory; a threads entry keeps
 * the thread count (one that would not is refused); a kernel whose
 * __launch_bounds__ forbid the new block is left alone; a malformed line is
 * reported by its number. (The table's syntax: tests/unit/features/test_tune.c.) */
#include "check.h"
#include "features/tune/tune.h"
#include "stub_driver.h"
#include "stub_more.h"

static ga_rt_t rt;
static CUstream s;

/* Lines 7 and 12 are refused. */
static const char table[] = "# tuned (test_tune.c)\n"
                            "_Z5t_hitPjj sm_90 32 128 0 -> 16 256 threads\n"
                            "_Z7t_anydvPjj * 32 128 0 -> 16 256 threads\n"
                            "_Z7t_otherPjj sm_80 32 128 0 -> 16 256 threads\n"
                            "_Z7t_shapePjj sm_90 32 128 0 -> 16 256 threads\n"
                            "_Z6t_ceilPjj sm_90 33 128 0 -> 17 256 threads\n"
                            "_Z6t_lossPjj sm_90 32 128 0 -> 15 256 threads\n"
                            "_Z7t_boundPjj sm_90 32 128 0 -> 16 256 threads\n"
                            "_Z7t_libbdPjj sm_90 32 128 0 -> 16 256 threads\n"
                            "_Z7t_libokPjj sm_90 32 128 0 -> 16 256 threads\n"
                            "_Z8t_strideP sm_90 100,2,1 64,2,1 512 -> 264,1,1 256,1,1 stride\n"
                            "_Z5t_hitPjj sm_90 64 128 0 -> 32 256 sideways\n";

/* The program launches k with this configuration (after a first launch, which
 * is never rewritten): the configuration that ran. */
static const stub_run_t *launch(stub_kernel_t *k, unsigned gx, unsigned gy, unsigned bx,
                                unsigned by, unsigned shmem)
{
    const unsigned g[3] = {gx, gy, 1}, b[3] = {bx, by, 1};
    if (!k->attempts)
        stub_call(&rt, GA_ID_cuLaunchKernel, k, g, b, shmem, s, 3, NULL);
    unsigned from = stub_nran;
    CUresult r = stub_call(&rt, GA_ID_cuLaunchKernel, k, g, b, shmem, s, 3, NULL);
    const stub_run_t *run = stub_ran_one(from);
    return r == CUDA_SUCCESS && run->k == k && run->arg[0] == stub_arg && run->arg[1] == 3
               ? run
               : stub_ran_one((unsigned)-1);
}

static bool ran_as(const stub_run_t *r, unsigned gx, unsigned gy, unsigned bx, unsigned by)
{
    return r->k && r->grid[0] == gx && r->grid[1] == gy && r->grid[2] == 1 && r->block[0] == bx &&
           r->block[1] == by && r->block[2] == 1;
}

static bool tuned(stub_kernel_t *k)
{
    return ran_as(launch(k, 32, 1, 128, 1, 0), 16, 1, 256, 1);
}

static bool untouched(stub_kernel_t *k, unsigned gx, unsigned bx, unsigned shmem)
{
    return ran_as(launch(k, gx, 1, bx, 1, shmem), gx, 1, bx, 1);
}

int main(void)
{
    stub_runtime(&rt);
    s = (CUstream)&stub_streams[0];
    rt.cfg.tune = true;
    rt.cfg.tune_table = stub_file(0, table);
    stub_log_capture();
    stub_start(&rt); /* reads the table */

    /* name, device, grid, block, shared memory: all must match */
    CHECK(tuned(stub_kernel("_Z5t_hitPjj", false)));
    CHECK(tuned(stub_kernel("_Z7t_anydvPjj", false)));                  /* any device */
    CHECK(untouched(stub_kernel("_Z7t_otherPjj", false), 32, 128, 0));  /* an sm_80 entry */
    CHECK(untouched(stub_kernel("_Z5t_hitPjjx", false), 32, 128, 0));   /* another name */
    stub_kernel_t *shape = stub_kernel("_Z7t_shapePjj", false);
    CHECK(untouched(shape, 64, 128, 0));
    CHECK(untouched(shape, 32, 64, 0));
    CHECK(untouched(shape, 32, 128, 16));
    CHECK(tuned(shape));
    CHECK(ran_as(launch(stub_kernel("_Z8t_strideP", false), 100, 2, 64, 2, 512), 264, 1, 256, 1));

    /* threads: the new grid covers every thread of the old (ceil), or the
     * entry is refused (and named) */
    CHECK(ran_as(launch(stub_kernel("_Z6t_ceilPjj", false), 33, 1, 128, 1, 0), 17, 1, 256, 1) &&
          17 * 256 >= 33 * 128 && 16 * 256 < 33 * 128);
    char at[200];
    snprintf(at, sizeof at, "%s:7: expected", stub_paths[0]);
    CHECK(untouched(stub_kernel("_Z6t_lossPjj", false), 32, 128, 0) && stub_logged(at));

    /* __launch_bounds__(128): a 256-thread block is never launched; a module
     * function and a library kernel each asked the way the driver answers */
    stub_kernel_t *bound = stub_kernel("_Z7t_boundPjj", false);
    stub_kernel_t *libbd = stub_kernel("_Z7t_libbdPjj", true);
    bound->max_threads = 128, libbd->max_threads = 128;
    CHECK(untouched(bound, 32, 128, 0));
    CHECK(untouched(libbd, 32, 128, 0));
    CHECK(tuned(stub_kernel("_Z7t_libokPjj", true)));

    /* the malformed last line: named, and its configuration left alone */
    snprintf(at, sizeof at, "%s:12: expected", stub_paths[0]);
    CHECK(stub_logged(at) && untouched(stub_kernel("_Z5t_hitPjj", false), 64, 128, 0));
    stub_files_remove();
    return check_done("test_tune");
}
