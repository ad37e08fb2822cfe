/* codeid.c - kernel code identities from the images programs load (see
 * codeid.h for what an identity covers and why).
 *
 * Owns: reading fatbins, cubins (ELF) and PTX text within their stated sizes,
 * and the hash. Must never: read past a header's stated size or `avail`;
 * trust an offset, a count or an index before checking it; call anything but
 * libc (the gpuaccel command and the build link this file too). */
#define _GNU_SOURCE
#include "tracking/codeid.h"

#include <stdlib.h>
#include <string.h>

/* ---- the hash -------------------------------------------------------------------
 * A 64-bit hash is all an identity needs: a table row lists what a build
 * produced, and a namesake matters only if its different code hashes to the
 * very value verified (2^-63). Written here because a dependency for it would
 * be out of proportion. Not FNV-1a, which costs a multiply per byte: this
 * mixes eight bytes per step (MurmurHash3's x64 round and finalizer
 * constants), so a multi-MiB compressed entry hashes in about a millisecond.
 * It is a stream (cutting the input elsewhere gives the same value); fields of
 * varying length are hashed with their length first, so fields cannot run
 * into one another. Bytes are read little-endian on any host: identities are
 * the same everywhere. */

typedef struct hs {
    uint64_t h, w, len;
    unsigned nw; /* bytes waiting in w */
} hs_t;

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
#endif
}

static void hs_init(hs_t *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->h = seed;
}

static inline void hs_word(hs_t *s, uint64_t k)
{
    k *= 0x87c37b91114253d5ull;
    k = rotl(k, 31);
    k *= 0x4cf5ad432745937full;
    s->h ^= k;
    s->h = rotl(s->h, 27) * 5 + 0x52dce729;
}

static void hs_bytes(hs_t *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->len += n;
    for (; n && s->nw; n--) {
        s->w |= (uint64_t)*p++ << (8 * s->nw);
        if (++s->nw == 8)
            hs_word(s, s->w), s->w = 0, s->nw = 0;
    }
    for (; n >= 8; n -= 8, p += 8)
        hs_word(s, rd64(p));
    for (; n; n--) /* s->nw is 0 here, and n < 8 */
        s->w |= (uint64_t)*p++ << (8 * s->nw++);
}

static void hs_u64(hs_t *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    hs_bytes(s, b, 8);
}

static void hs_str(hs_t *s, const char *t, size_t n)
{
    hs_u64(s, n);
    hs_bytes(s, t, n);
}

static uint64_t hs_end(const hs_t *s0)
{
    hs_t s = *s0;
    if (s.nw)
        hs_word(&s, s.w);
    return fmix(s.h ^ s.len);
}

/* Seeds: one per kind of thing hashed, so that no two kinds can agree. */
enum { SEED_ID = 1, SEED_SECTION, SEED_INFO, SEED_CUBIN, SEED_PTX, SEED_PAYLOAD };

/* ---- bounded reading ------------------------------------------------------------- */

typedef struct span {
    const uint8_t *p;
    size_t n;
} span_t;

/* The NUL-terminated string at off in tab, wholly inside it; NULL if not. */
static const char *str_at(span_t tab, uint64_t off, size_t *len)
{
    if (off >= tab.n)
        return NULL;
    const char *s = (const char *)tab.p + off, *z = memchr(s, 0, tab.n - off);
    if (!z)
        return NULL;
    *len = (size_t)(z - s);
    return s;
}

/* Does the image start with these (non-zero) bytes? Compared one at a time,
 * so a short NUL-terminated PTX text is never read past its end. */
static bool starts_with(const uint8_t *p, size_t avail, const uint8_t magic[4])
{
    for (int i = 0; i < 4; i++)
        if ((size_t)i >= avail || p[i] != magic[i])
            return false;
    return true;
}

static const uint8_t FATBIN_MAGIC[4] = {0x50, 0xed, 0x55, 0xba};  /* 0xBA55ED50 */
static const uint8_t WRAPPER_MAGIC[4] = {0xb1, 0x43, 0x62, 0x46}; /* 0x466243B1 */
static const uint8_t ELF_MAGIC[4] = {0x7f, 'E', 'L', 'F'};

