/* json.h - a small strict JSON reader for the files gpuaccel reads back (the
 * profiles): no tree, a callback per object member and per array item, strings
 * handed out as slices of the text and decoded only when asked.
 *
 * Every reader takes the position of a value (blanks before it allowed) and
 * returns the position just after it, or NULL when the text there is not that
 * kind of value, is malformed, ends early, or nests deeper than JSON_DEPTH;
 * json_failed_at() then says where reading stopped. The text must end with a
 * NUL byte (a NUL inside it ends it: the rest reads as truncated). */
#ifndef GA_TOOLS_JSON_H
#define GA_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { JSON_DEPTH = 64 };

/* A string's bytes between its quotes, escapes not decoded. */
typedef struct json_slice {
    const char *p;
    size_t n;
} json_slice_t;

const char *json_ws(const char *s);
const char *json_string(const char *s, json_slice_t *out);
const char *json_uint(const char *s, uint64_t *out); /* 0 to 2^64-1, no sign, no fraction */
const char *json_bool(const char *s, bool *out);
const char *json_value(const char *s, unsigned depth); /* any value, skipped */

/* fn gets each member's key and the position of its value, and returns the
 * position after the value (json_value skips one it does not want). */
typedef const char *(*json_member_fn)(void *ctx, json_slice_t key, const char *value);
const char *json_object(const char *s, unsigned depth, json_member_fn fn, void *ctx);

typedef const char *(*json_item_fn)(void *ctx, const char *value);
const char *json_array(const char *s, unsigned depth, json_item_fn fn, void *ctx);

/* Where the last reader that returned NULL stopped (NULL before any failure). */
const char *json_failed_at(void);
void json_reset_failure(void);

bool json_is(json_slice_t k, const char *literal); /* an undecoded key against a literal */

/* The decoded string (UTF-8) in malloc'd memory, NUL-terminated (a \u0000
 * ends it early); NULL without memory. */
char *json_strdup(json_slice_t v);

/* The decoded string written to f. */
void json_fput(json_slice_t v, FILE *f);

#endif
