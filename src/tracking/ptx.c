/* ptx.c - PTX text (a module's assembly, as nvcc or NVVM writes it) for code
 * identities: its tokens, one kernel's hash, the kernels it defines (ptx.h).
 *
 * Owns: PTX's lexical rules as far as an identity needs them (blanks,
 * comments, quoted strings, braces) and which tokens a kernel's hash leaves
 * out. Must never: read past the text's given length (it need not end in a
 * NUL); call anything but libc. */
#define _GNU_SOURCE
#include "tracking/ptx.h"

#include <string.h>

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

int ga_ptx_kernel(const char *t, size_t n, const char *k, uint64_t *out)
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

/* The names after ".entry" roughly (comments not skipped: the hash decides). */
void ga_ptx_entries_rough(const char *p, size_t n, ga_code_name_fn *fn, void *arg)
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
            fn(arg, s, (size_t)(q - s));
        e = q;
    }
}

void ga_ptx_entries(const char *t, size_t n, ga_code_name_fn *fn, void *arg)
{
    lex_t x = {t, n, 0};
    const char *tok, *name;
    size_t len, nlen;
    while (lex_next(&x, &tok, &len))
        if (tok_is(tok, len, ".entry") && lex_next(&x, &name, &nlen) && entry_name(name, nlen))
            fn(arg, name, entry_name(name, nlen));
}
