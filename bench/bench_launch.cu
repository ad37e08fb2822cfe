/*
 * bench_launch.cu - launch-bound kernel sequences (feature: GPUACCEL_GRAPHS)
 * and pass-through cost (all features off).
 *
 * Sequence mode: a sequence of LEN tiny kernels (one block of 256 threads) is
 * repeated REPS times on a stream.  Launch g = rep*LEN + j computes
 *     dst[t] = f^work(src[t]) * 747796405 + mix32(seed + g)
 * (f: a non-affine integer step, applied `work` times) with src/dst alternating between two 1 KiB arrays, so the scalar argument
 * changes on every launch and the pointers alternate. Each repetition ends with
 * a stream synchronize, as an iteration that uses its result does (the graphs
 * feature learns sequences between such flush points).
 *   --mode native     plain <<<>>> launches
 *   --mode reference  the sequence built once by hand as a CUDA graph (explicit
 *                     kernel nodes, built during warm-up, not timed); every rep
 *                     updates each node with cudaGraphExecKernelNodeSetParams and
 *                     launches the graph, so the results are identical
 *   --long            each kernel runs ~100 us of dependent integer arithmetic
 *                     (--work N loop iterations, default 10000 with
 *                     --long, ~9 ns each on H200; else 0)
 * Prints "result launch <us per kernel launch> ..." and a digest over both arrays.
 *
 * Pass-through mode (--passthrough launch|memcpy, --count N, default 100000):
 *   launch: N launches of a one-thread kernel on a stream; launch k folds
 *           mix32(seed + k) into word k mod 1024 of a device array, so the
 *           digest (over the array and N) changes if a launch is lost,
 *           repeated, reordered or given another argument
 *   memcpy: N 4-byte cudaMemcpy D2H of consecutive elements of a 1 MiB buffer
 *           of seeded per-element values; the warm-up reads its last 1000
 *           words, then a kernel writes the buffer anew with another seed, so
 *           no value the warm-up read is valid when the timer starts; the
 *           digest is over every value read
 * Prints "result passthrough <us per op> ..." (the median of 25 batches' per-op
 * times; mean= the whole loop's) and a digest.
 *
 * usage: bench_launch [--len L] [--reps R] [--long] [--work N] [--mode native|reference]
 *                     [--seed S]
 *        bench_launch --passthrough launch|memcpy [--count N] [--seed S]
 */
#include "common.h"

#define N_ELEMS 256

__global__ void step(uint32_t *dst, const uint32_t *src, uint32_t s, int work)
{
    int t = threadIdx.x;
    uint32_t v = src[t];
    for (int k = 0; k < work; k++) /* non-affine, so the compiler cannot fold steps */
        v = (v ^ (v >> 15)) * 0x2c1b3c6du + (uint32_t)k;
    dst[t] = v * 747796405u + s;
}

__global__ void init(uint32_t *a, uint32_t *b, uint32_t seed)
{
    int t = threadIdx.x;
    a[t] = mix32(seed * 0x9e3779b9u + t);
    b[t] = mix32(seed * 0x85ebca6bu + t);
}

#define STAMP_WORDS 1024

/* One launch of the pass-through loop: word k mod STAMP_WORDS takes in k. */
__global__ void stamp(uint32_t *d, uint32_t k, uint32_t seed)
{
    uint32_t *w = d + (k & (STAMP_WORDS - 1));
    *w = *w * 0x9e3779b1u + mix32(seed + k);
}

static uint32_t scalar(uint32_t seed, long long g) { return mix32(seed + (uint32_t)g); }

static void run_native(uint32_t *buf[2], long long len, long long reps, int work, uint32_t seed,
                       cudaStream_t st)
{
    for (long long r = 0; r < reps; r++) {
        for (long long j = 0; j < len; j++) {
            long long g = r * len + j;
            step<<<1, N_ELEMS, 0, st>>>(buf[(g + 1) & 1], buf[g & 1], scalar(seed, g), work);
            CK(cudaGetLastError());
        }
        CK(cudaStreamSynchronize(st)); /* the end of an iteration */
    }
}

struct graph_seq {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaGraphNode_t *nodes;
};

/* Argument storage that cudaKernelNodeParams.kernelParams points into. */
struct step_args {
    uint32_t *dst;
    const uint32_t *src;
    uint32_t s;
    int work;
    void *ptrs[4];
};

