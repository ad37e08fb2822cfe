/* test_profile.c - the profile's report writers over synthetic events: the
 * three files appear, FILE.json validates against doc/profile-schema.json,
 * FILE.trace.json is valid trace-event JSON (name/ph/ts/pid/tid on every
 * event, dur on every X event), and the opportunities name the features the
 * counts call for (and only those). Also: live-size tracking through many
 * frees, kernel timing over stub events, idempotent writes, a fork child's
 * own files. A small JSON parser and a JSON Schema subset validator are here
 * so the test needs nothing but libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "features/profile/format.h"
#include "features/profile/internal.h" /* staging's rings, set grown (rings_grown) */
#include "features/profile/profile.h"
#include "features/profile/window.h"
#include "core/stats.h"
#include "stub_driver.h"
#include "core/textfile.h"
#include "tracking/sequence.h"

/* ---- a minimal JSON DOM ---------------------------------------------------------- */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;
typedef struct json {
    jtype_t t;
    double num;
    bool b, is_int;
    char *str;             /* J_STR */
    unsigned n;            /* J_ARR / J_OBJ members */
    struct json **item;
    char **key;            /* J_OBJ */
} json_t;

typedef struct jp {
    const char *s;
    bool bad;
} jp_t;

static void ws(jp_t *p)
{
    while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
        p->s++;
}

static json_t *jnew(jtype_t t)
{
    json_t *j = calloc(1, sizeof *j);
    j->t = t;
    return j;
}

static char *jstring(jp_t *p)
{
    if (*p->s != '"')
        return p->bad = true, NULL;
    p->s++;
    size_t cap = 64, n = 0;
    char *out = malloc(cap);
    while (*p->s && *p->s != '"') {
        char c = *p->s++;
        if ((unsigned char)c < 0x20)
            return p->bad = true, out;
        if (c == '\\') {
            char e = *p->s++;
            const char *map = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", e);
            if (e == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *p->s++;
                    v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
                }
                c = v < 128 ? (char)v : '?';
            } else if (map && ((map - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2 == 0)) {
                c = map[1];
            } else {
                return p->bad = true, out;
            }
        }
        if (n + 2 > cap)
            out = realloc(out, cap *= 2);
        out[n++] = c;
    }
    if (*p->s != '"')
        p->bad = true;
    else
        p->s++;
    out[n] = '\0';
    return out;
}

static json_t *jvalue(jp_t *p, int depth);

static void jpush(json_t *j, char *key, json_t *v)
{
    j->item = realloc(j->item, (j->n + 1) * sizeof *j->item);
    j->key = realloc(j->key, (j->n + 1) * sizeof *j->key);
    j->item[j->n] = v;
    j->key[j->n++] = key;
}

static json_t *jcontainer(jp_t *p, int depth, bool obj)
{
    json_t *j = jnew(obj ? J_OBJ : J_ARR);
    p->s++;
    ws(p);
    if (*p->s == (obj ? '}' : ']')) {
        p->s++;
        return j;
    }
    for (;;) {
        char *key = NULL;
        ws(p);
        if (obj) {
            key = jstring(p);
            ws(p);
            if (*p->s++ != ':')
                return p->bad = true, j;
        }
        jpush(j, key, jvalue(p, depth + 1));
        if (p->bad)
            return j;
        ws(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        if (*p->s++ != (obj ? '}' : ']'))
            p->bad = true;
        return j;
    }
}

static json_t *jvalue(jp_t *p, int depth)
{
    ws(p);
    if (depth > 64)
        return p->bad = true, jnew(J_NULL);
    char c = *p->s;
    if (c == '{' || c == '[')
        return jcontainer(p, depth, c == '{');
    if (c == '"') {
        json_t *j = jnew(J_STR);
        j->str = jstring(p);
        return j;
    }
    if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "false", 5)) {
        json_t *j = jnew(J_BOOL);
        j->b = c == 't';
        p->s += j->b ? 4 : 5;
        return j;
    }
    if (!strncmp(p->s, "null", 4)) {
        p->s += 4;
        return jnew(J_NULL);
    }
    char *end;
    json_t *j = jnew(J_NUM);
    j->num = strtod(p->s, &end);
    if (end == p->s || (c != '-' && (c < '0' || c > '9')))
        p->bad = true;
    j->is_int = !memchr(p->s, '.', (size_t)(end - p->s)) && !memchr(p->s, 'e', (size_t)(end - p->s));
    p->s = end;
    return j;
}

static json_t *jparse(const char *text)
{
    jp_t p = {text, false};
    json_t *j = jvalue(&p, 0);
    ws(&p);
    return p.bad || *p.s ? NULL : j;
}

static json_t *jget(const json_t *j, const char *key)
{
    for (unsigned i = 0; j && j->t == J_OBJ && i < j->n; i++)
        if (!strcmp(j->key[i], key))
            return j->item[i];
    return NULL;
}

static const char *jstr(const json_t *j, const char *key)
{
    const json_t *v = jget(j, key);
    return v && v->t == J_STR ? v->str : "";
}

static double jnum(const json_t *j, const char *key)
{
    const json_t *v = jget(j, key);
    return v && v->t == J_NUM ? v->num : -1;
}

/* The library's own reader; profiles are far below the cap. */
static char *slurp(const char *path)
{
    size_t len;
    return ga_read_file(path, (size_t)1 << 30, &len);
}

static json_t *jload(const char *path)
{
    char *t = slurp(path);
    json_t *j = t ? jparse(t) : NULL;
    if (!j)
        fprintf(stderr, "%s: missing or not valid JSON\n", path);
    free(t);
    return j;
}

