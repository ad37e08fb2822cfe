/* ab.c - gpuaccel ab: the program natively and under the library,
 * alternating (bench.c measures), and the results as a table, JSON, CSV,
 * markdown and an SVG bar chart.
 *
 * Owns: the rows ab asks for and every layout of its results.
 * Must never: print a speedup without saying whether the outputs agreed. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "features/profile/format.h"

static const char *agree_text(const ab_t *a, const row_t *r)
{
    return r->native ? (a->reference ? "reference" : "not checked")
           : !a->reference ? "not checked" : r->agree ? "agree" : "DIFFER";
}

void print_table(FILE *out, const ab_t *a, bool gpu)
{
    const opts_t *o = a->o;
    fprintf(out, "gpuaccel ab: %u run%s each, alternating, after one warm-up%s%s\ncommand:",
            a->done, a->done == 1 ? "" : "s", gpu ? "" : " (no GPU on this machine)",
            a->done < o->runs ? " (interrupted: the rounds completed)" : "");
    for (char **c = o->cmd; *c; c++)
        fprintf(out, " %s", *c);
    fprintf(out, "\n%-10s %11s %21s %11s %11s %9s  %-15s %s\n", "config", "median",
            "mean +/- sigma", "min", "max", "speedup", "(min-max)", "outputs");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        char med[32], mean[32], sd[32], ms[72], mn[32], mx[32], sp[32] = "-", spread[48] = "";
        fmt_time(med, sizeof med, r->median);
        fmt_time(mean, sizeof mean, r->mean);
        fmt_time(sd, sizeof sd, r->sd);
        snprintf(ms, sizeof ms, "%s +/- %s", mean, sd);
        fmt_time(mn, sizeof mn, r->min);
        fmt_time(mx, sizeof mx, r->max);
        if (!r->native) {
            snprintf(sp, sizeof sp, "%.2fx", r->ratio);
            snprintf(spread, sizeof spread, "(%.2f-%.2f)", r->rmin, r->rmax);
        }
        fprintf(out, "%-10s %11s %21s %11s %11s %9s  %-15s %s\n", r->label, med, ms, mn, mx, sp,
                spread, agree_text(a, r));
    }
}

/* --export-csv: one line a row, seconds. */
static void print_csv(FILE *out, const ab_t *a)
{
    fprintf(out, "config,median_s,mean_s,stddev_s,min_s,max_s,speedup,speedup_min,speedup_max,"
                 "outputs\n");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        fprintf(out, "%s,%.6f,%.6f,%.6f,%.6f,%.6f", r->label, r->median, r->mean, r->sd, r->min,
                r->max);
        if (r->native)
            fprintf(out, ",,,,%s\n", agree_text(a, r));
        else
            fprintf(out, ",%.4f,%.4f,%.4f,%s\n", r->ratio, r->rmin, r->rmax, agree_text(a, r));
    }
}

/* --export-markdown: the table as GitHub markdown. */
static void print_markdown(FILE *out, const ab_t *a)
{
    fprintf(out, "| config | median | mean +/- sigma | min | max | speedup | outputs |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        char med[32], mean[32], sd[32], mn[32], mx[32], sp[64] = "-";
        fmt_time(med, sizeof med, r->median);
        fmt_time(mean, sizeof mean, r->mean);
        fmt_time(sd, sizeof sd, r->sd);
        fmt_time(mn, sizeof mn, r->min);
        fmt_time(mx, sizeof mx, r->max);
        if (!r->native)
            snprintf(sp, sizeof sp, "%.2fx (%.2f-%.2f)", r->ratio, r->rmin, r->rmax);
        fprintf(out, "| %s | %s | %s +/- %s | %s | %s | %s | %s |\n", r->label, med, mean, sd, mn,
                mx, sp, agree_text(a, r));
    }
}

static void json_times(FILE *out, const row_t *r, unsigned n)
{
    fprintf(out, "\"median_s\":%.6f,\"mean_s\":%.6f,\"stddev_s\":%.6f,\"min_s\":%.6f,"
            "\"max_s\":%.6f,\"times_s\":[", r->median, r->mean, r->sd, r->min, r->max);
    for (unsigned i = 0; i < n; i++)
        fprintf(out, "%s%.6f", i ? "," : "", r->t[i]);
    fprintf(out, "]");
}

/* A JSON string on stdout, by the profile's own escaper (valid for any bytes:
 * what is not well-formed UTF-8 becomes U+FFFD). */
