/* next_a.c - first definition of ga_next_probe; asks RTLD_NEXT for the next. */
#define _GNU_SOURCE
#include <dlfcn.h>

int ga_next_probe(void);
int ga_next_probe(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "ga_next_probe");
    return 100 + (next ? next() : 0);
}
