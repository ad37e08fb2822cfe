/* table.c - a replacement table's rows: "<original> <replacement>
 * grid=program|grid=any code=<16 hex digits>... writes=P:Q*S...", '#'
 * comments; a bad line is warned about with its number and skipped
 * (core/textfile.c's line reader).
 *
 * Owns: nothing beyond one call (the rules it hands out point into its copy
 * of the text). */
#include "features/kernels/table.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/textfile.h"

typedef struct {
    ga_kernels_rule_fn add;
    void *arg;
} parse_ctx_t;

/* "code=" and exactly 16 hex digits. */
static bool code_word(const char *w, uint64_t *id)
{
    if (strncmp(w, "code=", 5) || strlen(w + 5) != 16)
        return false;
    *id = 0;
    for (const char *h = w + 5; *h; h++) {
        int d = *h >= '0' && *h <= '9'   ? *h - '0'
                : *h >= 'a' && *h <= 'f' ? *h - 'a' + 10
                : *h >= 'A' && *h <= 'F' ? *h - 'A' + 10
                                         : -1;
        if (d < 0)
            return false;
        *id = *id << 4 | (uint64_t)d;
    }
    return true;
}

/* "writes=P:Q*S": parameters P and Q below 32, S from 1 to 2^20. */
static bool writes_word(const char *w, ga_kernels_write_t *out)
{
    unsigned p, q, s;
    int end = 0;
    if (strncmp(w, "writes=", 7) || sscanf(w + 7, "%2u:%2u*%7u%n", &p, &q, &s, &end) != 3 ||
        w[7 + end] || !isdigit((unsigned char)w[7]) || p >= 32 || q >= 32 || !s || s > 1u << 20)
        return false;
    *out = (ga_kernels_write_t){p, q, s};
    return true;
}

static bool table_line(void *arg, char *line)
{
    const parse_ctx_t *c = arg;
    /* <original> <replacement> grid=program|grid=any code=<id>... writes=P:Q*S... */
    enum { MAX_WORDS = 3 + GA_KERNELS_MAX_CODES + GA_KERNELS_MAX_WRITES };
    char *w[MAX_WORDS];
    int n = ga_line_words(line, w, MAX_WORDS);
    if (n < 3 || n > MAX_WORDS || strlen(w[0]) > 4096 || strlen(w[1]) > 4096)
        return false;
    bool any = !strcmp(w[2], "grid=any");
    if (!any && strcmp(w[2], "grid=program"))
        return false;
    uint64_t codes[GA_KERNELS_MAX_CODES];
    ga_kernels_write_t writes[GA_KERNELS_MAX_WRITES];
    unsigned nc = 0, nw = 0;
    for (int i = 3; i < n; i++) {
        if (nc < GA_KERNELS_MAX_CODES && code_word(w[i], &codes[nc]))
            nc++;
        else if (nw < GA_KERNELS_MAX_WRITES && writes_word(w[i], &writes[nw]))
            nw++;
        else
            return false;
    }
    ga_kernels_rule_t r = {w[0], w[1], any, codes, nc, writes, nw};
    c->add(c->arg, &r);
    return true;
}

int ga_kernels_parse_table(const char *text, size_t len, const char *source_name,
                        ga_kernels_rule_fn add, void *arg)
{
    parse_ctx_t c = {add, arg};
    return ga_each_line(text, len, source_name,
                        "'<original> <replacement> grid=program|grid=any code=<16 hex digits>... "
                        "[writes=P:Q*S...]'",
                        table_line, &c);
}
