// coalesce_test.cu - what coalescing must keep true, checked with and without it:
//   scan      4-byte reads see the right values, before and after a kernel, a
//             memset and a host-to-device copy change the data
//   stream    reads on a non-blocking stream right after a kernel on that
//             stream see its writes (async copy + stream sync, like .item())
//   poll      a host loop polling a flag that a running kernel sets ends
//   threads   four threads reading different buffers at once
//   query     a STARK query phase (columns, Merkle siblings, fold neighbours,
//             every position from one random index; gathers learn it), with
//             a kernel, a memset or a device-to-device copy changing a
//             column between some queries, a buffer freed and made anew
//             between rounds; every value checked against what was written
//   columns   whole columns (256 KiB, 4 MiB) read again and again, changed
//             between reads by a kernel, a memset, host-to-device and
//             device-to-device copies and another thread's kernel (the 4 MiB
//             one read often enough to be kept, each writer in turn)
//   ipc       memory shared with another process (itself, run again): the
//             importer reads it, the exporter rewrites it, the importer sees
//             it; the importer rewrites it, the exporter sees it, neither
//             having issued anything since its last read
//   peer      a copy from another context's memory (cuMemcpyPeer, two
//             contexts of one device) rewrites memory read just before
// With --two-gpus, only this (tests/gpu/multigpu.sh): memory of one device
// written by the other between small reads on its owner that coalescing could
// serve from a window; both directions, devices 1 to 0 ("1to0") and 0 to 1:
//   WtoR-copy    cudaMemcpyPeer from the writer's memory, the writer current
//   WtoR-async   cudaMemcpyPeerAsync on a stream of the writer, then synchronized
//   WtoR-kernel  a kernel on the writer storing into the reader's memory through
//               peer access (its stream synchronized)
//   WtoR-remote  the reader's memory read with the writer current (UVA), before
//               and after the writer's kernel rewrites it
// every value read checked against what was written last; exits 77 (a SKIP
// line saying why) with fewer than two devices or without peer access.
// With --dma marked|dmabuf|plain, only this: a buffer (marked: with
// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set, as GPUDirect RDMA users mark memory a
// NIC writes behind the program's back; dmabuf: exported as a dma-buf for a
// NIC, where the device supports it) read word by word, twice; coalesce.sh
// checks that the library served none of a marked or exported buffer's reads.
// Prints one line per check ("NAME ok=0|1"; "dma dmabuf unsupported" where the
// device exports no dma-buf) and exits 1 when any fails; the library must not
// change any of them.
#include <cuda.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.cuh"


__global__ void pattern(unsigned *p, unsigned n, unsigned salt)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i * 2654435761u ^ salt;
}

__global__ void set_flag_late(volatile unsigned *flag, long long spin)
{
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    *flag = 1;
    __threadfence_system();
}

static unsigned expect(unsigned i, unsigned salt) { return i * 2654435761u ^ salt; }

