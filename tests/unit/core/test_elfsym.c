/* test_elfsym.c - the bootstrap lookup finds glibc's own functions. (This
 * program links the library's objects, so its own dlsym is the library's:
 * dladdr, which nobody intercepts, says where a pointer lives.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/elfsym.h"
#include "core/real.h"

static int in_libc_as(void *p, const char *name)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so") &&
           info.dli_sname && !strcmp(info.dli_sname, name);
}

int main(void)
{
    CHECK(in_libc_as((void *)ga_real_dlsym_ptr(), "dlsym"));
    CHECK(in_libc_as((void *)ga_real_dlvsym_ptr(), "dlvsym"));
    CHECK(ga_elf_find("libc.so.6", "getpid") == (void *)getpid);
    CHECK(ga_elf_find("libc.so.6", "no_such_function_anywhere") == NULL);
    CHECK(ga_elf_find("libnot-loaded.so", "getpid") == NULL);
    CHECK(ga_real_dlsym(RTLD_DEFAULT, "getpid") == dlsym(RTLD_DEFAULT, "getpid"));
    CHECK(ga_libcuda_open() == NULL); /* no driver in this process */
    return check_done("test_elfsym");
}
