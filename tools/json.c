/* json.c - the strict JSON reader of json.h: RFC 8259 values over a
 * NUL-terminated buffer, read in place with callbacks, depth-limited.
 *
 * Owns: the grammar and the one place a failure is recorded (failed_at).
 * Must never: read past the terminating NUL, recurse past JSON_DEPTH, or loop
 * without consuming a byte (a foreign file must end in an error, never a hang
 * or a crash). */
#include "json.h"

#include <stdlib.h>
#include <string.h>

static const char *failed_at;

/* Records the first place reading failed; returns NULL for the caller. */
static const char *fail(const char *s)
{
    if (!failed_at)
        failed_at = s;
    return NULL;
}

const char *json_failed_at(void)
{
    return failed_at;
}

void json_reset_failure(void)
{
    failed_at = NULL;
}

const char *json_ws(const char *s)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    return s;
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The escape after a backslash at s: its length, 0 if it is not one. */
static size_t escape_len(const char *s)
{
    if (*s && strchr("\"\\/bfnrt", *s))
        return 1;
    if (*s != 'u')
        return 0;
    for (int i = 1; i <= 4; i++)
        if (hex(s[i]) < 0)
            return 0;
    return 5;
}

const char *json_string(const char *s, json_slice_t *out)
{
    s = json_ws(s);
    if (*s != '"')
        return fail(s);
    const char *start = ++s;
    while (*s != '"') {
        if ((unsigned char)*s < 0x20) /* a control byte, or the end of the text */
            return fail(s);
        if (*s++ == '\\') {
            size_t n = escape_len(s);
            if (!n)
                return fail(s);
            s += n;
        }
    }
    if (out)
        *out = (json_slice_t){start, (size_t)(s - start)};
    return s + 1;
}

static const char *digits(const char *s)
{
    const char *d = s;
    while (*s >= '0' && *s <= '9')
        s++;
    return s > d ? s : NULL;
}

const char *json_uint(const char *s, uint64_t *out)
{
    s = json_ws(s);
    uint64_t v = 0;
    const char *e = digits(s);
    if (!e || (*s == '0' && e - s > 1) || *e == '.' || *e == 'e' || *e == 'E')
        return fail(s);
    for (; s < e; s++) {
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return fail(s);
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return e;
}

const char *json_bool(const char *s, bool *out)
{
    s = json_ws(s);
    if (!strncmp(s, "true", 4))
        return *out = true, s + 4;
    if (!strncmp(s, "false", 5))
        return *out = false, s + 5;
    return fail(s);
}

static const char *number(const char *s)
{
    const char *e = digits(s + (*s == '-'));
    if (e && *e == '.')
        e = digits(e + 1);
    if (e && (*e == 'e' || *e == 'E'))
        e = digits(e + 1 + (e[1] == '+' || e[1] == '-'));
    return e ? e : fail(s);
}

static const char *skip_member(void *ctx, json_slice_t key, const char *v)
{
    (void)key;
    return json_value(v, *(unsigned *)ctx);
}

static const char *skip_item(void *ctx, const char *v)
{
    return json_value(v, *(unsigned *)ctx);
}

const char *json_value(const char *s, unsigned depth)
{
    s = json_ws(s);
    unsigned next = depth + 1;
    switch (*s) {
    case '"': return json_string(s, NULL);
    case '{': return json_object(s, depth, skip_member, &next);
    case '[': return json_array(s, depth, skip_item, &next);
    case 't': return strncmp(s, "true", 4) ? fail(s) : s + 4;
    case 'f': return strncmp(s, "false", 5) ? fail(s) : s + 5;
    case 'n': return strncmp(s, "null", 4) ? fail(s) : s + 4;
    default: return (*s == '-' || (*s >= '0' && *s <= '9')) ? number(s) : fail(s);
    }
}

/* After an object's member or an array's item at s: the next one's position
 * (after a comma), or *done set and the position after the closing bracket. */
static const char *separator(const char *s, char close, bool *done)
{
    s = json_ws(s);
    if (*s == ',')
        return json_ws(s + 1);
    if (*s == close)
        return *done = true, s + 1;
    return fail(s);
}

const char *json_object(const char *s, unsigned depth, json_member_fn fn, void *ctx)
{
    s = json_ws(s);
    if (*s != '{' || depth >= JSON_DEPTH)
        return fail(s);
    s = json_ws(s + 1);
    if (*s == '}')
        return s + 1;
    for (bool done = false; !done;) {
        json_slice_t key;
        if (!(s = json_string(s, &key)))
            return NULL;
        s = json_ws(s);
        if (*s != ':')
            return fail(s);
        if (!(s = fn(ctx, key, json_ws(s + 1))) || !(s = separator(s, '}', &done)))
            return NULL;
    }
    return s;
}

const char *json_array(const char *s, unsigned depth, json_item_fn fn, void *ctx)
{
    s = json_ws(s);
    if (*s != '[' || depth >= JSON_DEPTH)
        return fail(s);
    s = json_ws(s + 1);
    if (*s == ']')
        return s + 1;
    for (bool done = false; !done;)
        if (!(s = fn(ctx, s)) || !(s = separator(s, ']', &done)))
            return NULL;
    return s;
}

bool json_is(json_slice_t k, const char *literal)
{
    return strlen(literal) == k.n && !memcmp(k.p, literal, k.n);
}

/* One code point as UTF-8 (a lone surrogate becomes U+FFFD). */
static size_t utf8(unsigned v, char *out)
{
    if (v >= 0xd800 && v <= 0xdfff)
        v = 0xfffd;
    if (v < 0x80)
        return out[0] = (char)v, 1;
    if (v < 0x800)
        return out[0] = (char)(0xc0 | v >> 6), out[1] = (char)(0x80 | (v & 63)), 2;
    out[0] = (char)(0xe0 | v >> 12), out[1] = (char)(0x80 | ((v >> 6) & 63));
    out[2] = (char)(0x80 | (v & 63));
    return 3;
}

/* Decodes v into out (room for v.n + 1 bytes: no escape grows); returns the
 * length. A slice from json_string has only well-formed escapes. */
static size_t decode(json_slice_t v, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t n = 0;
    for (size_t i = 0; i < v.n; i++) {
        char c = v.p[i];
        if (c != '\\' || i + 1 >= v.n) {
            out[n++] = c;
        } else if (v.p[++i] == 'u' && i + 4 < v.n) {
            unsigned cp = 0;
            for (int k = 1; k <= 4; k++)
                cp = cp * 16 + (unsigned)hex(v.p[i + (size_t)k]);
            n += utf8(cp, out + n);
            i += 4;
        } else {
            const char *f = strchr(from, v.p[i]);
            out[n++] = f ? to[f - from] : v.p[i];
        }
    }
    out[n] = '\0';
    return n;
}

char *json_strdup(json_slice_t v)
{
    char *out = malloc(v.n + 1);
    if (out)
        decode(v, out);
    return out;
}

void json_fput(json_slice_t v, FILE *f)
{
    char *d = malloc(v.n + 1);
    if (!d)
        return;
    fwrite(d, 1, decode(v, d), f);
    free(d);
}