/* ---- a JSON Schema subset: the keywords doc/profile-schema.json uses ------------- */
static bool type_is(const json_t *v, const char *t)
{
    return (!strcmp(t, "object") && v->t == J_OBJ) || (!strcmp(t, "array") && v->t == J_ARR) ||
           (!strcmp(t, "string") && v->t == J_STR) || (!strcmp(t, "boolean") && v->t == J_BOOL) ||
           (!strcmp(t, "integer") && v->t == J_NUM && v->is_int) ||
           (!strcmp(t, "number") && v->t == J_NUM);
}

static bool jequal(const json_t *a, const json_t *b)
{
    if (a->t != b->t)
        return false;
    if (a->t == J_STR)
        return !strcmp(a->str, b->str);
    if (a->t == J_NUM)
        return a->num == b->num;
    return a->t == J_BOOL ? a->b == b->b : a->t == J_NULL;
}

static int schema_errors;
static bool schema_quiet; /* errors are the point: do not print them */

static void fail(const char *where, const char *what)
{
    if (schema_errors++ < 10 && !schema_quiet)
        fprintf(stderr, "schema: %s: %s\n", where, what);
}

static void validate(const json_t *v, const json_t *s, const char *where)
{
    const json_t *k;
    char sub[512];
    if ((k = jget(s, "type")) && !type_is(v, k->str))
        return fail(where, k->str);
    if ((k = jget(s, "const")) && !jequal(v, k))
        fail(where, "const");
    if ((k = jget(s, "enum"))) {
        bool ok = false;
        for (unsigned i = 0; i < k->n; i++)
            ok = ok || jequal(v, k->item[i]);
        if (!ok)
            fail(where, "enum");
    }
    if ((k = jget(s, "minimum")) && v->t == J_NUM && v->num < k->num)
        fail(where, "minimum");
    if ((k = jget(s, "minItems")) && v->t == J_ARR && v->n < k->num)
        fail(where, "minItems");
    if ((k = jget(s, "maxItems")) && v->t == J_ARR && v->n > k->num)
        fail(where, "maxItems");
    if ((k = jget(s, "items")) && v->t == J_ARR)
        for (unsigned i = 0; i < v->n; i++) {
            snprintf(sub, sizeof sub, "%s[%u]", where, i);
            validate(v->item[i], k, sub);
        }
    if (v->t != J_OBJ)
        return;
    const json_t *props = jget(s, "properties");
    if ((k = jget(s, "required")))
        for (unsigned i = 0; i < k->n; i++)
            if (!jget(v, k->item[i]->str)) {
                snprintf(sub, sizeof sub, "missing key %s", k->item[i]->str);
                fail(where, sub);
            }
    for (unsigned i = 0; i < v->n; i++) {
        const json_t *ps = jget(props, v->key[i]);
        snprintf(sub, sizeof sub, "%s.%s", where, v->key[i]);
        if (ps)
            validate(v->item[i], ps, sub);
        else if ((k = jget(s, "additionalProperties")) && k->t == J_BOOL && !k->b)
            fail(sub, "not in the schema");
    }
}

/* ---- the trace-event format ------------------------------------------------------ */
static unsigned count_cat(const json_t *events, const char *cat)
{
    unsigned n = 0;
    for (unsigned i = 0; i < events->n; i++)
        n += !strcmp(jstr(events->item[i], "cat"), cat);
    return n;
}

static bool trace_ok(const json_t *t)
{
    const json_t *ev = jget(t, "traceEvents");
    if (!ev || ev->t != J_ARR || !ev->n || !jget(t, "otherData"))
        return false;
    for (unsigned i = 0; i < ev->n; i++) {
        const json_t *e = ev->item[i];
        static const char *const need[] = {"name", "ph", "ts", "pid", "tid"};
        for (size_t k = 0; k < GA_ARRAY_LEN(need); k++)
            if (!jget(e, need[k]))
                return fprintf(stderr, "trace event %u lacks %s\n", i, need[k]), false;
        const char *ph = jstr(e, "ph");
        if (strcmp(ph, "X") && strcmp(ph, "M"))
            return fprintf(stderr, "trace event %u: phase %s\n", i, ph), false;
        if (!strcmp(ph, "X") && (jnum(e, "dur") < 0 || jnum(e, "ts") < 0))
            return fprintf(stderr, "trace event %u: X without dur\n", i), false;
    }
    return true;
}

/* ---- the scenario driver --------------------------------------------------------- */
static char dir[] = "/tmp/test_profile.XXXXXX";
static ga_rt_t rt;
static json_t *schema;

static int k_fill, k_add, k_scan, k_norm;
static bool have_demangler;
static CUresult stub_func_name(const char **name, CUfunction f)
{
    *name = f == (CUfunction)&k_fill ? "fill"
            : f == (CUfunction)&k_add ? "_Z3addPjjj"
            : f == (CUfunction)&k_scan ? "scan" : "norm";
    return CUDA_SUCCESS;
}

static CUresult stub_elapsed(float *ms, CUevent a, CUevent b)
{
    (void)a, (void)b;
    *ms = 0.05f; /* 50 us: long kernels */
    return CUDA_SUCCESS;
}

static CUresult stub_event_sync(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}

static char *path_of(const char *name, const char *suffix)
{
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s%s", dir, name, suffix);
    return b;
}

static unsigned t_staging_threads; /* GPUACCEL_STAGING_THREADS for the next start */

static void start(const char *name, bool kernels)
{
    stub_runtime(&rt);
    rt.cfg.staging_threads = t_staging_threads;
    rt.drv.fn[GA_ID_cuFuncGetName] = (void *)stub_func_name;
    rt.drv.fn[GA_ID_cuEventElapsedTime] = (void *)stub_elapsed;
    rt.drv.fn[GA_ID_cuEventSynchronize] = (void *)stub_event_sync;
    rt.cfg.profile = strdup(path_of(name, ""));
    rt.cfg.profile_kernels = kernels;
    rt.cfg.graph_min = 5;
    ga_profile_init(&rt);
}

