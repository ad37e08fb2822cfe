/* test_entries.c - the entry table: sorted (ids are in strcmp order, which the
 * name lookup relies on), every name found, variants and read-only classes. */
#include <string.h>

#include "check.h"
#include "core/common.h"

int main(void)
{
    CHECK(GA_N_ENTRIES > 500);
    for (int i = 1; i < GA_N_ENTRIES; i++)
        CHECK(strcmp(ga_entries[i - 1].name, ga_entries[i].name) < 0);
    for (int i = 0; i < GA_N_ENTRIES; i++)
        CHECK(ga_entry_by_name(ga_entries[i].name) == i);
    CHECK(ga_entry_by_name("cuNoSuchFunction") == -1);
    CHECK(ga_entry_by_name("") == -1);
    CHECK(ga_entry_by_name("cuMemAlloc_v2") == GA_ID_cuMemAlloc_v2);

    /* per-thread variants are flagged, and only they */
    for (int i = 0; i < GA_N_ENTRIES; i++) {
        const char *n = ga_entries[i].name;
        size_t len = strlen(n);
        bool pt = len > 5 && (!strcmp(n + len - 5, "_ptsz") || !strcmp(n + len - 5, "_ptds"));
        CHECK(ga_entries[i].per_thread == pt);
    }
    CHECK(ga_entries[GA_ID_cuLaunchKernel].hooked);
    CHECK(ga_entries[GA_ID_cuLaunchKernel_ptsz].hooked);
    CHECK(!ga_entries[GA_ID_cuMemsetD8_v2].hooked);
    CHECK(ga_entries[GA_ID_cuMemsetD8_v2].writes);
    CHECK(!ga_entries[GA_ID_cuDeviceGetAttribute].writes);
    /* copies and memsets move bytes and map nothing; any other writer may map */
    CHECK(!ga_entries[GA_ID_cuMemsetD8_v2].maps);
    CHECK(!ga_entries[GA_ID_cuMemsetD32Async_ptsz].maps);
    CHECK(!ga_entries[GA_ID_cuMemcpyDtoD_v2].maps);
    CHECK(!ga_entries[GA_ID_cuMemcpy3DPeerAsync].maps);
    CHECK(ga_entries[GA_ID_cuMemAlloc_v2].maps);
    CHECK(ga_entries[GA_ID_cuMemHostRegister_v2].maps);
    CHECK(ga_entries[GA_ID_cuMemMap].maps);
    CHECK(ga_entries[GA_ID_cuMemFree_v2].maps);
    CHECK(!ga_entries[GA_ID_cuDeviceGetAttribute].maps);
    for (int i = 0; i < GA_N_ENTRIES; i++)
        CHECK(!ga_entries[i].maps || ga_entries[i].writes); /* a mapper is a writer */

    /* default-deny: unknown and writing names are not read-only */
    CHECK(ga_name_read_only("cuDeviceGetAttribute"));
    CHECK(ga_name_read_only("cuStreamGetFlags"));
    CHECK(ga_name_read_only("cuMemcpyDtoH"));
    CHECK(!ga_name_read_only("cuMemcpy"));      /* may write device memory */
    CHECK(!ga_name_read_only("cuMemsetD8"));
    CHECK(!ga_name_read_only("cuLaunchKernel"));
    CHECK(!ga_name_read_only("cuSomethingNew"));
    CHECK(!ga_name_read_only("cuCheckpointProcessRestore"));
    /* Every name outside cuda.h that cudart 13 fetches at start (seen on an
     * H200): none may count as an untracked writer, or every stream would be
     * presumed busy for the whole run. */
    static const char *const cudart_extra[] = {
        "cuEGLStreamConsumerAcquireFrame", "cuEGLStreamConsumerConnect",
        "cuEGLStreamConsumerConnectWithFlags", "cuEGLStreamConsumerDisconnect",
        "cuEGLStreamConsumerReleaseFrame", "cuEGLStreamProducerConnect",
        "cuEGLStreamProducerDisconnect", "cuEGLStreamProducerPresentFrame",
        "cuEGLStreamProducerReturnFrame", "cuGLCtxCreate", "cuGLGetDevices", "cuGLInit",
        "cuGLMapBufferObject", "cuGLMapBufferObjectAsync", "cuGLRegisterBufferObject",
        "cuGLSetBufferObjectMapFlags", "cuGLUnmapBufferObject", "cuGLUnmapBufferObjectAsync",
        "cuGLUnregisterBufferObject", "cuGraphicsEGLRegisterImage", "cuGraphicsGLRegisterBuffer",
        "cuGraphicsGLRegisterImage", "cuGraphicsResourceGetMappedEglFrame",
        "cuGraphicsVDPAURegisterOutputSurface", "cuGraphicsVDPAURegisterVideoSurface",
        "cuProfilerInitialize", "cuProfilerStart", "cuProfilerStop", "cuVDPAUCtxCreate",
        "cuVDPAUGetDevice"};
    for (size_t i = 0; i < sizeof cudart_extra / sizeof cudart_extra[0]; i++)
        CHECK(ga_entry_by_name(cudart_extra[i]) < 0 && ga_name_outside_cuda_h(cudart_extra[i]));
    CHECK(!ga_name_outside_cuda_h("cuMemcpyFuture"));
    CHECK(!ga_name_outside_cuda_h("cuLaunchSomething"));
    return check_done("test_entries");
}
