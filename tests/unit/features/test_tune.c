/* test_tune.c - the tune table: good lines parse, every malformed one is
 * refused (threads entries must keep the thread count of a 1-D launch), and
 * an entry written by ga_tune_format parses back to itself. */
#include <string.h>

#include "check.h"
#include "features/tune/tune.h"

static ga_tune_entry_t got[16];
static char names[16][64];
static int n_got;

static void add(void *arg, const ga_tune_entry_t *e)
{
    (void)arg;
    if (n_got < 16) {
        got[n_got] = *e;
        strncpy(names[n_got], e->name, sizeof names[0] - 1);
        got[n_got].name = names[n_got];
        n_got++;
    }
}

static int parse(const char *text)
{
    n_got = 0;
    return ga_tune_parse(text, strlen(text), "test", add, NULL);
}

int main(void)
{
    CHECK(parse("# a comment\n\n_Z3addPjjj sm_90 32 128 0 -> 16 256 threads # 2x\n") == 1);
    CHECK(n_got == 1 && !strcmp(got[0].name, "_Z3addPjjj") && got[0].cc == 90 &&
          got[0].grid[0] == 32 && got[0].block[0] == 128 && got[0].new_grid[0] == 16 &&
          got[0].new_block[0] == 256 && !got[0].stride && got[0].grid[1] == 1);
    CHECK(parse("k * 100,2,1 64,2,1 512 -> 264,1,1 256,1,1 stride\n") == 1);
    CHECK(got[0].cc == 0 && got[0].grid[1] == 2 && got[0].shmem == 512 && got[0].stride);
    CHECK(parse("k sm_90 33 128 0 -> 17 256 threads\n") == 1); /* ceil(33*128/256) = 17 */

    /* malformed: each refused, the good line between them kept */
    const char *bad[] = {
        "k sm_90 32 128 0 -> 15 256 threads",   /* loses threads */
        "k sm_90 32,2,1 128 0 -> 16,2,1 256 threads", /* threads must be 1-D */
        "k sm_90 32 128 0 -> 16 2048 stride",   /* over 1024 threads */
        "k sm_90 32 128 0 16 256 threads",      /* no arrow */
        "k gpu 32 128 0 -> 16 256 threads",     /* device */
        "k sm_90 0 128 0 -> 16 256 stride",     /* zero dimension */
        "k sm_90 32 128 x -> 16 256 stride",    /* shmem */
        "k sm_90 32 128 0 -> 16 256 sideways",  /* kind */
        "k sm_90 32 128 0 -> 16 256 stride extra",
        "k sm_90 1,2 128 0 -> 16 256 stride",   /* two components */
        "k sm_90 99999999999 128 0 -> 16 256 stride",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "%s\nok * 4 64 0 -> 1 256 threads\n", bad[i]);
        CHECK(parse(text) == 1 && !strcmp(got[0].name, "ok"));
    }

    /* format -> parse round trip */
    ga_tune_entry_t e = {"_Z4fillPjjj", 80, {7, 1, 1}, {96, 1, 1}, 0, {3, 1, 1}, {224, 1, 1}, false};
    char line[256];
    ga_tune_format(&e, line, sizeof line);
    CHECK(parse(line) == 1 && got[0].cc == 80 && got[0].new_grid[0] == 3 &&
          got[0].new_block[0] == 224 && !strcmp(got[0].name, "_Z4fillPjjj"));
    return check_done("test_tune");
}
