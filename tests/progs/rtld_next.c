/* rtld_next.c - RTLD_NEXT must stay relative to the caller under the library.
 * Linked with libnext_a then libnext_b, which both define ga_next_probe;
 * next_a's asks dlsym(RTLD_NEXT) for the following definition, next_b's:
 * 100 + 2. If the library's dlsym forwarded from its own position instead, the
 * lookup would start after libgpuaccel and find next_a's own definition again
 * (and recurse until the stack ran out). */
#include <stdio.h>

int ga_next_probe(void);

int main(void)
{
    int v = ga_next_probe();
    printf("probe=%d\n", v);
    return v == 102 ? 0 : 1;
}
