/* results.c - the results of ab and advise (bench.h): the table, and the
 * files --export-json, --export-csv and --export-markdown write beside it.
 * Each says which measure was used and how many runs were asked and done
 * (fewer after an interrupt), and appears whole or not at all (written under
 * a temporary name, then renamed).
 *
 * Owns: every layout of the rows' statistics.
 * Must never: print a speedup without saying whether the outputs agreed; print
 * a time unit on the program's own number (--metric). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "features/profile/format.h"

/* ---- words ------------------------------------------------------------------------- */
static bool timed(const bench_t *b)
{
    return b->o->measure != M_METRIC;
}

void bench_fmt(const bench_t *b, char *buf, size_t cap, double v)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (timed(b))
        fmt_time(buf, cap, v);
    else
        snprintf(buf, cap, "%.6g", v);
}

void bench_measure_text(const bench_t *b, char *buf, size_t cap)
{
    const opts_t *o = b->o;
    if (o->measure == M_METRIC)
        snprintf(buf, cap, "--metric '%s' (the number the program prints; lower is better)",
                 o->metric);
    else if (o->measure == M_PHASE)
        snprintf(buf, cap, "--phase '%s' '%s' (wall time from the first line matching START "
                           "to the first matching END after it)", o->phase_start, o->phase_end);
    else
        snprintf(buf, cap, "wall time of the whole process");
}

const char *bench_agree_text(const bench_t *b, const row_t *r)
{
    return r->failed ? "FAILED"
           : r->native ? (b->reference ? "reference" : "not checked")
           : !b->reference ? "not checked" : r->agree ? "agree" : "DIFFER";
}

static unsigned label_width(const bench_t *b)
{
    size_t w = 10;
    for (unsigned i = 0; i < b->nrows; i++)
        w = strlen(b->rows[i].label) > w ? strlen(b->rows[i].label) : w;
    return (unsigned)w;
}

static void command_line(FILE *out, const bench_t *b)
{
    if (b->o->command_name) {
        fprintf(out, " %s", b->o->command_name);
        return;
    }
    for (char **c = b->o->cmd; *c; c++)
        fprintf(out, " %s", *c);
}

/* "5 runs each (of 5 asked), alternating, after one warm-up" */
static void runs_text(FILE *out, const bench_t *b)
{
    const opts_t *o = b->o;
    fprintf(out, "%u run%s each", b->done, b->done == 1 ? "" : "s");
    fprintf(out, ", alternating, ");
    if (o->warmup == 1)
        fprintf(out, "after one warm-up");
    else if (o->warmup)
        fprintf(out, "after %u warm-ups", o->warmup);
    else
        fprintf(out, "no warm-up");
}

/* ---- the table ---------------------------------------------------------------------- */
void bench_table(FILE *out, const bench_t *b, bool advise)
{
    const opts_t *o = b->o;
    char measure[1200];
    bench_measure_text(b, measure, sizeof measure);
    if (advise) {
        fprintf(out, "gpuaccel advise: %u settings, alternating with native in %u rounds%s\n",
                b->nrows - 1, b->rounds, b->gpu ? "" : " (no GPU on this machine)");
    } else {
        fprintf(out, "gpuaccel ab: ");
        runs_text(out, b);
        fprintf(out, "%s", b->gpu ? "" : " (no GPU on this machine)");
        if (b->done < o->runs)
            fprintf(out, " (interrupted: the rounds completed, %u of %u asked)", b->done, o->runs);
        fputc('\n', out);
    }
    fprintf(out, "measure: %s\ncommand:", measure);
    command_line(out, b);
    unsigned w = label_width(b);
    if (advise)
        fprintf(out, "\n%-*s %5s %11s %9s  %-15s %-15s %s\n", (int)w, "setting", "runs",
                "median", "speedup", "(95% interval)", "(min-max)", "outputs");
    else
        fprintf(out, "\n%-*s %11s %23s %11s %11s %9s  %-15s %s\n", (int)w, "config", "median",
                "mean +/- sigma", "min", "max", "speedup", "(min-max)", "outputs");
    for (unsigned i = 0; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        char med[32], mean[32], sd[32], ms[72], mn[32], mx[32], sp[32] = "-", spread[48] = "",
             iv[48] = "";
        bench_fmt(b, med, sizeof med, r->median);
        bench_fmt(b, mean, sizeof mean, r->mean);
        bench_fmt(b, sd, sizeof sd, r->sd);
        snprintf(ms, sizeof ms, "%s +/- %s", mean, sd);
        bench_fmt(b, mn, sizeof mn, r->min);
        bench_fmt(b, mx, sizeof mx, r->max);
        if (!r->native && !isnan(r->ratio)) {
            snprintf(sp, sizeof sp, "%.2fx", advise ? r->pmed : r->ratio);
            snprintf(spread, sizeof spread, "(%.2f-%.2f)", r->rmin, r->rmax);
            snprintf(iv, sizeof iv, "(%.2f-%.2f)", r->lo, r->hi);
        }
        if (advise)
            fprintf(out, "%-*s %5u %11s %9s  %-15s %-15s %s\n", (int)w, r->label, r->n, med, sp,
                    iv, spread, bench_agree_text(b, r));
        else
            fprintf(out, "%-*s %11s %23s %11s %11s %9s  %-15s %s\n", (int)w, r->label, med, ms,
                    mn, mx, sp, spread, bench_agree_text(b, r));
    }
}

