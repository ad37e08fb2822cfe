/* query_prog.c - a STARK query phase on the fake driver: scattered 4-byte
 * synchronous reads of columns, Merkle layers and fold layers, each query's
 * positions following from one random index (as bench/bench_query.cu, after
 * RISC Zero's get_at and FRI openings), checked against the host's copy.
 *   query_prog KERNELS.PTX MODE [ROUNDS [COLS]]
 * MODE:
 *   plain     every round writes fresh random data (cuMemcpyHtoD), then
 *             queries it
 *   write     as plain, and a memset of one column or a copy between two
 *             columns between queries (what a read must see at once)
 *   free      as plain, and after the first rounds a fold layer is freed
 *             and allocated again (another size, maybe elsewhere)
 *   prover    as plain, but each query reads as the bundled prover's query
 *             stage does (tests/apps/prover/prover.cu): the columns in one
 *             buffer, every word of each Merkle sibling digest in one tree
 *             buffer, then per FRI layer the pair j, j + half with
 *             j = pos & (half - 1) and that layer's path: 522 reads a query
 *   cyclic    stwo's decommitment (crates/prover/src/core/vcs/prover.rs reads
 *             each queried position of each column through Column::at, which
 *             copies the whole column to the host: column.rs): CYCLIC_COLS
 *             columns of 128 KiB written once, then ROUNDS passes over all
 *             of them, each read whole with one cuMemcpyDtoH and one value of
 *             it checked, one column written anew after the middle pass;
 *             with GPUACCEL_COALESCE_BUDGET=1M 16 columns are twice what a
 *             cache may hold, and 192 are twice its slots
 * Prints bad=N (reads that differ from the host's copy) and gathers=K (the
 * library's gather launches the fake driver saw). */
#define _GNU_SOURCE
#include "linked.h"
#include <dlfcn.h>
#include <string.h>

enum { LOG_N = 12, N = 1 << LOG_N, COLS = 6, FOLDS = LOG_N / 2, QUERIES = 24 };

typedef struct buf {
    CUdeviceptr d;
    size_t words;
    uint32_t *host;
} buf_t;

static uint32_t rng = 12345;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}

static void make(buf_t *b, size_t words)
{
    b->words = words;
    b->host = calloc(words, 4);
    CK(cuMemAlloc(&b->d, words * 4));
}

static void refresh(buf_t *b)
{
    for (size_t i = 0; i < b->words; i++)
        b->host[i] = next();
    CK(cuMemcpyHtoD(b->d, b->host, b->words * 4));
}

static unsigned bad;
static void read_check(const buf_t *b, size_t i)
{
    uint32_t v;
    CK(cuMemcpyDtoH(&v, b->d + i * 4, 4));
    bad += v != b->host[i];
}

/* The result line: wrong reads, and the gathers the fake driver saw. */
static int report(void)
{
    unsigned (*gathers)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_gathers");
    printf("bad=%u gathers=%u\n", bad, gathers ? gathers() : 0);
    return 0;
}

/* The prover's Merkle path: each level's sibling digest, 8 words, in a tree
 * buffer holding every level (leaves first). */
static void read_path(const buf_t *tree, unsigned log_leaves, size_t idx)
{
    size_t off = 0, count = (size_t)1 << log_leaves;
    for (unsigned l = 0; l < log_leaves; l++) {
        for (unsigned e = 0; e < 8; e++)
            read_check(tree, (off + (idx ^ 1)) * 8 + e);
        off += count, count >>= 1, idx >>= 1;
    }
}