/* Node parameters of launch g (same kernel, grid and arguments as run_native). */
static cudaKernelNodeParams step_params(struct step_args *a, uint32_t *buf[2], long long g,
                                        int work, uint32_t seed)
{
    cudaKernelNodeParams p = {};
    a->dst = buf[(g + 1) & 1];
    a->src = buf[g & 1];
    a->s = scalar(seed, g);
    a->work = work;
    a->ptrs[0] = &a->dst;
    a->ptrs[1] = &a->src;
    a->ptrs[2] = &a->s;
    a->ptrs[3] = &a->work;
    p.func = (void *)step;
    p.gridDim = dim3(1);
    p.blockDim = dim3(N_ELEMS);
    p.sharedMemBytes = 0;
    p.kernelParams = a->ptrs;
    return p;
}

static void build_graph(struct graph_seq *gs, uint32_t *buf[2], long long len, int work,
                        uint32_t seed)
{
    struct step_args a;
    gs->nodes = (cudaGraphNode_t *)malloc((size_t)len * sizeof(cudaGraphNode_t));
    if (!gs->nodes) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    CK(cudaGraphCreate(&gs->graph, 0));
    for (long long j = 0; j < len; j++) {
        cudaKernelNodeParams p = step_params(&a, buf, j, work, seed);
        CK(cudaGraphAddKernelNode(&gs->nodes[j], gs->graph, j ? &gs->nodes[j - 1] : NULL,
                                  j ? 1 : 0, &p));
    }
    CK(cudaGraphInstantiate(&gs->exec, gs->graph, 0));
}

static void run_graph(struct graph_seq *gs, uint32_t *buf[2], long long len, long long reps,
                      int work, uint32_t seed, cudaStream_t st)
{
    struct step_args a;
    for (long long r = 0; r < reps; r++) {
        for (long long j = 0; j < len; j++) {
            cudaKernelNodeParams p = step_params(&a, buf, r * len + j, work, seed);
            CK(cudaGraphExecKernelNodeSetParams(gs->exec, gs->nodes[j], &p));
        }
        CK(cudaGraphLaunch(gs->exec, st));
        CK(cudaStreamSynchronize(st)); /* the end of an iteration */
    }
}

/* The median of the batches' per-op times: a pass-through cost of 1% hides in
 * the spread of one timing of the whole loop (a preemption, a clock change), so
 * the loop is timed in BATCHES pieces and the middle one reported. */
#define BATCHES 25

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void launch_batch(uint32_t *d, long long k0, long long n, uint32_t seed, cudaStream_t st)
{
    for (long long k = k0; k < k0 + n; k++) {
        stamp<<<1, 1, 0, st>>>(d, (uint32_t)k, seed);
        CK(cudaGetLastError());
    }
    CK(timer_sync());
}

/* a[i] for i < words, seeded per element (init's values, STAMP-sized pieces). */
static void init_words(uint32_t *a, unsigned words, uint32_t seed, cudaStream_t st)
{
    for (unsigned off = 0; off < words; off += 2 * N_ELEMS, a += 2 * N_ELEMS) {
        init<<<1, N_ELEMS, 0, st>>>(a, a + N_ELEMS, seed + off);
        CK(cudaGetLastError());
    }
    CK(timer_sync());
}