/* Images beyond this are not read: no cubin or fatbin comes near. */
enum { IMAGE_MAX = 1u << 30 };

/* ---- cubins (ELF64) --------------------------------------------------------------- */

enum { SHT_SYMTAB = 2, SHT_RELA = 4, SHT_NOBITS = 8, SHT_REL = 9 };
enum { SHF_EXECINSTR = 4, STT_FUNC = 2, STT_SECTION = 3, STO_CUDA_ENTRY = 0x10 };

typedef struct elf {
    const uint8_t *p;
    size_t n;
    uint64_t shoff;
    unsigned shnum, shentsize;
    span_t shstr;
    uint32_t flags; /* e_flags: the architecture and ABI */
} elf_t;

typedef struct sh {
    uint32_t name, type, link, info;
    uint64_t flags, off, size, entsize;
} sh_t;

static void sh_read(const elf_t *e, unsigned i, sh_t *s)
{
    const uint8_t *h = e->p + e->shoff + (size_t)i * e->shentsize; /* checked by elf_open */
    s->name = rd32(h), s->type = rd32(h + 4), s->flags = rd64(h + 8);
    s->off = rd64(h + 0x18), s->size = rd64(h + 0x20);
    s->link = rd32(h + 0x28), s->info = rd32(h + 0x2c), s->entsize = rd64(h + 0x38);
}

static bool sec_data(const elf_t *e, const sh_t *s, span_t *d)
{
    if (s->type == SHT_NOBITS || s->off > e->n || s->size > e->n - s->off)
        return false;
    d->p = e->p + s->off, d->n = (size_t)s->size;
    return true;
}

static const char *sec_name(const elf_t *e, const sh_t *s, size_t *len)
{
    return str_at(e->shstr, s->name, len);
}

static bool elf_open(elf_t *e, const uint8_t *p, size_t n)
{
    if (n < 64 || !starts_with(p, n, ELF_MAGIC) || p[4] != 2 || p[5] != 1)
        return false; /* ELF64, little-endian: what every cubin since sm_20 is */
    e->p = p, e->n = n;
    e->shoff = rd64(p + 0x28), e->flags = rd32(p + 0x30);
    e->shentsize = rd16(p + 0x3a), e->shnum = rd16(p + 0x3c);
    unsigned shstrndx = rd16(p + 0x3e);
    if (e->shentsize < 64 || !e->shnum || shstrndx >= e->shnum || e->shoff > n ||
        (uint64_t)e->shnum * e->shentsize > n - e->shoff)
        return false;
    sh_t s;
    sh_read(e, shstrndx, &s);
    return sec_data(e, &s, &e->shstr);
}

/* The bytes a cubin in this process spans, from its headers (the driver
 * accepted it, so the headers it read are there): 0 if odd or huge. */
static size_t elf_extent(const uint8_t *p)
{
    if (p[4] != 2 || p[5] != 1)
        return 0;
    uint64_t shoff = rd64(p + 0x28), phoff = rd64(p + 0x20);
    unsigned shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c);
    unsigned phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
    if (shentsize < 64 || !shnum || shoff > IMAGE_MAX || phoff > IMAGE_MAX)
        return 0;
    uint64_t end = shoff + (uint64_t)shnum * shentsize;
    if (phnum && phoff + (uint64_t)phnum * phentsize > end)
        end = phoff + (uint64_t)phnum * phentsize;
    for (unsigned i = 0; i < shnum && end <= IMAGE_MAX; i++) {
        const uint8_t *h = p + shoff + (size_t)i * shentsize;
        uint64_t off = rd64(h + 0x18), size = rd64(h + 0x20);
        if (rd32(h + 4) == SHT_NOBITS)
            continue;
        if (off > IMAGE_MAX || size > IMAGE_MAX)
            return 0;
        if (off + size > end)
            end = off + size;
    }
    return end <= IMAGE_MAX ? (size_t)end : 0;
}

typedef struct syms {
    span_t tab, str;
} syms_t;

typedef struct sym {
    uint32_t name;
    uint8_t info, other;
    uint16_t shndx;
} sym_t;

