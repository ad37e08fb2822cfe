/* kernel_ids.c - the build's reader of code identities: the shipped table
 * names the bundled prover's kernels by the identities this build compiled
 * them to (tools/embed-kernels.sh adds them to kernels/table.txt's rows). The
 * same reading as `gpuaccel kernels ids`, with the library's own
 * src/tracking/codeid.c, so the identities are the ones the library computes
 * when the prover loads its code. usage: kernel-ids FILE [NAME...] */
#include <stdio.h>

#include "codeids.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kernel-ids FILE [NAME...]\n");
        return 2;
    }
    return codeids_print(stdout, argv[1], argv + 2, argc - 2);
}
