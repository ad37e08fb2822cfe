/* window.h - the profile's window file (GPUACCEL_PROFILE_WINDOW): the layout
 * both sides read, the library (profile/window.c maps it read-only) and the
 * gpuaccel command (tools/phase.c creates it and writes it as the program's
 * output lines arrive: `gpuaccel profile --phase START END`).
 *
 * The file is one ga_window_t, shared (MAP_SHARED) between the two processes.
 * `crossings` counts the lines that opened or closed a window: even while
 * outside one, odd while inside (gpuaccel adds 1 at each START line read while
 * outside and at each END line read while inside). `inside_ns` is the time
 * spent inside windows that have closed, added by gpuaccel at each END before
 * the crossing that closes the window; `opened_ns` is when the window now
 * open opened (CLOCK_MONOTONIC, written before the crossing that opens it),
 * so that a process that ends inside a window can count its time so far.
 * `magic` and `version` are written
 * before the program starts; the library uses a file whose header is not
 * theirs, or that is smaller than the struct, not at all (it profiles the
 * whole process and says why). `start` and `end` are the patterns, for the
 * report (cut to fit, NUL-terminated). Nothing but this header defines the
 * layout: a change to it is a new version. */
#ifndef GA_PROFILE_WINDOW_H
#define GA_PROFILE_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum {
    GA_WINDOW_MAGIC = 0x57417047, /* "GpAW" read as little-endian bytes */
    GA_WINDOW_VERSION = 1,
    GA_WINDOW_PATTERN = 480,      /* each pattern's room, its NUL included */
};

typedef struct ga_window {
    /* the first 64 bytes: what the two processes exchange */
    _Atomic uint32_t crossings;  /* even: outside a window; odd: inside */
    uint32_t reserved0;
    _Atomic uint64_t inside_ns;  /* time inside the windows closed so far */
    uint32_t magic;              /* GA_WINDOW_MAGIC */
    uint32_t version;            /* GA_WINDOW_VERSION */
    _Atomic uint64_t opened_ns;  /* CLOCK_MONOTONIC when the open window opened */
    char reserved[32];
    /* then what the report names the windows by */
    char start[GA_WINDOW_PATTERN], end[GA_WINDOW_PATTERN];
} ga_window_t;

_Static_assert(offsetof(ga_window_t, inside_ns) == 8, "the window's layout moved");
_Static_assert(offsetof(ga_window_t, magic) == 16, "the window's layout moved");
_Static_assert(offsetof(ga_window_t, opened_ns) == 24, "the window's layout moved");
_Static_assert(offsetof(ga_window_t, start) == 64, "the window's header is 64 bytes");
_Static_assert(sizeof(ga_window_t) == 1024, "the window file is 1 KiB");

#endif