static bool syms_open(const elf_t *e, uint32_t symtab, syms_t *y)
{
    sh_t s, t;
    if (symtab >= e->shnum)
        return false;
    sh_read(e, symtab, &s);
    if (s.type != SHT_SYMTAB || s.link >= e->shnum || !sec_data(e, &s, &y->tab))
        return false;
    sh_read(e, s.link, &t);
    return sec_data(e, &t, &y->str);
}

static bool sym_get(const syms_t *y, uint64_t i, sym_t *s)
{
    if (i >= y->tab.n / 24)
        return false;
    const uint8_t *q = y->tab.p + i * 24;
    s->name = rd32(q), s->info = q[4], s->other = q[5], s->shndx = rd16(q + 6);
    return true;
}

/* What one kernel's hash is built from: the cubin, the sections already taken
 * (`taken`) and those still to hash (`todo`), the running sum. */
typedef struct kctx {
    const elf_t *e;
    uint8_t *taken;
    unsigned *todo, ntodo;
    uint64_t sum, count;
    bool bad;
} kctx_t;

static void take(kctx_t *c, unsigned i)
{
    if (i && i < c->e->shnum && !c->taken[i])
        c->taken[i] = 1, c->todo[c->ntodo++] = i;
}

/* A symbol as what it names: its name (a section symbol: its section's name),
 * its type and binding, never its index. A function it names is hashed too
 * (a call through a relocation reaches code outside the kernel's section). */
static void hs_sym(kctx_t *c, hs_t *h, const syms_t *y, uint64_t i)
{
    sym_t s;
    size_t len = 0;
    const char *name = NULL;
    if (!sym_get(y, i, &s)) {
        c->bad = true;
        return;
    }
    sh_t sec;
    bool in_sec = s.shndx && s.shndx < c->e->shnum;
    if (in_sec)
        sh_read(c->e, s.shndx, &sec);
    if ((s.info & 0xf) == STT_SECTION)
        name = in_sec ? sec_name(c->e, &sec, &len) : NULL;
    else
        name = str_at(y->str, s.name, &len);
    if (!name) {
        c->bad = true;
        return;
    }
    hs_str(h, name, len);
    hs_u64(h, (uint64_t)s.info << 8 | s.other);
    if (in_sec && (sec.flags & SHF_EXECINSTR))
        take(c, s.shndx);
}

/* The relocations of section `target`: every REL/RELA section aimed at it. */
static void hs_relocs(kctx_t *c, hs_t *h, unsigned target)
{
    for (unsigned j = 1; j < c->e->shnum && !c->bad; j++) {
        sh_t r;
        sh_read(c->e, j, &r);
        if ((r.type != SHT_REL && r.type != SHT_RELA) || r.info != target)
            continue;
        unsigned ent = r.type == SHT_RELA ? 24 : 16;
        span_t d;
        syms_t y;
        if ((r.entsize && r.entsize != ent) || !sec_data(c->e, &r, &d) ||
            !syms_open(c->e, r.link, &y)) {
            c->bad = true;
            return;
        }
        hs_u64(h, r.type);
        hs_u64(h, d.n / ent);
        for (size_t k = 0; k + ent <= d.n && !c->bad; k += ent) {
            uint64_t info = rd64(d.p + k + 8);
            hs_u64(h, rd64(d.p + k));                          /* where */
            hs_u64(h, info & 0xffffffffu);                     /* the relocation type */
            hs_u64(h, ent == 24 ? rd64(d.p + k + 16) : 0);     /* the addend */
            hs_sym(c, h, &y, info >> 32);                      /* what it points at */
        }
    }
}

/* .nv.info attributes whose value starts with a symbol index (EIATTR_* in
 * NVIDIA's cubin format): PARAM_CBANK, FRAME_SIZE, MIN_STACK_SIZE,
 * MAX_STACK_SIZE, REGCOUNT; EXTERNS is a list of them. */
static bool attr_names_symbol(unsigned attr)
{
    return attr == 0x0a || attr == 0x11 || attr == 0x12 || attr == 0x23 || attr == 0x2f;
}
enum { EIFMT_SVAL = 4, EIATTR_EXTERNS = 0x0f };

