/* cmd_misc.c - the small commands: run (exec the program under the library),
 * report (a profile's report again, or several merged: report.c), kernels
 * (the shipped replacement kernels, their verify harness, code identities)
 * and env (every GPUACCEL_* variable and its problems, or the settings table
 * as markdown for doc/settings.md).
 *
 * Owns: nothing but these commands' own argument handling.
 * Must never: load the library into this process except to read its kernel
 * table (kernels list). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "codeids.h"
#include "core/config.h"
#include "core/textfile.h"
#include "features/kernels/table.h"
#include "report.h"

int cmd_run(int argc, char **argv)
{
    opts_t o = {.runs = 5, .ab_feature = -1};
    int rc = parse_opts(argc, argv, &o);
    if (rc != EX_OK)
        return rc;
    char lib[PATH_MAX], path[PATH_MAX];
    if ((rc = find_both(&o, lib, path)) != EX_OK)
        return rc;
    preload(lib);
    apply_toggles(&o);
    execv(path, o.cmd);
    return die(errno == ENOENT ? EX_NOTFOUND : EX_NOEXEC, "%s: %s", o.cmd[0], strerror(errno));
}

/* report [--json] BASE | FILE.json...: options anywhere before "--". */
int cmd_report(int argc, char **argv)
{
    bool json = false, opts = true;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n = 0;
    for (int i = 1; args && i < argc; i++) {
        const char *a = argv[i];
        if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h")))
            return free(args), help_of("report");
        if (opts && !strcmp(a, "--json"))
            json = true;
        else if (opts && !strcmp(a, "--"))
            opts = false;
        else if (opts && a[0] == '-' && a[1])
            return free(args), usage_error("report: unknown option '%s'", a);
        else
            args[n++] = argv[i];
    }
    if (!args)
        return die(EX_FAIL, "out of memory");
    int rc = n ? report_main(args, n, json)
               : usage_error("%s", "report takes a profile's name (as given to profile -o or "
                                   "GPUACCEL_PROFILE) or FILE.json...");
    free(args);
    return rc;
}

/* kernels list --program: the rows read as the library reads them (one
 * parser, features/kernels/table.c), each printed against the program. */
typedef struct {
    const char *path;
    FILE *out;
} against_t;

/* One table row against a program: its kernel of that name, and whether its
 * code is one the row lists. The program's identities come from
 * codeids_print, read back from a memory stream (its one printer). */
static void row_against(void *arg, const ga_kernels_rule_t *rule)
{
    against_t *a = arg;
    char *found = NULL, *name = (char *)rule->original;
    size_t len = 0;
    FILE *mem = open_memstream(&found, &len);
    if (!mem)
        return;
    int rc = codeids_print(mem, a->path, &name, 1);
    fclose(mem);
    unsigned held = 0, listed = 0;
    char first[40] = "";
    for (char *line = strtok(found ? found : (char *)"", "\n"); line; line = strtok(NULL, "\n")) {
        const char *code = line[0] != '#' ? strstr(line, " code=") : NULL;
        if (!code)
            continue;
        held++;
        if (!first[0])
            snprintf(first, sizeof first, "%s", code + 1);
        uint64_t id = strtoull(code + 6, NULL, 16);
        for (unsigned i = 0; i < rule->ncodes; i++)
            listed += rule->codes[i] == id;
    }
    free(found);
    fprintf(a->out, "%s %s: ", rule->original, rule->replacement);
    if (rc == 2)
        fprintf(a->out, "the program cannot be read\n");
    else if (!held)
        fprintf(a->out, "not in the program\n");
    else if (listed)
        fprintf(a->out, "replaced: its code is one the row lists\n");
    else if (!rule->ncodes)
        fprintf(a->out, "named, not replaced: the row lists no code (the program's: %s)\n", first);
    else
        fprintf(a->out, "named, not replaced: the program's code (%s) is not one the row lists\n",
                first);
}

/* kernels list --program FILE: each row of the library's table (and of
 * GPUACCEL_KERNELS_EXTRA's, when set) against FILE's kernels, after a line
 * that counts them. */
