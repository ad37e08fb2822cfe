#!/bin/sh
# build.sh - build the corpus drivers (tests/corpus/<project>/) against the
# projects' own sources, carried by tools/carry-corpus.sh into .carry/corpus
# (or $GA_CORPUS). Writes DEST/sppark, DEST/risc0, DEST/stwo and DEST/icicle; a
# project that is not carried is left out with a note. ICICLE v2's MSM (G1 and
# G2), NTT and vector operations are compiled the way its CMake builds
# libingo_curve_bn254 and libingo_field_bn254 (-DCURVE=bn254 -DG2,
# --expt-relaxed-constexpr, --split-compile 0): about 15 CPU-minutes, most of it
# the G2 MSM and the driver. Objects go to DEST/.obj (removed when all is
# built). Compiles in parallel (CORPUS_JOBS, default the number of CPUs).
#
# usage: tests/corpus/build.sh DEST
#   NVCC (default nvcc, else /usr/local/cuda/bin/nvcc), CORPUS_ARCH (default -arch=sm_90),
#   CORPUS_PROGRAMS (default "sppark risc0 stwo icicle": those to build, when carried)
set -eu
dest=${1:?usage: tests/corpus/build.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
C=${GA_CORPUS:-$(cd "$here/../.." && pwd)/.carry/corpus}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
command -v "$NVCC" >/dev/null 2>&1 || { echo "build.sh: no nvcc" >&2; exit 1; }
F="-O2 ${CORPUS_ARCH:--arch=sm_90} -std=c++17"
jobs=${CORPUS_JOBS:-$(nproc 2>/dev/null || echo 4)}
[ -d "$C" ] || { echo "build.sh: no carried corpus at $C (tools/carry-corpus.sh)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
obj=$dest/.obj
rm -rf "$obj"
mkdir -p "$obj"

# Each compile is a line of the job list: OUTPUT SOURCE FLAGS...
list=$obj/jobs
: >"$list"
job() { echo "$*" >>"$list"; }
built=""
programs=" ${CORPUS_PROGRAMS:-sppark risc0 stwo icicle} "
# carried PROJECT: asked for and carried (else a note).
carried() {
    case $programs in *" $1 "*) ;; *) return 1 ;; esac
    [ -f "$C/$1/COMMIT" ] && return 0
    echo "build.sh: $1 not carried, left out" >&2
    return 1
}

if carried sppark; then
    S=$C/sppark
    o=$obj/sppark
    mkdir -p "$o"
    d="-DFEATURE_GOLDILOCKS -DGL64_NO_REDUCTION_KLUDGE -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE"
    job "$o/sppark_ntt.o $here/sppark/sppark_ntt.cu $d -I$S -Xcompiler -Wno-unused-function"
    job "$o/all_gpus.o $S/util/all_gpus.cpp -I$S"
    built="$built sppark"
fi

if carried risc0; then
    R=$C/risc0
    K=$R/risc0/sys/kernels/zkp/cuda
    o=$obj/risc0
    mkdir -p "$o"
    d="-DFEATURE_BABY_BEAR -I$R/risc0/sys/cxx -I$R/vendor/sppark -diag-suppress=177 -diag-suppress=2922"
    for f in combos eltwise ffi fri_prove kernels sha supra/ntt supra/poseidon2; do
        job "$o/$(echo "$f" | tr / _).o $K/$f.cu $d"
    done
    job "$o/all_gpus.o $R/vendor/sppark/util/all_gpus.cpp -I$R/vendor/sppark"
    job "$o/risc0_zkp.o $here/risc0/risc0_zkp.cu $d -I$R/risc0/sys/kernels/zkp"
    job "$o/risc0_divide.o $here/risc0/risc0_divide.cu $d"
    job "$o/risc0_ref.o $here/risc0/risc0_ref.cpp -I$R/risc0/sys/kernels/zkp"
    built="$built risc0"
fi

if carried stwo; then
    W=$C/stwo/cuda
    o=$obj/stwo
    mkdir -p "$o"
    for f in utils fields bit_reverse batch_inverse poly/twiddles poly/ifft poly/rfft poly/utils \
        quotients fri/fold_line fri/fold_circle_into_line fri/utils blake2s; do
        job "$o/$(echo "$f" | tr / _).o $W/src/$f.cu -rdc=true -I$W/include -I$W"
    done
    # eval_at_point_first_pass declares its two shared arrays as two `extern
    # __shared__` names, which alias: a warp's writes of the level overwrite
    # coefficients another warp has yet to read, so the out-of-domain samples
    # (and every digest after them) change from run to run. The launch already
    # reserves room for both (512 * 4 + 512 * 8 bytes); the one-line mend puts
    # the level after the coefficients. Native and library runs use this build.
    sed '0,/extern __shared__ qm31 s_level\[\];/s//qm31 *s_level = (qm31 *) \&s_coeffs[2 * blockDim.x];/' \
        "$W/src/poly/eval_at_point.cu" >"$o/eval_at_point.cu"
    cmp -s "$W/src/poly/eval_at_point.cu" "$o/eval_at_point.cu" &&
        { echo "build.sh: stwo's eval_at_point.cu no longer has the aliased s_level" >&2; exit 1; }
    job "$o/poly_eval_at_point.o $o/eval_at_point.cu -rdc=true -I$W/include -I$W"
    job "$o/stwo_prover.o $here/stwo/stwo_prover.cu"
    built="$built stwo"
fi

if carried icicle; then
    I=$C/icicle/icicle
    o=$obj/icicle
    mkdir -p "$o"
    d="-DCURVE=bn254 -DFIELD=bn254 -DCURVE_ID=1 -DFIELD_ID=1 -DG2 --expt-relaxed-constexpr \
--split-compile 0 -I$I/include -Xcompiler -Wno-deprecated-declarations"
    # The slowest first, so the parallel jobs end together.
    for f in msm/extern_g2 msm/extern ntt/kernel_ntt ntt/extern vec_ops/extern; do
        job "$o/$(echo "$f" | tr / _).o $I/src/$f.cu $d"
    done
    job "$o/icicle_groth16.o $here/icicle/icicle_groth16.cu $d"
    built="$built icicle"
fi

[ -n "$built" ] || { echo "build.sh: nothing carried in $C" >&2; exit 1; }

# shellcheck disable=SC2016
if ! NVCC=$NVCC F=$F xargs -P "$jobs" -L 1 sh -c \
    'out=$1; src=$2; shift 2; $NVCC $F "$@" -c "$src" -o "$out" >"$out.log" 2>&1 ||
        { echo "build.sh: compiling $src failed:" >&2; tail -20 "$out.log" >&2; exit 255; }' sh \
    <"$list"; then
    exit 1
fi

# $F is a list of flags.
# shellcheck disable=SC2086
for p in $built; do
    case $p in
    sppark) $NVCC $F -o "$dest/sppark" "$obj"/sppark/*.o ;;
    risc0) $NVCC $F -o "$dest/risc0" "$obj"/risc0/*.o -lcuda ;;
    stwo) $NVCC $F -rdc=true -o "$dest/stwo" "$obj"/stwo/*.o ;;
    icicle) $NVCC $F -o "$dest/icicle" "$obj"/icicle/*.o ;;
    esac
    echo "build.sh: $dest/$p ($(cut -c1-12 "$C/$p/COMMIT"))"
done
rm -rf "$obj"
