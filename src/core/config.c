/* config.c - parse the GPUACCEL_* variables (see the table in config.h).
 *
 * Pure functions over strings: no CUDA, no global state, unit-tested. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

bool ga_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "on", "yes", "true"};
    static const char *const no[] = {"0", "off", "no", "false"};
    for (unsigned i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) return *out = true, true;
        if (!strcasecmp(s, no[i])) return *out = false, true;
    }
    return false;
}

/* A decimal count with an optional binary suffix: 4096, 64K, 1.5G is refused. */
bool ga_parse_size(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (shift && (*end == 'B' || *end == 'b'))
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

bool ga_parse_uint(const char *s, unsigned *out)
{
    uint64_t v;
    if (!isdigit((unsigned char)*s) || strpbrk(s, "KkMmGgTtBbIi") || !ga_parse_size(s, &v) ||
        v > UINT_MAX)
        return false;
    *out = (unsigned)v;
    return true;
}

bool ga_parse_level(const char *s, int *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i]))
            return *out = i, true;
    if (!strcasecmp(s, "warning"))
        return *out = 1, true;
    return false;
}

bool ga_parse_limit(const char *s, ga_limit_t *out)
{
    size_t n = strlen(s);
    if (n >= 2 && s[n - 1] == '%') {
        char num[16];
        unsigned pct;
        if (n - 1 >= sizeof num)
            return false;
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        if (!ga_parse_uint(num, &pct) || pct == 0 || pct > 100)
            return false;
        *out = (ga_limit_t){.bytes = 0, .percent = pct};
        return true;
    }
    uint64_t bytes;
    if (!ga_parse_size(s, &bytes))
        return false;
    *out = (ga_limit_t){.bytes = bytes, .percent = bytes ? 0 : 100};
    return true;
}

static bool parse_str(const char *s, const char **out)
{
    *out = s;
    return true;
}

#define GA_PARSER_BOOL  ga_parse_bool
#define GA_PARSER_LEVEL ga_parse_level
#define GA_PARSER_STR   parse_str
#define GA_PARSER_SIZE  ga_parse_size
#define GA_PARSER_UINT  ga_parse_uint
#define GA_PARSER_LIMIT ga_parse_limit

#define GA_EXPECT_BOOL  "0 or 1"
#define GA_EXPECT_LEVEL "error, warn, info or debug"
#define GA_EXPECT_STR   "a string"
#define GA_EXPECT_SIZE  "a byte count such as 4096 or 64K"
#define GA_EXPECT_UINT  "a whole number"
#define GA_EXPECT_LIMIT "a byte count (64M, 8G) or a percentage (1-100%)"

void ga_config_load(ga_config_t *cfg, ga_getenv_fn get)
{
#define GA_CONFIG_LOAD(var, type, field, def, help)                                         \
    {                                                                                       \
        bool ok_ = GA_PARSER_##type(def, &cfg->field);                                      \
        (void)ok_; /* defaults are checked by the unit tests */                             \
        const char *v_ = get(#var);                                                         \
        if (v_ && *v_ && !GA_PARSER_##type(v_, &cfg->field))                                \
            ga_warn("%s='%s' is not valid: expected %s; using the default '%s'", #var, v_,   \
                    GA_EXPECT_##type, def);                                                 \
    }
    GA_CONFIG_VARS(GA_CONFIG_LOAD)
#undef GA_CONFIG_LOAD
}

const ga_config_doc_t ga_config_docs[] = {
#define GA_CONFIG_DOC(var, type, field, def, help) {#var, def, help},
    GA_CONFIG_VARS(GA_CONFIG_DOC)
#undef GA_CONFIG_DOC
};
const unsigned ga_config_ndocs = sizeof ga_config_docs / sizeof ga_config_docs[0];