/* ---- CSV ----------------------------------------------------------------------------- */
static void csv_cell(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++)
        fputs(*s == '"' ? "\"\"" : (char[]){*s, 0}, out);
    fputc('"', out);
}

static void csv_num(FILE *out, double v, const char *fmt)
{
    fputc(',', out);
    if (!isnan(v))
        fprintf(out, fmt, v);
}

/* One line a row: the values in seconds (or the program's number), the
 * speedup, the outputs, the runs done and asked, and the measure. */
static void print_csv(FILE *out, const bench_t *b)
{
    const char *u = timed(b) ? "_s" : "";
    fprintf(out, "config,median%s,mean%s,stddev%s,min%s,max%s,speedup,speedup_min,speedup_max,"
                 "outputs,runs,runs_requested,measure\n", u, u, u, u, u);
    char measure[1200];
    bench_measure_text(b, measure, sizeof measure);
    for (unsigned i = 0; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        csv_cell(out, r->label);
        const char *f = timed(b) ? "%.6f" : "%.9g";
        csv_num(out, r->median, f), csv_num(out, r->mean, f), csv_num(out, r->sd, f);
        csv_num(out, r->min, f), csv_num(out, r->max, f);
        csv_num(out, r->native ? NAN : r->ratio, "%.4f");
        csv_num(out, r->native ? NAN : r->rmin, "%.4f");
        csv_num(out, r->native ? NAN : r->rmax, "%.4f");
        fprintf(out, ",%s,%u,%u,", bench_agree_text(b, r), r->n, b->o->runs);
        csv_cell(out, measure);
        fputc('\n', out);
    }
}

/* ---- markdown ----------------------------------------------------------------------- */
static void md_text(FILE *out, const char *s)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[]){*s, 0}, out);
}

static void print_markdown(FILE *out, const bench_t *b, bool advise)
{
    char measure[1200];
    bench_measure_text(b, measure, sizeof measure);
    fprintf(out, "Measure: ");
    md_text(out, measure);
    fprintf(out, ". Command:");
    command_line(out, b);
    fprintf(out, ".\n\n");
    if (!advise) {
        runs_text(out, b);
        fprintf(out, "; %u of %u runs done%s.\n\n", b->done, b->o->runs,
                b->done < b->o->runs ? " (interrupted)" : "");
    }
    fprintf(out, "| config | runs | median | mean +/- sigma | min | max | speedup | outputs |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (unsigned i = 0; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        char med[32], mean[32], sd[32], mn[32], mx[32], sp[64] = "-";
        bench_fmt(b, med, sizeof med, r->median);
        bench_fmt(b, mean, sizeof mean, r->mean);
        bench_fmt(b, sd, sizeof sd, r->sd);
        bench_fmt(b, mn, sizeof mn, r->min);
        bench_fmt(b, mx, sizeof mx, r->max);
        if (!r->native && !isnan(r->ratio))
            snprintf(sp, sizeof sp, "%.2fx (%.2f-%.2f)", r->ratio, r->rmin, r->rmax);
        fprintf(out, "| ");
        md_text(out, r->label);
        fprintf(out, " | %u | %s | %s +/- %s | %s | %s | %s | %s |\n", r->n, med, mean, sd, mn, mx,
                sp, bench_agree_text(b, r));
    }
}

/* ---- JSON ---------------------------------------------------------------------------- */
/* A JSON string, by the profile's own escaper (valid for any bytes: what is
 * not well-formed UTF-8 becomes U+FFFD). */
static void json_str(FILE *out, const char *s)
{
    char buf[512];
    ga_out_t o = {.fd = fileno(out), .mem = buf, .cap = sizeof buf};
    fflush(out);
    ga_out_js(&o, s);
    ga_out_flush(&o);
}

static void json_num(FILE *out, const char *key, double v, const char *fmt)
{
    fprintf(out, ",\"%s\":", key);
    if (isnan(v))
        fputs("null", out);
    else
        fprintf(out, fmt, v);
}

/* A row's values: median_s ... for a time, median ... for the program's number. */
static void json_values(FILE *out, const bench_t *b, const row_t *r)
{
    const char *u = timed(b) ? "_s" : "", *f = timed(b) ? "%.6f" : "%.9g";
    char k[16];
    fprintf(out, "\"runs\":%u", r->n);
    snprintf(k, sizeof k, "median%s", u), json_num(out, k, r->median, f);
    snprintf(k, sizeof k, "mean%s", u), json_num(out, k, r->mean, f);
    snprintf(k, sizeof k, "stddev%s", u), json_num(out, k, r->sd, f);
    snprintf(k, sizeof k, "min%s", u), json_num(out, k, r->min, f);
    snprintf(k, sizeof k, "max%s", u), json_num(out, k, r->max, f);
    fprintf(out, ",\"times%s\":[", u);
    for (unsigned i = 0; i < r->n; i++)
        fprintf(out, "%s", i ? "," : ""), fprintf(out, f, r->t[i]);
    fprintf(out, "]");
}