static int read_all(const unsigned *d, unsigned n, unsigned salt, unsigned stride)
{
    int ok = 1;
    for (unsigned i = 0; i < n; i += stride) {
        unsigned v;
        CK(cudaMemcpy(&v, d + i, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(i, salt);
    }
    return ok;
}

static void scan()
{
    const unsigned n = 1 << 20;
    unsigned *d;
    CK(cudaMalloc(&d, n * 4));
    pattern<<<(n + 255) / 256, 256>>>(d, n, 7);
    int ok = read_all(d, 1 << 16, 7, 1) && read_all(d, n, 7, 4099); // forward, then jumps
    pattern<<<(n + 255) / 256, 256>>>(d, n, 99); // a kernel changes everything
    ok &= read_all(d, 4096, 99, 1);
    CK(cudaMemset(d + 100, 0xff, 4)); // a memset changes one word
    unsigned v;
    CK(cudaMemcpy(&v, d + 100, 4, cudaMemcpyDeviceToHost));
    ok &= v == 0xffffffffu;
    unsigned w = 12345; // a host-to-device copy changes another
    CK(cudaMemcpy(d + 101, &w, 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(&v, d + 101, 4, cudaMemcpyDeviceToHost));
    ok &= v == 12345;
    CK(cudaMemcpy(&v, d + 102, 4, cudaMemcpyDeviceToHost));
    ok &= v == expect(102, 99);
    printf("scan ok=%d\n", verdict(ok));
    CK(cudaFree(d));
}

static void stream()
{
    const unsigned n = 1 << 16;
    unsigned *d, v;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&d, n * 4));
    int ok = 1;
    for (unsigned round = 0; round < 50; round++) {
        pattern<<<(n + 255) / 256, 256, 0, s>>>(d, n, round);
        for (unsigned k = 0; k < 20; k++) {
            CK(cudaMemcpyAsync(&v, d + k * 31, 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            ok &= v == expect(k * 31, round);
        }
    }
    printf("stream ok=%d\n", verdict(ok));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
}

static void poll()
{
    unsigned *flag;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&flag, 4096));
    CK(cudaMemset(flag, 0, 4096));
    CK(cudaDeviceSynchronize());
    set_flag_late<<<1, 1, 0, s>>>(flag, 100000000LL); // ~50 ms
    unsigned v = 0;
    long polls = 0;
    while (v == 0 && polls < 50000000) {
        CK(cudaMemcpy(&v, flag, 4, cudaMemcpyDeviceToHost)); // legacy: does not wait for s
        polls++;
    }
    CK(cudaStreamSynchronize(s));
    printf("poll ok=%d\n", verdict(v == 1));
    CK(cudaFree(flag));
    CK(cudaStreamDestroy(s));
}

static void *reader(void *arg)
{
    long id = (long)arg;
    const unsigned n = 1 << 16;
    unsigned *d;
    CK(cudaMalloc(&d, n * 4));
    pattern<<<(n + 255) / 256, 256>>>(d, n, (unsigned)id);
    CK(cudaDeviceSynchronize());
    long ok = read_all(d, n, (unsigned)id, 3);
    CK(cudaFree(d));
    return (void *)ok;
}

static void threads()
{
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reader, (void *)i);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != NULL;
    }
    printf("threads ok=%d\n", verdict(ok));
}

