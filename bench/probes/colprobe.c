/* colprobe.c - what a whole-column read to pageable memory could cost, by the
 * way it is served. C columns of 2^K words; each iteration reads every column
 * whole into one pageable buffer (a column accessor's Vec), by:
 *   driver      cuMemcpyDtoH into the pageable buffer (the program)
 *   pinned      cuMemcpyDtoH into page-locked memory the library would own,
 *               then memcpy to the pageable buffer (a first read that fills)
 *   mirror-pin  memcpy from a page-locked copy kept from before (a repeat)
 *   mirror-heap memcpy from a malloc'd copy kept from before (a repeat)
 *   mirror-T    the same as mirror-heap split over T threads (2, 4, 8)
 *   pcopy       the same as mirror-heap through the library's ga_pcopy
 *               (src/features/coalesce/pcopy.c, built in)
 * Prints the mean microseconds a column read for each, and how many words of
 * the last copy differ from the driver's (must be 0).
 * usage: colprobe [LOG_WORDS] [COLUMNS] [ITERATIONS]
 * (GPUACCEL_COALESCE_THREADS does not reach pcopy here: it takes one helper
 * for every four processors.)
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include -I../../src colprobe.c
 *   ../../src/features/coalesce/pcopy.c -lcuda -lpthread */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"
#include "spincopy.h"
#include "features/coalesce/pcopy.h"

enum { MAXC = 64, MAXT = 8 };

int main(int argc, char **argv)
{
    int logw = argc > 1 ? atoi(argv[1]) : 16;
    unsigned nc = argc > 2 ? (unsigned)atoi(argv[2]) : 8;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    if (logw < 4 || logw > 26 || nc < 1 || nc > MAXC || iters < 1)
        return 2;
    size_t bytes = (size_t)4 << logw;
    CUdevice d;
    CUcontext c;
    linked_context(&d, &c);
    CUdeviceptr col[MAXC];
    char *pin[MAXC], *heap[MAXC];
    for (unsigned k = 0; k < nc; k++) {
        CK(cuMemAlloc(&col[k], bytes));
        CK(cuMemsetD32(col[k], 0x1000u * k + 7, bytes / 4));
        CK(cuMemHostAlloc((void **)&pin[k], bytes, 0));
        heap[k] = malloc(bytes);
        CK(cuMemcpyDtoH(pin[k], col[k], bytes));
        memcpy(heap[k], pin[k], bytes);
    }
    char *user = malloc(bytes), *want = malloc(bytes);
    memset(user, 0, bytes);
    spin_start(MAXT - 1);
    const char *names[] = {"driver", "pinned", "mirror-pin", "mirror-heap", "mirror-2",
                           "mirror-4", "mirror-8", "pcopy"};
    enum { NV = 8 };
    double total[NV] = {0};
    long bad[NV] = {0};
    for (int it = -20; it < iters; it++) {
        for (int v = 0; v < NV; v++) {
            double t0 = now_us();
            for (unsigned k = 0; k < nc; k++) {
                switch (v) {
                case 0: CK(cuMemcpyDtoH(user, col[k], bytes)); break;
                case 1:
                    CK(cuMemcpyDtoH(pin[k], col[k], bytes));
                    memcpy(user, pin[k], bytes);
                    break;
                case 2: memcpy(user, pin[k], bytes); break;
                case 3: memcpy(user, heap[k], bytes); break;
                case 4: spin_copy(user, heap[k], bytes, 2); break;
                case 5: spin_copy(user, heap[k], bytes, 4); break;
                case 6: spin_copy(user, heap[k], bytes, 8); break;
                case 7: ga_pcopy(user, heap[k], bytes, 0); break;
                }
            }
            double t1 = now_us();
            if (it >= 0)
                total[v] += t1 - t0;
            if (v == 0)
                memcpy(want, user, bytes);
            else if (memcmp(want, user, bytes))
                bad[v]++;
        }
    }
    for (int v = 0; v < NV; v++)
        printf("colprobe %-11s %9.2f us a column read, %zu bytes, %u columns, bad=%ld\n",
               names[v], total[v] / iters / nc, bytes, nc, bad[v]);
    return 0;
}