/* An .nv.info section's records, each symbol index replaced by what the symbol
 * names. Records: u8 format, u8 attribute, u16 value, or (format SVAL) u16
 * size and that many bytes. `only` (not ~0): of the module's .nv.info, only
 * records about symbol `only` (one kernel's register count, stack and frame). */
static void hs_info(kctx_t *c, hs_t *h, span_t d, uint32_t symtab, uint64_t only)
{
    syms_t y;
    bool have_syms = syms_open(c->e, symtab, &y);
    size_t pos = 0;
    while (pos + 4 <= d.n && !c->bad) {
        unsigned fmt = d.p[pos], attr = d.p[pos + 1], val = rd16(d.p + pos + 2);
        const uint8_t *v = d.p + pos + 4;
        if (fmt != EIFMT_SVAL) {
            if (only == ~0ull)
                hs_bytes(h, d.p + pos, 4);
            pos += 4;
            continue;
        }
        if (val > d.n - pos - 4) { /* a record past the end: hash what is there */
            if (only == ~0ull)
                hs_bytes(h, d.p + pos, d.n - pos);
            return;
        }
        bool sym_first = attr_names_symbol(attr) && val >= 4;
        if (only != ~0ull) {
            if (sym_first && rd32(v) == only) {
                hs_u64(h, attr);
                hs_str(h, (const char *)v + 4, val - 4u);
            }
        } else if ((sym_first || (attr == EIATTR_EXTERNS && val >= 4)) && have_syms) {
            hs_u64(h, (uint64_t)fmt << 8 | attr);
            hs_u64(h, val);
            size_t k = 0;
            do { /* the symbol(s), then the rest as bytes */
                hs_sym(c, h, &y, rd32(v + k));
                k += 4;
            } while (attr == EIATTR_EXTERNS && k + 4 <= val);
            hs_bytes(h, v + k, val - k);
        } else {
            hs_bytes(h, d.p + pos, 4u + val);
        }
        pos += 4u + val;
    }
}

static bool has_prefix(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && !memcmp(s, pre, k);
}

/* One section of a kernel: its name, kind, flags, size and bytes, and its
 * relocations; added to the kernel's sum (the order sections come in does
 * not matter). */
static void hash_section(kctx_t *c, unsigned i)
{
    sh_t s;
    sh_read(c->e, i, &s);
    size_t len;
    const char *name = sec_name(c->e, &s, &len);
    if (!name) {
        c->bad = true;
        return;
    }
    hs_t h;
    hs_init(&h, SEED_SECTION);
    hs_str(&h, name, len);
    hs_u64(&h, s.type);
    hs_u64(&h, s.flags);
    hs_u64(&h, s.size);
    if (s.flags & SHF_EXECINSTR)
        hs_u64(&h, s.info >> 24); /* registers; the low bits number a symbol */
    if (s.type != SHT_NOBITS) {
        span_t d;
        if (!sec_data(c->e, &s, &d)) {
            c->bad = true;
            return;
        }
        if (has_prefix(name, len, ".nv.info."))
            hs_info(c, &h, d, s.link, ~0ull);
        else
            hs_bytes(&h, d.p, d.n);
    }
    hs_relocs(c, &h, i);
    c->sum += hs_end(&h);
    c->count++;
}

