/* evprobe.c - what the pool's fences cost the driver, call by call. Each
 * iteration launches a tiny kernel on a created blocking stream (bench_alloc's
 * touch) and records a fence event on the legacy stream (the pool's free);
 * the mode says which events the next allocation queries:
 *   both   the new event (usually pending) and the previous one (usually done),
 *          as the pool's ordered hand-out and its pruning do today
 *   new    only the new event
 *   prev   only the previous event
 *   batch  the new event; every 16th iteration the last 16 events, oldest first
 *   none   no query (launch and record only)
 * Prints the mean microseconds of each call kind and of a whole iteration.
 * usage: evprobe [both|new|prev|batch|none] [ITERATIONS]
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include evprobe.c -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"

enum { RING = 17, BATCH = 16 };

static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry k(.param .u64 p)\n{\n .reg .b64 %rd<3>;\n .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p];\n cvta.to.global.u64 %rd2, %rd1;\n mov.u32 %r1, %tid.x;\n"
    " st.global.u32 [%rd2], %r1;\n ret;\n}\n";

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "both";
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    int q_new = !strcmp(mode, "both") || !strcmp(mode, "new") || !strcmp(mode, "batch");
    int q_prev = !strcmp(mode, "both") || !strcmp(mode, "prev");
    int batch = !strcmp(mode, "batch");
    CUdevice d;
    CUcontext c;
    CUmodule m;
    CUfunction f;
    CUstream st;
    CUdeviceptr p;
    CUevent ev[RING];
    linked_context(&d, &c);
    CK(cuModuleLoadData(&m, ptx));
    CK(cuModuleGetFunction(&f, m, "k"));
    CK(cuStreamCreate(&st, 0));
    CK(cuMemAlloc(&p, 4096));
    for (int i = 0; i < RING; i++) {
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
        CK(cuEventRecord(ev[i], NULL));
    }
    CK(cuCtxSynchronize());
    double tl = 0, tr = 0, tqn = 0, tqp = 0, tqb = 0;
    long pn = 0, pp = 0, pb = 0, nb = 0;
    void *args[] = {&p};
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        double a = now_us();
        CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
        double b = now_us();
        CK(cuEventRecord(ev[i % RING], CU_STREAM_LEGACY));
        double e = now_us();
        tl += b - a, tr += e - b;
        if (q_new) {
            CUresult q = cuEventQuery(ev[i % RING]);
            double e2 = now_us();
            tqn += e2 - e, pn += q == CUDA_ERROR_NOT_READY, e = e2;
        }
        if (q_prev && i > 0) {
            CUresult q = cuEventQuery(ev[(i - 1) % RING]);
            double e2 = now_us();
            tqp += e2 - e, pp += q == CUDA_ERROR_NOT_READY, e = e2;
        }
        if (batch && i % BATCH == BATCH - 1) {
            for (int k = BATCH; k >= 1; k--) { /* oldest first, the new one excluded */
                CUresult q = cuEventQuery(ev[(i - k + RING) % RING]);
                pb += q == CUDA_ERROR_NOT_READY, nb++;
            }
            tqb += now_us() - e;
        }
    }
    double total = now_us() - t0;
    CK(cuCtxSynchronize());
    printf("%-5s launch %.2f record %.2f query-new %.2f [%ld pending] query-prev %.2f [%ld pending]"
           " batch %.2f a call [%ld of %ld pending] iteration %.2f us\n",
           mode, tl / n, tr / n, tqn / n, pn, tqp / n, pp, nb ? tqb / nb : 0.0, pb, nb, total / n);
    return 0;
}
