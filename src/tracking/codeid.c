/* codeid.c - kernel code identities from the images programs load (see
 * codeid.h for what an identity covers and why).
 *
 * Owns: images (cudart's fatbin wrapper, a fatbin's entries, a bare cubin or
 * PTX text), which entries can be searched, the wanted names' table, and
 * combining the entries' hashes into one identity; cubin.c reads cubins,
 * ptx.c PTX text, codehash.h holds the hash. Must never: read past a header's
 * stated size or `avail`; trust an offset or a size before checking it; call
 * anything but libc (the gpuaccel command and the build link this file too). */
#define _GNU_SOURCE
#include "tracking/codeid.h"

#include "tracking/codehash.h"
#include "tracking/cubin.h"
#include "tracking/ptx.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t FATBIN_MAGIC[4] = {0x50, 0xed, 0x55, 0xba};  /* 0xBA55ED50 */
static const uint8_t WRAPPER_MAGIC[4] = {0xb1, 0x43, 0x62, 0x46}; /* 0x466243B1 */

/* ---- finding wanted names quickly --------------------------------------------------- */

/* The wanted names in an open-addressing table of their indices. */
typedef struct names {
    const ga_codeid_want_t *want;
    size_t *len;
    unsigned *slot, cap;
} names_t;

static uint64_t str_hash(const char *s, size_t n)
{
    hs_t h;
    hs_init(&h, 0);
    hs_bytes(&h, s, n);
    return hs_end(&h);
}

static bool names_init(names_t *t, const ga_codeid_want_t *want, unsigned n)
{
    t->want = want;
    t->cap = 8;
    while (t->cap < 2 * n)
        t->cap *= 2;
    t->slot = malloc(t->cap * sizeof *t->slot);
    t->len = malloc(n * sizeof *t->len);
    if (!t->slot || !t->len)
        return false;
    for (unsigned i = 0; i < t->cap; i++)
        t->slot[i] = ~0u;
    for (unsigned i = 0; i < n; i++) {
        t->len[i] = strlen(want[i].name);
        unsigned s = (unsigned)str_hash(want[i].name, t->len[i]) & (t->cap - 1);
        while (t->slot[s] != ~0u)
            s = (s + 1) & (t->cap - 1);
        t->slot[s] = i;
    }
    return true;
}

/* Mark every wanted name equal to s[0..n). */
static void names_mark(const names_t *t, const char *s, size_t n, bool *mark)
{
    for (unsigned i = (unsigned)str_hash(s, n) & (t->cap - 1); t->slot[i] != ~0u;
         i = (i + 1) & (t->cap - 1)) {
        unsigned w = t->slot[i];
        if (t->len[w] == n && !memcmp(t->want[w].name, s, n))
            mark[w] = true;
    }
}

/* A name found in an entry: marked when wanted. */
typedef struct marking {
    const names_t *t;
    bool *mark;
} marking_t;

static void mark_name(void *arg, const char *s, size_t n)
{
    marking_t *m = arg;
    names_mark(m->t, s, n, m->mark);
}

/* ---- images ----------------------------------------------------------------------- */

enum { KIND_PTX = 1, KIND_CUBIN = 2 };
/* Compressed payloads: 0x2000 (LZ4, CUDA 11-12) and 0x8000 (zstd: what nvcc 13
 * writes, for its PTX by default and for every entry with -Xfatbin -compress-all). */
enum { FLAG_COMPRESSED = 0x2000 | 0x8000 };

typedef struct entry {
    unsigned kind;
    uint32_t arch;
    uint64_t flags;
    span_t data;       /* the payload (PTX: up to its NUL) */
    bool searchable;   /* an uncompressed cubin or PTX text */
    ga_cubin_t elf;    /* cubins */
    bool hashed;       /* unsearchable: payload_hash is set */
    uint64_t payload_hash;
} entry_t;

typedef struct image {
    entry_t *e;
    unsigned n, searchable, unsearchable;
    unsigned compressed; /* compressed cubins and PTX (of the unsearchable) */
} image_t;

size_t ga_codeid_fatbin_span(const void *image, size_t avail)
{
    const uint8_t *p = image;
    if (!p || avail < 16 || !starts_with(p, avail, FATBIN_MAGIC))
        return 0;
    uint64_t head = rd16(p + 6), body = rd64(p + 8);
    if (head < 16 || head > avail || body > avail - head)
        return 0;
    return (size_t)(head + body);
}

