/* profiles.c - the profiles gpuaccel reads back (profiles.h): finding the files
 * of one run, and reading one against what doc/profile-schema.json promises
 * (schema gpuaccel-profile/N; the keys a report needs, with their types).
 *
 * Owns: the names of a run's files, and which keys a profile must have.
 * Must never: trust a file: every value is checked as it is read (json.c),
 * and a file that fails is named with the place and the reason. */
#define _GNU_SOURCE
#include "profiles.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pf_dir_name[PF_DIRS] = {"htod", "dtoh", "dtod", "other"};
const char *const pf_bucket_name[PF_BUCKETS] = {"<=256 B", "<=4 KiB", "<=64 KiB", "<=1 MiB",
                                                ">1 MiB"};
const char *const pf_opp_name[PF_OPPS] = {"coalesce", "coalesce_mirrors", "pool", "async_pool",
                                          "pinned", "staging", "streams", "lazy_sync",
                                          "graphs", "tune", "kernels"};

/* ---- records: objects read by a table of their fields ----------------------------- */
typedef enum { F_UINT, F_STRING, F_ARRAY } kind_t;

typedef struct field {
    const char *key;
    kind_t kind;
    bool required;
    void *out;         /* uint64_t, json_slice_t, or F_ARRAY: the item fn's ctx */
    json_item_fn item; /* F_ARRAY */
    bool seen;
} field_t;

/* A field: its key, whether a record must have it, where it goes. */
#define UINT_FIELD(key, required, out) {key, F_UINT, required, out, NULL, false}
#define STRING_FIELD(key, required, out) {key, F_STRING, required, out, NULL, false}
#define ARRAY_FIELD(key, ctx, fn) {key, F_ARRAY, true, ctx, fn, false}

typedef struct record {
    field_t *f;
    unsigned n, depth;
} record_t;

static const char *record_member(void *ctx, json_slice_t key, const char *v)
{
    record_t *r = ctx;
    for (unsigned i = 0; i < r->n; i++) {
        field_t *f = &r->f[i];
        if (!json_is(key, f->key))
            continue;
        f->seen = true;
        switch (f->kind) {
        case F_UINT: return json_uint(v, f->out);
        case F_STRING: return json_string(v, f->out);
        case F_ARRAY: return json_array(v, r->depth + 1, f->item, f->out);
        }
    }
    return json_value(v, r->depth + 1);
}

/* The object at s, its fields into f[]; a required one missing sets *missing. */
static const char *record(const char *s, unsigned depth, field_t *f, unsigned n,
                          const char **missing)
{
    record_t r = {f, n, depth};
    if (!(s = json_object(s, depth, record_member, &r)))
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (f[i].required && !f[i].seen && !*missing)
            *missing = f[i].key;
    return s;
}

/* ---- one profile ------------------------------------------------------------------ */
typedef struct reader {
    pf_proc_t *p;
    const pf_sink_t *sink;
    const char *missing; /* a required key not found: not a profile */
    const char *bad;     /* a value the schema does not allow */
    unsigned seen;       /* bit k: needed[k] was there */
} reader_t;

static int index_of(json_slice_t v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (json_is(v, names[i]))
            return i;
    return -1;
}

static const char *entry_item(void *ctx, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t name;
    uint64_t calls = 0, ns = 0;
    field_t f[] = {STRING_FIELD("name", true, &name), UINT_FIELD("calls", true, &calls),
                   UINT_FIELD("ns", true, &ns)};
    if (!(v = record(v, 3, f, 3, &rd->missing)) || rd->missing)
        return v;
    rd->p->calls += calls, rd->p->call_ns += ns;
    if (memmem(name.p, name.n, "Synchronize", 11))
        rd->p->syncs += calls;
    rd->sink->entry(rd->sink->ctx, name, calls, ns);
    return v;
}

static const char *bucket_item(void *ctx, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t dir, bucket;
    uint64_t count = 0, bytes = 0, ns = 0, max = 0;
    field_t f[] = {STRING_FIELD("direction", true, &dir), STRING_FIELD("bucket", true, &bucket),
                   UINT_FIELD("count", true, &count), UINT_FIELD("bytes", true, &bytes),
                   UINT_FIELD("ns", true, &ns), UINT_FIELD("max_bytes", false, &max)};
    if (!(v = record(v, 4, f, 6, &rd->missing)) || rd->missing)
        return v;
    int d = index_of(dir, pf_dir_name, PF_DIRS), b = index_of(bucket, pf_bucket_name, PF_BUCKETS);
    if (d < 0 || b < 0) {
        rd->bad = d < 0 ? "a copy direction it does not know" : "a copy size it does not know";
        return v;
    }
    rd->p->copies += count, rd->p->copy_bytes += bytes, rd->p->copy_ns += ns;
    rd->sink->copy(rd->sink->ctx, (unsigned)d, (unsigned)b, count, bytes, ns);
    return v;
}

