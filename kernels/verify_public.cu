/* verify_public.cu - proves libgpuaccel's replacements for public provers'
 * kernels bit-identical to the originals as a program carries them, and
 * measures both.
 *
 * Owns: the comparison of each public row of kernels/table.txt against its
 * original, loaded from the program named on the command line (the image the
 * table's code= identity was read from: `gpuaccel kernels ids PROGRAM`), never
 * compiled here: the originals are other projects' code. For each pair it
 * replays the program's own launch sequence (the host code that launches the
 * kernels, read from the project and written here from its description) on
 * fresh random inputs, once with the originals and once with the
 * replacements, into buffers poisoned differently, and compares every word
 * (guard words after each buffer catch stray writes). Then it times both.
 * Must never: be built into the library (it is a test program).
 *
 * Build:  nvcc -O3 -arch=sm_90 -Isrc -Itools -o verify_public kernels/verify_public.cu
 *         tools/codeids.c src/tracking/{codeid,cubin,ptx}.c -lcuda
 * Usage:  verify_public --stwo PROGRAM [--quick] [--seed S] [--no-timing]
 * Exit:   0 all comparisons matched, 1 a mismatch or CUDA error, 2 bad
 *         option or a program that lacks an original, 77 "SKIP: no CUDA device". */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <fcntl.h>
#include <functional>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#define HARNESS_NAME "verify_public"
#include "harness.cuh"

#include "codeids.h" /* a program's fatbins (tools/codeids.c) */

#include "risc0_kernels.cu" /* the replacements */
#include "stwo_kernels.cu"

/* ---- basics --------------------------------------------------------------- */

static void check_cu(CUresult e, const char *what, int line)
{
    if (e != CUDA_SUCCESS) {
        const char *s = "?";
        cuGetErrorName(e, &s);
        fprintf(stderr, "verify_public: line %d: %s: %s\n", line, what, s);
        exit(1);
    }
}
#define CU(call) check_cu((call), #call, __LINE__)

/* Any 32-bit word, 1 in 16 an edge value: the replacements claim exactness
 * for every word, canonical or not, as the originals' arithmetic takes them. */
static const uint32_t EDGE[] = {0u, 1u, 2147483646u, 2147483647u, 2147483648u, 0xffffffffu, 2u};
static uint32_t rand_word(Rng &r)
{
    uint64_t x = r.next();
    if ((x & 15u) == 0)
        return EDGE[(x >> 8) % (sizeof EDGE / sizeof EDGE[0])];
    return (uint32_t)(x >> 32);
}

static std::vector<uint32_t> rand_words(Rng &r, size_t n)
{
    std::vector<uint32_t> v(n);
    for (uint32_t &w : v)
        w = rand_word(r);
    return v;
}

/* ---- the originals, from the program's .nv_fatbin ------------------------- */

struct Program {
    std::vector<CUmodule> modules;
    CUfunction find(const char *name) const
    {
        for (CUmodule m : modules) {
            CUfunction f;
            if (cuModuleGetFunction(&f, m, name) == CUDA_SUCCESS)
                return f;
        }
        return NULL;
    }
    /* Every name's kernel into *fns[i]; false, saying which is missing, if any is. */
    bool find_all(const char *path, const char *const *names, CUfunction *const *fns, int n) const
    {
        for (int i = 0; i < n; i++)
            if (!(*fns[i] = find(names[i]))) {
                fprintf(stderr, "verify_public: %s: no kernel %s\n", path, names[i]);
                return false;
            }
        return true;
    }
};

static void load_one(void *arg, const uint8_t *fatbin, size_t len, size_t pos)
{
    (void)len, (void)pos;
    CUmodule m;
    if (cuModuleLoadData(&m, fatbin) == CUDA_SUCCESS)
        ((Program *)arg)->modules.push_back(m);
}

/* Loads every fatbin of PATH's .nv_fatbin section, walked as `gpuaccel kernels
 * ids` walks it (tools/codeids.c). */
static bool load_program(const char *path, Program &p)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "verify_public: %s: cannot read it\n", path);
        if (fd >= 0)
            close(fd);
        return false;
    }
    const uint8_t *f = (const uint8_t *)mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return false;
    if (codeids_each_fatbin(f, (size_t)st.st_size, load_one, &p) < 0)
        fprintf(stderr, "verify_public: %s: not a 64-bit ELF file with a .nv_fatbin section\n", path);
    else if (p.modules.empty())
        fprintf(stderr, "verify_public: %s: no loadable .nv_fatbin\n", path);
    return !p.modules.empty();
}