static bool entry_open(entry_t *x)
{
    x->searchable = !(x->flags & FLAG_COMPRESSED) && (x->kind == KIND_PTX || x->kind == KIND_CUBIN);
    if (!x->searchable)
        return true;
    if (x->kind == KIND_PTX) {
        x->data.n = strnlen((const char *)x->data.p, x->data.n);
        return true;
    }
    return ga_cubin_open(&x->elf, x->data.p, x->data.n);
}

/* The image's entries: a fatbin's, or the one a bare cubin or PTX text is.
 * False when the image cannot be read (then nothing is identified). */
static bool image_open(image_t *im, const void *image, size_t avail)
{
    memset(im, 0, sizeof *im);
    const uint8_t *p = image;
    if (!p || !avail)
        return false;
    if (starts_with(p, avail, WRAPPER_MAGIC)) { /* cudart's: {magic, version, fatbin, ...} */
        if (avail != GA_CODEID_IN_PROCESS)
            return false; /* a pointer in a file means nothing */
        const void *inner;
        memcpy(&inner, p + 8, sizeof inner);
        if (!inner)
            return false;
        p = inner;
    }
    if (starts_with(p, avail, FATBIN_MAGIC)) {
        size_t span = ga_codeid_fatbin_span(p, avail == GA_CODEID_IN_PROCESS ? IMAGE_MAX : avail);
        if (!span)
            return false;
        size_t head = rd16(p + 6);
        unsigned cap = 0;
        for (size_t pos = head; pos < span;) {
            if (span - pos < 0x30)
                return free(im->e), false;
            uint32_t eh = rd32(p + pos + 4);
            uint64_t size = rd64(p + pos + 8);
            if (eh < 0x30 || eh > span - pos || size > span - pos - eh)
                return free(im->e), false;
            if (im->n == cap) {
                cap = cap ? 2 * cap : 8;
                entry_t *more = realloc(im->e, cap * sizeof *more);
                if (!more)
                    return free(im->e), false;
                im->e = more;
            }
            entry_t *x = &im->e[im->n++];
            memset(x, 0, sizeof *x);
            x->kind = rd16(p + pos);
            x->arch = rd32(p + pos + 0x1c);
            x->flags = rd64(p + pos + 0x28);
            x->data = (span_t){p + pos + eh, (size_t)size};
            pos += eh + (size_t)size;
        }
    } else {
        im->e = calloc(1, sizeof *im->e);
        if (!im->e)
            return false;
        im->n = 1;
        entry_t *x = &im->e[0];
        if (ga_cubin_is(p, avail)) {
            size_t n = avail == GA_CODEID_IN_PROCESS ? ga_cubin_extent(p) : avail;
            x->kind = KIND_CUBIN, x->data = (span_t){p, n};
        } else {
            x->kind = KIND_PTX, x->data = (span_t){p, strnlen((const char *)p, avail)};
        }
    }
    for (unsigned i = 0; i < im->n; i++) {
        if (!entry_open(&im->e[i]))
            return free(im->e), false; /* a cubin that is none: nothing here is sure */
        const entry_t *x = &im->e[i];
        im->searchable += x->searchable;
        im->unsearchable += !x->searchable;
        im->compressed += !x->searchable && (x->kind == KIND_PTX || x->kind == KIND_CUBIN);
    }
    return true;
}

static uint64_t payload_hash(entry_t *x)
{
    if (!x->hashed) {
        hs_t h;
        hs_init(&h, SEED_PAYLOAD);
        hs_bytes(&h, x->data.p, x->data.n);
        x->payload_hash = hs_end(&h), x->hashed = true;
    }
    return x->payload_hash;
}

/* One wanted kernel over the whole image: its entries in order, each that
 * holds it and each that cannot be searched. */