static void json_measure(FILE *out, const bench_t *b)
{
    const opts_t *o = b->o;
    fprintf(out, "\"measure\":{\"kind\":");
    if (o->measure == M_METRIC) {
        fprintf(out, "\"metric\",\"regex\":"), json_str(out, o->metric);
        fprintf(out, ",\"unit\":null");
    } else if (o->measure == M_PHASE) {
        fprintf(out, "\"phase\",\"start\":"), json_str(out, o->phase_start);
        fprintf(out, ",\"end\":"), json_str(out, o->phase_end);
        fprintf(out, ",\"unit\":\"s\"");
    } else {
        fprintf(out, "\"wall\",\"unit\":\"s\"");
    }
    fprintf(out, ",\"lower_is_better\":true}");
}

void bench_json(FILE *out, const bench_t *b, bool agree)
{
    const opts_t *o = b->o;
    fprintf(out, "{\"command\":[");
    for (char **c = o->cmd; *c; c++)
        fprintf(out, "%s", c == o->cmd ? "" : ","), json_str(out, *c);
    fprintf(out, "],\"command_name\":");
    if (o->command_name)
        json_str(out, o->command_name);
    else
        fputs("null", out);
    fprintf(out, ",\"runs\":%u,\"runs_requested\":%u,\"warmup\":%u,\"interrupted\":%s,"
                 "\"gpu\":%s,", b->done, o->runs, o->warmup, interrupted ? "true" : "false",
            b->gpu ? "true" : "false");
    json_measure(out, b);
    fprintf(out, ",\"check\":");
    if (o->check_digest)
        fprintf(out, "{\"kind\":\"digest\",\"pattern\":"), json_str(out, o->check_digest),
            fprintf(out, "}");
    else if (o->check_file)
        fprintf(out, "{\"kind\":\"file\",\"path\":"), json_str(out, o->check_file),
            fprintf(out, "}");
    else
        fprintf(out, "null");
    fprintf(out, ",\"native\":{");
    json_values(out, b, &b->rows[0]);
    fprintf(out, "},\"rows\":[");
    for (unsigned i = 1; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        fprintf(out, "%s{\"feature\":", i > 1 ? "," : "");
        json_str(out, r->label);
        fprintf(out, ",");
        json_values(out, b, r);
        json_num(out, "speedup", r->ratio, "%.4f");
        json_num(out, "speedup_min", r->rmin, "%.4f");
        json_num(out, "speedup_max", r->rmax, "%.4f");
        json_num(out, "speedup_paired_median", r->pmed, "%.4f");
        json_num(out, "speedup_interval_low", r->lo, "%.4f");
        json_num(out, "speedup_interval_high", r->hi, "%.4f");
        fprintf(out, ",\"outputs_agree\":%s}",
                !b->reference ? "null" : r->agree ? "true" : "false");
    }
    fprintf(out, "],\"outputs_agree\":%s}\n", !b->reference ? "null" : agree ? "true" : "false");
}

/* ---- the files ------------------------------------------------------------------------ */
/* Opens an export for writing: a regular file (or a new one) under PATH.tmp,
 * renamed over PATH by close_export once whole, so that no reader, and no
 * kill in between, ever leaves half a file; anything else (a symbolic link,
 * /dev/stdout, a pipe), or a file whose directory takes no new name, in
 * place. tmp is empty when there is nothing to rename. */
static FILE *open_export(const char *path, char *tmp, size_t cap)
{
    struct stat st;
    int e = lstat(path, &st);
    tmp[0] = 0;
    if (((e != 0 && errno == ENOENT) || (e == 0 && S_ISREG(st.st_mode))) &&
        (size_t)snprintf(tmp, cap, "%s.tmp", path) < cap) {
        FILE *f = fopen(tmp, "w");
        if (f)
            return f;
    }
    tmp[0] = 0;
    return fopen(path, "w");
}

static bool close_export(FILE *f, const char *path, const char *tmp)
{
    bool ok = fclose(f) == 0 && (!tmp[0] || rename(tmp, path) == 0);
    if (!ok && tmp[0]) {
        int e = errno; /* the error to report, not unlink's */
        unlink(tmp);
        errno = e;
    }
    return ok;
}

int bench_exports(const bench_t *b, bool agree)
{
    const opts_t *o = b->o;
    const char *paths[3] = {o->export_json, o->export_csv, o->export_md};
    bool advise = !strcmp(b->tool, "advise");
    for (unsigned i = 0; i < 3; i++) {
        if (!paths[i])
            continue;
        char tmp[4096];
        FILE *f = open_export(paths[i], tmp, sizeof tmp);
        if (!f)
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
        if (i == 0)
            bench_json(f, b, agree);
        else if (i == 1)
            print_csv(f, b);
        else
            print_markdown(f, b, advise);
        if (!close_export(f, paths[i], tmp))
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
    }
    return EX_OK;
}
