/* bench.h - the measurement ab and advise share: settings (rows) of the
 * library run alternately with the native program, each run a fresh process
 * whose output is checked against the native run's, measured by one of three
 * measures, and the statistics of what was measured.
 *
 * A row is one setting: native (no library), a set of features (each switch
 * set, over whatever GPUACCEL the user has), a named set (GPUACCEL=safe or
 * all, no switch set) or a --config file alone. Runs go in rounds: a round
 * runs native and each row asked once, so every run of a row has a native run
 * of the same round to be compared with (the paired ratios).
 *
 * The measures (opts_t.measure): the wall time of the whole process; the
 * number the program prints (--metric: the first capture group of the last
 * standard-output line matching a regex); the wall time between two lines of
 * its output (--phase: the first line matching START, then the first matching
 * END, timed as the lines arrive: phase.h). Lower is better for all three. */
#ifndef GA_TOOLS_BENCH_H
#define GA_TOOLS_BENCH_H

#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "phase.h"

typedef struct row {
    char label[96];
    bool native;
    unsigned mask;    /* features on */
    const char *set;  /* or a named set (safe, all) or "config" (--config): no switch set */
    double *t;        /* the measured values, one per run */
    unsigned *round;  /* the round of each */
    unsigned n, cap;  /* runs measured, room */
    bool agree, checked;
    bool failed;      /* advise: a run failed, and the row was left out */
    bool fresh;       /* advise: the pick's fresh runs, measured after the search */
    /* bench_stats: */
    double median, min, max, mean, sd;
    double ratio, rmin, rmax; /* native median / this median; the range of the paired ratios */
    double pmed, lo, hi;      /* the median paired ratio and its 95% interval (bootstrap) */
} row_t;

typedef struct bench {
    const opts_t *o;
    char lib[PATH_MAX], path[PATH_MAX];
    char outfile[64], errfile[64];
    regex_t digest_re, metric_re, start_re, end_re;
    char *reference; /* the first native run's digest line or file bytes */
    size_t ref_len;
    row_t *rows;     /* rows[0] is native */
    unsigned nrows, cap_rows;
    unsigned rounds; /* rounds begun */
    unsigned done;   /* ab: complete rounds */
    double t0;       /* when measuring began, for the progress line */
    bool gpu;
    const char *tool; /* "ab" or "advise", for messages */
} bench_t;

/* A signal that stopped the measurement (SIGINT, SIGTERM), or 0: set by the
 * handler only. The run in flight gets it too and is not counted. */
extern volatile sig_atomic_t interrupted;

/* The library, the command, the GPU check, the patterns and the capture
 * files; rows[0], native. EX_OK or the exit status (printed). */
int bench_setup(bench_t *b, const opts_t *o, const char *tool);
/* Removes the capture files. */
void bench_cleanup(bench_t *b);
/* A row (not measured yet); returns it. */
row_t *bench_add(bench_t *b, const char *label, bool native, unsigned mask, const char *set);
/* One run of r: measured (into r, in round b->rounds) unless warm. false
 * when it failed or an interrupt stopped it (the message printed). */
bool bench_run(bench_t *b, row_t *r, bool warm);
/* One round: native, then each row of `which` (indices into b->rows), each
 * once, the order rotated by the round number. false as bench_run. */
bool bench_round(bench_t *b, const unsigned *which, unsigned n);
/* ab: o->warmup runs of every row, then o->runs rounds of every row; b->done
 * counts the rounds complete. EX_OK, EX_FAIL, or 128 + the signal. Leaves
 * the signal handlers installed: the caller removes them (bench_signals)
 * once its results are written (a second signal, as `timeout` sends one to
 * the process and one to its group, must not cut the exports short). */
int bench_measure_all(bench_t *b);
/* The statistics of every row, and of its paired ratios with native. */
void bench_stats(bench_t *b);
/* Installs and removes the SIGINT/SIGTERM handlers (a signal then sets
 * `interrupted`). */
void bench_signals(bool on);
/* "run 7 of 30, about 12 s left" on a terminal's stderr (done == total
 * clears it). */
void bench_progress(const bench_t *b, unsigned done, unsigned total);

/* ---- the results (ab.c) ------------------------------------------------------------ */
/* A value of the measure, as a person reads it: "12.3 ms", or the metric. */
void bench_fmt(const bench_t *b, char *buf, size_t cap, double v);
/* "wall time of the whole process", "--metric '...' (the program's number)" */
void bench_measure_text(const bench_t *b, char *buf, size_t cap);
const char *bench_agree_text(const bench_t *b, const row_t *r);
/* The table as ab prints it; `advise` adds the runs and the interval columns. */
void bench_table(FILE *out, const bench_t *b, bool advise);
/* --export-json/-csv/-markdown: each file asked for; EX_OK or EX_FAIL. */
int bench_exports(const bench_t *b, bool agree);
void bench_json(FILE *out, const bench_t *b, bool agree);

#endif
