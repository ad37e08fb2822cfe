/* format.c - the profile writers' formatter (format.h): appends text to a
 * ga_out_t and flushes it to its file descriptor.
 *
 * Owns: nothing but the sink it is handed; it keeps no state of its own.
 * Must never: allocate, use stdio or take a lock (the writers run from the
 * SIGINT/SIGTERM handlers too); write(2) is its only system call. */
#define _GNU_SOURCE
#include "features/profile/format.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void ga_out_flush(ga_out_t *o)
{
    size_t off = 0;
    while (o->fd >= 0 && off < o->len) {
        ssize_t w = write(o->fd, o->mem + off, o->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->failed = true;
            break;
        }
        off += (size_t)w;
    }
    if (o->fd >= 0)
        o->len = 0;
}

void ga_out_put(ga_out_t *o, const char *s, size_t n)
{
    while (n) {
        if (o->len == o->cap) {
            if (o->fd < 0) {
                o->failed = true;
                return;
            }
            ga_out_flush(o);
        }
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->mem + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

void ga_out_s(ga_out_t *o, const char *s) { ga_out_put(o, s, strlen(s)); }

void ga_out_u(ga_out_t *o, uint64_t v)
{
    char b[24];
    int i = sizeof b;
    do
        b[--i] = (char)('0' + v % 10);
    while (v /= 10);
    ga_out_put(o, b + i, sizeof b - (size_t)i);
}

void ga_out_hex(ga_out_t *o, uint64_t v)
{
    char b[18];
    int i = sizeof b;
    do
        b[--i] = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    b[--i] = 'x';
    b[--i] = '0';
    ga_out_put(o, b + i, sizeof b - (size_t)i);
}

/* v / unit with `dec` decimals, rounded. */
void ga_out_fixed(ga_out_t *o, uint64_t v, uint64_t unit, unsigned dec)
{
    uint64_t p = 1;
    for (unsigned i = 0; i < dec; i++)
        p *= 10;
    uint64_t scaled = v > UINT64_MAX / p ? v / unit * p : (v * p + unit / 2) / unit;
    ga_out_u(o, scaled / p);
    if (!dec)
        return;
    ga_out_s(o, ".");
    char b[20];
    uint64_t f = scaled % p;
    for (unsigned i = dec; i-- > 0; f /= 10)
        b[i] = (char)('0' + f % 10);
    ga_out_put(o, b, dec);
}

/* 412,000 */
void ga_out_count(ga_out_t *o, uint64_t v)
{
    char b[32];
    int i = sizeof b, digits = 0;
    do {
        if (digits && digits % 3 == 0)
            b[--i] = ',';
        b[--i] = (char)('0' + v % 10);
        digits++;
    } while (v /= 10);
    ga_out_put(o, b + i, sizeof b - (size_t)i);
}

void ga_out_dur(ga_out_t *o, uint64_t ns)
{
    if (ns < 1000)
        ga_out_u(o, ns), ga_out_s(o, " ns");
    else if (ns < 1000000)
        ga_out_fixed(o, ns, 1000, 1), ga_out_s(o, " us");
    else if (ns < 1000000000)
        ga_out_fixed(o, ns, 1000000, 1), ga_out_s(o, " ms");
    else
        ga_out_fixed(o, ns, 1000000000, 2), ga_out_s(o, " s");
}

void ga_out_bytes(ga_out_t *o, uint64_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned u = 0;
    uint64_t div = 1;
    while (u < 4 && b >= div * 1024)
        div *= 1024, u++;
    ga_out_fixed(o, b, div, u && b % div ? 1 : 0);
    ga_out_s(o, " ");
    ga_out_s(o, unit[u]);
}

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 if the bytes there
 * are not one (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF). Written out because the C library's multibyte functions follow
 * the locale, and a signal handler may call this. */
static unsigned utf8_len(const unsigned char *s)
{
    unsigned n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
               : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    for (unsigned i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped; a byte
 * that does not start well-formed UTF-8 (a command line may hold any bytes)
 * becomes U+FFFD, so the file stays valid JSON. */
void ga_out_js(ga_out_t *o, const char *s)
{
    ga_out_s(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        unsigned n = utf8_len(p);
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            ga_out_put(o, e, 2);
        } else if (c == '\n') {
            ga_out_s(o, "\\n");
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4],
                         "0123456789abcdef"[c & 15]};
            ga_out_put(o, e, 6);
        } else if (n == 0) {
            ga_out_s(o, "\\ufffd");
            p++;
            continue;
        } else {
            ga_out_put(o, (const char *)p, n);
            p += n;
            continue;
        }
        p++;
    }
    ga_out_s(o, "\"");
}

/* Key "name": for JSON objects; `first` omits the comma. */
void ga_out_key(ga_out_t *o, const char *k, bool first)
{
    if (!first)
        ga_out_s(o, ",");
    ga_out_js(o, k);
    ga_out_s(o, ":");
}

void ga_out_ku(ga_out_t *o, const char *k, uint64_t v)
{
    ga_out_key(o, k, false);
    ga_out_u(o, v);
}

/* Start a cell: the sink its contents are written into (format.h). */
ga_out_t *ga_cell(ga_cell_t *c)
{
    c->o = (ga_out_t){-1, c->b, sizeof c->b, 0, false};
    return &c->o;
}

void ga_out_cell(ga_out_t *o, ga_cell_t *c, unsigned width, bool right)
{
    unsigned n = (unsigned)c->o.len;
    if (right)
        for (unsigned i = n; i < width; i++)
            ga_out_s(o, " ");
    ga_out_put(o, c->b, n);
    if (!right)
        for (unsigned i = n; i < width; i++)
            ga_out_s(o, " ");
}

/* A kernel name for a person: mangled names can run to hundreds of bytes. */
void ga_out_name(ga_out_t *o, const char *name, size_t max)
{
    size_t n = strlen(name);
    if (n <= max) {
        ga_out_put(o, name, n);
    } else {
        ga_out_put(o, name, max - 3);
        ga_out_s(o, "...");
    }
}
