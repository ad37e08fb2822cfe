/* test_config.c - the GPUACCEL_* parsers and the loader: good values parse,
 * malformed ones are refused and leave the default, every default is valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/config.h"
#include "tracking/sequence.h"

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
    for (const char *const *e = fake_env; e && *e; e += 2)
        if (!strcmp(e[0], name))
            return e[1];
    return NULL;
}

/* The problems the last load reported. */
static char problems[16][420];
static unsigned n_problems;

static void note_problem(void *ctx, const char *var, const char *text)
{
    (void)ctx;
    CHECK(var && !strncmp(var, "GPUACCEL", 8) && strstr(text, var));
    if (n_problems < 16)
        snprintf(problems[n_problems], sizeof problems[0], "%s", text);
    n_problems++;
}

static bool has_problem(const char *part)
{
    for (unsigned i = 0; i < n_problems && i < 16; i++)
        if (strstr(problems[i], part))
            return true;
    fprintf(stderr, "no problem says '%s'; %u reported:\n", part, n_problems);
    for (unsigned i = 0; i < n_problems && i < 16; i++)
        fprintf(stderr, "  %s\n", problems[i]);
    return false;
}

static void load(ga_config_t *cfg, char *const *names)
{
    n_problems = 0;
    ga_config_src_t src = {.get = fake_getenv, .env = names, .problem = note_problem};
    ga_config_load(cfg, &src);
}

/* The default of a feature's switch under GPUACCEL=safe, from the table. */
static bool safe_default(const char *name)
{
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        if (!strcmp(ga_config_docs[i].name, name))
            return ga_config_docs[i].def[0] == '1';
    CHECK(!"no such variable");
    return false;
}

static const ga_config_doc_t *doc(const char *name)
{
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        if (!strcmp(ga_config_docs[i].name, name))
            return &ga_config_docs[i];
    return NULL;
}

/* the four words of each truth value, in any case, and nothing else */
TEST_CASE(parse_bool)
{
    bool b = false;
    CHECK(ga_parse_bool("1", &b) && b);
    CHECK(ga_parse_bool("off", &b) && !b);
    CHECK(ga_parse_bool("TRUE", &b) && b);
    CHECK(!ga_parse_bool("2", &b) && b);
    CHECK(!ga_parse_bool("", &b));
    CHECK(!ga_parse_bool("1 ", &b));
}

/* byte counts: binary suffixes, fractions with a suffix, no overflow */
TEST_CASE(parse_size)
{
    uint64_t v = 0;
    CHECK(ga_parse_size("4096", &v) && v == 4096);
    CHECK(ga_parse_size("64K", &v) && v == 65536);
    CHECK(ga_parse_size("64KiB", &v) && v == 65536);
    CHECK(ga_parse_size("2g", &v) && v == (2ull << 30));
    CHECK(!ga_parse_size("-1", &v));
    CHECK(ga_parse_size("1.5G", &v) && v == (3ull << 29));
    CHECK(ga_parse_size("0.25K", &v) && v == 256);
    CHECK(ga_parse_size("50GB", &v) && v == (50ull << 30));
    CHECK(ga_parse_size("1.0005T", &v) && v == (1ull << 40)); /* three digits taken */
    CHECK(!ga_parse_size("1.5", &v)); /* a fraction of a byte */
    CHECK(!ga_parse_size("1.G", &v));
    CHECK(!ga_parse_size(".5G", &v));
    CHECK(!ga_parse_size("12Q", &v));
    CHECK(!ga_parse_size("99999999999999999999", &v));
    CHECK(!ga_parse_size("17179869184T", &v)); /* overflows 64 bits */
    CHECK(!ga_parse_size("", &v));
}

/* whole numbers: no suffix, 32 bits */
TEST_CASE(parse_uint)
{
    unsigned u = 7;
    CHECK(ga_parse_uint("5", &u) && u == 5);
    CHECK(!ga_parse_uint("5K", &u) && u == 5);
    CHECK(!ga_parse_uint("4294967296", &u));
}

/* log levels by name ("warning" too) */
TEST_CASE(parse_level)
{
    int level = -1;
    CHECK(ga_parse_level("debug", &level) && level == 3);
    CHECK(ga_parse_level("WARNING", &level) && level == 1);
    CHECK(!ga_parse_level("loud", &level) && level == 1);
}