/* A launch as the hooks report it: to the profile (its launch_done), then to
 * the sequence detector (hooks/launch.c feeds it after launch_done). */
static void launch(CUfunction f, unsigned g, unsigned b, CUstream s)
{
    const unsigned grid[3] = {g, 1, 1}, block[3] = {b, 1, 1};
    ga_profile_kernel_begin(&rt, s, false);
    ga_profile_launch(&rt, f, grid, block, 0, s, false);
    ga_seq_launch(&rt, f, grid, block, 0, s);
}

/* A flush point on this thread, as ga_flush (hooks/dispatch.h) reports it:
 * the detector ends the thread's segment, whatever stream was named. */
static void flush_point(void)
{
    ga_seq_flush(&rt);
}

static const json_t *opportunity(const json_t *j, const char *feature)
{
    const json_t *ops = jget(j, "opportunities");
    for (unsigned i = 0; ops && i < ops->n; i++)
        if (!strcmp(jstr(ops->item[i], "feature"), feature))
            return ops->item[i];
    return NULL;
}

static const char *verdict(const json_t *j, const char *feature)
{
    const json_t *o = opportunity(j, feature);
    return o ? jstr(o, "verdict") : "missing";
}

/* Writes, then checks the files every scenario must produce. */
static json_t *finish(const char *name, json_t **trace_out)
{
    ga_profile_write();
    struct stat st;
    CHECK(stat(path_of(name, ".txt"), &st) == 0 && st.st_size > 0);
    CHECK(stat(path_of(name, ".owner"), &st) != 0); /* the claim is released */
    json_t *j = jload(path_of(name, ".json"));
    CHECK(j != NULL);
    if (j) {
        schema_errors = 0;
        validate(j, schema, name);
        CHECK(schema_errors == 0);
        char *saved = j->key[2]; /* and the validator does catch a bad document */
        j->key[2] = "pid_renamed";
        schema_errors = 0;
        schema_quiet = true;
        validate(j, schema, "(expected errors)");
        schema_quiet = false;
        CHECK(schema_errors == 2);
        j->key[2] = saved;
        schema_errors = 0;
        char *txt = slurp(path_of(name, ".txt"));
        CHECK(txt && !strcmp(txt, jstr(j, "text"))); /* gpuaccel report prints it */
        free(txt);
    }
    json_t *t = jload(path_of(name, ".trace.json"));
    CHECK(t && trace_ok(t));
    if (trace_out)
        *trace_out = t;
    return j;
}

