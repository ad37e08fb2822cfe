/* codeid.h - a kernel's code identity: a 64-bit hash of the code the driver
 * runs for a mangled kernel name, taken from the image a program loads.
 *
 * A name and a parameter layout do not identify code: `scale(unsigned *,
 * unsigned, unsigned)` exists in countless programs with other arithmetic.
 * What the library may replace is the exact code a replacement was verified
 * against, so replacements are keyed by this identity (features/kernels).
 *
 * Images are what cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary
 * and cuLibraryLoadData take: cudart's fatbin wrapper (magic 0x466243B1), a
 * fatbin (0xBA55ED50) of cubin (ELF) and PTX entries, a bare cubin, or
 * NUL-terminated PTX text. Per cubin the identity covers the kernel's code
 * (.text.<name>, with the functions its relocations call), its other sections
 * (.nv.info.<name>, .nv.constant0.<name>, .nv.shared.<name>, ...), their
 * relocations with each symbol named (not numbered: a kernel added to the
 * module leaves the others' identities alone), and the module's initialized
 * data a kernel reads without a relocation (.nv.constantN, .nv.global.init:
 * __constant__ tables such as a hash's round constants). Per PTX text it
 * covers the module's text without comments, with the bodies of the other
 * .entry kernels left out. Over a fatbin it combines every entry that holds
 * the kernel, each with its kind and architecture, and the whole payload of
 * every entry it cannot search (compressed, or of a kind it does not know):
 * stricter than needed, still exact.
 *
 * Owns: the image formats' parsing and the hash. Reads only within the sizes
 * the images' own headers state (and within `avail`); anything odd is
 * "cannot identify", never a crash. Calls nothing but libc: the gpuaccel
 * command and the build link it too. */
#ifndef GA_CODEID_H
#define GA_CODEID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The top bit of an identity marks a whole-image identity: every entry of the
 * image was compressed, so the kernel could not be found in it, and the
 * identity is that of the image's whole code (with the kernel's name). A
 * caller that lists none of these can skip the hashing they need. */
#define GA_CODEID_WHOLE_IMAGE (1ull << 63)

/* avail: for an image in this process that the driver accepted, where only its
 * headers tell its size. */
#define GA_CODEID_IN_PROCESS SIZE_MAX

typedef struct ga_codeid_want {
    const char *name; /* in: a mangled kernel name */
    uint64_t id;      /* out: its identity, when got */
    bool got;         /* out: identified */
} ga_codeid_want_t;

enum {
    GA_CODEID_WHOLE = 1, /* also give whole-image identities (they hash every compressed byte) */
};

/* The identities of want[0..n) in `image` (at most `avail` bytes of it are
 * read; GA_CODEID_IN_PROCESS: as the program passed it to the driver, which
 * accepted it: a fatbin wrapper is followed). Returns how many were
 * identified. Only wanted kernels are hashed: finding them walks section
 * headers and .entry lines. */
unsigned ga_codeid_find(const void *image, size_t avail, ga_codeid_want_t *want, unsigned n,
                        unsigned flags);

/* One kernel: true with *id set, false when it cannot be identified. */
bool ga_codeid_of(const void *image, size_t avail, const char *name, unsigned flags,
                  uint64_t *id);

/* Every kernel an image's searchable entries hold (cubin entry points, PTX
 * .entry lines), each name once: fn(arg, name) (fn may be NULL). Returns their number, -1 when
 * the image cannot be read; *compressed (if not NULL) gets the number of
 * entries that could not be searched. */
int ga_codeid_names(const void *image, size_t avail, void (*fn)(void *arg, const char *name),
                    void *arg, unsigned *compressed);

/* How many bytes a fatbin at `image` spans by its header (at most avail), 0
 * when it is no fatbin or does not fit: for walking a host binary's
 * .nv_fatbin section, which holds one fatbin after another. */
size_t ga_codeid_fatbin_span(const void *image, size_t avail);

#endif
