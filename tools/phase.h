/* phase.h - a program's output read as it arrives, and the windows its lines
 * mark (--phase START END), for ab and advise (which time the first window)
 * and profile (whose library counts only inside the windows).
 *
 * The program's standard output and error come through pipes; every byte is
 * copied on as it arrives (to capture files, or to gpuaccel's own standard
 * output and error) and cut in lines. A line matching START while outside a
 * window opens one, a line matching END while inside closes it, every window
 * in turn. With a window file (src/features/profile/window.h, set up by
 * window_create) each opening and closing is published to the profiled
 * program's library at once, with the time spent inside. */
#ifndef GA_TOOLS_PHASE_H
#define GA_TOOLS_PHASE_H

#include <limits.h>
#include <regex.h>
#include <stdbool.h>

#include "features/profile/window.h"

/* The windows seen so far. */
typedef struct phase {
    const regex_t *start_re, *end_re;
    double start, end;  /* the first window's START and END lines' times; < 0: not seen */
    unsigned crossings; /* lines that opened or closed a window: odd while inside */
    double opened;      /* when the window now open opened */
    double inside;      /* seconds inside the windows closed */
    ga_window_t *page;  /* the window file, or NULL */
} phase_t;

/* A tracker of the windows START and END mark; `page` (or NULL) is told of each. */
void phase_init(phase_t *p, const regex_t *start_re, const regex_t *end_re, ga_window_t *page);

/* The program's output pipes. */
typedef struct pipes {
    int out[2], err[2];
} pipes_t;

/* Both pipes (close-on-exec). false (errno) when they cannot be made. */
bool pipes_open(pipes_t *p);
/* In the child, before exec: its standard output and error into the pipes. */
bool pipes_child(const pipes_t *p);
/* In the parent: closes the pipes' write ends, then reads both until the
 * program (and whatever it left holding them) closes them, copying every
 * byte to to[0] (standard output's) or to[1] as it arrives and each line to
 * the tracker (NULL: none). */
void pipes_pump(pipes_t *p, const int to[2], phase_t *ph);

/* An extended regular expression for option `opt`; a usage error naming it
 * (printed) when the pattern is not valid. EX_OK or EX_USAGE. */
int compile_regex(regex_t *re, const char *opt, const char *pattern, int flags);

/* ---- the window file (profile --phase, advise's profile run) ------------------------ */
typedef struct window_file {
    char path[PATH_MAX]; /* "" when there is none */
    ga_window_t *page;
    regex_t start_re, end_re;
    phase_t phase;
} window_file_t;

/* Compiles START and END (a usage error naming `opt` when one is not valid),
 * then creates a window file under $TMPDIR or /tmp (mode 0600, zeroed, the
 * header and the patterns written) and maps it: GPUACCEL_PROFILE_WINDOW for
 * the program. EX_OK, EX_USAGE or EX_FAIL (printed). */
int window_create(window_file_t *w, const char *opt, const char *start, const char *end);
/* Unmaps and removes the file (nothing when there is none). */
void window_remove(window_file_t *w);

#endif
