/* test_kernels.c - the kernels feature's decisions, through the load and launch
 * hooks over the stub driver (tests/unit/stub_more.h), with a user table
 * (GPUACCEL_KERNELS_EXTRA) whose replacements the stub library holds. A rule
 * applies only to the code it lists: the kernel's module was loaded from an
 * image that holds, under the kernel's name, code of an identity the rule
 * names (code=). A namesake with the same parameters and other code keeps
 * its own kernel, as do a kernel whose image the library never read, one whose
 * module was unloaded, and one whose rule lists no code. Then the ABI: the
 * replacement's parameter count, offsets and sizes must all match;
 * GPUACCEL_KERNELS_DENY keeps a kernel; a replacement the driver refuses to
 * launch gives way to the original, for good; grid=program keeps the
 * program's configuration, grid=any takes the library's; a malformed table
 * line is reported by its number and applies nowhere. */
#include "check.h"
#include "features/kernels/kernels.h"
#include "stub_driver.h"
#include "stub_more.h"
#include "tracking/codeid.h"

static ga_rt_t rt;
static CUstream s;

/* PTX text holding a kernel(u32 *, u32) of each name, each running `body`. */
static char *ptx(const char *const *names, const char *body)
{
    static char text[16][4096];
    static int next;
    char *t = text[next++ % 16];
    int n = snprintf(t, 4096, ".version 8.0\n.target sm_90\n.address_size 64\n");
    for (; *names; names++)
        n += snprintf(t + n, 4096 - (size_t)n,
                      "\n\t// .globl\t%s\n.visible .entry %s(\n\t.param .u64 %s_param_0,\n"
                      "\t.param .u32 %s_param_1\n)\n{\n%s\tret;\n}\n",
                      *names, *names, *names, *names, body);
    return t;
}

static uint64_t id_of(const char *image, const char *name)
{
    uint64_t id = 0;
    CHECK(ga_codeid_of(image, strlen(image), name, 0, &id));
    return id;
}

/* An original (a module function) and its replacement in the library. */
typedef struct pair {
    stub_kernel_t *orig, *repl;
} pair_t;

static pair_t pair(const char *orig, const char *repl, CUmodule m)
{
    pair_t p = {stub_kernel(orig, false), stub_kernel(repl, true)};
    p.orig->module = m;
    return p;
}

/* The program launches k (grid 7, block 96) with value v: what ran? */
static const stub_run_t *launch_grid(stub_kernel_t *k, uint32_t v, unsigned blocks,
                                     unsigned threads, CUresult *r)
{
    unsigned from = stub_nran;
    *r = stub_call(&rt, GA_ID_cuLaunchKernel, k, (const unsigned[]){blocks, 1, 1},
                   (const unsigned[]){threads, 1, 1}, 0, s, v, NULL);
    return stub_ran_one(from);
}

static const stub_run_t *launch(stub_kernel_t *k, uint32_t v, CUresult *r)
{
    return launch_grid(k, v, 7, 96, r);
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
    int before = p.repl->attempts;
    launch(p.orig, 1, &r);
    const stub_run_t *run = launch(p.orig, 2, &r);
    return r == CUDA_SUCCESS && run->k == p.orig && run->grid[0] == 7 && run->arg[1] == 2 &&
           p.repl->attempts == before;
}

static void count_rule(void *arg, const ga_kernels_rule_t *r)
{
    ((int *)arg)[0]++;
    ((int *)arg)[1] += r->any_grid;
    ((int *)arg)[2] += (int)r->ncodes;
}

/* The writes= words of the rules parsed, flattened. */
static void keep_writes(void *arg, const ga_kernels_rule_t *r)
{
    unsigned *w = arg;
    for (unsigned i = 0; i < r->nwrites && w[0] < 8; i++, w[0]++)
        w[1 + 3 * w[0]] = r->writes[i].ptr, w[2 + 3 * w[0]] = r->writes[i].count,
                      w[3 + 3 * w[0]] = r->writes[i].scale;
}

/* writes=P:Q*S: parameters below 32, S from 1 to 2^20, at most 4, any order
 * among the code words; anything else makes the line bad. */
