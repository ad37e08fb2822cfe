/* textfile.c - whole-file reads and the line walker of textfile.h. Pure
 * functions over text (and stdio): no CUDA, no global state. */
#include "core/textfile.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "core/log.h"

char *ga_read_file(const char *path, size_t max, size_t *len)
{
    struct stat st;
    /* Say why in errno: fopen takes a directory, and its size is no answer. */
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return errno = EISDIR, NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && (size_t)n <= max &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *len = (size_t)n;
    } else {
        int why = n >= 0 && (size_t)n > max ? EFBIG : errno ? errno : EIO;
        free(buf);
        buf = NULL;
        errno = why;
    }
    fclose(f);
    return buf;
}

int ga_each_line(const char *text, size_t len, const char *source, const char *expected,
                 ga_line_fn line, void *arg)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    int good = 0, lineno = 0;
    for (char *p = copy, *next; p; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *hash = strchr(p, '#');
        if (hash)
            *hash = '\0';
        if (!p[strspn(p, " \t\r")])
            continue; /* blank, or a comment */
        if (line(arg, p))
            good++;
        else
            ga_warn("%s:%d: expected %s; line skipped", source, lineno, expected);
    }
    free(copy);
    return good;
}

int ga_line_words(char *line, char **words, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t && n <= max;
         t = strtok_r(NULL, " \t\r", &save))
        if (n++ < max)
            words[n - 1] = t;
    return n;
}
