/* check.h - the unit tests' only framework: CHECK counts and reports failures,
 * named cases say which behaviour failed, check_done() turns the failures into
 * the exit status Automake reads.
 *
 * A case is a function TEST_CASE(name) { ... CHECK(...); ... }, run from main
 * by RUN_CASE(name), in the order main names them (a later case may build on
 * what an earlier one left, as the steps of one story do: the comment above it
 * says so). A failed CHECK names its case, file and line; each case prints
 * "ok" or "FAIL" with its name and count, and check_done() names the failed
 * cases again. Models: libuv's TEST_IMPL(name), mimalloc's CHECK_BODY("name").
 * Checks outside any case (a test not yet split into cases) still count. */
#ifndef GA_CHECK_H
#define GA_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures, check_count;
static const char *check_case; /* the case running, or NULL */
static char check_failed_cases[512]; /* their names, for check_done */

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        check_count++;                                                                     \
        if (!(cond)) {                                                                     \
            check_failures++;                                                              \
            fprintf(stderr, "%s:%d: %s%s%sCHECK failed: %s\n", __FILE__, __LINE__,         \
                    check_case ? "in " : "", check_case ? check_case : "",                 \
                    check_case ? ": " : "", #cond);                                        \
        }                                                                                  \
    } while (0)

#define TEST_CASE(name) static void check_case_##name(void)
#define RUN_CASE(name) check_run(#name, check_case_##name)

static inline void check_run(const char *name, void (*body)(void))
{
    int failures = check_failures, count = check_count;
    check_case = name;
    body();
    check_case = NULL;
    if (check_failures == failures) {
        printf("ok   %s (%d check%s)\n", name, check_count - count,
               check_count - count == 1 ? "" : "s");
        return;
    }
    printf("FAIL %s (%d of %d checks failed)\n", name, check_failures - failures,
           check_count - count);
    size_t len = strlen(check_failed_cases);
    snprintf(check_failed_cases + len, sizeof check_failed_cases - len, "%s%s", len ? " " : "",
             name);
}

static inline int check_done(const char *name)
{
    printf("%s: %d checks, %d failed%s%s\n", name, check_count, check_failures,
           *check_failed_cases ? ", in " : "", check_failed_cases);
    return check_failures ? 1 : 0;
}

#endif