static int list_against(const char *table, const char *extra, const char *extra_name,
                        const char *path)
{
    char *rows = NULL;
    size_t len = 0;
    against_t a = {path, open_memstream(&rows, &len)};
    if (!a.out)
        return die(EX_FAIL, "%s", "out of memory");
    int good = ga_kernels_parse_table(table, strlen(table), "the library's table", row_against, &a);
    int more = good >= 0 && extra
                   ? ga_kernels_parse_table(extra, strlen(extra), extra_name, row_against, &a)
                   : 0;
    fclose(a.out);
    if (good < 0 || more < 0) {
        free(rows);
        return die(EX_FAIL, "%s", "out of memory");
    }
    printf("# %d rows against %s\n", good + more, path);
    fputs(rows ? rows : "", stdout);
    free(rows);
    return EX_OK;
}

/* The text of GPUACCEL_KERNELS_EXTRA's TABLE (after the last colon), or NULL;
 * *name: the file's name. */
static char *extra_table(const char **name)
{
    const char *spec = getenv("GPUACCEL_KERNELS_EXTRA"), *colon = spec ? strrchr(spec, ':') : NULL;
    size_t len;
    *name = colon ? colon + 1 : NULL;
    return colon ? ga_read_file(colon + 1, 16u << 20, &len) : NULL;
}

/* gpuaccel kernels list [--program FILE] | verify [ARGS] | ids FILE [NAME...]:
 * what the library ships (and, against a program, which rows would replace
 * its kernels and why not), the harness that proves it (kernels/verify,
 * installed beside the library), and the code identities a table's rows
 * name. */
int cmd_kernels(int argc, char **argv)
{
    const char *given = NULL;
    int i = 0;
    argc--, argv++; /* the command's name */
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return help_of("kernels");
    if (argc >= 1 && !strncmp(argv[0], "--lib=", 6))
        given = argv[0] + 6, i = 1;
    else if (argc >= 2 && !strcmp(argv[0], "--lib"))
        given = argv[1], i = 2;
    if (i < argc && !strcmp(argv[i], "ids")) { /* the library's code, not the library */
        if (i + 1 >= argc)
            return usage_error("%s", "kernels ids takes FILE [NAME...]");
        int rc = codeids_print(stdout, argv[i + 1], argv + i + 2, argc - i - 2);
        return rc == 2 ? EX_FAIL : rc;
    }
    if (i >= argc || (strcmp(argv[i], "list") && strcmp(argv[i], "verify")))
        return usage_error("%s", "kernels takes list, verify [--kernel NAME] [--quick] or ids "
                                 "FILE [NAME...]");
    const char *program = NULL;
    if (!strcmp(argv[i], "list") && i + 3 == argc && !strcmp(argv[i + 1], "--program"))
        program = argv[i + 2];
    else if (!strcmp(argv[i], "list") && i + 1 < argc)
        return usage_error("kernels list takes no arguments but --program FILE, not '%s'",
                           argv[i + 1]);
    char lib[PATH_MAX];
    int rc = find_library(given, lib, sizeof lib);
    if (rc != EX_OK)
        return rc;
    if (!strcmp(argv[i], "list")) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        const char *(*table)(void) = h ? (const char *(*)(void))dlsym(h, "gpuaccel_kernels_table") : NULL;
        if (!table)
            return die(EX_FAIL, "%s: cannot read its kernel table: %s", lib, h ? "no table" : dlerror());
        const char *t = table();
        if (program) {
            const char *name;
            char *extra = extra_table(&name);
            int listed = list_against(t, extra, name, program);
            free(extra);
            return listed;
        }
        fputs(*t ? t : "# this build ships no replacement kernels (built without nvcc)\n", stdout);
        return EX_OK;
    }
    /* verify: the harness sits in the build tree (kernels/verify) or, installed,
     * in LIBDIR/gpuaccel/verify next to the library. */
    char dir[PATH_MAX], cand[2 * PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lib);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    const char *const rel[] = {"gpuaccel/verify", "../kernels/verify", "../../kernels/verify"};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[k]);
        if (access(cand, X_OK) == 0) {
            argv[i] = cand; /* verify's own arguments follow */
            execv(cand, argv + i);
            return die(EX_NOEXEC, "%s: %s", cand, strerror(errno));
        }
    }
    return die(EX_NOTFOUND, "kernels verify: no verify harness beside %s (built without nvcc?)", lib);
}

