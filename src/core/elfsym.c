/* elfsym.c - symbol lookup through a loaded object's GNU hash table.
 *
 * Only what bootstrap needs: GNU hash (DT_GNU_HASH; every glibc since 2.5 has
 * it), default versions, no relocation processing. No locks, no allocation. */
#define _GNU_SOURCE
#include "core/elfsym.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const char *object, *name;
    void *found;
} query_t;

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

/* Dynamic-section pointers are relocated by ld.so on most targets; the vDSO and
 * a few targets leave them as offsets from the load base. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static void *lookup(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn, const char *name)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gh = NULL;
    const ElfW(Half) *versym = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: gh = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_VERSYM: versym = (const ElfW(Half) *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!symtab || !strtab || !gh)
        return NULL;
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
    if (nbuckets == 0)
        return NULL;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t idx = buckets[h % nbuckets];
    if (idx < symoffset)
        return NULL;
    for (;; idx++) {
        uint32_t h2 = chain[idx - symoffset];
        const ElfW(Sym) *sym = &symtab[idx];
        int hidden = versym && (versym[idx] & 0x8000);
        if ((h | 1) == (h2 | 1) && !hidden && sym->st_shndx != SHN_UNDEF &&
            ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
            !strcmp(strtab + sym->st_name, name))
            return (void *)(info->dlpi_addr + sym->st_value);
        if (h2 & 1)
            return NULL;
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    query_t *q = data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, q->object))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        q->found = lookup(info, dyn, q->name);
        return q->found != NULL;
    }
    return 0;
}

void *ga_elf_find(const char *object, const char *name)
{
    query_t q = {object, name, NULL};
    dl_iterate_phdr(visit, &q);
    return q.found;
}