/* limits: a byte count (0 keeps nothing) or 1% to 100% */
TEST_CASE(parse_limit)
{
    ga_limit_t lim;
    CHECK(ga_parse_limit("50%", &lim) && lim.bytes == 0 && lim.percent == 50);
    CHECK(ga_parse_limit("8G", &lim) && lim.bytes == (8ull << 30));
    CHECK(!ga_parse_limit("0%", &lim));
    CHECK(ga_parse_limit("0", &lim) && lim.bytes == 0 && lim.percent == 0); /* keep nothing */
    CHECK(ga_parse_limit("1.5G", &lim) && lim.bytes == (3ull << 29));
    CHECK(!ga_parse_limit("101%", &lim));
    CHECK(!ga_parse_limit("%", &lim));
    CHECK(!ga_parse_limit("x%", &lim));
}

/* the defaults, then a mixed environment: good values taken, bad ones ignored */
TEST_CASE(defaults_and_mixed)
{
    ga_config_t cfg;
    fake_env = NULL;
    load(&cfg, NULL);
    CHECK(cfg.enabled && cfg.mode == GA_MODE_SAFE && n_problems == 0);
    CHECK(cfg.pool == safe_default("GPUACCEL_POOL") && cfg.graphs == safe_default("GPUACCEL_GRAPHS"));
    CHECK(cfg.coalesce_window == 65536 && cfg.coalesce_max == 256);
    CHECK(cfg.pool_limit.percent == 50);
    CHECK(cfg.graph_min == 5);
    CHECK(cfg.log_level == 1);

    static const char *const env[] = {
        "GPUACCEL_POOL", "1", "GPUACCEL_COALESCE", "maybe", "GPUACCEL_COALESCE_WINDOW", "1M",
        "GPUACCEL_GRAPH_MIN", "-3", "GPUACCEL_POOL_LIMIT", "16G", "GPUACCEL", "0",
        "GPUACCEL_TUNE_TABLE", "/tmp/t.txt", NULL};
    fake_env = env;
    load(&cfg, NULL);
    CHECK(cfg.pool);
    CHECK(!cfg.coalesce);
    CHECK(cfg.coalesce_window == (1u << 20));
    CHECK(cfg.graph_min == 5);
    CHECK(cfg.pool_limit.bytes == (16ull << 30));
    CHECK(cfg.enabled); /* GPUACCEL=0, yet the pool's own switch is on */
    CHECK(!strcmp(cfg.tune_table, "/tmp/t.txt"));
    CHECK(has_problem("GPUACCEL_COALESCE='maybe' is not valid: expected 1, on, yes, true, 0, off, no or false"));
    CHECK(has_problem("GPUACCEL_GRAPH_MIN='-3'"));
}

/* GPUACCEL's sets, and single switches over them; a switch that is a file name */
TEST_CASE(named_sets)
{
    static const char *const all[] = {"GPUACCEL", "all", "GPUACCEL_GRAPHS", "off", NULL};
    fake_env = all;
    ga_config_t cfg;
    load(&cfg, NULL);
    CHECK(cfg.mode == GA_MODE_ALL && cfg.pool && cfg.coalesce && cfg.tune && cfg.kernels);
    CHECK(!cfg.graphs);
    static const char *const off[] = {"GPUACCEL", "0", NULL};
    fake_env = off;
    load(&cfg, NULL);
    CHECK(!cfg.enabled && !cfg.pool && !cfg.kernels && !cfg.coalesce);
    /* A switch that is a file name (the profile) turns the library on too. */
    static const char *const prof[] = {"GPUACCEL", "0", "GPUACCEL_PROFILE", "/tmp/p", NULL};
    fake_env = prof;
    load(&cfg, NULL);
    CHECK(cfg.enabled && !cfg.pool && !strcmp(cfg.profile, "/tmp/p"));
    static const char *const safe[] = {"GPUACCEL", "safe", "GPUACCEL_COALESCE", "yes", NULL};
    fake_env = safe;
    load(&cfg, NULL);
    CHECK(cfg.enabled && cfg.coalesce && cfg.pool == safe_default("GPUACCEL_POOL"));
}

/* problems: each named once, with what to do; limits of 0 and good settings say
 * nothing */
