/* config.c - parse the GPUACCEL_* variables (see the table in config.h).
 *
 * Pure functions over strings (and the one settings file GPUACCEL_CONFIG
 * names): no CUDA, no global state, no logging: problems go to the caller's
 * function (the library logs them, `gpuaccel env` tabulates them). Unit-tested. */
#define _GNU_SOURCE /* strsep, sched_getaffinity */
#include "core/config.h"

#include <sched.h>
#include <unistd.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/textfile.h"

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

/* A decimal count with an optional binary suffix (K, M, G, T; KiB and KB
 * alike mean 1024): 4096, 64K, 50GB, and with a suffix a fraction: 1.5G is
 * 1.5 x 2^30 bytes, rounded down to a whole byte. */
bool ga_parse_size(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    uint64_t frac = 0, scale = 1; /* the fraction's digits, over scale */
    if (*end == '.' && isdigit((unsigned char)end[1])) {
        for (end++; isdigit((unsigned char)*end); end++)
            if (scale < 1000) /* three digits: (frac << 40) / scale stays in 64 bits */
                frac = frac * 10 + (uint64_t)(*end - '0'), scale *= 10;
    }
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
    if (*end || (scale > 1 && !shift) || (shift && v >= (UINT64_MAX >> shift)))
        return false; /* a fraction of a byte means nothing */
    *out = ((uint64_t)v << shift) + (frac << shift) / scale;
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
    /* 0: keep nothing (every free goes to the driver), as a size limit of 0
     * says for page-locked memory; 100% says "all of the device". */
    *out = (ga_limit_t){.bytes = bytes, .percent = 0};
    return true;
}

bool ga_parse_mode(const char *s, ga_mode_t *out)
{
    bool b;
    if (!strcasecmp(s, "safe"))
        return *out = GA_MODE_SAFE, true;
    if (!strcasecmp(s, "all"))
        return *out = GA_MODE_ALL, true;
    if (!ga_parse_bool(s, &b))
        return false;
    *out = b ? GA_MODE_SAFE : GA_MODE_OFF;
    return true;
}

static bool parse_str(const char *s, const char **out)
{
    *out = s;
    return true;
}

#define GA_PARSER_MODE    ga_parse_mode
#define GA_PARSER_FEATURE ga_parse_bool
#define GA_PARSER_BOOL    ga_parse_bool
#define GA_PARSER_LEVEL   ga_parse_level
#define GA_PARSER_STR     parse_str
#define GA_PARSER_SIZE    ga_parse_size
#define GA_PARSER_UINT    ga_parse_uint
#define GA_PARSER_LIMIT   ga_parse_limit

#define GA_BOOLS "1, on, yes, true, 0, off, no or false"
#define GA_EXPECT_MODE    "0, safe or all (or " GA_BOOLS ")"
#define GA_EXPECT_FEATURE GA_BOOLS
#define GA_EXPECT_BOOL    GA_BOOLS
#define GA_EXPECT_LEVEL   "error, warn, info or debug"
#define GA_EXPECT_STR     "a string"
#define GA_EXPECT_SIZE    "a byte count such as 4096 or 64K"
#define GA_EXPECT_UINT    "a whole number"
#define GA_EXPECT_LIMIT   "a byte count (64M, 8G) or a percentage (1-100%)"

enum {
#define GA_CONFIG_ID(var, type, field, def, needs, help) GA_CFG_##var,
    GA_CONFIG_VARS(GA_CONFIG_ID)
#undef GA_CONFIG_ID
    GA_CFG_N
};