// One query's reads (as bench/bench_query.cu), each checked against salt.
static int one_query(unsigned **cols, unsigned ncols, unsigned **tree, unsigned **fri,
                     unsigned log_n, const unsigned *salt, unsigned idx)
{
    int ok = 1;
    unsigned v, folds = log_n / 2;
    for (unsigned c = 0; c < ncols; c++) {
        CK(cudaMemcpy(&v, cols[c] + idx, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(idx, salt[c]);
    }
    for (unsigned l = 0; l < log_n; l++) {
        unsigned at = ((idx >> l) ^ 1) * 8;
        CK(cudaMemcpy(&v, tree[l] + at, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(at, 1000 + l);
    }
    for (unsigned m = 0; m < folds; m++) {
        unsigned pair = (idx >> (m + 1)) & ~1u;
        for (unsigned k = 0; k < 2; k++) {
            CK(cudaMemcpy(&v, fri[m] + (pair | k), 4, cudaMemcpyDeviceToHost));
            ok &= v == expect(pair | k, 2000 + m);
        }
    }
    return ok;
}

static void query()
{
    const unsigned log_n = 18, n = 1u << log_n, ncols = 8, folds = log_n / 2;
    unsigned *cols[8], *tree[18], *fri[9], salt[8];
    for (unsigned c = 0; c < ncols; c++)
        CK(cudaMalloc(&cols[c], n * 4));
    for (unsigned l = 0; l < log_n; l++)
        CK(cudaMalloc(&tree[l], (n >> l) * 32));
    for (unsigned m = 0; m < folds; m++)
        CK(cudaMalloc(&fri[m], (n >> (m + 1)) * 4));
    int ok = 1;
    unsigned rng = 12345;
    for (unsigned r = 0; r < 4; r++) {
        if (r == 2) { // a fold layer freed and made anew between rounds
            CK(cudaFree(fri[0]));
            CK(cudaMalloc(&fri[0], (n >> 1) * 4));
        }
        for (unsigned c = 0; c < ncols; c++) {
            salt[c] = r * 100 + c;
            pattern<<<(n + 255) / 256, 256>>>(cols[c], n, salt[c]);
        }
        for (unsigned l = 0; l < log_n; l++)
            pattern<<<((n >> l) * 8 + 255) / 256, 256>>>(tree[l], (n >> l) * 8, 1000 + l);
        for (unsigned m = 0; m < folds; m++)
            pattern<<<((n >> (m + 1)) + 255) / 256, 256>>>(fri[m], n >> (m + 1), 2000 + m);
        CK(cudaGetLastError());
        for (unsigned q = 0; q < 48; q++) {
            rng = rng * 1664525u + 1013904223u;
            ok &= one_query(cols, ncols, tree, fri, log_n, salt, (rng >> 8) & (n - 1));
            unsigned c = q % ncols;
            if (q % 5 == 1) { // a kernel rewrites a column
                salt[c] += 7;
                pattern<<<(n + 255) / 256, 256>>>(cols[c], n, salt[c]);
            } else if (q % 5 == 3) { // a copy from another column
                unsigned from = (c + 1) % ncols;
                CK(cudaMemcpy(cols[c], cols[from], n * 4, cudaMemcpyDeviceToDevice));
                salt[c] = salt[from];
            }
        }
        unsigned v; // a memset, then one more query sees it
        CK(cudaMemset(cols[0], 0, n * 4));
        CK(cudaMemcpy(&v, cols[0] + (rng & (n - 1)), 4, cudaMemcpyDeviceToHost));
        ok &= v == 0;
    }
    printf("query ok=%d\n", verdict(ok));
    for (unsigned c = 0; c < ncols; c++)
        CK(cudaFree(cols[c]));
    for (unsigned l = 0; l < log_n; l++)
        CK(cudaFree(tree[l]));
    for (unsigned m = 0; m < folds; m++)
        CK(cudaFree(fri[m]));
}

// A column accessor: columns read whole to the host again and again (the
// library keeps a copy of each), with a kernel, a memset, a host-to-device
// copy, a device-to-device copy and another thread's kernel changing them
// between reads; every word of every read checked.
static int check_column(const unsigned *d, unsigned n, unsigned *host, unsigned salt)
{
    CK(cudaMemcpy(host, d, (size_t)n * 4, cudaMemcpyDeviceToHost));
    int ok = 1;
    for (unsigned i = 0; i < n; i++)
        ok &= host[i] == expect(i, salt);
    return ok;
}

static void *other_writer(void *arg)
{
    unsigned *d = (unsigned *)arg;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pattern<<<(1 << 16) / 256, 256, 0, s>>>(d, 1 << 16, 555);
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    return NULL;
}

// The 4 MiB column read whole often enough to be kept (plain host memory:
// from its fourth read, then at the first read after each change), changed
// by each writer in turn between pairs of reads; every word checked against
// what was last written (ref).
static int check_wide(const unsigned *d, unsigned n, unsigned *host, const unsigned *ref)
{
    CK(cudaMemcpy(host, d, (size_t)n * 4, cudaMemcpyDeviceToHost));
    return !memcmp(host, ref, (size_t)n * 4);
}

static int wide_column(unsigned *wide, unsigned big, const unsigned *other, unsigned *host)
{
    unsigned *ref = (unsigned *)malloc((size_t)big * 4), w = 4243;
    for (unsigned i = 0; i < big; i++)
        ref[i] = expect(i, 79);
    pattern<<<big / 256, 256>>>(wide, big, 79);
    CK(cudaDeviceSynchronize());
    int ok = 1;
    for (unsigned r = 0; r < 6; r++)
        ok &= check_wide(wide, big, host, ref);
    for (unsigned step = 0; step < 5; step++) {
        if (step == 0) { // a kernel
            pattern<<<big / 256, 256>>>(wide, big, 80);
            for (unsigned i = 0; i < big; i++)
                ref[i] = expect(i, 80);
        } else if (step == 1) { // a memset
            CK(cudaMemset(wide + 11, 0xff, 4));
            ref[11] = 0xffffffffu;
        } else if (step == 2) { // a host-to-device copy
            CK(cudaMemcpy(wide + big - 1, &w, 4, cudaMemcpyHostToDevice));
            ref[big - 1] = w;
        } else if (step == 3) { // a device-to-device copy (another column's 64 Ki words)
            CK(cudaMemcpy(wide + 4096, other, (1 << 16) * 4, cudaMemcpyDeviceToDevice));
            for (unsigned i = 0; i < 1 << 16; i++)
                ref[4096 + i] = expect(i, 9);
        } else { // another thread's kernel on its own stream
            pthread_t t;
            pthread_create(&t, NULL, other_writer, wide);
            pthread_join(t, NULL);
            for (unsigned i = 0; i < 1 << 16; i++)
                ref[i] = expect(i, 555);
        }
        for (unsigned r = 0; r < 3; r++)
            ok &= check_wide(wide, big, host, ref);
    }
    free(ref);
    return ok;
}

static void columns()
{
    const unsigned n = 1 << 16, big = 1 << 20, ncols = 4;
    unsigned *col[ncols], *wide, *host = (unsigned *)malloc((size_t)big * 4);
    for (unsigned c = 0; c < ncols; c++) {
        CK(cudaMalloc(&col[c], (size_t)n * 4));
        pattern<<<n / 256, 256>>>(col[c], n, c);
    }
    CK(cudaMalloc(&wide, (size_t)big * 4));
    pattern<<<big / 256, 256>>>(wide, big, 77);
    CK(cudaDeviceSynchronize());
    int ok = 1;
    for (unsigned r = 0; r < 3; r++)
        for (unsigned c = 0; c < ncols; c++)
            ok &= check_column(col[c], n, host, c);
    for (unsigned r = 0; r < 3; r++)
        ok &= check_column(wide, big, host, 77);
    CK(cudaMemcpy(host, col[2] + 1000, 4000, cudaMemcpyDeviceToHost)); // part of a kept one
    for (unsigned i = 0; i < 1000; i++)
        ok &= host[i] == expect(1000 + i, 2);
    pattern<<<n / 256, 256>>>(col[1], n, 9); // a kernel
    ok &= check_column(col[1], n, host, 9) && check_column(col[1], n, host, 9);
    CK(cudaMemset(col[2] + 7, 0xff, 4)); // a memset
    CK(cudaMemcpy(host, col[2], (size_t)n * 4, cudaMemcpyDeviceToHost));
    ok &= host[7] == 0xffffffffu && host[8] == expect(8, 2);
    unsigned w = 4242; // a host-to-device copy
    CK(cudaMemcpy(col[3] + 9, &w, 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(host, col[3], (size_t)n * 4, cudaMemcpyDeviceToHost));
    ok &= host[9] == 4242 && host[10] == expect(10, 3);
    CK(cudaMemcpy(col[0], col[1], (size_t)n * 4, cudaMemcpyDeviceToDevice)); // device to device
    ok &= check_column(col[0], n, host, 9) && check_column(col[0], n, host, 9);
    pattern<<<big / 256, 256>>>(wide, big, 78);
    ok &= check_column(wide, big, host, 78) && check_column(wide, big, host, 78);
    pthread_t t; // another thread's work on its own stream
    pthread_create(&t, NULL, other_writer, col[3]);
    pthread_join(t, NULL);
    ok &= check_column(col[3], n, host, 555);
    ok &= wide_column(wide, big, col[1], host);
    printf("columns ok=%d\n", verdict(ok));
    for (unsigned c = 0; c < ncols; c++)
        CK(cudaFree(col[c]));
    CK(cudaFree(wide));
    free(host);
}

enum { IPC_WORDS = 1 << 18 };

static void put(int fd, char c)
{
    if (write(fd, &c, 1) != 1)
        exit(1);
}

static char get(int fd)
{
    char c = 0;
    return read(fd, &c, 1) == 1 ? c : 0;
}

// The importing side: reads the memory (twice), lets the exporter rewrite it,
// checks, rewrites it itself. Exits 0 when every value it read was right.
static int ipc_child(const char *hex, int from, int to)
{
    cudaIpcMemHandle_t h;
    for (size_t i = 0; i < sizeof h; i++)
        sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&h + i);
    unsigned *d;
    CK(cudaIpcOpenMemHandle((void **)&d, h, cudaIpcMemLazyEnablePeerAccess));
    int ok = read_all(d, 4096, 11, 1) && read_all(d, 4096, 11, 1);
    put(to, 'r');
    ok &= get(from) == 'w' && read_all(d, 4096, 22, 1); // the exporter's writes
    pattern<<<IPC_WORDS / 256, 256>>>(d, IPC_WORDS, 33);
    CK(cudaDeviceSynchronize());
    CK(cudaIpcCloseMemHandle(d));
    put(to, 'x');
    return ok ? 0 : 1;
}

static void ipc()
{
    unsigned *d;
    CK(cudaMalloc(&d, IPC_WORDS * 4));
    pattern<<<IPC_WORDS / 256, 256>>>(d, IPC_WORDS, 11);
    CK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, d));
    char hex[2 * sizeof h + 1], fds[2][16];
    for (size_t i = 0; i < sizeof h; i++)
        sprintf(hex + 2 * i, "%02x", ((unsigned char *)&h)[i]);
    int p2c[2], c2p[2];
    if (pipe(p2c) || pipe(c2p))
        exit(1);
    snprintf(fds[0], sizeof fds[0], "%d", p2c[0]);
    snprintf(fds[1], sizeof fds[1], "%d", c2p[1]);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "coalesce_test", "--ipc-child", hex, fds[0], fds[1],
              (char *)NULL);
        _exit(127);
    }
    close(p2c[0]), close(c2p[1]); // a child that dies reads as end of file
    int ok = get(c2p[0]) == 'r'; // the importer has read it
    pattern<<<IPC_WORDS / 256, 256>>>(d, IPC_WORDS, 22);
    CK(cudaDeviceSynchronize());
    ok &= read_all(d, 4096, 22, 1) && read_all(d, 4096, 22, 1);
    put(p2c[1], 'w');
    ok &= get(c2p[0]) == 'x'; // the importer rewrote it: nothing issued here since
    ok &= read_all(d, 4096, 33, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("ipc ok=%d\n", verdict(ok));
    close(p2c[1]), close(c2p[0]);
    CK(cudaFree(d));
}

static void peer()
{
    const unsigned n = 1 << 16;
    unsigned *a;
    CK(cudaMalloc(&a, n * 4));
    pattern<<<n / 256, 256>>>(a, n, 44);
    CK(cudaDeviceSynchronize());
    int ok = read_all(a, n, 44, 1) && read_all(a, n, 44, 7);
    CUcontext ca, cb;
    CUdevice dev;
    CU(cuCtxGetCurrent(&ca));
    CU(cuCtxGetDevice(&dev));
    CUctxCreateParams params = {};
    CU(cuCtxCreate(&cb, &params, 0, dev)); // current now
    CUdeviceptr b;
    CU(cuMemAlloc(&b, n * 4));
    CU(cuMemsetD32(b, 0x5a5a5a5au, n));
    CU(cuMemcpyPeer((CUdeviceptr)a, ca, b, cb, n * 4));
    CU(cuCtxSynchronize());
    CU(cuMemFree(b));
    CU(cuCtxPopCurrent(&cb));
    for (unsigned i = 0; i < n; i += 97) {
        unsigned v;
        CK(cudaMemcpy(&v, a + i, 4, cudaMemcpyDeviceToHost));
        ok &= v == 0x5a5a5a5au;
    }
    CU(cuCtxDestroy(cb));
    printf("peer ok=%d\n", verdict(ok));
    CK(cudaFree(a));
}

// One --two-gpus check line: "<W>to<R>-<what> ok=0|1".
static void cross_check(int w, int r, const char *what, int ok)
{
    printf("%dto%d-%s ok=%d\n", w, r, what, verdict(ok));
}

// --two-gpus: device W rewrites memory of device R between 4-byte reads of it
// on R (each read twice first, so that windows hold it); every read checked.
static void cross(int r, int w)
{
    const unsigned n = 1 << 16, stride = 97;
    unsigned *a, *b;
    cudaStream_t s;
    CK(cudaSetDevice(r));
    CK(cudaMalloc(&a, n * 4));
    pattern<<<n / 256, 256>>>(a, n, 50 + r);
    CK(cudaDeviceSynchronize());
    int warm = read_all(a, 4096, 50 + r, 1) && read_all(a, 4096, 50 + r, 1);
    CK(cudaSetDevice(w));
    CK(cudaMalloc(&b, n * 4));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pattern<<<n / 256, 256>>>(b, n, 60 + w);
    CK(cudaDeviceSynchronize());
    // A peer copy, issued with the writer current and not waited for: it is
    // ordered before the reader's next work on the legacy stream.
    CK(cudaMemcpyPeer(a, r, b, w, n * 4));
    CK(cudaSetDevice(r));
    int ok = warm && read_all(a, n, 60 + w, stride) && read_all(a, 4096, 60 + w, 1);
    cross_check(w, r, "copy", ok);
    // An asynchronous peer copy on the writer's stream, synchronized there.
    CK(cudaSetDevice(w));
    pattern<<<n / 256, 256, 0, s>>>(b, n, 70 + w);
    CK(cudaMemcpyPeerAsync(a, r, b, w, n * 4, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaSetDevice(r));
    ok = read_all(a, n, 70 + w, stride) && read_all(a, 4096, 70 + w, 1);
    cross_check(w, r, "async", ok);
    // A kernel on the writer storing into the reader's memory (peer access).
    CK(cudaSetDevice(w));
    cudaError_t e = cudaDeviceEnablePeerAccess(r, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
    else
        CK(e);
    pattern<<<n / 256, 256, 0, s>>>(a, n, 80 + w);
    CK(cudaStreamSynchronize(s));
    CK(cudaSetDevice(r));
    ok = read_all(a, n, 80 + w, stride) && read_all(a, 4096, 80 + w, 1);
    cross_check(w, r, "kernel", ok);
    // The reader's memory read with the writer current, the writer's kernel
    // rewriting it between reads (legacy stream: ordered without a sync).
    CK(cudaSetDevice(w));
    ok = read_all(a, 4096, 80 + w, 1) && read_all(a, 4096, 80 + w, 1);
    pattern<<<n / 256, 256>>>(a, n, 90 + w);
    ok &= read_all(a, n, 90 + w, stride) && read_all(a, 4096, 90 + w, 1);
    CK(cudaSetDevice(r));
    ok &= read_all(a, 4096, 90 + w, 1);
    cross_check(w, r, "remote", ok);
    CK(cudaSetDevice(w));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(b));
    CK(cudaSetDevice(r));
    CK(cudaFree(a));
}

static int two_gpus()
{
    int count = 0, p01 = 0, p10 = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        printf("SKIP: fewer than two CUDA devices (%d)\n", count);
        return 77;
    }
    CK(cudaDeviceCanAccessPeer(&p01, 0, 1));
    CK(cudaDeviceCanAccessPeer(&p10, 1, 0));
    if (!p01 || !p10) {
        printf("SKIP: no peer access between devices 0 and 1 "
               "(cudaDeviceCanAccessPeer: 0->1 %d, 1->0 %d)\n", p01, p10);
        return 77;
    }
    cross(0, 1);
    cross(1, 0);
    return verdicts();
}

static void dma(const char *how)
{
    const unsigned n = 1 << 14, all = 1 << 19; // 2 MiB: page-aligned, as a dma-buf must be
    unsigned *a;
    int fd = -1;
    CK(cudaMalloc(&a, all * 4));
    if (!strcmp(how, "marked")) {
        unsigned one = 1;
        CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)a));
    } else if (!strcmp(how, "dmabuf")) {
        CUdevice dev;
        int supported = 0;
        CU(cuCtxGetDevice(&dev));
        CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev));
        if (!supported || cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)a, all * 4,
                                                        CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                                        0) != CUDA_SUCCESS) {
            printf("dma dmabuf unsupported\n");
            CK(cudaFree(a));
            return;
        }
    }
    pattern<<<all / 256, 256>>>(a, all, 45);
    CK(cudaDeviceSynchronize());
    int ok = read_all(a, n, 45, 1) && read_all(a, n, 45, 1);
    printf("dma %s ok=%d\n", how, verdict(ok));
    if (fd >= 0)
        close(fd);
    CK(cudaFree(a));
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--ipc-child"))
        return ipc_child(argv[2], atoi(argv[3]), atoi(argv[4]));
    skip_without_gpu();
    if (argc == 2 && !strcmp(argv[1], "--two-gpus"))
        return two_gpus();
    if (argc == 3 && !strcmp(argv[1], "--dma")) {
        dma(argv[2]);
        return verdicts();
    }
    scan();
    stream();
    poll();
    threads();
    query();
    columns();
    ipc();
    peer();
    return verdicts();
}