static const char *copies_object(const char *v, reader_t *rd)
{
    uint64_t ns = 0;
    field_t f[] = {UINT_FIELD("small_dtoh_reads", true, &rd->p->small_reads),
                   UINT_FIELD("small_dtoh_ns", false, &ns),
                   ARRAY_FIELD("buckets", rd, bucket_item)};
    return record(v, 1, f, 3, &rd->missing);
}

static const char *allocations_object(const char *v, reader_t *rd)
{
    pf_proc_t *p = rd->p;
    field_t f[] = {UINT_FIELD("count", true, &p->allocs),
                   UINT_FIELD("bytes", true, &p->alloc_bytes),
                   UINT_FIELD("failed", true, &p->alloc_failed),
                   UINT_FIELD("frees", true, &p->frees),
                   UINT_FIELD("free_bytes", true, &p->free_bytes),
                   UINT_FIELD("peak_live_bytes", true, &p->peak_live)};
    return record(v, 1, f, 6, &rd->missing);
}

static const char *kernel_item(void *ctx, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t name;
    uint64_t launches = 0, gpu_ns = 0, timed = 0;
    field_t f[] = {STRING_FIELD("name", true, &name), UINT_FIELD("launches", true, &launches),
                   UINT_FIELD("gpu_ns", true, &gpu_ns), UINT_FIELD("timed_launches", true, &timed)};
    if (!(v = record(v, 3, f, 4, &rd->missing)) || rd->missing)
        return v;
    rd->p->gpu_ns += gpu_ns, rd->p->timed += timed;
    rd->sink->kernel(rd->sink->ctx, name, launches, gpu_ns, timed);
    return v;
}

static const char *kernels_object(const char *v, reader_t *rd)
{
    field_t f[] = {UINT_FIELD("launches", true, &rd->p->launches),
                   ARRAY_FIELD("list", rd, kernel_item)};
    return record(v, 1, f, 2, &rd->missing);
}

static const char *counter_item(void *ctx, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t feature, name;
    uint64_t value = 0;
    field_t f[] = {STRING_FIELD("feature", true, &feature), STRING_FIELD("name", true, &name),
                   UINT_FIELD("value", true, &value)};
    if ((v = record(v, 2, f, 3, &rd->missing)) && !rd->missing)
        rd->sink->counter(rd->sink->ctx, feature, name, value);
    return v;
}

static const char *opportunity_item(void *ctx, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t feature, verdict;
    pf_opp_t o = {PF_NO, 0, UINT64_MAX, {"", 0}};
    field_t f[] = {STRING_FIELD("feature", true, &feature), STRING_FIELD("verdict", true, &verdict),
                   UINT_FIELD("saving_ns", true, &o.saving_ns),
                   UINT_FIELD("acts_on", false, &o.acts_on), STRING_FIELD("check", false, &o.check)};
    if (!(v = record(v, 2, f, 5, &rd->missing)) || rd->missing)
        return v;
    o.verdict = json_is(verdict, "helps") ? PF_HELPS : json_is(verdict, "unknown") ? PF_UNKNOWN
                                                                                  : PF_NO;
    int i = index_of(feature, pf_opp_name, PF_OPPS);
    if (i >= 0) /* a feature this gpuaccel does not know is left out of the merge */
        rd->sink->opportunity(rd->sink->ctx, (unsigned)i, &o);
    return v;
}

static const char *job_object(const char *v, reader_t *rd)
{
    uint64_t size = 0, local = 0;
    json_slice_t var;
    field_t f[] = {UINT_FIELD("rank", true, &rd->p->rank), UINT_FIELD("world_size", false, &size),
                   UINT_FIELD("local_rank", false, &local),
                   STRING_FIELD("rank_variable", false, &var)};
    if (!(v = record(v, 1, f, 4, &rd->missing)))
        return NULL;
    rd->p->ranked = true;
    rd->p->world_size = f[1].seen && size <= INT32_MAX ? (int64_t)size : -1;
    rd->p->local_rank = f[2].seen && local <= INT32_MAX ? (int64_t)local : -1;
    return v;
}

/* The top-level keys a report needs: a file without one is not a profile. */
static const char *const needed[] = {"schema", "pid", "wall_ns", "entry_points", "copies",
                                     "allocations", "kernels", "text"};
enum { N_NEEDED = sizeof needed / sizeof needed[0] };

static const char *top_list(json_slice_t key, const char *v, reader_t *rd)
{
    if (json_is(key, "entry_points"))
        return json_array(v, 1, entry_item, rd);
    if (json_is(key, "copies"))
        return copies_object(v, rd);
    if (json_is(key, "allocations"))
        return allocations_object(v, rd);
    if (json_is(key, "kernels"))
        return kernels_object(v, rd);
    if (json_is(key, "counters"))
        return json_array(v, 1, counter_item, rd);
    if (json_is(key, "opportunities"))
        return json_array(v, 1, opportunity_item, rd);
    if (json_is(key, "job"))
        return job_object(v, rd);
    return json_value(v, 1);
}

