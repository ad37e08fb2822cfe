/* window.c - GPUACCEL_PROFILE_WINDOW: the window file (window.h) mapped
 * read-only at init, and what the reports say of it. While it is mapped the
 * recorder counts its accumulations only inside a window (internal.h's
 * in_window: the pointer published here, then the file's crossing count);
 * with the variable unset, or a file that cannot be used, the pointer stays
 * NULL and everything counts, as without a window.
 *
 * Owns: the mapping and the pointer to it (ga_prof_window).
 * Must never: write to the file (gpuaccel owns it; the mapping is read-only);
 * fail the program over a bad file (one warning, then the whole process);
 * unmap a window a reader might still use, except when profiling starts over
 * (the unit tests). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* Set at init (before profiling starts), read by every recorder call: an
 * atomic so that a thread already recording sees the pointer whole. */
_Atomic(const ga_window_t *) ga_prof_window;

/* A usable window file at `path`, mapped; NULL after one warning naming the
 * variable and what was expected. */
static const ga_window_t *map_window(const char *path)
{
    struct stat st;
    const char *why = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (st.st_size < (off_t)sizeof(ga_window_t))
        why = "the file is smaller than a window file";
    void *m = why ? MAP_FAILED : mmap(NULL, sizeof(ga_window_t), PROT_READ, MAP_SHARED, fd, 0);
    if (!why && m == MAP_FAILED)
        why = strerror(errno);
    if (fd >= 0)
        close(fd);
    const ga_window_t *w = m == MAP_FAILED ? NULL : m;
    if (w && (w->magic != GA_WINDOW_MAGIC || w->version != GA_WINDOW_VERSION)) {
        why = "not a window file of this version (gpuaccel profile --phase makes one)";
        munmap(m, sizeof(ga_window_t));
        w = NULL;
    }
    if (!w)
        ga_warn("GPUACCEL_PROFILE_WINDOW='%s': %s; expected a %zu-byte window file that gpuaccel "
                "profile --phase writes: profiling the whole process", path, why,
                sizeof(ga_window_t));
    return w;
}

void ga_prof_window_open(const char *path)
{
    const ga_window_t *w = path && *path ? map_window(path) : NULL;
    const ga_window_t *old = atomic_exchange(&ga_prof_window, w);
    if (old) /* starting over (tests): a real process opens it once */
        munmap((void *)old, sizeof *old);
}

bool ga_prof_window_used(window_state_t *out)
{
    const ga_window_t *w = atomic_load(&ga_prof_window);
    if (!w)
        return false;
    uint32_t c = atomic_load_explicit(&w->crossings, memory_order_acquire);
    out->windows = c / 2;
    out->open = c & 1;
    out->inside_ns = atomic_load_explicit(&w->inside_ns, memory_order_relaxed);
    /* a window still open (a process that ends inside it): its time so far */
    uint64_t opened = atomic_load_explicit(&w->opened_ns, memory_order_relaxed), now = ga_now_ns();
    if (out->open && opened && now > opened)
        out->inside_ns += now - opened;
    /* the patterns: gpuaccel wrote them before the program started; bounded
     * here whatever the file holds */
    memcpy(out->start, w->start, sizeof out->start);
    memcpy(out->end, w->end, sizeof out->end);
    out->start[sizeof out->start - 1] = out->end[sizeof out->end - 1] = '\0';
    return true;
}
