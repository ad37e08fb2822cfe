/* check.h - the unit tests' only framework: CHECK counts and reports failures,
 * check_done() turns them into the exit status Automake reads. */
#ifndef GA_CHECK_H
#define GA_CHECK_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        check_count++;                                                                     \
        if (!(cond)) {                                                                     \
            check_failures++;                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                                  \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
