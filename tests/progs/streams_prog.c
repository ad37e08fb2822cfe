/* streams_prog.c - a stream per operation, as provers make them, for
 * comparing a run under the library with a native one.
 *   streams_prog [N]   N x (cuStreamCreate, blocking or not by turns, or
 *                      cuStreamCreateWithPriority; a seeded upload, a read
 *                      back on the stream, its sync, a check;
 *                      cuStreamDestroy); then one stream given an attribute
 *                      before its destroy; then how many streams reached the
 *                      driver's cuStreamCreate (the fake driver counts them) */
#define _GNU_SOURCE
#include "linked.h"
#include <dlfcn.h>
#include <string.h>

enum { WORDS = 1024 };

static unsigned bad;

static void one_op(CUdeviceptr dev, CUstream s, unsigned seed)
{
    uint32_t in[WORDS], out[WORDS];
    for (unsigned i = 0; i < WORDS; i++)
        in[i] = seed * 2654435761u ^ i;
    memset(out, 0, sizeof out);
    CK(cuMemcpyHtoD(dev, in, sizeof in));
    CK(cuMemcpyDtoHAsync(out, dev, sizeof out, s));
    CK(cuStreamSynchronize(s));
    bad += memcmp(in, out, sizeof in) != 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    int n = argc > 1 ? atoi(argv[1]) : 24;
    linked_context(&dev, &ctx);
    CK(cuMemAlloc(&buf, WORDS * 4));
    for (int i = 0; i < n; i++) {
        CUstream s;
        CK(cuStreamCreate(&s, i % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
        one_op(buf, s, (unsigned)i);
        CK(cuStreamDestroy(s));
    }
    CUstream s;
    CUstreamAttrValue v;
    memset(&v, 0, sizeof v);
    v.syncPolicy = CU_SYNC_POLICY_SPIN;
    CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    one_op(buf, s, 7);
    CK(cuStreamDestroy(s));
    CK(cuStreamCreate(&s, CU_STREAM_DEFAULT)); /* not the one with the attribute */
    one_op(buf, s, 8);
    CK(cuStreamDestroy(s));
    CK(cuMemFree(buf));
    unsigned (*count)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_stream_creates");
    printf("driver_stream_creates=%u\nbad=%u\n", count ? count() : 0, bad);
    return bad != 0;
}
