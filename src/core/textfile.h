/* textfile.h - reading the library's line-oriented text files (the kernels
 * table, the tune table): whole-file reads with a size cap, and a line walker
 * that strips '#' comments, skips blank lines and reports bad lines with their
 * number. */
#ifndef GA_TEXTFILE_H
#define GA_TEXTFILE_H

#include <stdbool.h>
#include <stddef.h>

/* The whole file, NUL-terminated, if it exists, is readable and at most `max`
 * bytes; NULL otherwise. Free with free(). */
char *ga_read_file(const char *path, size_t max, size_t *len);

/* Call line(arg, text) for every non-blank line of text[0..len) with its
 * comment removed (the line may be modified). A line for which it returns
 * false is reported as "SOURCE:N: expected EXPECTED; line skipped". Returns
 * the number of lines accepted, or -1 without memory. */
typedef bool (*ga_line_fn)(void *arg, char *line);
int ga_each_line(const char *text, size_t len, const char *source, const char *expected,
                 ga_line_fn line, void *arg);

/* Split a line into its blank-separated words (modifying it). Returns how
 * many there are, counting up to max + 1: more than max means too many. */
int ga_line_words(char *line, char **words, int max);

#endif
