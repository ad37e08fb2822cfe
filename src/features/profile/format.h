/* format.h - the profile writers' formatter: text appended to a fixed buffer,
 * flushed to a file descriptor when it fills (or kept in memory, where a
 * descriptor is not given), with numbers, durations, sizes, JSON strings and
 * padded table cells written by hand.
 *
 * Exposes: ga_out_t (the sink) and the ga_out_* functions that append to it,
 * and ga_cell_t (a small sink a table cell is written into, then padded).
 * Every function is usable from a signal handler: no stdio, no allocation, no
 * lock, nothing but write(2). A sink that overflows (memory only) or whose
 * write fails says so in `failed`; later output is dropped, never a crash. */
#ifndef GA_PROFILE_FORMAT_H
#define GA_PROFILE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The writer: buffered, allocation-free, usable from a signal handler. */
typedef struct ga_out {
    int fd;       /* >= 0: flushed to fd; < 0: into mem only */
    char *mem;
    size_t cap, len;
    bool failed;  /* a write failed, or mem overflowed */
} ga_out_t;

void ga_out_flush(ga_out_t *o);
void ga_out_put(ga_out_t *o, const char *s, size_t n);
void ga_out_s(ga_out_t *o, const char *s);
void ga_out_u(ga_out_t *o, uint64_t v);
void ga_out_hex(ga_out_t *o, uint64_t v);                              /* 0x1f */
void ga_out_fixed(ga_out_t *o, uint64_t v, uint64_t unit, unsigned dec); /* v / unit */
void ga_out_count(ga_out_t *o, uint64_t v);                            /* 412,000 */
void ga_out_dur(ga_out_t *o, uint64_t ns);                             /* 8.0 us */
void ga_out_bytes(ga_out_t *o, uint64_t b);                            /* 39.1 KiB */
void ga_out_js(ga_out_t *o, const char *s);                            /* a JSON string */
void ga_out_key(ga_out_t *o, const char *k, bool first);               /* ,"k": */
void ga_out_ku(ga_out_t *o, const char *k, uint64_t v);                /* ,"k":v */
void ga_out_name(ga_out_t *o, const char *name, size_t max);           /* cut to max */

/* A table cell: what `fill` writes, padded to `width` (right-aligned if `right`). */
typedef struct ga_cell {
    char b[96];
    ga_out_t o;
} ga_cell_t;

ga_out_t *ga_cell(ga_cell_t *c);
void ga_out_cell(ga_out_t *o, ga_cell_t *c, unsigned width, bool right);

#endif