/* Is section `name` one of the kernel's own (".nv.<word>.<kernel>")? */
static bool kernel_section(const char *name, size_t len, const char *k, size_t klen)
{
    if (len < 4 + klen + 2 || !has_prefix(name, len, ".nv.") ||
        memcmp(name + len - klen, k, klen) || name[len - klen - 1] != '.')
        return false;
    for (size_t i = 4; i < len - klen - 1; i++)
        if (!(name[i] == '_' || (name[i] >= 'a' && name[i] <= 'z') ||
              (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9')))
            return false;
    return true;
}

/* Module data any kernel may read without a relocation: constant banks
 * (".nv.constant3": __constant__ variables) and initialized globals. */
static bool module_data(const char *name, size_t len)
{
    if (len == strlen(".nv.global.init") && !memcmp(name, ".nv.global.init", len))
        return true;
    if (!has_prefix(name, len, ".nv.constant") || len == strlen(".nv.constant"))
        return false;
    for (size_t i = strlen(".nv.constant"); i < len; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    return true;
}

/* The section index of ".text.<k>", 0 if none. */
static unsigned text_of(const elf_t *e, const char *k, size_t klen)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        sh_t s;
        size_t len;
        sh_read(e, i, &s);
        const char *name = sec_name(e, &s, &len);
        if (name && len == 6 + klen && has_prefix(name, len, ".text.") &&
            !memcmp(name + 6, k, klen))
            return i;
    }
    return 0;
}

/* A kernel's hash in one cubin: 1 with *out, 0 when the cubin does not hold
 * it, -1 when the cubin is malformed where the kernel's code is. */
static int cubin_kernel(const elf_t *e, const char *k, uint64_t *out)
{
    size_t klen = strlen(k);
    unsigned text = text_of(e, k, klen);
    if (!text)
        return 0;
    kctx_t c = {.e = e};
    c.taken = calloc(e->shnum, 1);
    c.todo = malloc(e->shnum * sizeof *c.todo);
    if (!c.taken || !c.todo) {
        free(c.taken), free(c.todo);
        return -1;
    }
    uint32_t symtab = 0, info = 0;
    for (unsigned i = 1; i < e->shnum; i++) {
        sh_t s;
        size_t len;
        sh_read(e, i, &s);
        const char *name = sec_name(e, &s, &len);
        if (!name)
            continue;
        if (i == text || kernel_section(name, len, k, klen) || module_data(name, len))
            take(&c, i);
        if (s.type == SHT_SYMTAB && !symtab)
            symtab = i;
        if (len == 8 && !memcmp(name, ".nv.info", 8))
            info = i;
    }
    while (c.ntodo && !c.bad)
        hash_section(&c, c.todo[--c.ntodo]);
    /* The module's .nv.info records about this kernel's symbol. */
    syms_t y;
    sym_t s;
    if (!c.bad && info && syms_open(e, symtab, &y)) {
        for (uint64_t i = 1; sym_get(&y, i, &s); i++) {
            size_t len;
            const char *name = str_at(y.str, s.name, &len);
            if (s.shndx != text || (s.info & 0xf) != STT_FUNC || !name || len != klen ||
                memcmp(name, k, klen))
                continue;
            sh_t is;
            span_t d;
            sh_read(e, info, &is);
            if (sec_data(e, &is, &d)) {
                hs_t h;
                hs_init(&h, SEED_INFO);
                hs_info(&c, &h, d, is.link, i);
                c.sum += hs_end(&h);
            }
            break;
        }
    }
    hs_t h;
    hs_init(&h, SEED_CUBIN);
    hs_u64(&h, e->flags);
    hs_u64(&h, c.count);
    hs_u64(&h, c.sum);
    *out = hs_end(&h);
    free(c.taken), free(c.todo);
    return c.bad ? -1 : 1;
}

/* ---- PTX text --------------------------------------------------------------------- */

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

typedef struct lex {
    const char *t;
    size_t n, i;
} lex_t;

/* The next token: a run of characters that are not blanks, outside comments
 * ("//" to the end of the line, and block comments, which count as blanks);
 * a quoted string is part of its token. False at the end. */
static bool lex_next(lex_t *l, const char **tok, size_t *len)
{
    for (;;) {
        while (l->i < l->n && blank(l->t[l->i]))
            l->i++;
        if (l->i + 1 < l->n && l->t[l->i] == '/' && l->t[l->i + 1] == '/') {
            const char *nl = memchr(l->t + l->i, '\n', l->n - l->i);
            l->i = nl ? (size_t)(nl - l->t) : l->n;
            continue;
        }
        if (l->i + 1 < l->n && l->t[l->i] == '/' && l->t[l->i + 1] == '*') {
            const char *end = memmem(l->t + l->i + 2, l->n - l->i - 2, "*/", 2);
            l->i = end ? (size_t)(end - l->t) + 2 : l->n;
            continue;
        }
        break;
    }
    if (l->i >= l->n)
        return false;
    size_t start = l->i;
    bool quoted = false;
    for (; l->i < l->n; l->i++) {
        char ch = l->t[l->i];
        if (quoted) {
            if (ch == '\\' && l->i + 1 < l->n)
                l->i++;
            else if (ch == '"')
                quoted = false;
            continue;
        }
        if (blank(ch) || (ch == '/' && l->i + 1 < l->n &&
                          (l->t[l->i + 1] == '/' || l->t[l->i + 1] == '*')))
            break;
        quoted = ch == '"';
    }
    *tok = l->t + start, *len = l->i - start;
    return true;
}

static bool tok_is(const char *t, size_t n, const char *word)
{
    return n == strlen(word) && !memcmp(t, word, n);
}

/* Where a function's text ends: braces counted outside strings; a ';' before
 * any '{' ends a declaration. */
typedef struct body {
    long depth;
    bool opened, done;
} body_t;

static void body_feed(body_t *b, const char *t, size_t n)
{
    bool quoted = false;
    for (size_t i = 0; i < n && !b->done; i++) {
        char ch = t[i];
        if (quoted) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                quoted = false;
        } else if (ch == '"') {
            quoted = true;
        } else if (ch == '{') {
            b->depth++, b->opened = true;
        } else if (ch == '}') {
            b->done = --b->depth <= 0 && b->opened;
        } else if (ch == ';' && !b->opened) {
            b->done = true;
        }
    }
}

/* A token as hashed: NVVM numbers a function's block labels by the function's
 * place in the module ($L__BB<function>_<block>), so a kernel added before
 * another renames the other's labels; they are local to a function, so the
 * function's number is left out ($L__BB_<block>). */
static void hs_tok(hs_t *h, const char *t, size_t n)
{
    hs_u64(h, 0x746f6b); /* a token starts (its length would change with the labels) */
    static const char bb[] = "$L__BB";
    const size_t bl = sizeof bb - 1;
    for (const char *end = t + n, *at; t < end; t = at) {
        at = memmem(t, (size_t)(end - t), bb, bl);
        if (!at) {
            hs_bytes(h, t, (size_t)(end - t));
            break;
        }
        at += bl;
        hs_bytes(h, t, (size_t)(at - t));
        const char *d = at;
        while (d < end && *d >= '0' && *d <= '9')
            d++;
        if (d > at && d < end && *d == '_')
            at = d; /* the function's number skipped */
    }
}

/* The name an ".entry" token is followed by: the token up to '(' (len 0 if none). */
static size_t entry_name(const char *t, size_t n)
{
    const char *paren = memchr(t, '(', n);
    return paren ? (size_t)(paren - t) : n;
}

/* A kernel's hash in PTX text: every token of the module but comments and the
 * other kernels' .entry functions (with their .visible/.weak qualifiers), one
 * blank between tokens. 1 with *out, 0 when the text has no such kernel, -1
 * when its body is cut short. */
static int ptx_kernel(const char *t, size_t n, const char *k, uint64_t *out)
{
    lex_t l = {t, n, 0};
    hs_t h;
    hs_init(&h, SEED_PTX);
    const char *held[4], *tok; /* qualifiers waiting for what they qualify */
    size_t held_len[4], len, klen = strlen(k);
    unsigned nheld = 0;
    int found = 0;
    body_t ours = {0, false, true};
    while (lex_next(&l, &tok, &len)) {
        if (tok_is(tok, len, ".visible") || tok_is(tok, len, ".weak") ||
            tok_is(tok, len, ".extern")) {
            if (nheld == 4) { /* more qualifiers than any PTX has: no longer held */
                hs_tok(&h, held[0], held_len[0]);
                memmove(held, held + 1, 3 * sizeof *held);
                memmove(held_len, held_len + 1, 3 * sizeof *held_len);
                nheld--;
            }
            held[nheld] = tok, held_len[nheld++] = len;
            continue;
        }
        if (tok_is(tok, len, ".entry") && ours.done) {
            const char *name;
            size_t nlen;
            if (!lex_next(&l, &name, &nlen))
                break;
            size_t kl = entry_name(name, nlen);
            if (kl != klen || memcmp(name, k, klen)) { /* another kernel: left out */
                body_t other = {0, false, false};
                body_feed(&other, name + kl, nlen - kl);
                while (!other.done && lex_next(&l, &tok, &len))
                    body_feed(&other, tok, len);
                nheld = 0;
                continue;
            }
            for (unsigned i = 0; i < nheld; i++)
                hs_tok(&h, held[i], held_len[i]);
            nheld = 0;
            hs_tok(&h, tok, len);
            hs_tok(&h, name, nlen);
            ours = (body_t){0, false, false};
            body_feed(&ours, name + kl, nlen - kl);
            if (ours.done && ours.opened)
                found = 1;
            continue;
        }
        for (unsigned i = 0; i < nheld; i++)
            hs_tok(&h, held[i], held_len[i]);
        nheld = 0;
        hs_tok(&h, tok, len);
        if (!ours.done) {
            body_feed(&ours, tok, len);
            if (ours.done && ours.opened)
                found = 1; /* a declaration (no body) does not count */
        }
    }
    if (!ours.done)
        return -1; /* the kernel's text is cut short */
    *out = hs_end(&h);
    return found;
}

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

/* The .entry names of PTX text, roughly (comments not skipped: the hash
 * decides), and the .text.<name> sections of a cubin. */
static void ptx_mark(const names_t *t, const char *p, size_t n, bool *mark)
{
    for (const char *e = p; (e = memmem(e, n - (size_t)(e - p), ".entry", 6));) {
        e += 6;
        const char *q = e, *end = p + n;
        while (q < end && blank(*q))
            q++;
        const char *s = q;
        while (q < end && !blank(*q) && *q != '(' && *q != ';')
            q++;
        if (q > s && q > e && s > e)
            names_mark(t, s, (size_t)(q - s), mark);
        e = q;
    }
}

static void cubin_mark(const names_t *t, const elf_t *e, bool *mark)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        sh_t s;
        size_t len;
        sh_read(e, i, &s);
        const char *name = sec_name(e, &s, &len);
        if (name && len > 6 && has_prefix(name, len, ".text."))
            names_mark(t, name + 6, len - 6, mark);
    }
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
    elf_t elf;         /* cubins */
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
    return elf_open(&x->elf, x->data.p, x->data.n);
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
        if (starts_with(p, avail, ELF_MAGIC)) {
            size_t n = avail == GA_CODEID_IN_PROCESS ? elf_extent(p) : avail;
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
            r = cubin_kernel(&x->elf, k, &eh), held += r == 1;
        else if (!whole)
            r = ptx_kernel((const char *)x->data.p, x->data.n, k, &eh), held += r == 1;
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
    for (unsigned i = 0; i < im.n; i++) {
        const entry_t *x = &im.e[i];
        if (x->searchable && x->kind == KIND_CUBIN)
            cubin_mark(&t, &x->elf, mark);
        else if (x->searchable)
            ptx_mark(&t, (const char *)x->data.p, x->data.n, mark);
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

static void list_cubin(listed_t *l, const elf_t *e)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        sh_t s;
        syms_t y;
        sym_t sy;
        sh_read(e, i, &s);
        if (s.type != SHT_SYMTAB || !syms_open(e, i, &y))
            continue;
        for (uint64_t j = 1; sym_get(&y, j, &sy); j++) {
            size_t len, tlen;
            const char *name = str_at(y.str, sy.name, &len);
            if (!name || (sy.info & 0xf) != STT_FUNC || !(sy.other & STO_CUDA_ENTRY) ||
                !sy.shndx || sy.shndx >= e->shnum)
                continue;
            sh_t ts;
            sh_read(e, sy.shndx, &ts);
            const char *tname = sec_name(e, &ts, &tlen);
            if (tname && tlen == 6 + len && has_prefix(tname, tlen, ".text.") &&
                !memcmp(tname + 6, name, len))
                list_add(l, name, len);
        }
    }
}

static void list_ptx(listed_t *l, const char *t, size_t n)
{
    lex_t x = {t, n, 0};
    const char *tok, *name;
    size_t len, nlen;
    while (lex_next(&x, &tok, &len))
        if (tok_is(tok, len, ".entry") && lex_next(&x, &name, &nlen) && entry_name(name, nlen))
            list_add(l, name, entry_name(name, nlen));
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
            list_cubin(&l, &x->elf);
        else if (x->searchable)
            list_ptx(&l, (const char *)x->data.p, x->data.n);
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