/* Everything the opportunities section should call for. */
static void scenario_busy(void)
{
    start("busy", false);
    struct stat st;
    CHECK(stat(path_of("busy", ".owner"), &st) == 0);
    for (int i = 0; i < 10000; i++)
        ga_profile_copy(GA_COPY_DTOH, 4, 8000); /* 8 us small reads */
    ga_profile_copy(GA_COPY_HTOD, 1 << 20, 90000);
    ga_profile_copy(GA_COPY_HTOD, 3 << 20, 250000);
    for (int i = 0; i < 500; i++) { /* 110 us alloc/free pairs of one size */
        ga_profile_alloc((CUdeviceptr)(0x10000 + 4096 * i), 4096, 60000, CUDA_SUCCESS);
        ga_profile_free((CUdeviceptr)(0x10000 + 4096 * i), 0, 50000);
    }
    ga_profile_alloc(0, (size_t)1 << 50, 3000, CUDA_ERROR_OUT_OF_MEMORY);
    CUstream s1 = (CUstream)&stub_streams[0];
    /* One 6-kernel sequence, 2000 times: graphs' estimate (12,000 launches x
     * 2 us) stays above 0.5% of the run even when a loaded machine stretches
     * this test's wall time to seconds (100 times was not, under make -j). */
    for (int it = 0; it < 2000; it++) {
        launch((CUfunction)&k_fill, 64, 256, s1);
        for (int k = 0; k < 4; k++)
            launch((CUfunction)&k_add, 64, 128, s1);
        launch((CUfunction)&k_scan, 1, 1024, s1);
        flush_point();
    }
    for (unsigned g = 1; g <= 12; g++) /* more configurations than are kept */
        launch((CUfunction)&k_norm, g, 32, NULL);
    uint64_t t = ga_now_ns();
    ga_profile_span(GA_ID_cuLaunchKernel, t, t + 3000);
    ga_profile_span(GA_ID_cuMemcpyDtoH_v2, t + 4000, t + 12000);
    ga_profile_counter("pool", "hits", 2);
    ga_profile_counter("pool", "hits", 1);
    ga_profile_counter("coalesce", "fills", 7);

    json_t *tr = NULL, *j = finish("busy", &tr);
    if (!j)
        return;
    CHECK(!strcmp(verdict(j, "coalesce"), "helps"));
    CHECK(!strcmp(verdict(j, "pool"), "helps"));
    CHECK(!strcmp(verdict(j, "graphs"), "helps"));
    CHECK(!strcmp(verdict(j, "tune"), "unknown"));
    /* no kernel of the program is listed in the shipped replacement table */
    CHECK(!strcmp(verdict(j, "kernels"), "no"));
    CHECK(strstr(jstr(opportunity(j, "kernels"), "reason"), "busiest: ") != NULL);
    CHECK(strstr(jstr(opportunity(j, "kernels"), "reason"), "no replacement is listed") != NULL);
    CHECK(!strcmp(jstr(opportunity(j, "pool"), "check"), "gpuaccel ab --feature pool -- COMMAND"));
    /* A mangled kernel name: demangled in the text (a C++ runtime is loaded,
     * as it is in a CUDA program), kept as the driver gave it in the JSON. */
    if (have_demangler) {
        const char *text = jstr(j, "text");
        CHECK(text && strstr(text, "add(unsigned int*, unsigned int, unsigned int)"));
        CHECK(text && !strstr(text, "_Z3addPjjj"));
    }
    /* 9999 reads x (8 us - 0.5 us): the first of the run fills the window */
    CHECK(jnum(opportunity(j, "coalesce"), "saving_ns") == 9999 * 7500.0);
    CHECK(jnum(jget(j, "copies"), "small_dtoh_follow_reads") == 9999);
    const json_t *mem = jget(j, "allocations");
    CHECK(jnum(mem, "count") == 500 && jnum(mem, "frees") == 500 && jnum(mem, "failed") == 1);
    CHECK(jnum(mem, "churn") == 499 && jnum(mem, "live_bytes") == 0);
    CHECK(jnum(mem, "peak_live_bytes") == 4096 && jnum(mem, "frees_unknown_size") == 0);
    CHECK(jnum(jget(j, "copies"), "small_dtoh_reads") == 10000);
    const json_t *b = jget(jget(j, "copies"), "buckets");
    /* htod <=1 MiB, htod >1 MiB, dtoh <=256 B: non-empty buckets only, by direction */
    CHECK(b && b->n == 3 && !strcmp(jstr(b->item[1], "bucket"), ">1 MiB"));
    CHECK(b && b->n == 3 && !strcmp(jstr(b->item[2], "direction"), "dtoh"));
    const json_t *seqs = jget(jget(j, "sequences"), "list");
    CHECK(seqs && seqs->n >= 1);
    if (seqs && seqs->n) {
        CHECK(jnum(seqs->item[0], "length") == 6 && jnum(seqs->item[0], "repeats") == 2000);
        const json_t *names = jget(seqs->item[0], "kernels");
        CHECK(names && names->n == 4 && !strcmp(names->item[0]->str, "fill"));
    }
    const json_t *kl = jget(jget(j, "kernels"), "list");
    CHECK(kl && kl->n == 4 && !strcmp(jstr(kl->item[0], "name"), "_Z3addPjjj"));
    for (unsigned i = 0; kl && i < kl->n; i++)
        if (!strcmp(jstr(kl->item[i], "name"), "norm"))
            CHECK(jget(kl->item[i], "configs")->n == 8 && jnum(kl->item[i], "configs_dropped") == 4);
    const json_t *c = jget(j, "counters");
    CHECK(c && c->n == 2 && jnum(c->item[0], "value") == 3);
    const char *text = jstr(j, "text");
    CHECK(strstr(text, "\n  coalesce          would help") != NULL);
    CHECK(strstr(text, "\n  pool              would help") != NULL);
    CHECK(strstr(text, "\n  graphs            would help") != NULL);
    CHECK(strstr(text, "check: gpuaccel ab --feature graphs -- COMMAND") != NULL);
    CHECK(strstr(text, "10,000 small D2H reads") != NULL);
    CHECK(strstr(text, "pool.hits 3") != NULL);
    CHECK(tr && count_cat(jget(tr, "traceEvents"), "driver") == 2);

    /* idempotent: a second write does not rewrite the files */
    char *kept = strdup(path_of("busy", ".json.kept"));
    CHECK(rename(path_of("busy", ".json"), kept) == 0);
    ga_profile_write();
    CHECK(access(path_of("busy", ".json"), F_OK) != 0);
    CHECK(rename(kept, path_of("busy", ".json")) == 0);
    free(kept);
}

/* A process whose rings grew before the scenario (its pageable traffic came
 * earlier): staging at its warm rates, no ring made in the scenario. */
static void rings_grown(void)
{
    ga_prof->stg.traffic = 1ull << 30;
    ga_prof->stg.chunk = 8u << 20;
}

/* The estimates fed by the host memory of large copies, the reads' blocks,
 * the pools' reservations and the calls' spans: each from known numbers. */