static void json_str(FILE *out, const char *s)
{
    char buf[512];
    ga_out_t o = {.fd = fileno(out), .mem = buf, .cap = sizeof buf};
    fflush(out);
    ga_out_js(&o, s);
    ga_out_flush(&o);
}

static void print_json(FILE *out, const ab_t *a, bool gpu, bool agree)
{
    const opts_t *o = a->o;
    fprintf(out, "{\"command\":[");
    for (char **c = o->cmd; *c; c++)
        fprintf(out, "%s", c == o->cmd ? "" : ","), json_str(out, *c);
    fprintf(out, "],\"runs\":%u,\"gpu\":%s,\"check\":", a->done, gpu ? "true" : "false");
    if (o->check_digest)
        fprintf(out, "{\"kind\":\"digest\",\"pattern\":"), json_str(out, o->check_digest), fprintf(out, "}");
    else if (o->check_file)
        fprintf(out, "{\"kind\":\"file\",\"path\":"), json_str(out, o->check_file), fprintf(out, "}");
    else
        fprintf(out, "null");
    fprintf(out, ",\"native\":{");
    json_times(out, &a->rows[0], a->done);
    fprintf(out, "},\"rows\":[");
    for (unsigned i = 1; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        fprintf(out, "%s{\"feature\":", i > 1 ? "," : "");
        json_str(out, r->label);
        fprintf(out, ",");
        json_times(out, r, a->done);
        fprintf(out, ",\"speedup\":%.4f,\"speedup_min\":%.4f,\"speedup_max\":%.4f,\"outputs_agree\":%s}",
               r->ratio, r->rmin, r->rmax, !a->reference ? "null" : r->agree ? "true" : "false");
    }
    fprintf(out, "],\"outputs_agree\":%s}\n", !a->reference ? "null" : agree ? "true" : "false");
}

static void svg_text(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
}

/* A horizontal bar per configuration: speedup over native, whiskers from the
 * slowest to the fastest paired ratio, a dashed line at 1.0x. */
/* The GPU's model, from the driver's /proc files; "" if none is there. */
static void gpu_model(char *buf, size_t cap)
{
    buf[0] = '\0';
    glob_t g;
    if (glob("/proc/driver/nvidia/gpus/*/information", 0, NULL, &g) != 0)
        return;
    FILE *f = g.gl_pathc ? fopen(g.gl_pathv[0], "r") : NULL;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Model:", 6)) {
            char *m = line + 6;
            m += strspn(m, " \t");
            m[strcspn(m, "\n")] = '\0';
            snprintf(buf, cap, "%s", m);
            break;
        }
    if (f)
        fclose(f);
    globfree(&g);
}

/* A bar's colour: green when the row beat native in every paired run, red
 * when it lost every one, grey when the runs disagree (within the spread). */
static const char *bar_colour(const row_t *r)
{
    return r->rmin > 1.0 ? "#3b8e4f" : r->rmax < 1.0 ? "#c8553d" : "#9a9a9a";
}

