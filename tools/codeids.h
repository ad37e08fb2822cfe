/* codeids.h - the code identities of a file's kernels (src/tracking/codeid.h),
 * as `gpuaccel kernels ids` prints them and the build embeds them in the
 * shipped table (tools/kernel-ids). */
#ifndef GA_TOOLS_CODEIDS_H
#define GA_TOOLS_CODEIDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" { /* kernels/verify_public.cu walks a program's fatbins with it */
#endif

/* Print "<mangled name> code=<16 hex digits>" for every kernel of the file at
 * path (or only for the names given), one line each, with '#' lines saying
 * what was read. The file may be a host program or shared library (the
 * fatbins of its .nv_fatbin section, each an image as cudart hands it to the
 * driver), a fatbin, a cubin or PTX text. A name held by several of its
 * images gets a line for each. Where every entry of an image is compressed
 * its kernels cannot be listed, only identified by name (whole-image
 * identities, marked by the top bit). Returns 0 when every name asked for
 * (without names: some kernel) was identified, 1 when not, 2 when the file
 * cannot be read as any of these (a message on stderr). */
int codeids_print(FILE *out, const char *path, char *const *names, int nnames);

/* The fatbins of the .nv_fatbin section of a host ELF64 file (its bytes p, n),
 * in order: fn(arg, the fatbin, its length, its offset in the section) for
 * each. Returns how many, or -1 when p is no host ELF64 file with such a
 * section. */
int codeids_each_fatbin(const uint8_t *p, size_t n,
                        void (*fn)(void *arg, const uint8_t *fatbin, size_t len, size_t pos),
                        void *arg);

#ifdef __cplusplus
}
#endif

#endif