static void scenario_estimates(void)
{
    start("estimates", false);
    rings_grown();
    uint64_t t = ga_now_ns();
    /* staging: four pageable 8 MiB copies of 4 ms each; page-locked copies
     * measured at 8 MiB in 0.5 ms: at that bandwidth the four take 2 ms */
    for (int i = 0; i < 4; i++)
        ga_profile_copy_at(GA_COPY_HTOD, 8u << 20, 4000000, 0x100000, 0);
    ga_profile_copy_at(GA_COPY_DTOH, 8u << 20, 500000, 0x100000, 1);
    /* windows and mirrors: after device work (the copies), reads of 10 us in
     * one block (a window holds all but the first), then in 50 new blocks */
    for (int i = 0; i < 101; i++)
        ga_profile_copy_at(GA_COPY_DTOH, 8, 10000, 0x4000000 + 8 * (CUdeviceptr)i, -1);
    for (int i = 1; i <= 50; i++)
        ga_profile_copy_at(GA_COPY_DTOH, 8, 10000, 0x4000000 + ((CUdeviceptr)i << 16), -1);
    /* async_pool: the pool grows to 1 MiB, a sync releases it, 20 allocations
     * map it again at 300 us each; 10 from what it kept cost 10 us */
    CUmemoryPool pool = (CUmemoryPool)0x77;
    ga_profile_async_alloc(pool, 0, 1 << 20, 300000);
    for (int i = 0; i < 20; i++)
        ga_profile_async_alloc(pool, 0, 1 << 20, 300000);
    for (int i = 0; i < 10; i++)
        ga_profile_async_alloc(pool, 1 << 20, 1 << 20, 10000);
    /* pinned: 30 pairs, 400 us + 100 us; streams: 40 pairs, 20 us + 10 us */
    for (int i = 0; i < 30; i++) {
        ga_profile_span(GA_ID_cuMemHostAlloc, t, t + 400000);
        ga_profile_span(GA_ID_cuMemFreeHost, t, t + 100000);
    }
    for (int i = 0; i < 40; i++) {
        ga_profile_span(GA_ID_cuStreamCreate, t, t + 20000);
        ga_profile_span(GA_ID_cuStreamDestroy_v2, t, t + 10000);
    }
    json_t *j = finish("estimates", NULL);
    if (!j)
        return;
    const json_t *o = opportunity(j, "staging");
    CHECK(!strcmp(verdict(j, "staging"), "helps") && jnum(o, "acts_on") == 4);
    CHECK(jnum(o, "saving_ns") == 16000000.0 - 2000000.0);
    /* staging's own rates would take 1.26 ms: the page-locked copies' 2 ms bound it */
    CHECK(strstr(jstr(o, "reason"), "staged they would take ~2.0 ms") != NULL);
    o = opportunity(j, "coalesce"); /* 100 hits x (10 us - 0.5 us) */
    CHECK(jnum(o, "acts_on") == 100 && jnum(o, "saving_ns") == 100 * 9500.0);
    o = opportunity(j, "coalesce_mirrors"); /* 50 misses */
    CHECK(jnum(o, "acts_on") == 50 && jnum(o, "saving_ns") == 50 * 9500.0);
    CHECK(!strcmp(jstr(o, "check"),
                  "GPUACCEL_COALESCE_MIRRORS=1 gpuaccel ab --feature coalesce -- COMMAND"));
    o = opportunity(j, "async_pool"); /* 20 x (300 us - 10 us) */
    CHECK(jnum(o, "acts_on") == 20 && jnum(o, "saving_ns") == 20 * 290000.0);
    CHECK(jnum(jget(j, "allocations"), "stream_ordered_regrown") == 20);
    o = opportunity(j, "pinned");
    CHECK(jnum(o, "acts_on") == 30 && jnum(o, "saving_ns") == 30 * 500000.0);
    o = opportunity(j, "streams"); /* 40 x (30 us - 1 us) */
    CHECK(jnum(o, "acts_on") == 40 && jnum(o, "saving_ns") == 40 * 29000.0);
    CHECK(jnum(jget(j, "streams"), "created") == 40 && jnum(jget(j, "page_locked"), "frees") == 30);
    /* the page-locked memory ends lazy_sync's deferrals */
    CHECK(jget(jget(j, "synchronizations"), "shared_memory_made")->b);
    /* the text lists them by what they would save: pinned (15 ms) before staging (14 ms) */
    const char *text = jstr(j, "text");
    const char *pin = strstr(text, "\n  pinned "), *stg = strstr(text, "\n  staging ");
    CHECK(pin && stg && pin < stg);
}

/* Staging's estimate from its own rates, with no page-locked copy to bound
 * it: 100 uploads of 4 MiB and 100 downloads of 256 KiB at the H200's native
 * times (364.5 us, 63.6 us): staged 19 + 107 + 3 x 27 us and 8.8 + 102.6 / 4
 * us. A pool that sees no size come back saves only the frees. */
static void scenario_staging_model(void)
{
    start("model", false);
    rings_grown();
    for (int i = 0; i < 100; i++) {
        ga_profile_copy_at(GA_COPY_HTOD, 4u << 20, 364500, 0x100000, 0);
        ga_profile_copy_at(GA_COPY_DTOH, 256u << 10, 63600, 0x100000, 0);
    }
    for (int i = 0; i < 50; i++) {
        ga_profile_alloc(0x1000000 + ((CUdeviceptr)i << 24), ((size_t)i + 1) << 20, 300000,
                         CUDA_SUCCESS);
        ga_profile_free(0x1000000 + ((CUdeviceptr)i << 24), 0, 5000);
    }
    json_t *j = finish("model", NULL);
    if (!j)
        return;
    const json_t *o = opportunity(j, "staging");
    CHECK(jnum(o, "acts_on") == 200 && jnum(o, "saving_ns") == 100 * 157500.0 + 100 * 29150.0);
    o = opportunity(j, "pool"); /* 50 frees x (5 us - 1 us); no allocation served */
    CHECK(jnum(o, "acts_on") == 50 && jnum(o, "saving_ns") == 50 * 4000.0);
    CHECK(jnum(jget(j, "allocations"), "churn") == 0 && jnum(jget(j, "allocations"), "churn_ns") == 0);
}

/* A process that uploads 80 MiB in four copies of 20 MiB, 3.425 ms each
 * natively (RISC Zero's Poseidon2 and SHA-256 programs): staging's rings
 * follow the traffic (1/16 of it, four slots), so the copies go through
 * slots of 256 KiB (80 pieces of 45.75 us), 512 KiB twice (40 of 72.5 us)
 * and 1 MiB (20 of 126 us): 11.98 ms; the first ring (1 MiB, populated and
 * registered: 1.65 ms) and its growth to 512 KiB and 1 MiB slots (1.4 and
 * 1.5 ms) cost 4.55 ms more than the driver's 13.7 ms: nothing to save. */
static void scenario_staging_rings(void)
{
    start("rings", false);
    for (int i = 0; i < 4; i++)
        ga_profile_copy_at(GA_COPY_HTOD, 20u << 20, 3425000, 0x100000, 0);
    CHECK(ga_prof->stg.est_ns[0] == 3660000 + 2 * 2900000 + 2520000);
    CHECK(ga_prof->stg.rings == 3 && ga_prof->stg.ring_ns == 1650000 + 1400000 + 1500000);
    CHECK(ga_prof->stg.chunk == 1u << 20 && ga_prof->stg.traffic == 80u << 20);
    json_t *j = finish("rings", NULL);
    if (!j)
        return;
    const json_t *o = opportunity(j, "staging");
    CHECK(jnum(o, "acts_on") == 4 && jnum(o, "saving_ns") == 0 && !strcmp(verdict(j, "staging"), "no"));
    CHECK(strstr(jstr(o, "reason"), "making 3 rings of them") != NULL);
}