TEST_CASE(problems)
{
    static const char *const bad[] = {"GPUACCEL_POOL_LIMIT", "50", "GPUACCEL_TUNE", "1",
                                      "GPUACCEL_COALESCE", "0", "GPUACCEL_COALESCE_MAX", "1K", NULL};
    static char *const names[] = {"GPUACCEL_POOLL=1", "GPUACCEL_WHATEVER_ELSE=2", "PATH=/bin",
                                  "GPUACCEL_POOL_LIMIT=50", NULL};
    ga_config_t cfg;
    fake_env = bad;
    load(&cfg, names);
    CHECK(cfg.pool_limit.bytes == 50);
    CHECK(has_problem("GPUACCEL_POOL_LIMIT=50 means 50 bytes; write 50% for a share"));
    CHECK(has_problem("GPUACCEL_TUNE=1 without GPUACCEL_TUNE_TABLE"));
    CHECK(has_problem("GPUACCEL_COALESCE_MAX is set but GPUACCEL_COALESCE is off"));
    CHECK(has_problem("GPUACCEL_POOLL is not a setting of this library; did you mean GPUACCEL_POOL?"));
    CHECK(has_problem("GPUACCEL_WHATEVER_ELSE is not a setting of this library (gpuaccel env"));
    CHECK(n_problems == 5);
    static const char *const zero[] = {"GPUACCEL_POOL_LIMIT", "0", "GPUACCEL_POOL", "1", NULL};
    fake_env = zero;
    load(&cfg, NULL);
    /* 0 keeps nothing, for the pool as for pinned memory: taken, no problem */
    CHECK(cfg.pool_limit.percent == 0 && cfg.pool_limit.bytes == 0 && n_problems == 0);
    static const char *const pin0[] = {"GPUACCEL_PINNED_LIMIT", "0", NULL};
    fake_env = pin0;
    load(&cfg, NULL);
    CHECK(cfg.pinned_limit == 0 && n_problems == 0);
    static const char *const fine[] = {"GPUACCEL_POOL_LIMIT", "2G", "GPUACCEL_POOL", "1",
                                       "GPUACCEL_TUNE", "1", "GPUACCEL_TUNE_TABLE", "/t", NULL};
    fake_env = fine;
    load(&cfg, NULL);
    CHECK(n_problems == 0);
}

/* GPUACCEL_CONFIG: a file of NAME=VALUE lines; the environment wins; bad lines
 * named by number */
TEST_CASE(config_file)
{
    char path[] = "/tmp/test_config_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    static const char text[] = "# written by gpuaccel advise\nGPUACCEL_COALESCE=1\nGPUACCEL_GRAPHS=1\n"
                               "  GPUACCEL_GRAPH_MIN = 9  # spaces\n\nGPUACCEL_POOL=0\n"
                               "nonsense\nGPUACCEL_NOPE=1\n";
    CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    close(fd);
    const char *file_env[] = {"GPUACCEL_CONFIG", path, "GPUACCEL_POOL", "1", NULL};
    ga_config_t cfg;
    fake_env = file_env;
    load(&cfg, NULL);
    CHECK(cfg.coalesce && cfg.graph_min == 9 && cfg.pool);
    CHECK(cfg.raw[1] && !strcmp(cfg.raw[1], path));
    CHECK(has_problem(":7: expected NAME=VALUE; line skipped"));
    CHECK(has_problem(":8: GPUACCEL_NOPE is not a setting it may hold"));
    CHECK(n_problems == 2);
    free(cfg.file_text);
    unlink(path);
    const char *missing[] = {"GPUACCEL_CONFIG", "/nonexistent/gpuaccel.conf", NULL};
    fake_env = missing;
    load(&cfg, NULL);
    CHECK(has_problem("GPUACCEL_CONFIG=/nonexistent/gpuaccel.conf: cannot read the file"));
}

/* Ranges (the table's R rows): bounds in the variable's own notation, in order,
 * around the default, and taken as set; one past either is reported with the
 * range, and the default is used. */
