/* nocuda.c - a program that never uses CUDA but, like many libraries do,
 * probes for it: dlsym(RTLD_DEFAULT, "cuInit") must stay NULL when no driver
 * is loaded, and the library must say nothing. Prints what it found. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    void *p = dlsym(RTLD_DEFAULT, "cuInit");
    void *q = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    void *s = dlsym(RTLD_DEFAULT, "strlen");
    printf("cuInit=%s cuMemAlloc_v2=%s strlen=%s\n", p ? "found" : "null", q ? "found" : "null",
           s ? "found" : "null");
    return 0;
}
