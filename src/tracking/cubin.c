/* cubin.c - cubins (ELF64 images of one architecture's machine code) for
 * code identities: opened within their stated sizes, one kernel's hash, the
 * names of the kernels they hold (cubin.h).
 *
 * Owns: the ELF layout (section headers, symbols, relocations) and NVIDIA's
 * additions to it (.nv.info attributes, per-kernel sections, module data).
 * Must never: read past a header's stated size; trust an offset, a count or an
 * index before checking it; call anything but libc. */
#define _GNU_SOURCE
#include "tracking/cubin.h"

#include <stdlib.h>
#include <string.h>

enum { SHT_SYMTAB = 2, SHT_RELA = 4, SHT_NOBITS = 8, SHT_REL = 9 };
enum { SHF_EXECINSTR = 4, STT_FUNC = 2, STT_SECTION = 3, STO_CUDA_ENTRY = 0x10 };

typedef struct sh {
    uint32_t name, type, link, info;
    uint64_t flags, off, size, entsize;
} sh_t;

static void sh_read(const ga_cubin_t *e, unsigned i, sh_t *s)
{
    const uint8_t *h = e->p + e->shoff + (size_t)i * e->shentsize; /* checked when opened */
    s->name = rd32(h), s->type = rd32(h + 4), s->flags = rd64(h + 8);
    s->off = rd64(h + 0x18), s->size = rd64(h + 0x20);
    s->link = rd32(h + 0x28), s->info = rd32(h + 0x2c), s->entsize = rd64(h + 0x38);
}

static bool sec_data(const ga_cubin_t *e, const sh_t *s, span_t *d)
{
    if (s->type == SHT_NOBITS || s->off > e->n || s->size > e->n - s->off)
        return false;
    d->p = e->p + s->off, d->n = (size_t)s->size;
    return true;
}

static const char *sec_name(const ga_cubin_t *e, const sh_t *s, size_t *len)
{
    return str_at(e->shstr, s->name, len);
}

bool ga_cubin_is(const uint8_t *p, size_t avail)
{
    static const uint8_t ELF_MAGIC[4] = {0x7f, 'E', 'L', 'F'};
    return starts_with(p, avail, ELF_MAGIC);
}

bool ga_cubin_open(ga_cubin_t *e, const uint8_t *p, size_t n)
{
    if (n < 64 || !ga_cubin_is(p, n) || p[4] != 2 || p[5] != 1)
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

size_t ga_cubin_extent(const uint8_t *p)
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

static bool syms_open(const ga_cubin_t *e, uint32_t symtab, syms_t *y)
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
    const ga_cubin_t *e;
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
static unsigned text_of(const ga_cubin_t *e, const char *k, size_t klen)
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

int ga_cubin_kernel(const ga_cubin_t *e, const char *k, uint64_t *out)
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

void ga_cubin_texts(const ga_cubin_t *e, ga_code_name_fn *fn, void *arg)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        sh_t s;
        size_t len;
        sh_read(e, i, &s);
        const char *name = sec_name(e, &s, &len);
        if (name && len > 6 && has_prefix(name, len, ".text."))
            fn(arg, name + 6, len - 6);
    }
}

void ga_cubin_entries(const ga_cubin_t *e, ga_code_name_fn *fn, void *arg)
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
                fn(arg, name, len);
        }
    }
}
