/* elfsym.h - find a symbol in an already-loaded library without calling dlsym.
 *
 * Why: the library exports dlsym and dlvsym itself, so any dlsym/dlvsym call it
 * makes would come back to it. The real ones are found once by reading the
 * dynamic symbol table of libc (or libdl on glibc < 2.34) in memory. */
#ifndef GA_ELFSYM_H
#define GA_ELFSYM_H

/* Address of the default (non-hidden) definition of `name` in the first loaded
 * object whose file name contains `object` ("libc.so.6"), or NULL. */
void *ga_elf_find(const char *object, const char *name);

#endif
