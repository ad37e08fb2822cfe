/* test_swap.c - the swap feature's decisions, through the launch hook over
 * the stub driver (tests/unit/stub_more.h), with a user table
 * (GPUACCEL_KERNELS_EXTRA) whose replacements the stub library holds: a rule
 * applies only when the replacement's parameter count, offsets and sizes all
 * match; GPUACCEL_KERNELS_DENY keeps a kernel; a replacement the driver
 * refuses to launch gives way to the original, for good; grid=program keeps
 * the program's configuration, grid=any takes the library's; a malformed
 * table line is reported by its number and applies nowhere. */
#include "check.h"
#include "features/swap/swap.h"
#include "stub_driver.h"
#include "stub_more.h"

static ga_rt_t rt;
static CUstream s;

/* Lines 10-12 are malformed. */
static const char table[] = "# user replacements (test_swap.c)\n"
                            "_Z7swap_okPjj ga_t_ok grid=program\n"
                            "_Z9swap_cntPjj ga_t_cnt grid=program\n"
                            "_Z9swap_offPjj ga_t_off grid=program\n"
                            "_Z10swap_sizePjj ga_t_size grid=program\n"
                            "\n"
                            "_Z10swap_denyPjj ga_t_deny grid=program # GPUACCEL_KERNELS_DENY\n"
                            "_Z10swap_failPjj ga_t_fail grid=program\n"
                            "_Z9swap_anyPjj ga_t_any grid=any\n"
                            "_Z9swap_badPjj ga_t_bad grid=sideways\n"
                            "_Z9swap_badPjj\n"
                            "_Z9swap_badPjj ga_t_bad grid=any extra\n";

/* An original (a module function) and its replacement in the library. */
typedef struct pair {
    stub_kernel_t *orig, *repl;
} pair_t;

static pair_t pair(const char *orig, const char *repl)
{
    return (pair_t){stub_kernel(orig, false), stub_kernel(repl, true)};
}

/* The program launches k (grid 7, block 96) with value v: what ran? */
static const stub_run_t *launch(stub_kernel_t *k, uint32_t v, CUresult *r)
{
    unsigned from = stub_nran;
    *r = stub_call(&rt, GA_ID_cuLaunchKernel, k, (const unsigned[]){7, 1, 1},
                   (const unsigned[]){96, 1, 1}, 0, s, v, NULL);
    return stub_ran_one(from);
}

/* The second launch of the original (the first always goes as made): did the
 * replacement run in its place, with the program's arguments and grid? */
static bool swapped(pair_t p)
{
    CUresult r;
    launch(p.orig, 1, &r);
    const stub_run_t *run = launch(p.orig, 2, &r);
    if (r != CUDA_SUCCESS || run->arg[0] != stub_arg || run->arg[1] != 2)
        return false;
    return run->k == p.repl && run->grid[0] == 7 && run->block[0] == 96;
}

static bool kept(pair_t p)
{
    CUresult r;
    launch(p.orig, 1, &r);
    const stub_run_t *run = launch(p.orig, 2, &r);
    return r == CUDA_SUCCESS && run->k == p.orig && run->grid[0] == 7 && run->arg[1] == 2 &&
           p.repl->attempts == 0;
}

static void count_rule(void *arg, const char *orig, const char *repl, bool any)
{
    (void)orig, (void)repl;
    ((int *)arg)[0]++;
    ((int *)arg)[1] += any;
}

int main(void)
{
    stub_runtime(&rt);
    s = (CUstream)&stub_streams[0];
    static char extra[160];
    snprintf(extra, sizeof extra, "%s:%s", stub_file(0, "not really a fatbin"),
             stub_file(1, table));
    rt.cfg.kernels = true;
    rt.cfg.kernels_extra = extra;
    rt.cfg.kernels_deny = "*deny*";
    stub_log_capture();
    pair_t ok = pair("_Z7swap_okPjj", "ga_t_ok");
    pair_t cnt = pair("_Z9swap_cntPjj", "ga_t_cnt");
    pair_t off = pair("_Z9swap_offPjj", "ga_t_off");
    pair_t size = pair("_Z10swap_sizePjj", "ga_t_size");
    pair_t deny = pair("_Z10swap_denyPjj", "ga_t_deny");
    pair_t fail = pair("_Z10swap_failPjj", "ga_t_fail");
    pair_t any = pair("_Z9swap_anyPjj", "ga_t_any");
    pair_t bad = pair("_Z9swap_badPjj", "ga_t_bad");
    cnt.repl->nparams = 3, cnt.repl->offset[2] = 12, cnt.repl->size[2] = 4;
    off.repl->offset[1] = 12;
    size.repl->size[1] = 8;
    fail.repl->fail_launch = true;
    stub_start(&rt); /* reads the tables */

    /* the ABI: identical, or left alone */
    CHECK(swapped(ok));
    CHECK(kept(cnt));
    CHECK(kept(off));
    CHECK(kept(size));
    CHECK(kept(deny));

    /* the replacement refused by the driver: the original runs, then always */
    CUresult r;
    launch(fail.orig, 1, &r);
    const stub_run_t *run = launch(fail.orig, 2, &r);
    CHECK(r == CUDA_SUCCESS && run->k == fail.orig && run->arg[1] == 2 && fail.repl->attempts == 1);
    run = launch(fail.orig, 3, &r);
    CHECK(r == CUDA_SUCCESS && run->k == fail.orig && fail.repl->attempts == 1);

    /* grid=any: 256-thread blocks, as many as are resident at once */
    launch(any.orig, 1, &r);
    run = launch(any.orig, 2, &r);
    CHECK(r == CUDA_SUCCESS && run->k == any.repl && run->arg[1] == 2 &&
          run->grid[0] == STUB_SMS * STUB_PER_SM && run->block[0] == 256);

    /* malformed lines: each named, none applied */
    char at[3][200];
    for (int i = 0; i < 3; i++)
        snprintf(at[i], sizeof at[i], "%s:%d: expected", stub_paths[1], 10 + i);
    CHECK(stub_logged(at[0]) && stub_logged(at[1]) && stub_logged(at[2]));
    CHECK(kept(bad));
    int rules[2] = {0, 0};
    CHECK(ga_swap_parse_table(table, sizeof table - 1, "t", count_rule, rules) == 7 &&
          rules[0] == 7 && rules[1] == 1);
    stub_files_remove();
    return check_done("test_swap");
}
