/* api_probe.c - asks a loaded libgpuaccel what it saw, through its public API
 * (include/gpuaccel.h), looked up with dlsym so the program runs without it.
 * Links -lcuda; prints "no library" or the version and two call counts. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(void)
{
    int v = 0;
    cuInit(0);
    cuDriverGetVersion(&v);
    cuDriverGetVersion(&v);
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "gpuaccel_version");
    uint64_t (*calls)(const char *) = (uint64_t(*)(const char *))dlsym(RTLD_DEFAULT, "gpuaccel_calls");
    if (!version || !calls)
        return puts("no library"), 0;
    printf("version=%s cuInit=%llu cuDriverGetVersion=%llu nosuch=%llu\n", version(),
           (unsigned long long)calls("cuInit"), (unsigned long long)calls("cuDriverGetVersion"),
           (unsigned long long)calls("cuNoSuchEntry"));
    return 0;
}
