/* replacements.cu - the one translation unit of the fatbin the library
 * embeds: every shipped replacement kernel (kernels/table.txt names them).
 * Owns: nothing of its own; each included file owns its kernels. */
#include "prover_kernels.cu" /* the bundled prover's */
#include "stwo_kernels.cu"   /* NethermindEth/stwo-gpu's */
#include "risc0_kernels.cu"  /* RISC Zero's */
