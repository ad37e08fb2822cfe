/* window_prog.c - a program whose output marks windows around known work, for
 * `gpuaccel profile --phase` (tests/bats/profile_cmd.bats). Runs against
 * tests/fake.
 *   window_prog KERNELS.PTX [WINDOWS] [START END]
 * prints START ("begin") before each of WINDOWS (default 2) windows and END
 * ("end") after it, and "digest=<hex>" at the end. Inside each window: 5
 * uploads of 1 KiB, 3 cuMemAlloc and 4 cuMemFree (20,992 bytes; the first
 * free is of an 8 KiB block allocated just before the window), 2 launches.
 * Before each window: 11 uploads, 4 cuMemAlloc (that block's included), 3
 * cuMemFree, 3 launches. After the last: 11 uploads, 4 cuMemAlloc and 4
 * cuMemFree, 3 launches, a 4-byte read and the free of the buffer allocated
 * at the start. Standard error gets a line before each window and after the
 * last.
 *
 * With GPUACCEL_PROFILE_WINDOW set to a window file, the program waits after
 * each marker line (up to a second) until gpuaccel has read it, so that the
 * counts do not depend on how fast gpuaccel reads the pipe. */
#include "linked.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "features/profile/window.h"

static uint64_t digest = 1469598103934665603ull;
static const ga_window_t *win; /* the window file, when gpuaccel made one */

static void mix(uint64_t v)
{
    digest = (digest ^ v) * 1099511628211ull;
}

static void open_window_file(void)
{
    const char *path = getenv("GPUACCEL_PROFILE_WINDOW");
    int fd = path ? open(path, O_RDONLY) : -1;
    void *m = fd >= 0 ? mmap(NULL, sizeof *win, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (m != MAP_FAILED && ((const ga_window_t *)m)->magic == GA_WINDOW_MAGIC)
        win = m;
}

/* A marker line, then (with a window file) until gpuaccel has counted it. */
static void marker(const char *line)
{
    uint32_t before = win ? atomic_load(&win->crossings) : 0;
    printf("%s\n", line);
    fflush(stdout);
    for (int i = 0; win && i < 1000 && atomic_load(&win->crossings) == before; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* n uploads of 1 KiB, `allocs` allocation and free pairs, `launches` launches. */
static void work(CUfunction fill, CUdeviceptr dev, unsigned n, unsigned allocs, unsigned launches)
{
    static uint32_t host[256];
    for (unsigned i = 0; i < n; i++) {
        host[i % 256] = i;
        CK(cuMemcpyHtoD(dev, host, sizeof host));
    }
    for (unsigned i = 0; i < allocs; i++) {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 4096 * (i + 1)));
        mix(p != 0);
        CK(cuMemFree(p));
    }
    for (unsigned i = 0; i < launches; i++)
        linked_launch(fill, NULL, dev, 256, i + 1, 0);
}

int main(int argc, char **argv)
{
    CUdevice d;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &d, &ctx);
    int windows = argc > 2 ? atoi(argv[2]) : 2;
    const char *start = argc > 4 ? argv[3] : "begin", *end = argc > 4 ? argv[4] : "end";
    CUfunction fill;
    CUdeviceptr dev, held;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuMemAlloc(&dev, 1024));
    open_window_file();
    for (int w = 0; w < windows; w++) {
        fprintf(stderr, "outside %d\n", w);
        work(fill, dev, 11, 3, 3);
        CK(cuMemAlloc(&held, 8192)); /* freed inside the window */
        marker(start);
        CK(cuMemFree(held));
        work(fill, dev, 5, 2, 2);
        CUdeviceptr extra;
        CK(cuMemAlloc(&extra, 512));
        CK(cuMemFree(extra));
        marker(end);
    }
    fprintf(stderr, "outside %d\n", windows);
    work(fill, dev, 11, 4, 3);
    uint32_t v = 0;
    CK(cuMemcpyDtoH(&v, dev, 4));
    mix(v);
    CK(cuMemFree(dev));
    printf("digest=%016llx\n", (unsigned long long)digest);
    return 0;
}