static const char *top_member(void *ctx, json_slice_t key, const char *v)
{
    reader_t *rd = ctx;
    json_slice_t s;
    int k = index_of(key, needed, N_NEEDED);
    if (k >= 0)
        rd->seen |= 1u << k;
    if (json_is(key, "schema")) {
        if ((v = json_string(v, &s)) && (s.n < 18 || memcmp(s.p, "gpuaccel-profile/", 17)))
            rd->bad = "its \"schema\" is not gpuaccel-profile/N";
        return v;
    }
    if (json_is(key, "pid"))
        return json_uint(v, &rd->p->pid);
    if (json_is(key, "wall_ns"))
        return json_uint(v, &rd->p->wall_ns);
    if (json_is(key, "text"))
        return json_string(v, &rd->p->text);
    if (json_is(key, "written_on")) {
        if ((v = json_string(v, &s)))
            rd->p->by_signal = json_is(s, "signal");
        return v;
    }
    return top_list(key, v, rd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *b = malloc(cap), *nb;
    while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) == cap - 1)
            b = (nb = realloc(b, cap *= 2)) ? nb : (free(b), NULL);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (b && err)
        free(b), b = NULL, errno = err;
    if (b)
        b[n] = '\0', *len = n;
    return b;
}

/* Why the file read as text is not a profile: "" when it is one. */
static void judge(const char *text, size_t len, const char *end, const reader_t *rd, char *why,
                  size_t cap)
{
    const char *at = json_failed_at();
    why[0] = '\0';
    if (!end && at && (size_t)(at - text) >= len)
        snprintf(why, cap, "truncated: the JSON ends at byte %zu", len);
    else if (!end)
        snprintf(why, cap, "not a gpuaccel profile: malformed JSON at byte %zu of %zu",
                 at ? (size_t)(at - text) : 0, len);
    else if (*json_ws(end))
        snprintf(why, cap, "not a gpuaccel profile: text after the JSON at byte %zu of %zu",
                 (size_t)(json_ws(end) - text), len);
    else if (rd->bad)
        snprintf(why, cap, "not a gpuaccel profile: %s", rd->bad);
    for (unsigned k = 0; !why[0] && k < N_NEEDED; k++)
        if (!(rd->seen >> k & 1))
            snprintf(why, cap, "not a gpuaccel profile: no \"%s\"", needed[k]);
    if (!why[0] && rd->missing)
        snprintf(why, cap, "not a gpuaccel profile: a record without \"%s\"", rd->missing);
}

char *pf_read(const char *path, pf_proc_t *p, const pf_sink_t *sink, char *why, size_t cap)
{
    size_t len = 0;
    char *text = slurp(path, &len);
    if (!text) {
        snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    memset(p, 0, sizeof *p);
    p->file = path;
    p->world_size = p->local_rank = -1;
    reader_t rd = {p, sink, NULL, NULL, 0};
    json_reset_failure();
    const char *end = json_object(text, 0, top_member, &rd);
    judge(text, len, end, &rd, why, cap);
    if (why[0]) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- the files of a run ------------------------------------------------------------ */
static const char *digits_end(const char *s)
{
    const char *d = s;
    while (*s >= '0' && *s <= '9')
        s++;
    return s > d ? s : NULL;
}

bool pf_is_process_file(const char *base, const char *name)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) || name[n] != '.')
        return false;
    const char *s = name + n + 1;
    if (!strncmp(s, "rank", 4)) { /* rank<R>. */
        if (!(s = digits_end(s + 4)) || *s++ != '.')
            return false;
    }
    return (s = digits_end(s)) && !strcmp(s, ".json");
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds dir/name (dir "" for none) to the list; false without memory. */
static bool add(char ***list, int *n, int *cap, const char *dir, const char *name)
{
    if (*n == *cap) {
        char **l = realloc(*list, (size_t)(*cap = *cap ? *cap * 2 : 16) * sizeof *l);
        if (!l)
            return false;
        *list = l;
    }
    return asprintf(&(*list)[*n], "%s%s", dir, name) >= 0 && ++*n;
}

int pf_find_run(const char *base, char ***out)
{
    char dir[4096];
    const char *slash = strrchr(base, '/'), *stem = slash ? slash + 1 : base;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - base + 1) : 0, base);
    DIR *d = opendir(slash ? dir : ".");
    if (!d)
        return -1;
    char **list = NULL, own[sizeof dir + 8];
    int n = 0, cap = 0;
    bool ok = true;
    snprintf(own, sizeof own, "%s.json", stem);
    for (struct dirent *e; ok && (e = readdir(d));)
        if (!strcmp(e->d_name, own) || pf_is_process_file(stem, e->d_name))
            ok = add(&list, &n, &cap, dir, e->d_name);
    closedir(d);
    if (!ok)
        return pf_free_list(list, n), errno = ENOMEM, -1;
    if (n)
        qsort(list, (size_t)n, sizeof *list, by_name);
    /* BASE.json sorts after BASE.1234.json ('j' > digits, 'r'): put it first */
    for (int i = 0; i < n; i++) {
        const char *name = list[i] + strlen(dir);
        if (!strcmp(name, own)) {
            char *o = list[i];
            memmove(list + 1, list, (size_t)i * sizeof *list);
            list[0] = o;
            break;
        }
    }
    *out = list;
    return n;
}

void pf_free_list(char **list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
}