/* The bundled prover's query stage over buffers of this program's size. */
enum { PV_LAYERS = 6 };
static void prover_rounds(int rounds)
{
    buf_t lde, main_tree, codes[PV_LAYERS], trees[PV_LAYERS];
    make(&lde, (size_t)COLS * N);
    make(&main_tree, (size_t)(2 * N - 1) * 8);
    for (unsigned i = 0; i < PV_LAYERS; i++) {
        make(&codes[i], N >> i);
        make(&trees[i], (size_t)(2 * (N >> (i + 1)) - 1) * 8);
    }
    for (int r = 0; r < rounds; r++) {
        refresh(&lde), refresh(&main_tree);
        for (unsigned i = 0; i < PV_LAYERS; i++)
            refresh(&codes[i]), refresh(&trees[i]);
        for (int q = 0; q < QUERIES; q++) {
            size_t pos = next() & (N - 1), idx = pos;
            for (size_t c = 0; c < COLS; c++)
                read_check(&lde, c * N + pos);
            read_path(&main_tree, LOG_N, pos);
            for (unsigned i = 0; i < PV_LAYERS; i++) {
                size_t half = (N >> i) / 2, j = idx & (half - 1);
                read_check(&codes[i], j);
                read_check(&codes[i], j + half);
                read_path(&trees[i], LOG_N - i - 1, j);
                idx = j;
            }
        }
    }
}

enum { CYCLIC_WORDS = 32768 };
static void cyclic_rounds(int rounds, int ncols)
{
    buf_t *cols = calloc((size_t)ncols, sizeof *cols);
    uint32_t *whole = malloc(CYCLIC_WORDS * 4);
    for (int c = 0; c < ncols; c++) {
        make(&cols[c], CYCLIC_WORDS);
        refresh(&cols[c]);
    }
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < ncols; c++) {
            size_t i = next() % CYCLIC_WORDS;
            CK(cuMemcpyDtoH(whole, cols[c].d, CYCLIC_WORDS * 4));
            bad += whole[i] != cols[c].host[i];
        }
        if (r == rounds / 2) /* a column written between passes: read anew after */
            refresh(&cols[ncols / 2]);
    }
    free(whole);
    free(cols);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    linked_setup(argc, argv, &dev, &ctx);
    const char *mode = argc > 2 ? argv[2] : "plain";
    int rounds = argc > 3 ? atoi(argv[3]) : 4;
    if (!strcmp(mode, "prover")) {
        prover_rounds(rounds);
        return report();
    }
    if (!strcmp(mode, "cyclic")) {
        cyclic_rounds(rounds, argc > 4 ? atoi(argv[4]) : 16);
        return report();
    }
    buf_t cols[COLS], tree[LOG_N], fri[FOLDS];
    for (int c = 0; c < COLS; c++)
        make(&cols[c], N);
    for (int l = 0; l < LOG_N; l++)
        make(&tree[l], (size_t)(N >> l) * 8);
    for (int m = 0; m < FOLDS; m++)
        make(&fri[m], N >> (m + 1));
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < COLS; c++)
            refresh(&cols[c]);
        for (int l = 0; l < LOG_N; l++)
            refresh(&tree[l]);
        if (!strcmp(mode, "free") && r == 2) { /* a layer goes, another comes */
            CK(cuMemFree(fri[FOLDS - 1].d));
            free(fri[FOLDS - 1].host);
            make(&fri[FOLDS - 1], 2);
        }
        for (int m = 0; m < FOLDS; m++)
            refresh(&fri[m]);
        for (int q = 0; q < QUERIES; q++) {
            size_t idx = next() & (N - 1);
            for (int c = 0; c < COLS; c++)
                read_check(&cols[c], idx);
            for (int l = 0; l < LOG_N; l++)
                read_check(&tree[l], ((idx >> l) ^ 1) * 8);
            for (int m = 0; m < FOLDS; m++) {
                size_t pair = (idx >> (m + 1)) & ~(size_t)1 & (fri[m].words - 1);
                read_check(&fri[m], pair);
                read_check(&fri[m], pair | 1);
            }
            if (!strcmp(mode, "write") && q % 3 == 1) { /* changed between queries */
                int c = q % COLS;
                uint32_t v = next();
                CK(cuMemsetD32(cols[c].d, v, N));
                for (size_t i = 0; i < N; i++)
                    cols[c].host[i] = v;
            } else if (!strcmp(mode, "write") && q % 3 == 2) {
                int a = q % COLS, b = (q + 1) % COLS;
                CK(cuMemcpyDtoD(cols[a].d, cols[b].d, N * 4));
                memcpy(cols[a].host, cols[b].host, N * 4);
            }
        }
    }
    return report();
}