static int passthrough(const char *what, long long count, uint32_t seed, cudaStream_t st)
{
    double per[BATCHES], whole0, whole1;
    long long batch = count / BATCHES > 0 ? count / BATCHES : 1;
    count = batch * BATCHES;
    if (strcmp(what, "launch") == 0) {
        uint32_t *d, h[STAMP_WORDS + 2];
        CK(cudaMalloc((void **)&d, STAMP_WORDS * sizeof(uint32_t)));
        init_words(d, STAMP_WORDS, seed * 2u + 1u, st);
        launch_batch(d, 0, 1000, seed * 2u + 1u, st); /* warm-up */
        init_words(d, STAMP_WORDS, seed * 2u, st);
        whole0 = now_us();
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_us();
            launch_batch(d, b * batch, batch, seed * 2u, st);
            per[b] = (now_us() - t0) / (double)batch;
        }
        whole1 = now_us();
        printf("result passthrough %.4f op=launch count=%lld batches=%d mean=%.4f\n",
               median_of(per, BATCHES), count, BATCHES, (whole1 - whole0) / (double)count);
        CK(cudaMemcpy(h, d, STAMP_WORDS * sizeof(uint32_t), cudaMemcpyDeviceToHost));
        memcpy(h + STAMP_WORDS, &count, sizeof count);
        print_digest(h, sizeof h);
        CK(cudaFree(d));
    } else if (strcmp(what, "memcpy") == 0) {
        const unsigned words = (1u << 20) / 4;
        uint32_t *d;
        uint32_t *vals = (uint32_t *)malloc((size_t)count * sizeof(uint32_t));
        if (!vals) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
        CK(cudaMalloc((void **)&d, words * sizeof(uint32_t)));
        init_words(d, words, seed * 2u + 1u, st);
        for (long long k = 0; k < 1000 && k < count; k++) /* warm-up, at the buffer's end */
            CK(cudaMemcpy(&vals[k], d + words - 1 - k, sizeof(uint32_t), cudaMemcpyDeviceToHost));
        init_words(d, words, seed * 2u, st); /* the values timed */
        whole0 = now_us();
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_us();
            for (long long k = b * batch; k < (b + 1) * batch; k++)
                CK(cudaMemcpy(&vals[k], d + k % words, sizeof(uint32_t), cudaMemcpyDeviceToHost));
            per[b] = (now_us() - t0) / (double)batch;
        }
        whole1 = now_us();
        printf("result passthrough %.4f op=memcpy count=%lld batches=%d mean=%.4f\n",
               median_of(per, BATCHES), count, BATCHES, (whole1 - whole0) / (double)count);
        print_digest(vals, (size_t)count * sizeof(uint32_t));
        CK(cudaFree(d));
        free(vals);
    } else {
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long long len = 100, reps = 1000, seed = 1, work = -1, count = 100000;
    int reference = 0, long_kernels = 0;
    const char *pass = NULL;
    g_usage = "[--len L] [--reps R] [--long] [--work N] [--mode native|reference] [--seed S]\n"
              "   or --passthrough launch|memcpy [--count N] [--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--len"))
            len = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--reps"))
            reps = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--work"))
            work = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--count"))
            count = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--long"))
            long_kernels = 1;
        else if (ARG_IS("--passthrough"))
            pass = arg_value(argc, argv, &i);
        else if (ARG_IS("--mode"))
            reference = arg_either(argc, argv, &i, "native", "reference");
        else
            usage_exit(argv[0]);
    }
    if (pass && (reference || (strcmp(pass, "launch") && strcmp(pass, "memcpy"))))
        usage_exit(argv[0]);
    if (work < 0)
        work = long_kernels ? 10000 : 0;
    if (work > 0x7fffffff)
        usage_exit(argv[0]);
    require_gpu();

    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (pass) {
        int rc = passthrough(pass, count, (uint32_t)seed, st);
        CK(cudaStreamDestroy(st));
        return rc;
    }

    uint32_t *buf[2];
    CK(cudaMalloc((void **)&buf[0], N_ELEMS * sizeof(uint32_t)));
    CK(cudaMalloc((void **)&buf[1], N_ELEMS * sizeof(uint32_t)));
    struct graph_seq gs;

    /* warm-up: one rep (reference: build the graph and replay it once) */
    init<<<1, N_ELEMS, 0, st>>>(buf[0], buf[1], (uint32_t)seed);
    CK(cudaGetLastError());
    if (reference) {
        build_graph(&gs, buf, len, (int)work, (uint32_t)seed);
        run_graph(&gs, buf, len, 1, (int)work, (uint32_t)seed, st);
    } else {
        run_native(buf, len, 1, (int)work, (uint32_t)seed, st);
    }
    init<<<1, N_ELEMS, 0, st>>>(buf[0], buf[1], (uint32_t)seed);
    CK(cudaGetLastError());
    CK(timer_sync());

    double t0 = now_us();
    if (reference)
        run_graph(&gs, buf, len, reps, (int)work, (uint32_t)seed, st);
    else
        run_native(buf, len, reps, (int)work, (uint32_t)seed, st);
    CK(timer_sync());
    double t1 = now_us();

    uint32_t h[2 * N_ELEMS];
    CK(cudaMemcpy(h, buf[0], N_ELEMS * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h + N_ELEMS, buf[1], N_ELEMS * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    printf("result launch %.4f len=%lld reps=%lld work=%lld mode=%s\n",
           (t1 - t0) / (double)(len * reps), len, reps, work, reference ? "reference" : "native");
    print_digest(h, sizeof h);

    if (reference) {
        CK(cudaGraphExecDestroy(gs.exec));
        CK(cudaGraphDestroy(gs.graph));
        free(gs.nodes);
    }
    CK(cudaFree(buf[0]));
    CK(cudaFree(buf[1]));
    CK(cudaStreamDestroy(st));
    return 0;
}
