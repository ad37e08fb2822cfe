/* repeat_prog.c - one bounds-checked kernel launched four times with the same
 * arguments (fill: p[i] = v for i < n), as a benchmark's timing loop does. From
 * the second launch on its result is already in memory, so a tuner that only
 * compared results could not tell a configuration that skips work (one thread
 * would "reproduce" it); the tuner must notice. Runs against tests/fake.
 * usage: repeat_prog KERNELS.PTX  -> "sum=<sum of the 4096 words>" */
#include "linked.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 4096 };

int main(int argc, char **argv)
{
    static uint32_t h[N];
    CUfunction fill = linked_kernel(argc, argv, "fill");
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof h));
    uint32_t n = N, v = 7;
    void *args[] = {&d, &n, &v};
    for (int i = 0; i < 4; i++)
        CK(cuLaunchKernel(fill, N / 32, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(h, d, sizeof h));
    uint64_t sum = 0;
    for (int i = 0; i < N; i++)
        sum += h[i];
    printf("sum=%llu\n", (unsigned long long)sum);
    return 0;
}