/* Downloads into pages the program had not touched: each page's first touch
 * (1 us, set here; measured at init otherwise) is added to what staging would
 * take. 100 downloads of 256 KiB at 63.6 us, 16 fresh pages each: staged
 * 34.45 us + 16 us, saving 13.15 us a copy; without the fresh pages, 29.15. */
static void scenario_staging_faults(void)
{
    t_staging_threads = 4;
    start("faults", false);
    rings_grown();
    t_staging_threads = 0;
    ga_profile_set_fault_ns(1000);
    for (int i = 0; i < 100; i++) {
        ga_profile_copy_at(GA_COPY_DTOH, 256u << 10, 63600, 0x100000, 0);
        ga_profile_untouched(16);
    }
    json_t *j = finish("faults", NULL);
    if (!j)
        return;
    /* each copy: 63.6 us natively, 34.45 staged, 16 faults of 1 us over 4
     * copy threads */
    const json_t *o = opportunity(j, "staging");
    CHECK(jnum(o, "acts_on") == 100 && jnum(o, "saving_ns") == 100 * 25150.0);
    char *txt = slurp(path_of("faults", ".txt"));
    CHECK(txt && strstr(txt, "~400.0 us faulting in 6.3 MiB of host memory the program had not "
                             "touched, at ~1.0 us a page as measured here, over 4 copy threads"));
    free(txt);
}

/* lazy_sync: synchronizations after kernels alone are quiet; one after a
 * host function is not; the host's work after a quiet one until the next
 * call that observes the device (capped by its wait) is the estimate. */
static void scenario_lazy(void)
{
    start("lazy", false);
    uint64_t t = ga_now_ns() + 1000000;
    for (int i = 0; i < 10; i++, t += 10000000) {
        ga_profile_span(GA_ID_cuLaunchKernel, t, t + 1000);
        /* a 2 ms wait, then 3 ms of host work before the next observing call */
        ga_profile_span(GA_ID_cuCtxSynchronize, t + 2000, t + 2002000);
        ga_profile_span(GA_ID_cuLaunchKernel, t + 2500000, t + 2501000);
        ga_profile_span(GA_ID_cuMemcpyDtoH_v2, t + 5002000, t + 5003000);
    }
    ga_profile_span(GA_ID_cuLaunchKernel, t, t + 1000);
    ga_profile_span(GA_ID_cuLaunchHostFunc, t + 1000, t + 2000);
    ga_profile_span(GA_ID_cuCtxSynchronize, t + 3000, t + 4000);
    json_t *j = finish("lazy", NULL);
    if (!j)
        return;
    const json_t *sy = jget(j, "synchronizations"), *o = opportunity(j, "lazy_sync");
    CHECK(jnum(sy, "count") == 11 && jnum(sy, "quiet") == 10);
    CHECK(!jget(sy, "shared_memory_made")->b);
    /* each overlaps min(2 ms wait, 3 ms of work) */
    CHECK(jnum(sy, "quiet_overlap_ns") == 10 * 2000000.0 && jnum(o, "saving_ns") == 10 * 2000000.0);
    CHECK(jnum(o, "acts_on") == 10);
}

/* Nothing would help: cheap reads, no allocations, no repeats. */
/* A public Groth16 GPU pass's shape: each small read comes after kernels
 * and takes their time (3.7 ms). Coalescing cannot save a wait: no estimate. */
static void scenario_waits(void)
{
    start("waits", false);
    for (int i = 0; i < 72; i++) {
        launch((CUfunction)&k_fill, 64, 256, NULL);
        ga_profile_copy(GA_COPY_DTOH, 32, 3700000);
    }
    json_t *j = finish("waits", NULL);
    if (!j)
        return;
    CHECK(!strcmp(verdict(j, "coalesce"), "no"));
    CHECK(jnum(opportunity(j, "coalesce"), "saving_ns") == 0);
    CHECK(strstr(jstr(opportunity(j, "coalesce"), "reason"), "each after device work") != NULL);
    CHECK(jnum(jget(j, "copies"), "small_dtoh_follow_reads") == 0);
}

static void scenario_quiet(void)
{
    start("quiet", false);
    for (int i = 0; i < 10; i++)
        ga_profile_copy(GA_COPY_DTOH, 8, 300);
    launch((CUfunction)&k_fill, 1, 32, NULL);
    flush_point();
    launch((CUfunction)&k_add, 1, 32, NULL);
    launch((CUfunction)&k_add, 2, 32, NULL);
    json_t *j = finish("quiet", NULL);
    if (!j)
        return;
    CHECK(!strcmp(verdict(j, "coalesce"), "no"));
    CHECK(!strcmp(verdict(j, "pool"), "no"));
    CHECK(!strcmp(verdict(j, "graphs"), "no"));
    CHECK(strstr(jstr(opportunity(j, "coalesce"), "reason"), "already cheap") != NULL);
    CHECK(strstr(jstr(opportunity(j, "pool"), "reason"), "no cuMemAlloc calls") != NULL);
    CHECK(strstr(jstr(opportunity(j, "graphs"), "reason"), "no launch sequence") != NULL);
    CHECK(jnum(jget(j, "sequences"), "segments") == 2);
    CHECK(strstr(jstr(j, "text"), "would help") == NULL);
}

/* Kernel timing over stub events: GPU time per kernel, a GPU track, and long
 * kernels that make graphs pointless. */