TEST_CASE(ranges)
{
    char buf[64], def_text[64], val[32];
    ga_config_t cfg;
    unsigned ranged = 0;
    for (unsigned i = 0; i < ga_config_ndocs; i++) {
        const ga_config_doc_t *d = &ga_config_docs[i];
        const char *min, *max;
        if (!ga_config_range(i, &min, &max))
            continue;
        ranged++;
        uint64_t lo = 0, hi = UINT64_MAX, def = 0;
        unsigned whole;
        CHECK(d->type == GA_TYPE_UINT || d->type == GA_TYPE_SIZE);
        CHECK(d->type == GA_TYPE_SIZE || ga_parse_uint(min, &whole));
        CHECK(d->type == GA_TYPE_SIZE || !*max || ga_parse_uint(max, &whole));
        CHECK(ga_parse_size(min, &lo) && (!*max || ga_parse_size(max, &hi)));
        CHECK(ga_parse_size(d->def, &def) && lo <= def && def <= hi);
        const char *one[] = {d->name, val, NULL};
        fake_env = NULL;
        load(&cfg, NULL);
        snprintf(def_text, sizeof def_text, "%s", ga_config_effective(&cfg, i, buf, sizeof buf));
        fake_env = one;
        snprintf(val, sizeof val, "%s", min);
        load(&cfg, NULL);
        CHECK(!strcmp(ga_config_effective(&cfg, i, buf, sizeof buf), min));
        if (lo > 0) {
            snprintf(val, sizeof val, "%llu", (unsigned long long)lo - 1);
            load(&cfg, NULL);
            CHECK(has_problem("is out of range: expected"));
            CHECK(!strcmp(ga_config_effective(&cfg, i, buf, sizeof buf), def_text));
        }
        if (*max) {
            snprintf(val, sizeof val, "%s", max);
            load(&cfg, NULL);
            CHECK(!strcmp(ga_config_effective(&cfg, i, buf, sizeof buf), max));
            snprintf(val, sizeof val, "%llu", (unsigned long long)hi + 1);
            load(&cfg, NULL);
            CHECK(has_problem("is out of range: expected"));
            CHECK(!strcmp(ga_config_effective(&cfg, i, buf, sizeof buf), def_text));
        }
    }
    CHECK(ranged >= 7);
    static const char *const few[] = {"GPUACCEL_GRAPH_MIN", "1", "GPUACCEL_GRAPHS", "1",
                                      "GPUACCEL_STAGING_THREADS", "1000", NULL};
    fake_env = few;
    load(&cfg, NULL);
    CHECK(cfg.graph_min == 5 && cfg.staging_threads == 0 && n_problems == 2);
    CHECK(has_problem("GPUACCEL_GRAPH_MIN='1' is out of range: expected 2 to 4096; using the "
                      "default '5'"));
    CHECK(has_problem("GPUACCEL_STAGING_THREADS='1000' is out of range: expected 0 to 64; "
                      "using the default '0'"));
    /* a sequence the detector hands over is never longer than the largest minimum */
    const char *gmin, *gmax;
    CHECK(ga_config_range(doc("GPUACCEL_GRAPH_MIN") - ga_config_docs, &gmin, &gmax));
    CHECK(strtoul(gmax, NULL, 10) == GA_SEQ_MAX_SEGMENT);
}

/* every effective value prints */
TEST_CASE(effective_values)
{
    ga_config_t cfg;
    char buf[64];
    fake_env = NULL;
    load(&cfg, NULL);
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        CHECK(*ga_config_effective(&cfg, i, buf, sizeof buf));
    CHECK(!strcmp(ga_config_effective(&cfg, 0, buf, sizeof buf), "safe"));
}

/* every row names a GPUACCEL variable and has help; every feature's switch
 * (features.def) is a row, boolean for the toggled ones; every `needs` names a
 * row */
TEST_CASE(table_rows)
{
    CHECK(ga_config_ndocs >= 15);
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        CHECK(!strncmp(ga_config_docs[i].name, "GPUACCEL", 8) && *ga_config_docs[i].help);

#define GA_FEATURE(name, var, toggled)                                                      \
    {                                                                                       \
        const ga_config_doc_t *d_ = doc(#var);                                              \
        CHECK(d_ != NULL);                                                                  \
        CHECK(!d_ || !(toggled) || d_->type == GA_TYPE_FEATURE);                            \
    }
#include "features/features.def"
#undef GA_FEATURE
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        CHECK(!*ga_config_docs[i].needs || doc(ga_config_docs[i].needs));
}

int main(void)
{
    RUN_CASE(parse_bool);
    RUN_CASE(parse_size);
    RUN_CASE(parse_uint);
    RUN_CASE(parse_level);
    RUN_CASE(parse_limit);
    RUN_CASE(defaults_and_mixed);
    RUN_CASE(named_sets);
    RUN_CASE(problems);
    RUN_CASE(config_file);
    RUN_CASE(ranges);
    RUN_CASE(effective_values);
    RUN_CASE(table_rows);
    return check_done("test_config");
}
