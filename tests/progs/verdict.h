/* verdict.h - how a test program states its checks: one line per check, its
 * name first and the word "ok=1" or "ok=0" in it, the value passed through
 * verdict(), which counts the failures; main returns verdicts(), so a failed
 * check is a non-zero exit as well as an "ok=0" line (tests/gpu/common.sh
 * requires both: a program that stops printing a check, or prints ok=0 and
 * exits 0, cannot pass). Call it from one thread: the count is plain.
 * Shared by the C programs (tests/progs) and the CUDA ones (tests/gpu/check.cuh). */
#ifndef GA_TEST_VERDICT_H
#define GA_TEST_VERDICT_H

static int verdict_failures;

/* ok as 0 or 1, a failure counted. */
static inline int verdict(int ok)
{
    if (!ok)
        verdict_failures++;
    return ok != 0;
}

/* The exit status: 1 when any check failed, else 0. */
static inline int verdicts(void)
{
    return verdict_failures ? 1 : 0;
}

#endif
