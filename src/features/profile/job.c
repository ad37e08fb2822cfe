/* job.c - the process's place in a multi-process job, read from the variables
 * launchers set: its rank (which names its profile PATH.rank<R>.<pid>.*), and
 * the world size and local rank of the same launcher, which its JSON records.
 *
 * The launchers, first match wins (a worker started by torchrun inside a Slurm
 * allocation carries both RANK and SLURM_PROCID; RANK is its own):
 *   torchrun, torch.distributed  RANK, WORLD_SIZE, LOCAL_RANK
 *   Open MPI                     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
 *   MPICH, Intel MPI             PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
 *   Slurm (srun)                 SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
 *
 * Owns: the table of launchers' variables and the rank part of a file name.
 * Must never: run outside init or a fork child (getenv, snprintf); write to
 * stdout. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

typedef struct launcher {
    const char *rank, *size, *local;
} launcher_t;

static const launcher_t launchers[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

/* A decimal number from 0 to 2^31-1, nothing else (no sign, no blanks). */
static bool parse_index(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || (v = v * 10 + (*s - '0')) > 0x7fffffff)
            return false;
    }
    *out = v;
    return true;
}

void ga_prof_read_job(prof_job_t *j)
{
    memset(j, 0, sizeof *j);
    j->world_size = j->local_rank = -1;
    for (size_t i = 0; i < GA_ARRAY_LEN(launchers); i++) {
        const launcher_t *l = &launchers[i];
        const char *v = getenv(l->rank);
        if (!v)
            continue;
        if (!parse_index(v, &j->rank)) {
            ga_warn("profile: %s='%s' is not a rank (a number from 0): the profile's name "
                    "does not use it", l->rank, v);
            continue;
        }
        j->ranked = true;
        j->rank_variable = l->rank;
        if (!parse_index(getenv(l->size), &j->world_size) || j->world_size == 0)
            j->world_size = -1;
        if (!parse_index(getenv(l->local), &j->local_rank))
            j->local_rank = -1;
        return;
    }
}

/* PATH.rank<R>.<pid> for a ranked process, PATH.<pid> otherwise. */
void ga_prof_own_path(prof_t *p)
{
    size_t n = strlen(p->base);
    if (n > sizeof p->path - 48)
        n = sizeof p->path - 48;
    if (p->job.ranked)
        snprintf(p->path, sizeof p->path, "%.*s.rank%lld.%d", (int)n, p->base,
                 (long long)p->job.rank, (int)getpid());
    else
        snprintf(p->path, sizeof p->path, "%.*s.%d", (int)n, p->base, (int)getpid());
}