/* The problems the settings have, as the library would report them. */
typedef struct env_problems {
    unsigned n;
    char text[64][420];
} env_problems_t;

static void collect_problem(void *ctx, const char *var, const char *text)
{
    env_problems_t *p = ctx;
    (void)var;
    if (p->n < 64)
        snprintf(p->text[p->n++], sizeof p->text[0], "%s", text);
}

static const char *getenv_fn(const char *name)
{
    return getenv(name);
}

/* What a variable of each type takes, in a word or two, for the markdown
 * table (the parser's own messages spell every spelling out). */
static const char *accepted(const ga_config_doc_t *d, unsigned i, char *buf, size_t len)
{
    const char *min, *max;
    if (ga_config_range(i, &min, &max)) {
        if (*max)
            snprintf(buf, len, "%s to %s", min, max);
        else
            snprintf(buf, len, "%s or more", min);
        return buf;
    }
    switch (d->type) {
    case GA_TYPE_MODE: return "0, safe or all";
    case GA_TYPE_FEATURE:
    case GA_TYPE_BOOL: return "0 or 1";
    case GA_TYPE_LEVEL: return "error, warn, info or debug";
    case GA_TYPE_STR: return "text";
    case GA_TYPE_SIZE: return "bytes (K, M, G, T)";
    case GA_TYPE_UINT: return "a whole number";
    case GA_TYPE_LIMIT: return "bytes (K, M, G, T) or 1% to 100%";
    }
    return "";
}

/* env --markdown: the settings table as doc/settings.md shows it (make docs
 * writes it there; make check compares). Nothing of the environment. */
static int env_markdown(void)
{
    printf("| variable | default | accepted | meaning |\n| --- | --- | --- | --- |\n");
    for (unsigned i = 0; i < ga_config_ndocs; i++) {
        const ga_config_doc_t *d = &ga_config_docs[i];
        char buf[64];
        printf("| `%s` | %s | %s | %s%s%s |\n", d->name, d->def, accepted(d, i, buf, sizeof buf),
               d->help, *d->needs ? "; acts with " : "", d->needs);
    }
    return EX_OK;
}

/* env [--check | --markdown]: every variable with its default, the value set
 * (environment, else GPUACCEL_CONFIG's file), the effective value, then any
 * problems. */
int cmd_env(int argc, char **argv)
{
    argc--, argv++; /* the command's name */
    bool check = false, markdown = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = true;
        else if (!strcmp(argv[i], "--markdown"))
            markdown = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return help_of("env");
        else
            return usage_error("env: unknown option '%s' (env takes --check or --markdown)",
                               argv[i]);
    }
    if (check && markdown)
        return usage_error("%s", "env: choose --check or --markdown, not both");
    if (markdown)
        return env_markdown();
    ga_config_t cfg;
    env_problems_t p = {0};
    ga_config_src_t src = {.get = getenv_fn, .env = environ, .problem = collect_problem, .ctx = &p};
    ga_config_load(&cfg, &src);
    printf("%-26s %-8s %-12s %-12s %s\n", "variable", "default", "set", "effective", "meaning");
    for (unsigned i = 0; i < ga_config_ndocs; i++) {
        const ga_config_doc_t *d = &ga_config_docs[i];
        char buf[64];
        printf("%-26s %-8s %-12s %-12s %s\n", d->name, *d->def ? d->def : "(none)",
               cfg.raw[i] ? cfg.raw[i] : "-", ga_config_effective(&cfg, i, buf, sizeof buf),
               d->help);
    }
    printf("features on by default (GPUACCEL=safe):");
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        if (ga_config_docs[i].type == GA_TYPE_FEATURE && ga_config_docs[i].def[0] == '1')
            printf(" %s", ga_config_docs[i].name);
    printf("\n");
    for (unsigned i = 0; i < p.n; i++)
        printf("problem: %s\n", p.text[i]);
    if (!p.n)
        printf("no problems\n");
    free(cfg.file_text);
    return check && p.n ? EX_FAIL : EX_OK;
}
