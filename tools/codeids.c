/* codeids.c - a file's kernels and their code identities (see codeids.h).
 * Owns: reading the file (mapped, read only) and finding its images; the
 * identities themselves are src/tracking/codeid.c's, the library's own code. */
#define _GNU_SOURCE
#include "codeids.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracking/codeid.h"

typedef struct run {
    FILE *out;
    char *const *names;
    int nnames;
    bool *got;     /* per name asked for */
    unsigned printed;
    const void *image;
    size_t size;
    const char *path;
    unsigned fatbins; /* of a host file's .nv_fatbin, so far */
} run_t;

static void print_one(void *arg, const char *name)
{
    run_t *r = arg;
    uint64_t id;
    if (ga_codeid_of(r->image, r->size, name, GA_CODEID_WHOLE, &id)) {
        fprintf(r->out, "%s code=%016" PRIx64 "\n", name, id);
        r->printed++;
    } else {
        fprintf(r->out, "# %s: cannot be identified\n", name);
    }
}

/* One image: its kernels, or the names asked for. */
static void image(run_t *r, const void *p, size_t n, const char *where)
{
    unsigned compressed = 0;
    r->image = p, r->size = n;
    if (!r->nnames) {
        int k = ga_codeid_names(p, n, print_one, r, &compressed);
        if (k < 0)
            fprintf(r->out, "# %s: cannot be read\n", where);
        else if (k == 0 && compressed)
            fprintf(r->out, "# %s: every entry is compressed: its kernels cannot be listed; "
                            "name them (gpuaccel kernels ids FILE NAME...)\n", where);
        return;
    }
    if (ga_codeid_names(p, n, NULL, NULL, NULL) < 0) {
        fprintf(r->out, "# %s: cannot be read\n", where);
        return;
    }
    for (int i = 0; i < r->nnames; i++) {
        uint64_t id;
        if (!ga_codeid_of(p, n, r->names[i], GA_CODEID_WHOLE, &id))
            continue;
        fprintf(r->out, "%s code=%016" PRIx64 "\n", r->names[i], id);
        r->got[i] = true;
        r->printed++;
    }
}

/* The .nv_fatbin section of a host ELF64 file, if it has one. */
static bool host_fatbins(const uint8_t *p, size_t n, const uint8_t **sec, size_t *len)
{
    if (n < 64 || memcmp(p, "\177ELF", 4) || p[4] != 2 || p[5] != 1)
        return false;
    uint64_t shoff;
    uint16_t shentsize, shnum, shstrndx;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shentsize, p + 0x3a, 2), memcpy(&shnum, p + 0x3c, 2), memcpy(&shstrndx, p + 0x3e, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > n || (uint64_t)shnum * shentsize > n - shoff)
        return false;
    uint64_t stroff, strsize;
    const uint8_t *sh = p + shoff + (size_t)shstrndx * shentsize;
    memcpy(&stroff, sh + 0x18, 8), memcpy(&strsize, sh + 0x20, 8);
    if (stroff > n || strsize > n - stroff)
        return false;
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *h = p + shoff + (size_t)i * shentsize;
        uint32_t name, type;
        uint64_t off, size;
        memcpy(&name, h, 4), memcpy(&type, h + 4, 4), memcpy(&off, h + 0x18, 8);
        memcpy(&size, h + 0x20, 8);
        static const char want[] = ".nv_fatbin";
        if (type == 8 /* NOBITS */ || name >= strsize || strsize - name < sizeof want ||
            memcmp(p + stroff + name, want, sizeof want) || off > n || size > n - off)
            continue;
        *sec = p + off, *len = (size_t)size;
        return true;
    }
    return false;
}

int codeids_each_fatbin(const uint8_t *p, size_t n,
                        void (*fn)(void *arg, const uint8_t *fatbin, size_t len, size_t pos),
                        void *arg)
{
    const uint8_t *sec;
    size_t len;
    if (!host_fatbins(p, n, &sec, &len))
        return -1;
    int count = 0;
    for (size_t pos = 0; pos + 16 <= len;) {
        size_t span = ga_codeid_fatbin_span(sec + pos, len - pos);
        if (!span) {
            pos += 8; /* padding between fatbins (they are 8-byte aligned) */
            continue;
        }
        fn(arg, sec + pos, span, pos);
        count++;
        pos += (span + 7) & ~(size_t)7;
    }
    return count;
}

/* One fatbin of a host file's .nv_fatbin (codeids_each_fatbin). */
static void host_image(void *arg, const uint8_t *fatbin, size_t len, size_t pos)
{
    run_t *r = arg;
    char where[128];
    snprintf(where, sizeof where, "fatbin %u (.nv_fatbin+0x%zx)", ++r->fatbins, pos);
    fprintf(r->out, "# %s: %s\n", r->path, where);
    image(r, fatbin, len, where);
}

int codeids_print(FILE *out, const char *path, char *const *names, int nnames)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        fprintf(stderr, "gpuaccel: %s: %s\n", path, fd < 0 ? strerror(errno) : "not a file with code");
        if (fd >= 0)
            close(fd);
        return 2;
    }
    size_t n = (size_t)st.st_size;
    const uint8_t *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "gpuaccel: %s: %s\n", path, strerror(errno));
        return 2;
    }
    run_t r = {.out = out, .names = names, .nnames = nnames, .path = path};
    r.got = calloc((size_t)nnames + 1, sizeof *r.got);
    int rc = 0, fatbins;
    if (!r.got) {
        rc = 2;
    } else if ((fatbins = codeids_each_fatbin(p, n, host_image, &r)) >= 0) {
        if (!fatbins)
            fprintf(out, "# %s: its .nv_fatbin holds no fatbin\n", path);
    } else if (n >= 4 && !memcmp(p, "\177ELF", 4) && n > 0x13 && p[0x12] != 190 /* EM_CUDA */) {
        fprintf(out, "# %s: a host binary without device code (no .nv_fatbin)\n", path);
    } else if (ga_codeid_names(p, n, NULL, NULL, NULL) < 0) {
        fprintf(stderr, "gpuaccel: %s: not a fatbin, cubin, PTX text or program with device code\n",
                path);
        rc = 2;
    } else {
        fprintf(out, "# %s\n", path);
        image(&r, p, n, path);
    }
    if (rc == 0) {
        for (int i = 0; i < nnames; i++)
            if (!r.got[i]) {
                fprintf(out, "# %s: not identified in %s\n", names[i], path);
                rc = 1;
            }
        if (!nnames && !r.printed)
            rc = 1;
    }
    free(r.got);
    munmap((void *)p, n);
    return rc;
}