static bool kernel_id(image_t *im, const char *k, bool whole, uint64_t *out)
{
    hs_t h;
    hs_init(&h, SEED_ID);
    hs_str(&h, k, strlen(k));
    unsigned held = 0;
    for (unsigned i = 0; i < im->n; i++) {
        entry_t *x = &im->e[i];
        uint64_t eh;
        int r = 0;
        if (!x->searchable)
            eh = payload_hash(x), r = 1;
        else if (!whole && x->kind == KIND_CUBIN)
            r = ga_cubin_kernel(&x->elf, k, &eh), held += r == 1;
        else if (!whole)
            r = ga_ptx_kernel((const char *)x->data.p, x->data.n, k, &eh), held += r == 1;
        if (r < 0)
            return false;
        if (r == 0)
            continue;
        hs_u64(&h, (uint64_t)x->kind << 32 | (x->searchable ? 0 : x->flags & FLAG_COMPRESSED));
        hs_u64(&h, x->arch);
        hs_u64(&h, eh);
    }
    if (!whole && !held)
        return false;
    *out = whole ? hs_end(&h) | GA_CODEID_WHOLE_IMAGE : hs_end(&h) & ~GA_CODEID_WHOLE_IMAGE;
    return true;
}

unsigned ga_codeid_find(const void *image, size_t avail, ga_codeid_want_t *want, unsigned n,
                        unsigned flags)
{
    for (unsigned i = 0; i < n; i++)
        want[i].got = false;
    image_t im;
    if (!n || !image_open(&im, image, avail))
        return 0;
    names_t t = {0};
    bool *mark = calloc(n, sizeof *mark);
    unsigned got = 0;
    if (!mark || !names_init(&t, want, n))
        goto out;
    marking_t m = {&t, mark};
    for (unsigned i = 0; i < im.n; i++) {
        const entry_t *x = &im.e[i];
        if (x->searchable && x->kind == KIND_CUBIN)
            ga_cubin_texts(&x->elf, mark_name, &m);
        else if (x->searchable)
            ga_ptx_entries_rough((const char *)x->data.p, x->data.n, mark_name, &m);
    }
    /* A kernel is looked for where some entry names it; where all the code is
     * compressed, any name may be inside: the whole image identifies it. */
    bool whole = !im.searchable && im.compressed && (flags & GA_CODEID_WHOLE);
    for (unsigned i = 0; i < n; i++)
        if ((mark[i] || whole) && kernel_id(&im, want[i].name, whole, &want[i].id))
            want[i].got = true, got++;
out:
    free(t.slot), free(t.len), free(mark), free(im.e);
    return got;
}

bool ga_codeid_of(const void *image, size_t avail, const char *name, unsigned flags,
                  uint64_t *id)
{
    ga_codeid_want_t w = {.name = name};
    if (!name || !ga_codeid_find(image, avail, &w, 1, flags))
        return false;
    *id = w.id;
    return true;
}
/* ---- listing an image's kernels (tools) ------------------------------------------- */

typedef struct listed {
    char **names;
    unsigned n, cap;
} listed_t;

static void list_add(listed_t *l, const char *s, size_t n)
{
    for (unsigned i = 0; i < l->n; i++)
        if (strlen(l->names[i]) == n && !memcmp(l->names[i], s, n))
            return;
    if (l->n == l->cap) {
        unsigned cap = l->cap ? 2 * l->cap : 16;
        char **more = realloc(l->names, cap * sizeof *more);
        if (!more)
            return;
        l->names = more, l->cap = cap;
    }
    char *copy = strndup(s, n);
    if (copy)
        l->names[l->n++] = copy;
}

static void list_name(void *arg, const char *s, size_t n)
{
    list_add(arg, s, n);
}

int ga_codeid_names(const void *image, size_t avail, void (*fn)(void *arg, const char *name),
                    void *arg, unsigned *compressed)
{
    image_t im;
    if (!image_open(&im, image, avail))
        return -1;
    listed_t l = {0};
    for (unsigned i = 0; i < im.n; i++) {
        const entry_t *x = &im.e[i];
        if (x->searchable && x->kind == KIND_CUBIN)
            ga_cubin_entries(&x->elf, list_name, &l);
        else if (x->searchable)
            ga_ptx_entries((const char *)x->data.p, x->data.n, list_name, &l);
    }
    if (compressed)
        *compressed = im.unsearchable;
    for (unsigned i = 0; i < l.n; i++) {
        if (fn)
            fn(arg, l.names[i]);
        free(l.names[i]);
    }
    free(l.names), free(im.e);
    return (int)l.n;
}