static int write_svg(const ab_t *a, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return die(EX_USAGE, "--svg %s: %s", path, strerror(errno));
    double xmax = 2.0;
    for (unsigned i = 1; i < a->nrows; i++)
        while (a->rows[i].rmax * 1.08 > xmax)
            xmax += 0.5;
    const int left = 150, width = 500, top = 76, bar = 26, gap = 12;
    int n = (int)a->nrows - 1, height = top + n * (bar + gap) + 92;
    char model[128], date[16];
    gpu_model(model, sizeof model);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&now));
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"13\">\n", left + width + 140, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
               "font-size=\"15\" font-weight=\"bold\">gpuaccel ab: speedup over native (median of "
               "%u runs)</text>\n<text x=\"10\" y=\"40\" fill=\"%s\">", a->done,
            *model ? "#555" : "#c8553d");
    if (*model)
        svg_text(f, model);
    else
        fputs("NO GPU: timings of whatever libcuda.so.1 the command loaded, not a GPU result",
              f);
    fprintf(f, ", %s, libgpuaccel %s</text>\n<text x=\"10\" y=\"58\" fill=\"#555\">", date,
            PACKAGE_VERSION);
    for (char **c = a->o->cmd; *c; c++)
        svg_text(f, *c), fputc(' ', f);
    fputs("</text>\n", f);
    double sx = width / xmax;
    for (int i = 0; i < n; i++) {
        const row_t *r = &a->rows[i + 1];
        int y = top + i * (bar + gap);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 8, y + bar / 2 + 5);
        svg_text(f, r->label);
        fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                left, y, r->ratio * sx, bar, bar_colour(r));
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                left + r->rmin * sx, left + r->rmax * sx, y + bar / 2, y + bar / 2);
        /* The value right of the plot, clear of the 1.0x line and the whiskers;
         * three decimals where two would round to 1.00 and hide the sign. */
        bool near = r->ratio != 1.0 && fabs(r->ratio - 1.0) < 0.005;
        fprintf(f, near ? "<text x=\"%d\" y=\"%d\">%.3fx%s</text>\n"
                        : "<text x=\"%d\" y=\"%d\">%.2fx%s</text>\n", left + width + 8,
                y + bar / 2 + 5, r->ratio, !a->reference || r->agree ? "" : " (outputs DIFFER)");
    }
    int base = top + n * (bar + gap);
    for (double x = 0; x <= xmax + 1e-9; x += 0.5)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%.1fx</text>\n",
                left + x * sx, base + 16, x);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#333\" "
               "stroke-dasharray=\"5,4\"/>\n", left + sx, left + sx, top - 6, base);
    fprintf(f, "<text x=\"10\" y=\"%d\" fill=\"#333\">dashed line: 1.0x = native; bar: median "
               "speedup; whisker: range of the paired per-run speedups</text>\n", base + 40);
    fprintf(f, "<rect x=\"10\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#3b8e4f\"/><text x=\"27\" "
               "y=\"%d\">faster in every run</text>\n", base + 52, base + 63);
    fprintf(f, "<rect x=\"170\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#c8553d\"/><text "
               "x=\"187\" y=\"%d\">slower in every run</text>\n", base + 52, base + 63);
    fprintf(f, "<rect x=\"330\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#9a9a9a\"/><text "
               "x=\"347\" y=\"%d\">within the run-to-run spread</text>\n</svg>\n", base + 52,
            base + 63);
    return fclose(f) == 0 ? EX_OK : die(EX_USAGE, "--svg %s: %s", path, strerror(errno));
}



/* --export-json/-csv/-markdown FILE: the results beside the table. */
static int ab_exports(const ab_t *a, bool gpu, bool agree)
{
    const opts_t *o = a->o;
    const char *paths[3] = {o->export_json, o->export_csv, o->export_md};
    for (unsigned i = 0; i < 3; i++) {
        if (!paths[i])
            continue;
        FILE *f = fopen(paths[i], "w");
        if (!f)
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
        if (i == 0)
            print_json(f, a, gpu, agree);
        else if (i == 1)
            print_csv(f, a);
        else
            print_markdown(f, a);
        if (fclose(f) != 0)
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
    }
    return EX_OK;
}


int cmd_ab(int argc, char **argv)
{
    static opts_t opts = {.runs = 5, .ab_feature = -1};
    opts_t *o = &opts;
    int rc = parse_opts(argc, argv, o);
    if (rc != EX_OK)
        return rc;
    static ab_t a;
    bool gpu;
    rc = ab_setup(&a, o, &gpu);
    if (rc != EX_OK)
        return rc;
    add_row(&a, "native", true, 0);
    if (o->per_feature)
        for (int i = 0; i < N_FEATURES; i++)
            add_row(&a, features[i], false, 1u << i);
    if (o->config) { /* the file alone (gpuaccel advise --write) */
        add_row(&a, "config", false, 0);
        a.rows[a.nrows - 1].set = "config";
    } else if (o->per_feature || o->ab_feature < 0)
        add_row(&a, "all", false, (1u << N_FEATURES) - 1);
    else
        add_row(&a, features[o->ab_feature], false, 1u << o->ab_feature);
    rc = ab_measure(&a);
    unlink(a.outfile);
    unlink(a.errfile);
    if (rc != EX_OK && rc != EX_INTERRUPTED)
        return rc;
    bool agree = true;
    for (unsigned i = 0; i < a.nrows; i++) {
        stats_of(&a.rows[i], a.done);
        agree = agree && a.rows[i].agree;
    }
    for (unsigned i = 1; i < a.nrows; i++)
        ratios_of(&a.rows[i], &a.rows[0], a.done);
    if (o->json)
        print_json(stdout, &a, gpu, agree);
    else
        print_table(stdout, &a, gpu);
    int erc = ab_exports(&a, gpu, agree);
    if (o->svg && erc == EX_OK)
        erc = write_svg(&a, o->svg);
    if (rc == EX_INTERRUPTED || erc != EX_OK)
        return rc == EX_INTERRUPTED ? rc : erc;
    if (!agree)
        return die(EX_FAIL, "outputs differ between the native run and the library's");
    return EX_OK;
}

/* ---- advise ---------------------------------------------------------------------- */