static void scenario_timed(void)
{
    start("timed", true);
    CUstream s = (CUstream)&stub_streams[1];
    for (int it = 0; it < 20; it++) {
        for (int k = 0; k < 6; k++)
            launch((CUfunction)&k_add, 8, 128, s);
        flush_point();
    }
    json_t *tr = NULL, *j = finish("timed", &tr);
    if (!j)
        return;
    CHECK(jget(jget(j, "kernel_timing"), "enabled")->b);
    CHECK(jnum(jget(j, "kernel_timing"), "timed_launches") == 120);
    const json_t *kl = jget(jget(j, "kernels"), "list");
    CHECK(kl && kl->n == 1 && jnum(kl->item[0], "gpu_ns") == 120 * 50000.0);
    CHECK(!strcmp(verdict(j, "graphs"), "no"));
    CHECK(strstr(jstr(opportunity(j, "graphs"), "reason"), "already hidden") != NULL);
    CHECK(tr && count_cat(jget(tr, "traceEvents"), "kernel") == 120);
}

/* Many live allocations whose hashes collide, freed out of order: every size
 * is still found (the backward-shift deletion keeps probe chains whole). */
static void scenario_live(void)
{
    start("live", false);
    enum { N = 3000 };
    for (int i = 0; i < N; i++)
        ga_profile_alloc((CUdeviceptr)((uint64_t)(i + 1) << 21), 100 + (size_t)i, 10, CUDA_SUCCESS);
    for (int i = 0; i < N; i += 2)
        ga_profile_free((CUdeviceptr)((uint64_t)(i + 1) << 21), 0, 10);
    for (int i = N - 1; i > 0; i -= 2)
        ga_profile_free((CUdeviceptr)((uint64_t)(i + 1) << 21), 0, 10);
    ga_profile_free((CUdeviceptr)0xdead000, 0, 10); /* never allocated: size unknown */
    json_t *j = finish("live", NULL);
    if (!j)
        return;
    const json_t *mem = jget(j, "allocations");
    CHECK(jnum(mem, "live_bytes") == 0 && jnum(mem, "frees_unknown_size") == 1);
    CHECK(jnum(mem, "free_bytes") == jnum(mem, "bytes"));
}

/* A window file as gpuaccel profile --phase makes it, mapped read-write
 * here to play gpuaccel's part; its path in `path`. */
static ga_window_t *make_window(char *path, size_t cap)
{
    snprintf(path, cap, "%s/window", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, sizeof(ga_window_t)) == 0);
    ga_window_t *w = mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(w != MAP_FAILED);
    w->magic = GA_WINDOW_MAGIC, w->version = GA_WINDOW_VERSION;
    strcpy(w->start, "^begin"), strcpy(w->end, "^end");
    return w;
}

/* One round of every kind of event the window gates, with known numbers:
 * 3 uploads, an allocation and the free of the one before it (4 KiB each, a
 * size freed before: churn), 2 launches, a stream created and destroyed and
 * a quiet sync of 1 ms followed by 2 ms of host work. */
static void window_round(unsigned r, uint64_t *t)
{
    for (int i = 0; i < 3; i++)
        ga_profile_copy(GA_COPY_HTOD, 1024, 1000);
    ga_profile_alloc((CUdeviceptr)(0x100000 + 4096 * (uint64_t)r), 4096, 2000, CUDA_SUCCESS);
    ga_profile_free((CUdeviceptr)(0x100000 + 4096 * (uint64_t)(r - 1)), 0, 3000);
    launch((CUfunction)&k_fill, 4, 128, NULL);
    launch((CUfunction)&k_add, 4, 128, NULL);
    flush_point();
    ga_profile_span(GA_ID_cuStreamCreate, *t, *t + 400000);
    ga_profile_span(GA_ID_cuStreamDestroy_v2, *t, *t + 100000);
    ga_profile_span(GA_ID_cuLaunchKernel, *t, *t + 1000);
    ga_profile_span(GA_ID_cuCtxSynchronize, *t + 2000, *t + 1002000);
    ga_profile_span(GA_ID_cuMemcpyDtoH_v2, *t + 3002000, *t + 3003000);
    *t += 10000000;
}

/* GPUACCEL_PROFILE_WINDOW: rounds outside the windows count for nothing,
 * rounds inside two windows are summed; an allocation made outside and freed
 * inside is still known (its size is freed). A file that is not there: the
 * whole process, and schema /3. */