static void writes_words(void)
{
    const char *good = "_Z1aPjj ga_a grid=any writes=0:1*4 code=0123456789abcdef\n"
                       "_Z1bPKjPjj ga_b grid=program code=0123456789abcdef writes=1:2*8 "
                       "writes=31:0*1048576\n";
    unsigned w[1 + 3 * 8] = {0};
    CHECK(ga_kernels_parse_table(good, strlen(good), "t", keep_writes, w) == 2 && w[0] == 3);
    CHECK(w[1] == 0 && w[2] == 1 && w[3] == 4 && w[4] == 1 && w[5] == 2 && w[6] == 8 &&
          w[7] == 31 && w[8] == 0 && w[9] == 1048576);
    const char *bad[] = {"writes=1:2", "writes=32:1*4", "writes=1:32*4", "writes=1:2*0",
                         "writes=1:2*1048577", "writes=-1:2*4", "writes=1:2*4x", "writes=a:2*4",
                         "writes=1:2*4 writes=1:2*4 writes=1:2*4 writes=1:2*4 writes=1:2*4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[300];
        snprintf(line, sizeof line, "_Z1aPjj ga_a grid=any code=0123456789abcdef %s\n", bad[i]);
        unsigned none[1 + 3 * 8] = {0};
        CHECK(ga_kernels_parse_table(line, strlen(line), "t", keep_writes, none) == 0);
    }
}

enum { BAD_LINE = 13 }; /* the table's first malformed line */

