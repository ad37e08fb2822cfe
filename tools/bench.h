/* bench.h - the measurement ab and advise share: settings (rows) of the
 * library run alternately with the native program, each run in a fresh
 * process whose output is checked against the native run's, and the
 * statistics of the times.
 *
 * A row is one setting: native (no library), a set of features (each switch
 * set, over whatever GPUACCEL the user has), a named set (GPUACCEL=safe or
 * all, no switch set) or a --config file alone. */
#ifndef GA_TOOLS_BENCH_H
#define GA_TOOLS_BENCH_H

#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"

typedef struct row {
    const char *label;
    bool native;
    unsigned mask;    /* features on */
    const char *set;  /* or a named set of GPUACCEL (safe, all; "config": --config): no switch set */
    double *t;        /* seconds, one per measured run */
    bool agree, checked;
    double median, min, max, mean, sd, ratio, rmin, rmax;
} row_t;

typedef struct ab {
    const opts_t *o;
    char lib[PATH_MAX], path[PATH_MAX];
    char outfile[64], errfile[64];
    regex_t re;
    char *reference; /* the native warm-up's digest line or file bytes */
    size_t ref_len;
    unsigned nrows;
    unsigned done;   /* complete rounds measured (fewer than runs after Ctrl-C) */
    double t0;       /* when measuring began, for the progress line */
    row_t rows[N_FEATURES + 4];
} ab_t;

/* Ctrl-C while measuring: set by the SIGINT handler only. */
extern volatile sig_atomic_t interrupted;

/* The library, the command, the GPU check, the digest pattern and the
 * capture files. Sets *gpu. */
int ab_setup(ab_t *a, opts_t *o, bool *gpu);
void add_row(ab_t *a, const char *label, bool native, unsigned mask);
/* One run of row r, checked against the reference. false when it failed. */
bool measure(ab_t *a, row_t *r, double *t);
/* The warm-up, then o->runs rounds of every row; a->done counts the rounds
 * complete. EX_OK, EX_FAIL, or EX_INTERRUPTED (Ctrl-C after a round). */
int ab_measure(ab_t *a);
void stats_of(row_t *r, unsigned n);
void ratios_of(row_t *r, const row_t *native, unsigned n);

/* The table of the rows (ab.c), as ab and advise print it. */
void print_table(FILE *out, const ab_t *a, bool gpu);

#endif
