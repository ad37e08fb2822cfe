/* test_config.c - the GPUACCEL_* parsers and the loader: good values parse,
 * malformed ones are refused and leave the default, every default is valid. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
    for (const char *const *e = fake_env; e && *e; e += 2)
        if (!strcmp(e[0], name))
            return e[1];
    return NULL;
}

int main(void)
{
    bool b = false;
    CHECK(ga_parse_bool("1", &b) && b);
    CHECK(ga_parse_bool("off", &b) && !b);
    CHECK(ga_parse_bool("TRUE", &b) && b);
    CHECK(!ga_parse_bool("2", &b) && b);
    CHECK(!ga_parse_bool("", &b));
    CHECK(!ga_parse_bool("1 ", &b));

    uint64_t v = 0;
    CHECK(ga_parse_size("4096", &v) && v == 4096);
    CHECK(ga_parse_size("64K", &v) && v == 65536);
    CHECK(ga_parse_size("64KiB", &v) && v == 65536);
    CHECK(ga_parse_size("2g", &v) && v == (2ull << 30));
    CHECK(!ga_parse_size("-1", &v));
    CHECK(!ga_parse_size("1.5G", &v));
    CHECK(!ga_parse_size("12Q", &v));
    CHECK(!ga_parse_size("99999999999999999999", &v));
    CHECK(!ga_parse_size("17179869184T", &v)); /* overflows 64 bits */
    CHECK(!ga_parse_size("", &v));

    unsigned u = 7;
    CHECK(ga_parse_uint("5", &u) && u == 5);
    CHECK(!ga_parse_uint("5K", &u) && u == 5);
    CHECK(!ga_parse_uint("4294967296", &u));

    int level = -1;
    CHECK(ga_parse_level("debug", &level) && level == 3);
    CHECK(ga_parse_level("WARNING", &level) && level == 1);
    CHECK(!ga_parse_level("loud", &level) && level == 1);

    ga_limit_t lim;
    CHECK(ga_parse_limit("50%", &lim) && lim.bytes == 0 && lim.percent == 50);
    CHECK(ga_parse_limit("8G", &lim) && lim.bytes == (8ull << 30));
    CHECK(!ga_parse_limit("0%", &lim));
    CHECK(!ga_parse_limit("101%", &lim));
    CHECK(!ga_parse_limit("%", &lim));
    CHECK(!ga_parse_limit("x%", &lim));

    /* defaults, then a mixed environment: good values taken, bad ones ignored */
    ga_config_t cfg;
    fake_env = NULL;
    ga_config_load(&cfg, fake_getenv);
    CHECK(cfg.enabled && !cfg.pool && !cfg.coalesce && !cfg.graphs);
    CHECK(cfg.coalesce_window == 65536 && cfg.coalesce_max == 256);
    CHECK(cfg.pool_limit.percent == 50);
    CHECK(cfg.graph_min == 5);
    CHECK(cfg.log_level == 1);

    static const char *const env[] = {
        "GPUACCEL_POOL", "1", "GPUACCEL_COALESCE", "maybe", "GPUACCEL_COALESCE_WINDOW", "1M",
        "GPUACCEL_GRAPH_MIN", "-3", "GPUACCEL_POOL_LIMIT", "16G", "GPUACCEL", "0",
        "GPUACCEL_TUNE_TABLE", "/tmp/t.txt", NULL};
    fake_env = env;
    ga_config_load(&cfg, fake_getenv);
    CHECK(cfg.pool);
    CHECK(!cfg.coalesce);
    CHECK(cfg.coalesce_window == (1u << 20));
    CHECK(cfg.graph_min == 5);
    CHECK(cfg.pool_limit.bytes == (16ull << 30));
    CHECK(!cfg.enabled);
    CHECK(!strcmp(cfg.tune_table, "/tmp/t.txt"));

    CHECK(ga_config_ndocs >= 15);
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        CHECK(!strncmp(ga_config_docs[i].name, "GPUACCEL", 8) && *ga_config_docs[i].help);
    return check_done("test_config");
}