int main(void)
{
    stub_runtime(&rt);
    s = (CUstream)&stub_streams[0];
    static const char *const names[] = {
        "_Z7swap_okPjj",   "_Z9swap_cntPjj",  "_Z9swap_offPjj", "_Z10swap_sizePjj",
        "_Z10swap_denyPjj", "_Z10swap_failPjj", "_Z9swap_anyPjj", "_Z9swap_badPjj",
        "_Z12swap_nocodePjj", NULL};
    static const char *const unl[] = {"_Z9swap_unlPjj", NULL};
    static const char *const ok_only[] = {"_Z7swap_okPjj", NULL};
    /* The code the replacements were verified against, and a namesake of
     * _Z7swap_ok with the same parameters doing other arithmetic. */
    const char *image = ptx(names, ""), *image_u = ptx(unl, "");
    const char *other = ptx(ok_only, "\tadd.u32 %r1, %r1, 1;\n");
    uint64_t ok_id = id_of(image, "_Z7swap_okPjj");
    CHECK(id_of(other, "_Z7swap_okPjj") != ok_id);

    static char table[8192];
    int n = 0;
    n += snprintf(table + n, sizeof table - (size_t)n, "# user replacements (test_kernels.c)\n");
    static const char *const rows[][2] = {
        {"_Z7swap_okPjj", "ga_t_ok grid=program"},     {"_Z9swap_cntPjj", "ga_t_cnt grid=program"},
        {"_Z9swap_offPjj", "ga_t_off grid=program"},   {"_Z10swap_sizePjj", "ga_t_size grid=program"},
        {"_Z10swap_denyPjj", "ga_t_deny grid=program"}, {"_Z10swap_failPjj", "ga_t_fail grid=program"},
        {"_Z9swap_anyPjj", "ga_t_any grid=any"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) /* lines 2-8 */
        n += snprintf(table + n, sizeof table - (size_t)n, "%s %s code=%016llx\n", rows[i][0],
                      rows[i][1], (unsigned long long)id_of(image, rows[i][0]));
    n += snprintf(table + n, sizeof table - (size_t)n, /* line 9: two codes, the second right */
                  "_Z9swap_unlPjj ga_t_unl grid=program code=0123456789abcdef code=%016llX\n",
                  (unsigned long long)id_of(image_u, "_Z9swap_unlPjj"));
    n += snprintf(table + n, sizeof table - (size_t)n,
                  "_Z12swap_nocodePjj ga_t_nocode grid=program # no code: never applies\n"
                  "\n"
                  "# malformed:\n"
                  "_Z9swap_badPjj ga_t_bad grid=sideways code=%016llx\n"
                  "_Z9swap_badPjj\n"
                  "_Z9swap_badPjj ga_t_bad grid=any extra\n"
                  "_Z9swap_badPjj ga_t_bad grid=any code=12345\n"
                  "_Z9swap_badPjj ga_t_bad grid=any code=0123456789abcdeg\n",
                  (unsigned long long)id_of(image, "_Z9swap_badPjj"));

    static char extra[160];
    snprintf(extra, sizeof extra, "%s:%s", stub_file(0, "not really a fatbin"),
             stub_file(1, table));
    rt.cfg.kernels = true;
    rt.cfg.kernels_extra = extra;
    rt.cfg.kernels_deny = "*deny*";
    stub_log_capture();
    stub_start(&rt); /* reads the tables */

    /* The program loads its code: the library reads each image for the
     * tables' names. */
    CUmodule m = stub_load(&rt, image), m_other = stub_load(&rt, other);
    CUmodule m_u = stub_load(&rt, image_u);
    CHECK(m && m_other && m_u && m != m_other);
    static int never_read; /* a module loaded from a file: its image never seen */
    pair_t ok = pair("_Z7swap_okPjj", "ga_t_ok", m);
    pair_t cnt = pair("_Z9swap_cntPjj", "ga_t_cnt", m);
    pair_t off = pair("_Z9swap_offPjj", "ga_t_off", m);
    pair_t size = pair("_Z10swap_sizePjj", "ga_t_size", m);
    pair_t deny = pair("_Z10swap_denyPjj", "ga_t_deny", m);
    pair_t fail = pair("_Z10swap_failPjj", "ga_t_fail", m);
    pair_t any = pair("_Z9swap_anyPjj", "ga_t_any", m);
    pair_t bad = pair("_Z9swap_badPjj", "ga_t_bad", m);
    pair_t nocode = pair("_Z12swap_nocodePjj", "ga_t_nocode", m);
    pair_t unload = pair("_Z9swap_unlPjj", "ga_t_unl", m_u);
    pair_t namesake = {stub_kernel("_Z7swap_okPjj", false), ok.repl};
    namesake.orig->module = m_other;
    pair_t unseen = {stub_kernel("_Z7swap_okPjj", false), ok.repl};
    unseen.orig->module = (CUmodule)&never_read;
    cnt.repl->nparams = 3, cnt.repl->offset[2] = 12, cnt.repl->size[2] = 4;
    off.repl->offset[1] = 12;
    size.repl->size[1] = 8;
    fail.repl->fail_launch = true;

    /* the code: the verified one swapped; a namesake with equal parameters and
     * other code, code never read, and a rule without code kept */
    CHECK(swapped(ok));
    CHECK(kept(namesake));
    CHECK(kept(unseen));
    CHECK(kept(nocode));
    CHECK(swapped(ok)); /* the namesake changed nothing for the verified code */

    /* the module unloaded: its identities go with it; loaded again, they are back */
    CHECK(swapped(unload));
    CHECK(ga_hook_module_unload(&rt, GA_ID_cuModuleUnload, m_u) == CUDA_SUCCESS);
    CHECK(kept(unload));
    pair_t reloaded = {stub_kernel("_Z9swap_unlPjj", false), unload.repl};
    reloaded.orig->module = stub_load(&rt, image_u);
    CHECK(reloaded.orig->module && reloaded.orig->module != m_u);
    CHECK(swapped(reloaded));

    /* the ABI: identical, or left alone */
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

    /* grid=any: 256-thread blocks, as many as are resident at once, no more
     * than the program's launch has threads for (7 x 96: 3 blocks); the
     * occupancy asked once for the replacement, then kept */
    launch(any.orig, 1, &r);
    unsigned asked = stub_occupancy_calls;
    run = launch(any.orig, 2, &r);
    CHECK(r == CUDA_SUCCESS && run->k == any.repl && run->arg[1] == 2 && run->grid[0] == 3 &&
          run->grid[1] == 1 && run->block[0] == 256 && run->block[1] == 1);
    CHECK(stub_occupancy_calls == asked + 1);
    run = launch_grid(any.orig, 3, 100000, 1024, &r);
    CHECK(r == CUDA_SUCCESS && run->k == any.repl && run->arg[1] == 3 &&
          run->grid[0] == STUB_SMS * STUB_PER_SM && run->block[0] == 256);
    run = launch_grid(any.orig, 4, 1, 1, &r);
    CHECK(r == CUDA_SUCCESS && run->k == any.repl && run->grid[0] == 1 && run->block[0] == 256);
    CHECK(stub_occupancy_calls == asked + 1);

    /* malformed lines: each named, none applied */
    for (int i = 0; i < 5; i++) {
        char at[200];
        snprintf(at, sizeof at, "%s:%d: expected '<original> <replacement> "
                 "grid=program|grid=any code=<16 hex digits>... [writes=P:Q*S...]'",
                 stub_paths[1], BAD_LINE + i);
        CHECK(stub_logged(at));
    }
    CHECK(kept(bad));
    int rules[3] = {0, 0, 0};
    CHECK(ga_kernels_parse_table(table, strlen(table), "t", count_rule, rules) == 9 &&
          rules[0] == 9 && rules[1] == 1 && rules[2] == 9);
    writes_words();
    stub_files_remove();
    return check_done("test_kernels");
}