/* ---- comparing -------------------------------------------------------------- */

#define POISON_A 0xA5A5A5A5u
#define POISON_B 0x5A5A5A5Au
#define GUARD 64 /* words after each buffer */

static int g_failures = 0;
static long g_cases = 0;

/* A device buffer of `len` words (+ guards), its content `init` or poison. */
static uint32_t *dev_buffer(const std::vector<uint32_t> &init, size_t len, uint32_t poison)
{
    std::vector<uint32_t> h(len + GUARD, poison);
    std::copy(init.begin(), init.end(), h.begin());
    uint32_t *d;
    CK(cudaMalloc(&d, h.size() * 4));
    CK(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    return d;
}

/* Same words in a and b (len + guards, guards each its own poison)? */
static bool same_words(const char *kernel, const std::string &desc, const uint32_t *a,
                       const uint32_t *b, size_t len)
{
    std::vector<uint32_t> ha(len + GUARD), hb(len + GUARD);
    CK(cudaMemcpy(ha.data(), a, ha.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, hb.size() * 4, cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0, guard_bad = 0;
    for (size_t k = 0; k < len; k++)
        if (ha[k] != hb[k] && bad++ == 0)
            first = k;
    for (size_t k = len; k < len + GUARD; k++)
        guard_bad += ha[k] != POISON_A || hb[k] != POISON_B;
    g_cases++;
    if (!bad && !guard_bad)
        return true;
    g_failures++;
    printf("MISMATCH %s [%s]: %zu of %zu words differ", kernel, desc.c_str(), bad, len);
    if (bad)
        printf(" (first at %zu: original %08x, replacement %08x)", first, ha[first], hb[first]);
    if (guard_bad)
        printf(", %zu guard words written", guard_bad);
    printf("\n");
    return false;
}

struct Opts {
    bool quick, timing;
    uint64_t seed;
};

/* One timed line: what ran, the kernel it stands for in the summary (empty:
 * none), original and replacement microseconds. */
struct TimeRow {
    std::string what, kernel;
    double orig_us, repl_us;
};
struct Timing {
    std::vector<TimeRow> rows;
};

/* ---- stwo-gpu: the batched circle FFT (cuda/src/poly/rfft.cu, ifft.cu) --------- */

enum { RCIRCLE, RLINE, ICIRCLE, ILINE, RESCALE, FFT_KERNELS };
static const char *const FFT_NAMES[FFT_KERNELS] = {
    "_Z22batch_rfft_circle_partPPjS_ii", "_Z20batch_rfft_line_partPPjS_iiii",
    "_Z22batch_ifft_circle_partPPjS_ii", "_Z20batch_ifft_line_partPPjS_iii",
    "_Z13batch_rescalePPjiij"};
static const char *const FFT_SHORT[FFT_KERNELS] = {
    "batch_rfft_circle_part", "batch_rfft_line_part", "batch_ifft_circle_part",
    "batch_ifft_line_part", "batch_rescale"};

struct FftFns {
    CUfunction fn[FFT_KERNELS];
};

/* One launch: kernel k, the twiddles it is given, its scalar arguments after
 * the column count and row count (line layers: offset and layer, or layer;
 * rescale: the factor), and stwo's grid: (columns, blocks) of 1024 threads. */
struct FftStep {
    int k;
    uint32_t *tw;
    int x, y;
    unsigned blocks;
};

/* stwo-gpu's interpolate_columns, then evaluate_columns, on `cols` columns of
 * `rows` words (the host code's loops, with the twiddle tree's base `tw`). */
static std::vector<FftStep> fft_plan(uint32_t *tw, int rows, uint32_t factor)
{
    std::vector<FftStep> p;
    int log_rows = 0;
    while ((1 << (log_rows + 1)) <= rows)
        log_rows++;
    unsigned blocks = (unsigned)(((rows >> 1) + 1023) / 1024);
    p.push_back({ICIRCLE, tw, 0, 0, blocks});
    for (int i = 1, size = rows >> 1, off = 0; i < log_rows; i++) {
        p.push_back({ILINE, tw + off, i, 0, blocks});
        size >>= 1;
        off += size;
    }
    p.push_back({RESCALE, NULL, (int)factor, 0, (unsigned)((rows + 1023) / 1024)});
    for (int i = log_rows - 1, size = 1, off = (rows >> 1) - 2; i > 0; i--) {
        p.push_back({RLINE, tw, off, i, blocks});
        size <<= 1;
        off -= size;
    }
    p.push_back({RCIRCLE, tw, 0, 0, blocks});
    return p;
}

/* Runs the steps: the originals with stwo's grid (orig), or the replacements
 * with stwo's grid (geo NULL) or the given one. */
static void fft_run(const std::vector<FftStep> &steps, uint32_t **cols, int ncols, int rows,
                    const FftFns *orig, const dim3 *geo)
{
    for (const FftStep &s : steps) {
        dim3 grid = geo ? geo[0] : dim3(ncols, s.blocks), block = geo ? geo[1] : dim3(1024);
        uint32_t factor = (uint32_t)s.x;
        if (orig) {
            void *tw = s.tw;
            void *args[6];
            int n = 0;
            args[n++] = &cols;
            if (s.k != RESCALE)
                args[n++] = &tw;
            args[n++] = &ncols, args[n++] = &rows;
            if (s.k == RLINE)
                args[n++] = (void *)&s.x, args[n++] = (void *)&s.y;
            else if (s.k == ILINE)
                args[n++] = (void *)&s.x;
            else if (s.k == RESCALE)
                args[n++] = &factor;
            CU(cuLaunchKernel(orig->fn[s.k], ncols, s.blocks, 1, 1024, 1, 1, 0, 0, args, NULL));
            continue;
        }
        switch (s.k) {
        case RCIRCLE: ga_stwo_batch_rfft_circle_part<<<grid, block>>>(cols, s.tw, ncols, rows); break;
        case RLINE: ga_stwo_batch_rfft_line_part<<<grid, block>>>(cols, s.tw, ncols, rows, s.x, s.y); break;
        case ICIRCLE: ga_stwo_batch_ifft_circle_part<<<grid, block>>>(cols, s.tw, ncols, rows); break;
        case ILINE: ga_stwo_batch_ifft_line_part<<<grid, block>>>(cols, s.tw, ncols, rows, s.x); break;
        default: ga_stwo_batch_rescale<<<grid, block>>>(cols, ncols, rows, factor); break;
        }
    }
    CK(cudaGetLastError());
}

/* The columns of one run: each its own allocation (plus a leading word when
 * shifted, so the column is 4 bytes off 16-byte alignment) and the device
 * array of their pointers. */
struct Columns {
    std::vector<uint32_t *> base;
    uint32_t **dev;
};

static Columns make_columns(const std::vector<std::vector<uint32_t>> &init, bool shifted,
                            uint32_t poison)
{
    Columns c;
    std::vector<uint32_t *> ptrs;
    for (const std::vector<uint32_t> &v : init) {
        std::vector<uint32_t> w(shifted ? 1 : 0, 0x0badf00du);
        w.insert(w.end(), v.begin(), v.end());
        c.base.push_back(dev_buffer(w, w.size(), poison));
        ptrs.push_back(c.base.back() + (shifted ? 1 : 0));
    }
    CK(cudaMalloc(&c.dev, ptrs.size() * sizeof(uint32_t *)));
    CK(cudaMemcpy(c.dev, ptrs.data(), ptrs.size() * sizeof(uint32_t *), cudaMemcpyHostToDevice));
    return c;
}

static void free_columns(Columns &c)
{
    for (uint32_t *p : c.base)
        CK(cudaFree(p));
    CK(cudaFree(c.dev));
}

/* Random columns (init) and a twiddle tree for `rows` rows, the tree on the
 * device (every index the plan's layers reach lies below 2 * rows). */
static uint32_t *fft_inputs(Rng &r, int ncols, int rows, std::vector<std::vector<uint32_t>> &init)
{
    init.clear();
    for (int c = 0; c < ncols; c++)
        init.push_back(rand_words(r, (size_t)rows));
    std::vector<uint32_t> tw = rand_words(r, 2 * (size_t)rows + 8);
    return dev_buffer(tw, tw.size(), POISON_A);
}

/* The library's configuration for a grid=any replacement (kernels.c's
 * choose_config) on a launch with more threads than the device holds at once:
 * 256-thread blocks, as many as are resident at once (a smaller launch gets
 * fewer blocks; the one-block and odd shapes below cover those). */
static dim3 any_grid(const void *fn, const cudaDeviceProp &prop)
{
    int per_sm = 1;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 256, 0));
    return dim3((unsigned)(per_sm * prop.multiProcessorCount));
}

static Timing check_stwo_fft(const Opts &o, Rng &r, const FftFns &orig, const cudaDeviceProp &prop)
{
    Timing t;
    const int top = o.quick ? 16 : 21;
    /* the configurations a grid=any replacement may get: stwo's own, the
     * library's, one small block, 2-D and 3-D shapes */
    const dim3 lib[2] = {any_grid((const void *)ga_stwo_batch_rfft_line_part, prop), dim3(256)};
    const dim3 tiny[2] = {dim3(1), dim3(64)}, odd[2] = {dim3(3, 2, 1), dim3(8, 4, 2)};
    const dim3 *geos[] = {NULL, lib, tiny, odd};
    const char *geo_names[] = {"stwo's grid", "the library's grid", "one 64-thread block",
                               "a 3-D grid of 3-D blocks"};
    for (int log_rows = 1; log_rows <= top; log_rows++) {
        const int rows = 1 << log_rows, ncols = log_rows <= 12 ? 3 : 2;
        for (int g = 0; g < 4; g++) {
            if (g == 2 && log_rows > 14)
                continue; /* one block: slow at large sizes, and the same code */
            bool shifted = g == 3;
            std::vector<std::vector<uint32_t>> init;
            uint32_t *dtw = fft_inputs(r, ncols, rows, init);
            std::vector<FftStep> plan = fft_plan(dtw, rows, rand_word(r));
            Columns a = make_columns(init, shifted, POISON_A), b = make_columns(init, shifted, POISON_B);
            fft_run(plan, a.dev, ncols, rows, &orig, NULL);
            fft_run(plan, b.dev, ncols, rows, NULL, geos[g]);
            CK(cudaDeviceSynchronize());
            for (int c = 0; c < ncols; c++) {
                char desc[128];
                snprintf(desc, sizeof desc, "rows=2^%d, column %d of %d%s, %s", log_rows, c, ncols,
                         shifted ? " (4 bytes off alignment)" : "", geo_names[g]);
                same_words("batched FFT", desc, a.base[c], b.base[c], (size_t)rows + shifted);
            }
            free_columns(a);
            free_columns(b);
            CK(cudaFree(dtw));
        }
    }
    if (!o.timing)
        return t;
    /* each kernel alone over 8 columns of 2^20 rows: the original with stwo's
     * grid, the replacement with the library's; the line layers all together */
    const int rows = 1 << 20, ncols = 8;
    std::vector<std::vector<uint32_t>> init;
    uint32_t *dtw = fft_inputs(r, ncols, rows, init);
    Columns a = make_columns(init, false, POISON_A);
    std::vector<FftStep> plan = fft_plan(dtw, rows, rand_word(r));
    for (int k = 0; k < FFT_KERNELS; k++) {
        std::vector<FftStep> only;
        for (const FftStep &s : plan)
            if (s.k == k)
                only.push_back(s);
        dim3 geo[2] = {lib[0], lib[1]};
        double to = median_us([&] { fft_run(only, a.dev, ncols, rows, &orig, NULL); }, 9);
        double tr = median_us([&] { fft_run(only, a.dev, ncols, rows, NULL, geo); }, 9);
        std::string what = std::string(FFT_SHORT[k]) +
                           (only.size() > 1 ? " (" + std::to_string(only.size()) + " layers)" : "");
        t.rows.push_back({what, FFT_SHORT[k], to, tr});
    }
    dim3 geo[2] = {lib[0], lib[1]};
    double to = median_us([&] { fft_run(plan, a.dev, ncols, rows, &orig, NULL); }, 9);
    double tr = median_us([&] { fft_run(plan, a.dev, ncols, rows, NULL, geo); }, 9);
    t.rows.push_back({"interpolate + evaluate, 8 x 2^20", "", to, tr});
    free_columns(a);
    CK(cudaFree(dtw));
    return t;
}

/* ---- stwo-gpu: the quotient accumulation (cuda/src/quotients.cu) ---------------- */

static const char *const QUOT_NAME =
    "_Z27accumulate_quotients_in_gpujjjiPPjj4qm31P19column_sample_batchjS_S_S_S_PS1_S_S4_P4cm31";

/* The inputs of one launch, on the device: columns, sample batches (their
 * point and column indexes; the values pointer, which the kernel never reads,
 * left null), line coefficients, batch coefficients. */
struct QuotInputs {
    int domain, log_domain, ncols;
    uint32_t first, step, nbatches;
    std::vector<uint32_t *> cols;
    uint32_t **dcols, *dbatches, *dsizes, *dlines, *dbatch_coeffs;
    std::vector<uint32_t *> idx_bufs;
};

static QuotInputs quot_inputs(Rng &r, int domain, int log_domain, int ncols,
                              const std::vector<uint32_t> &sizes)
{
    QuotInputs q;
    q.domain = domain, q.log_domain = log_domain, q.ncols = ncols;
    q.first = rand_word(r), q.step = rand_word(r), q.nbatches = (uint32_t)sizes.size();
    for (int c = 0; c < ncols; c++)
        q.cols.push_back(dev_buffer(rand_words(r, (size_t)domain), (size_t)domain, POISON_A));
    CK(cudaMalloc(&q.dcols, ncols * sizeof(uint32_t *)));
    CK(cudaMemcpy(q.dcols, q.cols.data(), ncols * sizeof(uint32_t *), cudaMemcpyHostToDevice));
    std::vector<ga_stwo::sample_batch> b(sizes.size());
    size_t lines = 0;
    for (size_t i = 0; i < sizes.size(); i++) {
        std::vector<uint32_t> p = rand_words(r, 8), idx(sizes[i]);
        memcpy(&b[i].px, p.data(), 32);
        for (uint32_t &x : idx)
            x = (uint32_t)(r.next() % (uint64_t)ncols);
        q.idx_bufs.push_back(dev_buffer(idx, idx.size(), POISON_A));
        b[i].columns = q.idx_bufs.back(), b[i].values = NULL, b[i].size = sizes[i];
        lines += sizes[i];
    }
    CK(cudaMalloc(&q.dbatches, b.size() * sizeof b[0]));
    CK(cudaMemcpy(q.dbatches, b.data(), b.size() * sizeof b[0], cudaMemcpyHostToDevice));
    q.dsizes = dev_buffer(sizes, sizes.size(), POISON_A);
    q.dlines = dev_buffer(rand_words(r, lines * 3 * 4), lines * 3 * 4, POISON_A);
    q.dbatch_coeffs = dev_buffer(rand_words(r, sizes.size() * 4), sizes.size() * 4, POISON_A);
    return q;
}

static void free_quot(QuotInputs &q)
{
    for (uint32_t *p : q.cols)
        CK(cudaFree(p));
    for (uint32_t *p : q.idx_bufs)
        CK(cudaFree(p));
    for (void *p : {(void *)q.dcols, (void *)q.dbatches, (void *)q.dsizes, (void *)q.dlines,
                    (void *)q.dbatch_coeffs})
        CK(cudaFree(p));
}

/* One launch into out[0..3] (domain words each) and den (2 words a batch a
 * row): stwo's 512-thread blocks, or `block`. */
static void quot_run(const QuotInputs &q, CUfunction orig, unsigned block, uint32_t *const out[4],
                     uint32_t *den)
{
    unsigned grid = (unsigned)((q.domain + block - 1) / block);
    uint32_t domain = (uint32_t)q.domain, ncols = (uint32_t)q.ncols, nb = q.nbatches;
    int log_domain = q.log_domain;
    ga_stwo::qm31 rc = {{1, 2}, {3, 4}}; /* random_coefficient: the kernel never reads it */
    if (orig) {
        void *pc = q.dcols, *pb = q.dbatches, *o0 = out[0], *o1 = out[1], *o2 = out[2],
             *o3 = out[3], *pl = q.dlines, *ps = q.dsizes, *pbc = q.dbatch_coeffs, *pd = den;
        uint32_t first = q.first, step = q.step;
        void *args[17] = {&first, &step, &domain, &log_domain, &pc, &ncols, &rc, &pb, &nb,
                          &o0, &o1, &o2, &o3, &pl, &ps, &pbc, &pd};
        CU(cuLaunchKernel(orig, grid, 1, 1, block, 1, 1, 0, 0, args, NULL));
    } else {
        ga_stwo_accumulate_quotients<<<grid, block>>>(
            q.first, q.step, domain, log_domain, q.dcols, ncols, rc,
            (ga_stwo::sample_batch *)q.dbatches, nb, out[0], out[1], out[2], out[3],
            (ga_stwo::qm31 *)q.dlines, q.dsizes, (ga_stwo::qm31 *)q.dbatch_coeffs,
            (ga_stwo::cm31 *)den);
    }
    CK(cudaGetLastError());
}

static Timing check_stwo_quotients(const Opts &o, Rng &r, CUfunction orig)
{
    Timing t;
    struct Case {
        int domain, log_domain, ncols;
        std::vector<uint32_t> sizes;
    };
    std::vector<Case> cases = {{1, 0, 1, {1}},          {7, 3, 2, {2}},
                               {512, 9, 3, {1, 2}},     {1000, 10, 4, {3, 1, 4}},
                               {4096, 12, 8, {8}},      {65536, 16, 8, {4, 4}},
                               {1 << 18, 18, 4, {2, 1}}};
    for (const Case &c : cases)
        for (unsigned block : {512u, 256u}) {
            QuotInputs q = quot_inputs(r, c.domain, c.log_domain, c.ncols, c.sizes);
            size_t dwords = (size_t)c.domain * c.sizes.size() * 2;
            uint32_t *a[4], *b[4];
            for (int k = 0; k < 4; k++)
                a[k] = dev_buffer({}, (size_t)c.domain, POISON_A),
                b[k] = dev_buffer({}, (size_t)c.domain, POISON_B);
            uint32_t *da = dev_buffer({}, dwords, POISON_A), *db = dev_buffer({}, dwords, POISON_B);
            quot_run(q, orig, block, a, da);
            quot_run(q, NULL, block, b, db);
            CK(cudaDeviceSynchronize());
            char desc[96];
            snprintf(desc, sizeof desc, "domain %d, %d columns, %zu batches, %u-thread blocks",
                     c.domain, c.ncols, c.sizes.size(), block);
            for (int k = 0; k < 4; k++)
                same_words("accumulate_quotients", desc, a[k], b[k], (size_t)c.domain);
            same_words("accumulate_quotients (denominator inverses)", desc, da, db, dwords);
            for (int k = 0; k < 4; k++)
                CK(cudaFree(a[k])), CK(cudaFree(b[k]));
            CK(cudaFree(da));
            CK(cudaFree(db));
            free_quot(q);
            if (o.quick && c.domain >= 4096)
                break;
        }
    if (!o.timing)
        return t;
    /* the corpus proof's shape: the extended domain of 2^21 rows, 8 columns, one batch */
    QuotInputs q = quot_inputs(r, 1 << 21, 21, 8, {8});
    uint32_t *out[4], *den = dev_buffer({}, (size_t)2 << 21, 0);
    for (int k = 0; k < 4; k++)
        out[k] = dev_buffer({}, (size_t)1 << 21, 0);
    double to = median_us([&] { quot_run(q, orig, 512, out, den); }, 9);
    double tr = median_us([&] { quot_run(q, NULL, 512, out, den); }, 9);
    t.rows.push_back({"accumulate_quotients, 2^21 rows x 8", "accumulate_quotients_in_gpu", to, tr});
    for (int k = 0; k < 4; k++)
        CK(cudaFree(out[k]));
    CK(cudaFree(den));
    free_quot(q);
    return t;
}

/* ---- RISC Zero: the SHA-256 Merkle kernels (risc0/sys/kernels/zkp/cuda/sha.cu) -- */

struct ShaFns {
    CUfunction rows, fold;
};

/* One launch of sha_rows (fold false: out, in, count, colSize) or sha_fold
 * (out, in, count), `block` threads a block as RISC Zero's getSimpleConfig
 * gives (256) or another, the original or the replacement. */
static void sha_launch(bool fold, const ShaFns *orig, unsigned block, uint32_t *out,
                       const uint32_t *in, uint32_t count, uint32_t cols)
{
    unsigned grid = (count + block - 1) / block;
    if (!grid)
        return;
    if (orig) {
        void *po = out, *pi = (void *)in;
        void *args[4] = {&po, &pi, &count, &cols};
        CU(cuLaunchKernel(fold ? orig->fold : orig->rows, grid, 1, 1, block, 1, 1, 0, 0, args, NULL));
    } else if (fold) {
        ga_risc0_sha_fold<<<grid, block>>>(out, in, count);
    } else {
        ga_risc0_sha_rows<<<grid, block>>>(out, in, count, cols);
    }
    CK(cudaGetLastError());
}

static Timing check_risc0_sha(const Opts &o, Rng &r, const ShaFns &orig)
{
    Timing t;
    const uint32_t counts[] = {1, 7, 255, 256, 1000, 4099};
    const uint32_t colss[] = {0, 1, 15, 16, 17, 31, 32, 33, 64, 100};
    const unsigned blocks[] = {256, 96, 1024};
    for (uint32_t count : counts)
        for (uint32_t cols : colss) {
            if (o.quick && cols > 33)
                continue;
            unsigned block = blocks[(count + cols) % 3];
            size_t off = (count + cols) % 5 == 0; /* 4 bytes off: the scalar stores */
            std::vector<uint32_t> m = rand_words(r, (size_t)count * cols);
            uint32_t *dm = dev_buffer(m, m.size(), POISON_A);
            size_t len = off + (size_t)count * 8;
            uint32_t *a = dev_buffer({}, len, POISON_A), *b = dev_buffer({}, len, POISON_B);
            sha_launch(false, &orig, block, a + off, dm, count, cols);
            sha_launch(false, NULL, block, b + off, dm, count, cols);
            CK(cudaDeviceSynchronize());
            char desc[96];
            snprintf(desc, sizeof desc, "count=%u, colSize=%u, %u-thread blocks%s", count, cols,
                     block, off ? ", 4 bytes off" : "");
            if (off) { /* the word before the digests: written by neither */
                uint32_t lead[2];
                CK(cudaMemcpy(&lead[0], a, 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(&lead[1], b, 4, cudaMemcpyDeviceToHost));
                if (lead[0] != POISON_A || lead[1] != POISON_B) {
                    g_failures++;
                    printf("MISMATCH sha_rows [%s]: the word before the output written\n", desc);
                }
            }
            same_words("sha_rows", desc, a + off, b + off, len - off);
            for (uint32_t *d : {dm, a, b})
                CK(cudaFree(d));
        }
    for (uint32_t count : {1u, 2u, 255u, 1000u, 65536u}) {
        for (size_t off : {(size_t)0, (size_t)1}) {
            std::vector<uint32_t> in = rand_words(r, off + (size_t)count * 16);
            uint32_t *di = dev_buffer(in, in.size(), POISON_A);
            size_t len = (size_t)count * 8;
            uint32_t *a = dev_buffer({}, len, POISON_A), *b = dev_buffer({}, len, POISON_B);
            sha_launch(true, &orig, 256, a, di + off, count, 0);
            sha_launch(true, NULL, 256, b, di + off, count, 0);
            CK(cudaDeviceSynchronize());
            char desc[64];
            snprintf(desc, sizeof desc, "count=%u%s", count, off ? ", input 4 bytes off" : "");
            same_words("sha_fold", desc, a, b, len);
            for (uint32_t *d : {di, a, b})
                CK(cudaFree(d));
        }
    }
    if (!o.timing)
        return t;
    /* rows of a 2^20-row LDE (16 and 64 columns), and a fold of 2^20 digests */
    const uint32_t count = 1u << 20;
    for (uint32_t cols : {16u, 64u}) {
        std::vector<uint32_t> m = rand_words(r, (size_t)count * cols);
        uint32_t *dm = dev_buffer(m, m.size(), POISON_A), *out = dev_buffer({}, (size_t)count * 8, 0);
        double to = median_us([&] { sha_launch(false, &orig, 256, out, dm, count, cols); }, 9);
        double tr = median_us([&] { sha_launch(false, NULL, 256, out, dm, count, cols); }, 9);
        t.rows.push_back({"sha_rows, 2^20 rows of " + std::to_string(cols),
                          cols == 16 ? "sha_rows" : "", to, tr});
        CK(cudaFree(dm));
        CK(cudaFree(out));
    }
    std::vector<uint32_t> in = rand_words(r, (size_t)count * 16);
    uint32_t *di = dev_buffer(in, in.size(), POISON_A), *out = dev_buffer({}, (size_t)count * 8, 0);
    double to = median_us([&] { sha_launch(true, &orig, 256, out, di, count, 0); }, 9);
    double tr = median_us([&] { sha_launch(true, NULL, 256, out, di, count, 0); }, 9);
    t.rows.push_back({"sha_fold, 2^20 pairs", "sha_fold", to, tr});
    CK(cudaFree(di));
    CK(cudaFree(out));
    return t;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    Opts o = {false, true, 0};
    const char *stwo = NULL, *risc0 = NULL;
    bool seeded = false;
    static const struct option longopts[] = {{"stwo", required_argument, NULL, 's'},
                                             {"risc0", required_argument, NULL, 'r'},
                                             {"quick", no_argument, NULL, 'q'},
                                             {"no-timing", no_argument, NULL, 'n'},
                                             {"seed", required_argument, NULL, 'S'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        switch (c) {
        case 's': stwo = optarg; break;
        case 'r': risc0 = optarg; break;
        case 'q': o.quick = true; break;
        case 'n': o.timing = false; break;
        case 'S': o.seed = strtoull(optarg, NULL, 0), seeded = true; break;
        case 'h':
            printf("usage: verify_public [--stwo PROGRAM] [--risc0 PROGRAM] [--quick] [--seed S]\n"
                   "                     [--no-timing]\n"
                   "  PROGRAM: the program (or library) whose stwo-gpu or RISC Zero kernels\n"
                   "  the table's code= identities name (gpuaccel kernels ids PROGRAM)\n"
                   "exit: 0 all identical, 1 mismatch or CUDA error, 2 bad option, 77 no GPU\n");
            return 0;
        default: return 2; /* getopt_long said what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "verify_public: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!stwo && !risc0) {
        fprintf(stderr, "verify_public: expected --stwo PROGRAM or --risc0 PROGRAM (the program "
                        "that carries the originals)\n");
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    CK(cudaFree(0)); /* the primary context, current for the driver calls too */
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (!seeded)
        o.seed = mix64((uint64_t)time(NULL) ^ ((uint64_t)clock() << 32));
    printf("verify_public: device %s (sm_%d%d), seed 0x%016" PRIx64 "%s\n", prop.name, prop.major,
           prop.minor, o.seed, o.quick ? ", quick" : "");

    struct Group {
        const char *name;
        std::function<Timing(Rng &)> fn;
    };
    std::vector<Group> groups;
    Program sp, rp;
    FftFns fft;
    ShaFns sha;
    if (stwo) {
        if (!load_program(stwo, sp))
            return 2;
        CUfunction *ffns[FFT_KERNELS], quot = NULL, *qfn[1] = {&quot};
        for (int k = 0; k < FFT_KERNELS; k++)
            ffns[k] = &fft.fn[k];
        if (!sp.find_all(stwo, FFT_NAMES, ffns, FFT_KERNELS) ||
            !sp.find_all(stwo, &QUOT_NAME, qfn, 1))
            return 2;
        groups.push_back({"batched circle FFT (stwo-gpu)",
                          [&](Rng &rg) { return check_stwo_fft(o, rg, fft, prop); }});
        groups.push_back({"quotient accumulation (stwo-gpu)",
                          [&, quot](Rng &rg) { return check_stwo_quotients(o, rg, quot); }});
    }
    if (risc0) {
        const char *names[] = {"_Z8sha_rowsP9ShaDigestPK2Fpjj", "_Z8sha_foldP9ShaDigestPKS_j"};
        CUfunction *fns[] = {&sha.rows, &sha.fold};
        if (!load_program(risc0, rp) || !rp.find_all(risc0, names, fns, 2))
            return 2;
        groups.push_back({"SHA-256 Merkle rows and folds (RISC Zero)",
                          [&](Rng &rg) { return check_risc0_sha(o, rg, sha); }});
    }
    std::vector<std::string> summary;
    int k = 0;
    for (const Group &g : groups) {
        Rng r(mix64(o.seed + (uint64_t)++k * 0x632BE59BD9B4E019ull));
        int fail0 = g_failures;
        long cases0 = g_cases;
        printf("%s:\n", g.name);
        Timing t = g.fn(r);
        bool ok = g_failures == fail0;
        printf("  %ld comparisons, %s\n", g_cases - cases0, ok ? "all identical" : "MISMATCH");
        for (const TimeRow &row : t.rows) {
            printf("  %-36s original %9.2f us, replacement %9.2f us, speedup %.2fx\n",
                   row.what.c_str(), row.orig_us, row.repl_us, row.orig_us / row.repl_us);
            if (!row.kernel.empty())
                summary.push_back("verify " + row.kernel + (ok ? " ok" : " MISMATCH") + " speedup=" +
                                  std::to_string(row.orig_us / row.repl_us).substr(0, 4));
        }
        if (!o.timing)
            summary.push_back(std::string("verify ") + g.name + (ok ? " ok" : " MISMATCH"));
    }
    for (const std::string &line : summary)
        printf("%s\n", line.c_str());
    printf("%ld comparisons, %d mismatched\n", g_cases, g_failures);
    return g_failures ? 1 : 0;
}
