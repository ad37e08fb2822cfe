/* ab.c - gpuaccel ab: the program natively and under the library, alternating
 * (bench.c measures), the table and the exports (results.c), and an SVG bar
 * chart of the speedups.
 *
 * Owns: the rows ab asks for, and the chart.
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

/* A horizontal bar per configuration: speedup over native, whiskers from the
 * slowest to the fastest paired ratio, a dashed line at 1.0x. */
static int write_svg(const bench_t *a, const char *path)
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
    char model[128], date[16], measure[1200];
    if (a->o->measure == M_METRIC)
        snprintf(measure, sizeof measure, "the number the program prints");
    else if (a->o->measure == M_PHASE)
        snprintf(measure, sizeof measure, "the time between two of its lines");
    else
        snprintf(measure, sizeof measure, "wall time");
    gpu_model(model, sizeof model);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&now));
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"13\">\n", left + width + 140, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
               "font-size=\"15\" font-weight=\"bold\">gpuaccel ab: speedup over native (median of "
               "%u runs; %s)</text>\n<text x=\"10\" y=\"40\" fill=\"%s\">", a->done, measure,
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

/* "defaults+staging-pool", "all-kernels": the row --enable and --disable ask for. */
static void toggles_label(const opts_t *o, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s", o->enable_all ? "all" : "defaults");
    for (int i = 0; i < N_FEATURES; i++)
        if (o->feature_set[i] && o->feature_on[i] != (unsigned)o->enable_all)
            len += (size_t)snprintf(buf + len, cap > len ? cap - len : 0, "%s%s",
                                    o->feature_on[i] ? "+" : "-", features[i]);
}

int cmd_ab(int argc, char **argv)
{
    static opts_t opts = {.runs = 5, .warmup = 1, .ab_feature = -1};
    opts_t *o = &opts;
    int rc = parse_opts(argc, argv, o);
    if (rc != EX_OK)
        return rc;
    static bench_t a;
    if ((rc = bench_setup(&a, o, "ab")) != EX_OK)
        return rc;
    bool toggled = o->enable_all, named = o->enable_all;
    unsigned mask = o->enable_all ? (1u << N_FEATURES) - 1 : safe_mask();
    for (int i = 0; i < N_FEATURES; i++)
        if (o->feature_set[i]) {
            toggled = true, named = false;
            mask = o->feature_on[i] ? mask | 1u << i : mask & ~(1u << i);
        }
    bool ok = true;
    if (o->per_feature)
        for (int i = 0; i < N_FEATURES; i++)
            ok = ok && bench_add(&a, features[i], false, 1u << i, NULL);
    if (o->config) { /* the file alone (gpuaccel advise --write) */
        ok = ok && bench_add(&a, "config", false, 0, "config");
    } else if (toggled) { /* the defaults with --enable/--disable, as `run` would have them */
        char label[96];
        toggles_label(o, label, sizeof label);
        ok = ok && bench_add(&a, label, false, mask, named ? "all" : NULL);
    } else if (o->per_feature || o->ab_feature < 0) {
        ok = ok && bench_add(&a, "all", false, (1u << N_FEATURES) - 1, NULL);
    } else {
        ok = ok && bench_add(&a, features[o->ab_feature], false, 1u << o->ab_feature, NULL);
    }
    if (!ok)
        return die(EX_FAIL, "out of memory");
    rc = bench_measure_all(&a);
    bench_cleanup(&a);
    if (rc == EX_FAIL)
        return rc;
    bool agree = true;
    bench_stats(&a);
    for (unsigned i = 0; i < a.nrows; i++)
        agree = agree && a.rows[i].agree;
    if (o->json)
        bench_json(stdout, &a, agree);
    else
        bench_table(stdout, &a, false);
    int erc = bench_exports(&a, agree);
    if (o->svg && erc == EX_OK && a.done)
        erc = write_svg(&a, o->svg);
    bench_signals(false);
    if (rc != EX_OK || erc != EX_OK)
        return rc != EX_OK ? rc : erc;
    if (!agree)
        return die(EX_FAIL, "outputs differ between the native run and the library's");
    return EX_OK;
}