static void scenario_window(void)
{
    char path[600];
    ga_window_t *w = make_window(path, sizeof path);
    start("window", false);
    rt.cfg.profile_window = path; /* start() above had none: start over with it */
    ga_profile_init(&rt);
    uint64_t t = ga_now_ns() + 1000000;
    ga_profile_alloc((CUdeviceptr)0x100000, 4096, 2000, CUDA_SUCCESS); /* round 0's, outside */
    unsigned r = 1;
    for (unsigned win = 0; win < 2; win++) {
        window_round(r++, &t), window_round(r++, &t); /* outside */
        atomic_fetch_add(&w->crossings, 1);           /* START */
        for (unsigned k = 0; k < 3; k++)
            window_round(r++, &t);
        atomic_fetch_add(&w->inside_ns, 5000000);
        atomic_fetch_add(&w->crossings, 1);           /* END */
    }
    window_round(r++, &t); /* outside again */
    /* page-locked memory (after it no sync is quiet): a pair outside, one in
     * a third window */
    ga_profile_span(GA_ID_cuMemHostAlloc, t, t + 400000);
    ga_profile_span(GA_ID_cuMemFreeHost, t, t + 100000);
    atomic_fetch_add(&w->crossings, 1);
    ga_profile_span(GA_ID_cuMemHostAlloc, t, t + 400000);
    ga_profile_span(GA_ID_cuMemFreeHost, t, t + 100000);
    atomic_fetch_add(&w->inside_ns, 1000000);
    atomic_fetch_add(&w->crossings, 1);
    json_t *j = finish("window", NULL);
    if (j) {
        const json_t *win = jget(j, "window"), *mem = jget(j, "allocations");
        CHECK(!strcmp(jstr(j, "schema"), "gpuaccel-profile/4"));
        CHECK(win && jnum(win, "windows") == 3 && jnum(win, "inside_ns") == 11000000.0);
        CHECK(win && !jget(win, "open_at_exit")->b && !strcmp(jstr(win, "start"), "^begin"));
        /* 6 rounds inside of the 11 */
        CHECK(jnum(jget(j, "copies"), "small_dtoh_reads") == 0);
        const json_t *b = jget(jget(j, "copies"), "buckets");
        CHECK(b && b->n == 1 && jnum(b->item[0], "count") == 18);
        CHECK(jnum(mem, "count") == 6 && jnum(mem, "frees") == 6 && jnum(mem, "churn") == 6);
        CHECK(jnum(mem, "free_bytes") == 6 * 4096.0 && jnum(mem, "frees_unknown_size") == 0);
        CHECK(jnum(mem, "live_bytes") == 4096); /* kept whatever the window */
        CHECK(jnum(jget(j, "kernels"), "launches") == 12);
        CHECK(jnum(jget(j, "sequences"), "segments") == 6);
        CHECK(jnum(jget(j, "streams"), "created") == 6 && jnum(jget(j, "streams"), "destroyed") == 6);
        CHECK(jnum(jget(j, "page_locked"), "allocations") == 1);
        CHECK(jnum(jget(j, "page_locked"), "frees") == 1);
        const json_t *sy = jget(j, "synchronizations");
        CHECK(jnum(sy, "count") == 6 && jnum(sy, "quiet") == 6);
        CHECK(jnum(sy, "quiet_overlap_ns") == 6 * 1000000.0);
        CHECK(strstr(jstr(j, "text"), "3 windows, 11.0 ms inside") != NULL);
        CHECK(strstr(jstr(j, "text"), "Opportunities in the windows") != NULL);
    }
    munmap(w, sizeof *w);
    start("nowindow", false);
    rt.cfg.profile_window = "/nonexistent/window";
    ga_profile_init(&rt);
    ga_profile_copy(GA_COPY_HTOD, 64, 100);
    j = finish("nowindow", NULL);
    CHECK(j && !strcmp(jstr(j, "schema"), "gpuaccel-profile/3") && !jget(j, "window"));
    CHECK(j && jnum(jget(jget(j, "copies"), "buckets")->item[0], "count") == 1);
}

/* A fork child profiles itself into PATH.<pid>.*. */
static void scenario_fork(void)
{
    start("forked", false);
    ga_profile_copy(GA_COPY_DTOH, 4, 100);
    pid_t pid = fork();
    if (pid == 0) {
        ga_feature_profile.fork->child();
        ga_profile_copy(GA_COPY_HTOD, 64, 100);
        ga_profile_write();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char name[64];
    snprintf(name, sizeof name, "forked.%d", (int)pid);
    json_t *c = jload(path_of(name, ".json"));
    CHECK(c && jnum(c, "pid") == pid);
    CHECK(c && jnum(jget(c, "copies"), "small_dtoh_reads") == 0); /* not the parent's */
    json_t *j = finish("forked", NULL);
    CHECK(j && jnum(jget(j, "copies"), "small_dtoh_reads") == 1);
}

/* JSON strings stay valid for any bytes: well-formed UTF-8 kept, anything
 * else (a stray byte, an overlong form, a surrogate, a cut sequence) U+FFFD. */
static void json_strings(void)
{
    static const struct { const char *in, *out; } cases[] = {
        {"plain", "\"plain\""},
        {"q\"b\\n\n\x01", "\"q\\\"b\\\\n\\n\\u0001\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"a\xff" "b", "\"a\\ufffdb\""}, /* (split: \xff b would be one escape) */
        {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                 /* overlong '/' */
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},     /* a surrogate */
        {"cut\xe2\x82", "\"cut\\ufffd\\ufffd\""},
        {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* past U+10FFFF */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        ga_out_t o = {.fd = -1, .mem = buf, .cap = sizeof buf - 1};
        ga_out_js(&o, cases[i].in);
        buf[o.len] = '\0';
        CHECK(!o.failed && !strcmp(buf, cases[i].out));
        if (strcmp(buf, cases[i].out))
            fprintf(stderr, "case %u: got %s\n", i, buf);
    }
}

int main(void)
{
    (void)stub_ctx_b;
    /* CUDA programs carry a C++ runtime (cudart is C++); this test does not. */
    have_demangler = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != NULL;
    if (!have_demangler)
        fprintf(stderr, "note: no libstdc++.so.6: kernel names stay mangled\n");
    json_strings();
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    const char *src = getenv("GA_SRC");
    char spath[1024];
    snprintf(spath, sizeof spath, "%s/doc/profile-schema.json", src ? src : ".");
    schema = jload(spath);
    CHECK(schema != NULL);
    if (!schema)
        return check_done("test_profile");
    scenario_busy();
    scenario_estimates();
    scenario_staging_model();
    scenario_staging_faults();
    scenario_staging_rings();
    scenario_lazy();
    scenario_quiet();
    scenario_waits();
    scenario_timed();
    scenario_live();
    scenario_window();
    scenario_fork();
    /* Keep the files of a failed run for a look, or when asked (profile.bats
     * validates them again with python3). */
    if (getenv("GA_PROFILE_KEEP")) {
        printf("files in %s\n", dir);
    } else if (!check_failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    } else {
        fprintf(stderr, "files kept in %s\n", dir);
    }
    return check_done("test_profile");
}