const ga_config_doc_t ga_config_docs[] = {
#define GA_CONFIG_DOC(var, type, field, def, needs, help)                                   \
    {#var, def, needs, help, GA_TYPE_##type},
    GA_CONFIG_VARS(GA_CONFIG_DOC)
#undef GA_CONFIG_DOC
};
const unsigned ga_config_ndocs = GA_CFG_N;

/* The ranges (R rows), each bounding a number. */
enum {
#define GA_CONFIG_TYPEOF(var, type, field, def, needs, help) GA_TYPEOF_##var = GA_TYPE_##type,
    GA_CONFIG_VARS(GA_CONFIG_TYPEOF)
#undef GA_CONFIG_TYPEOF
};
#define GA_CONFIG_RANGE_TYPE(var, min, max)                                                 \
    _Static_assert((int)GA_TYPEOF_##var == GA_TYPE_UINT ||                                  \
                       (int)GA_TYPEOF_##var == GA_TYPE_SIZE,                                \
                   #var ": a range bounds a whole number or a byte count");
GA_CONFIG_RANGES(GA_CONFIG_RANGE_TYPE)
#undef GA_CONFIG_RANGE_TYPE

typedef struct range {
    unsigned var;
    const char *min, *max;
} range_t;
static const range_t ranges[] = {
#define GA_CONFIG_RANGE(var, min, max) {GA_CFG_##var, min, max},
    GA_CONFIG_RANGES(GA_CONFIG_RANGE)
#undef GA_CONFIG_RANGE
    {GA_CFG_N, "", ""}, /* the end (the table may have no range) */
};

bool ga_config_range(unsigned i, const char **min, const char **max)
{
    for (const range_t *r = ranges; r->var < GA_CFG_N; r++)
        if (r->var == i)
            return *min = r->min, *max = r->max, true;
    return false;
}

static int doc_index(const char *name, size_t len)
{
    for (unsigned i = 0; i < GA_CFG_N; i++)
        if (strlen(ga_config_docs[i].name) == len && !strncmp(ga_config_docs[i].name, name, len))
            return (int)i;
    return -1;
}

/* ---- GPUACCEL_CONFIG: a file of NAME=VALUE lines -------------------------------- */

/* The file's settings: at most one value per variable, pointing into text. */
typedef struct file_vals {
    const char *val[GA_CFG_N];
    const ga_config_src_t *src;
    const char *path;
    unsigned line;
} file_vals_t;

static void problemf(const ga_config_src_t *src, const char *var, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problemf(const ga_config_src_t *src, const char *var, const char *fmt, ...)
{
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (src->problem)
        src->problem(src->ctx, var, text);
}

static char *trim(char *t)
{
    while (isspace((unsigned char)*t))
        t++;
    char *end = t + strlen(t);
    while (end > t && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return t;
}

/* One line of the file: blank, a # comment, or NAME=VALUE. */
static void file_line(file_vals_t *f, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *t = trim(line), *eq = strchr(t, '=');
    if (!*t)
        return;
    if (!eq || eq == t) {
        problemf(f->src, "GPUACCEL_CONFIG", "GPUACCEL_CONFIG file %s:%u: expected NAME=VALUE; "
                 "line skipped", f->path, f->line);
        return;
    }
    *eq = '\0';
    char *name = trim(t), *val = trim(eq + 1);
    int i = doc_index(name, strlen(name));
    if (i < 0 || i == GA_CFG_GPUACCEL_CONFIG)
        problemf(f->src, "GPUACCEL_CONFIG", "GPUACCEL_CONFIG file %s:%u: %s is not a setting "
                 "it may hold; line skipped", f->path, f->line, name);
    else
        f->val[i] = val;
}

/* Read the file named by GPUACCEL_CONFIG (if any) into cfg->file_text. The
 * lines are walked here rather than with textfile.h's walker: problems go to
 * the caller's function, with their line numbers. */
static void file_load(ga_config_t *cfg, const ga_config_src_t *src, file_vals_t *f)
{
    memset(f, 0, sizeof *f);
    f->src = src;
    const char *path = src->get("GPUACCEL_CONFIG");
    if (!path || !*path)
        return;
    size_t len;
    errno = 0;
    cfg->file_text = ga_read_file(path, 1 << 20, &len);
    if (!cfg->file_text) {
        problemf(src, "GPUACCEL_CONFIG", "GPUACCEL_CONFIG=%s: cannot read the file (%s); "
                 "no settings taken from it", path,
                 errno == EFBIG ? "larger than 1 MiB" : errno ? strerror(errno) : "unreadable");
        return;
    }
    f->path = path;
    for (char *p = cfg->file_text, *line; (line = strsep(&p, "\n")) != NULL;) {
        f->line++;
        file_line(f, line);
    }
}

/* ---- checks across variables ----------------------------------------------------- */

/* Edit distance, for "did you mean": libc has no such function; names are
 * short (under 32 characters), so the two-row table is small. */
static unsigned distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    unsigned prev[41], cur[41];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned sub = prev[j - 1] + (toupper((unsigned char)a[i - 1]) != b[j - 1]);
            unsigned del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

static void check_unknown(const ga_config_src_t *src)
{
    for (char *const *e = src->env; e && *e; e++) {
        if (strncmp(*e, "GPUACCEL", 8) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (doc_index(*e, len) >= 0)
            continue;
        unsigned best = 99;
        const char *near = NULL;
        for (unsigned i = 0; i < GA_CFG_N; i++) {
            unsigned d = distance(*e, len, ga_config_docs[i].name);
            if (d < best)
                best = d, near = ga_config_docs[i].name;
        }
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), *e);
        if (near && best <= 3)
            problemf(src, name, "%s is not a setting of this library; did you mean %s?", name,
                     near);
        else
            problemf(src, name, "%s is not a setting of this library (gpuaccel env lists them)",
                     name);
    }
}

/* A limit set as a plain number under 1 MiB: most likely a forgotten % or
 * unit. raw holds valid values only by now. */
static void check_limit_units(const ga_config_src_t *src, const char *const raw[GA_CFG_N])
{
    for (unsigned i = 0; i < GA_CFG_N; i++) {
        const char *v = raw[i], *var = ga_config_docs[i].name;
        ga_limit_t lim;
        size_t n = v ? strlen(v) : 0;
        if (!v || ga_config_docs[i].type != GA_TYPE_LIMIT || !ga_parse_limit(v, &lim) ||
            !lim.bytes || lim.bytes >= (1u << 20) || !n || !isdigit((unsigned char)v[n - 1]))
            continue;
        problemf(src, var, "%s=%s means %s bytes; write %s%% for a share of device memory or "
                 "%sM for mebibytes", var, v, v, v, v);
    }
}

/* A byte count whose default has a unit (64K), set as a small plain number:
 * most likely the unit was forgotten. */
static void check_size_units(const ga_config_src_t *src, const char *const raw[GA_CFG_N])
{
    for (unsigned i = 0; i < GA_CFG_N; i++) {
        const char *v = raw[i], *def = ga_config_docs[i].def;
        size_t dl = strlen(def);
        uint64_t bytes;
        if (!v || ga_config_docs[i].type != GA_TYPE_SIZE || !dl || isdigit((unsigned char)def[dl - 1]) ||
            strspn(v, "0123456789") != strlen(v) || !ga_parse_size(v, &bytes) || bytes >= 1024 ||
            bytes == 0) /* 0 is 0 in any unit */
            continue;
        problemf(src, ga_config_docs[i].name, "%s=%s means %s bytes (the default is %s); write "
                 "%sK for kibibytes", ga_config_docs[i].name, v, v, def, v);
    }
}

#define GA_ON_FEATURE(v) (v)
#define GA_ON_BOOL(v)    (v)
#define GA_ON_STR(v)     (*(v) != '\0')
#define GA_ON_MODE(v)    ((v) != GA_MODE_OFF)
#define GA_ON_LEVEL(v)   true
#define GA_ON_SIZE(v)    true
#define GA_ON_UINT(v)    true
#define GA_ON_LIMIT(v)   true

/* Is the switch named `needs` on? */
static bool switch_on(const ga_config_t *cfg, const char *needs)
{
#define GA_CONFIG_ON(var, type, field, def, nd, help)                                       \
    if (!strcmp(needs, #var))                                                               \
        return GA_ON_##type(cfg->field);
    GA_CONFIG_VARS(GA_CONFIG_ON)
#undef GA_CONFIG_ON
    return true;
}

/* A switch that cannot act without another setting (the table's W rows): one
 * line saying why. */
static void check_wants(const ga_config_t *cfg, const ga_config_src_t *src,
                        const char *const raw[GA_CFG_N])
{
#define GA_CONFIG_WANT(sw, wanted, why)                                                     \
    if (raw[GA_CFG_##sw] && switch_on(cfg, #sw) && !switch_on(cfg, #wanted))                \
        problemf(src, #sw, "%s=%s without %s: %s", #sw, raw[GA_CFG_##sw], #wanted, why);
    GA_CONFIG_WANTS(GA_CONFIG_WANT)
#undef GA_CONFIG_WANT
}

/* A number's value (a UINT's or a SIZE's), for its range. */
#define GA_NUM_UINT(v)    (v)
#define GA_NUM_SIZE(v)    (v)
#define GA_NUM_MODE(v)    0
#define GA_NUM_FEATURE(v) 0
#define GA_NUM_BOOL(v)    0
#define GA_NUM_LEVEL(v)   0
#define GA_NUM_STR(v)     0
#define GA_NUM_LIMIT(v)   0
static uint64_t number_of(const ga_config_t *cfg, unsigned i)
{
#define GA_CONFIG_NUM(var, type, field, def, needs, help)                                   \
    if (i == GA_CFG_##var)                                                                  \
        return (uint64_t)GA_NUM_##type(cfg->field);
    GA_CONFIG_VARS(GA_CONFIG_NUM)
#undef GA_CONFIG_NUM
    return 0;
}

static void use_default(ga_config_t *cfg, unsigned i)
{
#define GA_CONFIG_DEF(var, type, field, def, needs, help)                                   \
    if (i == GA_CFG_##var)                                                                  \
        (void)GA_PARSER_##type(def, &cfg->field);
    GA_CONFIG_VARS(GA_CONFIG_DEF)
#undef GA_CONFIG_DEF
}

/* A number set outside its range (the table's R rows): one line naming the
 * range, and the default. The bounds are checked by the unit tests. */
static void check_ranges(ga_config_t *cfg, const ga_config_src_t *src, const char *raw[GA_CFG_N])
{
    for (const range_t *r = ranges; r->var < GA_CFG_N; r++) {
        uint64_t v = number_of(cfg, r->var), lo = 0, hi = UINT64_MAX;
        (void)ga_parse_size(r->min, &lo);
        if (*r->max)
            (void)ga_parse_size(r->max, &hi);
        if (!raw[r->var] || (v >= lo && v <= hi))
            continue;
        const ga_config_doc_t *d = &ga_config_docs[r->var];
        if (*r->max)
            problemf(src, d->name, "%s='%s' is out of range: expected %s to %s; using the "
                     "default '%s'", d->name, raw[r->var], r->min, r->max, d->def);
        else
            problemf(src, d->name, "%s='%s' is out of range: expected %s or more; using the "
                     "default '%s'", d->name, raw[r->var], r->min, d->def);
        use_default(cfg, r->var);
        raw[r->var] = NULL;
    }
}

/* ---- the loader ------------------------------------------------------------------- */

static const char *raw_value(const ga_config_src_t *src, const file_vals_t *f, unsigned i)
{
    const char *v = src->get(ga_config_docs[i].name);
    return v && *v ? v : f->val[i];
}

void ga_config_load(ga_config_t *cfg, const ga_config_src_t *src)
{
    memset(cfg, 0, sizeof *cfg);
    file_vals_t f;
    file_load(cfg, src, &f);
    const char *raw[GA_CFG_N];
    for (unsigned i = 0; i < GA_CFG_N; i++)
        raw[i] = cfg->raw[i] = raw_value(src, &f, i);
#define GA_CONFIG_LOAD(var, type, field, def, needs, help)                                  \
    {                                                                                       \
        bool ok_ = GA_PARSER_##type(def, &cfg->field);                                      \
        (void)ok_; /* defaults are checked by the unit tests */                             \
        const char *v_ = raw[GA_CFG_##var];                                                 \
        if (v_ && *v_ && !GA_PARSER_##type(v_, &cfg->field)) {                              \
            problemf(src, #var, "%s='%s' is not valid: expected %s; using the default '%s'", \
                     #var, v_, GA_EXPECT_##type, def);                                      \
            raw[GA_CFG_##var] = NULL;                                                       \
        }                                                                                   \
    }
    GA_CONFIG_VARS(GA_CONFIG_LOAD)
#undef GA_CONFIG_LOAD
    check_ranges(cfg, src, raw);
    /* Features not set one by one follow GPUACCEL's set; a feature's own
     * switch wins over the set, whichever it is (GPUACCEL=0
     * GPUACCEL_COALESCE=1 is coalescing alone). The library is active when
     * any feature is on. */
#define GA_CONFIG_SET(var, type, field, def, needs, help) GA_SET_##type(var, field, def)
#define GA_SET_FEATURE(var, field, def)                                                     \
    if (!raw[GA_CFG_##var])                                                                 \
        cfg->field = cfg->mode == GA_MODE_ALL || (cfg->mode == GA_MODE_SAFE && def[0] == '1');
#define GA_SET_MODE(var, field, def)
#define GA_SET_BOOL(var, field, def)
#define GA_SET_LEVEL(var, field, def)
#define GA_SET_STR(var, field, def)
#define GA_SET_SIZE(var, field, def)
#define GA_SET_UINT(var, field, def)
#define GA_SET_LIMIT(var, field, def)
    GA_CONFIG_VARS(GA_CONFIG_SET)
#undef GA_CONFIG_SET
    /* A feature's own row that needs no other switch is a switch: a boolean,
     * or (the profile, the tuner) a file name. */
#define GA_CONFIG_ANY(var, type, field, def, needs, help)                                   \
    if (!needs[0])                                                                          \
        cfg->enabled |= GA_ON_##type(cfg->field);
    GA_FEATURE_SETTINGS(GA_CONFIG_ANY, GA_CONFIG_NO_W, GA_CONFIG_NO_R)
#undef GA_CONFIG_ANY
    check_limit_units(src, raw);
    check_size_units(src, raw);
    if (cfg->enabled) {
        for (unsigned i = 0; i < GA_CFG_N; i++)
            if (raw[i] && *ga_config_docs[i].needs && !switch_on(cfg, ga_config_docs[i].needs))
                problemf(src, ga_config_docs[i].name, "%s is set but %s is off: it has no effect",
                         ga_config_docs[i].name, ga_config_docs[i].needs);
        check_wants(cfg, src, raw);
    }
    check_unknown(src);
}

static const char *fmt_mode(ga_mode_t m, char *buf, size_t len)
{
    static const char *const names[] = {"0", "safe", "all"};
    (void)buf, (void)len;
    return names[m];
}
static const char *fmt_bool(bool b, char *buf, size_t len)
{
    (void)buf, (void)len;
    return b ? "1" : "0";
}
static const char *fmt_level(int l, char *buf, size_t len)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    (void)buf, (void)len;
    return l >= 0 && l < 4 ? names[l] : "?";
}
static const char *fmt_str(const char *s, char *buf, size_t len)
{
    (void)buf, (void)len;
    return s && *s ? s : "(none)";
}
static const char *fmt_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (v && v % 1024 == 0 && u < 3)
        v /= 1024, u++;
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
    return buf;
}
static const char *fmt_uint(unsigned v, char *buf, size_t len)
{
    snprintf(buf, len, "%u", v);
    return buf;
}
static const char *fmt_limit(ga_limit_t l, char *buf, size_t len)
{
    if (l.bytes || !l.percent)
        return fmt_size(l.bytes, buf, len);
    snprintf(buf, len, "%u%%", l.percent);
    return buf;
}
#define GA_FMT_MODE    fmt_mode
#define GA_FMT_FEATURE fmt_bool
#define GA_FMT_BOOL    fmt_bool
#define GA_FMT_LEVEL   fmt_level
#define GA_FMT_STR     fmt_str
#define GA_FMT_SIZE    fmt_size
#define GA_FMT_UINT    fmt_uint
#define GA_FMT_LIMIT   fmt_limit

const char *ga_config_effective(const ga_config_t *cfg, unsigned i, char *buf, size_t len)
{
    unsigned k = 0;
    if (len)
        buf[0] = '\0';
#define GA_CONFIG_FMT(var, type, field, def, needs, help)                                   \
    if (k++ == i)                                                                           \
        return GA_FMT_##type(cfg->field, buf, len);
    GA_CONFIG_VARS(GA_CONFIG_FMT)
#undef GA_CONFIG_FMT
    return "";
}

size_t ga_config_staging_chunk(const ga_config_t *cfg)
{
    size_t c = cfg->staging_chunk ? (size_t)cfg->staging_chunk : (size_t)8 << 20;
    if (c < GA_STAGING_MIN_CHUNK) /* the setting's range keeps it within these: */
        c = GA_STAGING_MIN_CHUNK; /* they stay for a configuration made in code */
    if (c > (size_t)1 << 30)
        c = (size_t)1 << 30;
    return (c + 4095) & ~(size_t)4095;
}

size_t ga_config_staging_ring_chunk(size_t max, uint64_t t)
{
    uint64_t room = t / ((uint64_t)GA_STAGING_RING_SHARE * GA_STAGING_SLOTS);
    if (room >= max)
        return max;
    if (room < GA_STAGING_MIN_CHUNK)
        return 0;
    size_t c = GA_STAGING_MIN_CHUNK;
    while ((uint64_t)c * 2 <= room)
        c *= 2;
    return c;
}

size_t ga_config_staging_slot(size_t max, uint64_t t, size_t largest)
{
    size_t want = ga_config_staging_ring_chunk(max, t), cap = GA_STAGING_MIN_CHUNK;
    if (largest > GA_STAGING_MIN_CHUNK)
        cap = (size_t)1 << (64 - (unsigned)__builtin_clzll((unsigned long long)(largest - 1)));
    return want < cap ? want : cap;
}

unsigned ga_config_staging_threads(const ga_config_t *cfg)
{
    if (cfg->staging_threads)
        return cfg->staging_threads;
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                             : sysconf(_SC_NPROCESSORS_ONLN);
    unsigned t = cpus >= 2 ? (unsigned)(cpus * 3 / 4) : 1;
    return t > 12 ? 12 : t;
}
