/* secure.c - libsecure.so, preloaded before the library: answers
 * getauxval(AT_SECURE) with 1, as the loader does for a setuid or setgid
 * program, so the library's secure-execution path can be tested without
 * installing a privileged binary (the loader itself ignores LD_PRELOAD paths
 * in a real secure-execution process; the library gets there when a program
 * links or dlopens it). Every other question goes to libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/auxv.h>

unsigned long getauxval(unsigned long type)
{
    if (type == AT_SECURE)
        return 1;
    unsigned long (*real)(unsigned long) =
        (unsigned long (*)(unsigned long))dlsym(RTLD_NEXT, "getauxval");
    return real ? real(type) : 0;
}
