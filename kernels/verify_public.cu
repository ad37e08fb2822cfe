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
 * Build:  nvcc -O3 -arch=sm_90 -o verify_public kernels/verify_public.cu -lcuda
 * Usage:  verify_public --stwo PROGRAM [--quick] [--seed S] [--no-timing]
 * Exit:   0 all comparisons matched, 1 a mismatch or CUDA error, 2 bad
 *         option or a program that lacks an original, 77 "SKIP: no CUDA device". */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <elf.h>
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

#include "stwo_kernels.cu" /* the replacements */

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

/* ---- the originals, from the program's .nv_fatbin ------------------------- */

/* Each fatbin in the section starts with this header (the layout
 * cuModuleLoadData takes); the section holds them back to back. */
struct FatHeader {
    uint32_t magic; /* 0xBA55ED50 */
    uint16_t version, header_size;
    uint64_t fat_size; /* bytes after the header */
};

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
};

/* Loads every fatbin of PATH's .nv_fatbin section. The ELF is read with the
 * platform's <elf.h>: no library reads a section by name more simply. */
static bool load_program(const char *path, Program &p)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        fprintf(stderr, "verify_public: %s: cannot read it\n", path);
        if (fd >= 0)
            close(fd);
        return false;
    }
    const unsigned char *f =
        (const unsigned char *)mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return false;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    size_t size = (size_t)st.st_size;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size ||
        eh->e_shstrndx >= eh->e_shnum) {
        fprintf(stderr, "verify_public: %s: not a 64-bit ELF file\n", path);
        return false;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    const char *names = (const char *)f + sh[eh->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (strcmp(names + sh[i].sh_name, ".nv_fatbin") || sh[i].sh_offset + sh[i].sh_size > size)
            continue;
        const unsigned char *s = f + sh[i].sh_offset, *end = s + sh[i].sh_size;
        while (s + sizeof(FatHeader) <= end) {
            const FatHeader *h = (const FatHeader *)s;
            if (h->magic != 0xBA55ED50u || h->header_size < sizeof(FatHeader))
                break;
            CUmodule m;
            if (cuModuleLoadData(&m, s) == CUDA_SUCCESS)
                p.modules.push_back(m);
            s += h->header_size + h->fat_size;
            s += (8 - ((uintptr_t)(s - f) & 7)) & 7; /* the next header is 8-byte aligned */
        }
    }
    if (p.modules.empty())
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

struct Timing {
    std::vector<std::pair<std::string, std::pair<double, double>>> rows; /* name, (orig, repl) us */
};

/* ---- stwo-gpu: eval_at_point (cuda/src/poly/eval_at_point.cu) ---------------- */

/* The launch sequence of stwo-gpu's eval_at_point(coeffs, n, x, y), after its
 * factors are on the device: the first pass over n coefficients (256-thread
 * blocks, 512 coefficients a block, 512 * 4 + 512 * 8 bytes of dynamic shared
 * memory), then second passes (512 * 16 bytes) until one block is left; temp
 * holds every pass's output, the last pass's first. */
struct EvalPlan {
    int n, log_n, temp_size;
    struct Step {
        bool first;
        int blocks, smem, a, b, c, d; /* the scalar arguments, in order */
    };
    std::vector<Step> steps;
};

static EvalPlan eval_plan(int n)
{
    EvalPlan p;
    p.n = n;
    p.log_n = 0;
    while ((1 << (p.log_n + 1)) <= n)
        p.log_n++;
    p.temp_size = 0;
    for (int size = n; size > 1;) {
        size = (size + 511) / 512;
        p.temp_size += size;
    }
    int blocks = ((n >> 1) + 255) / 256;
    int out = p.temp_size - blocks;
    p.steps.push_back({true, blocks, 512 * 4 + 512 * 8, n, p.log_n, out, 0});
    int mappings = p.log_n - 1, level = out;
    while (blocks > 1) {
        mappings -= 9;
        int next = ((blocks >> 1) + 255) / 256;
        out = level - next;
        p.steps.push_back({false, next, 512 * 4 * 4, blocks, mappings, level, out});
        blocks = next;
        level = out;
    }
    return p;
}

struct EvalFns {
    CUfunction first, second;
};

static void run_eval(const EvalPlan &p, uint32_t *coeffs, uint32_t *temp, uint32_t *factors,
                     const EvalFns *orig)
{
    using ga_stwo::qm31;
    for (const EvalPlan::Step &s : p.steps) {
        if (orig) {
            void *args6[6];
            void *pc = coeffs, *pt = temp, *pf = factors;
            if (s.first) {
                args6[0] = &pc, args6[1] = &pt, args6[2] = &pf;
                args6[3] = (void *)&s.a, args6[4] = (void *)&s.b, args6[5] = (void *)&s.c;
                CU(cuLaunchKernel(orig->first, s.blocks, 1, 1, 256, 1, 1, s.smem, 0, args6, NULL));
            } else {
                void *args[6] = {&pt, &pf, (void *)&s.a, (void *)&s.b, (void *)&s.c, (void *)&s.d};
                CU(cuLaunchKernel(orig->second, s.blocks, 1, 1, 256, 1, 1, s.smem, 0, args, NULL));
            }
        } else if (s.first) {
            ga_stwo_eval_first_pass<<<s.blocks, 256, s.smem>>>(coeffs, (qm31 *)temp, (qm31 *)factors,
                                                               s.a, s.b, s.c);
        } else {
            ga_stwo_eval_second_pass<<<s.blocks, 256, s.smem>>>((qm31 *)temp, (qm31 *)factors, s.a,
                                                                s.b, s.c, s.d);
        }
    }
    CK(cudaGetLastError());
}

static Timing check_stwo_eval(const Opts &o, Rng &r, const EvalFns &orig)
{
    Timing t;
    const int top = o.quick ? 18 : 22;
    for (int log_n = 1; log_n <= top; log_n++) {
        for (int rep = 0; rep < (log_n <= 12 ? 3 : 1); rep++) {
            EvalPlan p = eval_plan(1 << log_n);
            std::vector<uint32_t> c((size_t)p.n), f((size_t)p.log_n * 4);
            for (uint32_t &w : c)
                w = rand_word(r);
            for (uint32_t &w : f)
                w = rand_word(r);
            /* the coefficients may sit anywhere in a column buffer: 4-byte
             * offsets take the replacement's unaligned load */
            size_t off = rep == 1 ? 1 : 0;
            std::vector<uint32_t> cpad(off, 0);
            cpad.insert(cpad.end(), c.begin(), c.end());
            uint32_t *dc = dev_buffer(cpad, cpad.size(), POISON_A);
            uint32_t *df = dev_buffer(f, f.size(), POISON_A);
            size_t tw = (size_t)p.temp_size * 4;
            uint32_t *ta = dev_buffer({}, tw, POISON_A), *tb = dev_buffer({}, tw, POISON_B);
            run_eval(p, dc + off, ta, df, &orig);
            run_eval(p, dc + off, tb, df, NULL);
            CK(cudaDeviceSynchronize());
            char desc[96];
            snprintf(desc, sizeof desc, "n=2^%d, %zu passes, offset %zu", log_n, p.steps.size(), off);
            same_words("eval_at_point", desc, ta, tb, tw);
            if (o.timing && rep == 0 && (log_n == 16 || log_n == 20)) {
                EvalPlan one = p;
                one.steps.resize(1);
                double fo = median_us([&] { run_eval(one, dc, ta, df, &orig); }, 15);
                double fr = median_us([&] { run_eval(one, dc, tb, df, NULL); }, 15);
                double ao = median_us([&] { run_eval(p, dc, ta, df, &orig); }, 15);
                double ar = median_us([&] { run_eval(p, dc, tb, df, NULL); }, 15);
                t.rows.push_back({"first pass, n=2^" + std::to_string(log_n), {fo, fr}});
                t.rows.push_back({"all passes, n=2^" + std::to_string(log_n), {ao, ar}});
            }
            for (uint32_t *d : {dc, df, ta, tb})
                CK(cudaFree(d));
        }
    }
    /* the second pass alone, as a 2^20 evaluation's first second pass runs it */
    if (o.timing) {
        EvalPlan p = eval_plan(1 << 20);
        size_t tw = (size_t)p.temp_size * 4;
        std::vector<uint32_t> init(tw), f((size_t)p.log_n * 4);
        for (uint32_t &w : init)
            w = rand_word(r);
        for (uint32_t &w : f)
            w = rand_word(r);
        uint32_t *ta = dev_buffer(init, tw, POISON_A), *df = dev_buffer(f, f.size(), POISON_A);
        EvalPlan two = p;
        two.steps.erase(two.steps.begin());
        two.steps.resize(1);
        double so = median_us([&] { run_eval(two, NULL, ta, df, &orig); }, 15);
        double sr = median_us([&] { run_eval(two, NULL, ta, df, NULL); }, 15);
        t.rows.push_back({"second pass (" + std::to_string(two.steps[0].a) + " values)", {so, sr}});
        CK(cudaFree(ta));
        CK(cudaFree(df));
    }
    return t;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    Opts o = {false, true, 0};
    const char *stwo = NULL;
    bool seeded = false;
    static const struct option longopts[] = {{"stwo", required_argument, NULL, 's'},
                                             {"quick", no_argument, NULL, 'q'},
                                             {"no-timing", no_argument, NULL, 'n'},
                                             {"seed", required_argument, NULL, 'S'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        switch (c) {
        case 's': stwo = optarg; break;
        case 'q': o.quick = true; break;
        case 'n': o.timing = false; break;
        case 'S': o.seed = strtoull(optarg, NULL, 0), seeded = true; break;
        case 'h':
            printf("usage: verify_public --stwo PROGRAM [--quick] [--seed S] [--no-timing]\n"
                   "  PROGRAM: the program (or library) whose stwo-gpu kernels the table's\n"
                   "  code= identities name (gpuaccel kernels ids PROGRAM)\n"
                   "exit: 0 all identical, 1 mismatch or CUDA error, 2 bad option, 77 no GPU\n");
            return 0;
        default: return 2; /* getopt_long said what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "verify_public: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!stwo) {
        fprintf(stderr, "verify_public: --stwo PROGRAM: expected the program that carries the "
                        "originals\n");
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

    Program prog;
    if (!load_program(stwo, prog))
        return 2;
    EvalFns ev = {prog.find("_Z24eval_at_point_first_passPjP4qm31S1_iii"),
                  prog.find("_Z25eval_at_point_second_passP4qm31S0_iiii")};
    if (!ev.first || !ev.second) {
        fprintf(stderr, "verify_public: %s: no eval_at_point_first_pass/_second_pass\n", stwo);
        return 2;
    }
    Rng r(mix64(o.seed));
    printf("eval_at_point (stwo-gpu):\n");
    Timing t = check_stwo_eval(o, r, ev);
    bool ok = g_failures == 0;
    printf("  %ld comparisons, %s\n", g_cases, ok ? "all identical" : "MISMATCH");
    for (auto &row : t.rows)
        printf("  %-32s original %8.2f us, replacement %8.2f us, speedup %.2fx\n",
               row.first.c_str(), row.second.first, row.second.second,
               row.second.first / row.second.second);
    for (auto &row : t.rows)
        if (row.first.rfind("first pass, n=2^20", 0) == 0 || row.first.rfind("second pass", 0) == 0)
            printf("verify %s %s speedup=%.2f\n",
                   row.first.rfind("first", 0) == 0 ? "eval_at_point_first_pass"
                                                   : "eval_at_point_second_pass",
                   ok ? "ok" : "MISMATCH", row.second.first / row.second.second);
    if (!o.timing)
        printf("verify eval_at_point %s\n", ok ? "ok" : "MISMATCH");
    printf("%ld comparisons, %d mismatched\n", g_cases, g_failures);
    return g_failures ? 1 : 0;
}
