/* fuzz_config.c - libFuzzer harness for the GPUACCEL_* parsers: the input is
 * an environment, one NAME=VALUE per line; ga_config_load must take anything
 * without crashing and leave every field either parsed or at its default. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

static char *env_text;

static const char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (char *line = env_text; line && *line;) {
        char *end = strchr(line, '\n');
        if (!strncmp(line, name, n) && line[n] == '=') {
            /* the value runs to the end of the line: cut it there for the caller */
            if (end)
                *end = '\0';
            return line + n + 1;
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

static void count_problem(void *ctx, const char *var, const char *text)
{
    (void)ctx;
    if (!var || !text || !*text)
        abort(); /* every problem names its variable and says something */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    env_text = malloc(size + 1);
    if (!env_text)
        return 0;
    memcpy(env_text, data, size);
    env_text[size] = '\0';
    ga_config_t cfg;
    ga_config_src_t src = {.get = fake_getenv, .problem = count_problem};
    ga_config_load(&cfg, &src);
    free(cfg.file_text);
    if (cfg.pool_limit.bytes == 0 && cfg.pool_limit.percent > 100)
        abort(); /* a limit is bytes (0: keep nothing) or a percentage in 1..100 */
    if (cfg.pool_limit.bytes && cfg.pool_limit.percent)
        abort(); /* never both */
    if (cfg.log_level < 0 || cfg.log_level > 3)
        abort();
    free(env_text);
    return 0;
}
