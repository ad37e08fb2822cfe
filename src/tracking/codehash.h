/* codehash.h - what the code-identity readers share (codeid.c, cubin.c,
 * ptx.c): the hash identities are made of, and bounded reading.
 *
 * Owns: the 64-bit stream hash and its seeds (one per kind of thing hashed);
 * little-endian reads; a span of bytes and the reads that stay inside one;
 * the callback a reader tells names with.
 * Must never: depend on the host's byte order (identities are the same
 * everywhere); call anything but libc. Private to those three files. */
#ifndef GA_CODEHASH_H
#define GA_CODEHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

static inline void hs_init(hs_t *s, uint64_t seed)
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

static inline void hs_bytes(hs_t *s, const void *data, size_t n)
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

static inline void hs_u64(hs_t *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    hs_bytes(s, b, 8);
}

static inline void hs_str(hs_t *s, const char *t, size_t n)
{
    hs_u64(s, n);
    hs_bytes(s, t, n);
}

static inline uint64_t hs_end(const hs_t *s0)
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
static inline const char *str_at(span_t tab, uint64_t off, size_t *len)
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
static inline bool starts_with(const uint8_t *p, size_t avail, const uint8_t magic[4])
{
    for (int i = 0; i < 4; i++)
        if ((size_t)i >= avail || p[i] != magic[i])
            return false;
    return true;
}

/* Told a name: s[0..n), not NUL-terminated. */
typedef void ga_code_name_fn(void *arg, const char *s, size_t n);

/* Images beyond this are not read: no cubin or fatbin comes near. */
enum { IMAGE_MAX = 1u << 30 };

#endif
