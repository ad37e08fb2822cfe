/* replay.c - runs a fuzz harness over every file of its corpus, without
 * libFuzzer, so make check re-tests every input found so far (and any new
 * crash that was added to the corpus). usage: fuzz_X FILE|DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fprintf(stderr, "cannot read %s\n", path), 1;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            for (struct dirent *e; d && (e = readdir(d));) {
                if (e->d_name[0] == '.')
                    continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                bad += run_file(p), files++;
            }
            if (d)
                closedir(d);
        } else {
            bad += run_file(argv[i]), files++;
        }
    }
    printf("%s: %d inputs replayed\n", argv[0], files);
    return bad || files == 0;
}
