#!/bin/sh
# carry-corpus.sh - copy the few source files of the public GPU provers that the
# corpus drivers (tests/corpus) build against into .carry/corpus/<project>, with
# each project's licence and the commit it came from (COMMIT, ORIGIN). Their code
# is their authors' (Apache-2.0 / MIT): carried for a GPU run, never committed
# here (.carry is ignored). tests/corpus/build.sh builds from the copy.
#
#   sppark  github.com/supranational/sppark    ff/ ntt/ util/ LICENSE
#   risc0   github.com/risc0/risc0              risc0/sys/kernels/zkp/cuda, its nvtx3
#                                               headers, vendor/sppark (ff ntt util
#                                               polynomial), LICENSE-APACHE, LICENSE-MIT
#   stwo    github.com/NethermindEth/stwo-gpu   cuda/include cuda/src LICENSE
#   icicle  github.com/ingonyama-zk/icicle      at tag $ICICLE_REF (default v2.8.0: the
#                                               last line whose CUDA backend is open):
#                                               icicle/include, icicle/src/{msm,ntt,
#                                               vec_ops,curves,fields}, LICENSE
#
# usage: tools/carry-corpus.sh [GIT_DIR ...]
#   Each GIT_DIR (a bare repository or a clone) is recognised by its files, at HEAD
#   (ICICLE: at $ICICLE_REF when the repository has that tag, since its later
#   releases dropped the CUDA sources). With none, the repositories are looked for
#   by name under $GA_MIRROR (default /work/.mirror: owner+name/repo, as a fetched
#   snapshot lies). CORPUS_DEST overrides the destination (default .carry/corpus
#   of this tree).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${CORPUS_DEST:-$root/.carry/corpus}
mirror=${GA_MIRROR:-/work/.mirror}
icicle_ref=${ICICLE_REF:-v2.8.0}

g() { # GIT_DIR git-args...: a bare repository or a work tree
    d=$1
    shift
    if git --git-dir="$d" rev-parse --verify -q HEAD >/dev/null 2>&1; then
        git --git-dir="$d" "$@"
    else
        git -C "$d" "$@"
    fi
}
has() { # GIT_DIR PATH [REF]
    g "$1" cat-file -e "${3:-HEAD}:$2" 2>/dev/null
}

# The commit to copy from: ICICLE's v2 tag when there is one (its HEAD has no CUDA
# backend), else HEAD.
ref_of() {
    if g "$1" rev-parse --verify -q "$icicle_ref^{commit}" >/dev/null 2>&1 &&
        has "$1" icicle/src/msm/msm.cu "$icicle_ref"; then
        g "$1" rev-parse "$icicle_ref^{commit}"
    else
        g "$1" rev-parse HEAD
    fi
}

project_of() { # GIT_DIR REF
    if has "$1" risc0/sys/kernels/zkp/cuda/ffi.cu "$2"; then
        echo risc0
    elif has "$1" ntt/ntt.cuh "$2" && has "$1" util/all_gpus.cpp "$2"; then
        echo sppark
    elif has "$1" cuda/src/blake2s.cu "$2" && has "$1" cuda/include/poly/rfft.cuh "$2"; then
        echo stwo
    elif has "$1" icicle/src/msm/msm.cu "$2" && has "$1" icicle/include/api/bn254.h "$2"; then
        echo icicle
    fi
}

paths_of() {
    case $1 in
    sppark) echo "ff ntt util LICENSE" ;;
    risc0) echo "risc0/sys/kernels/zkp/cuda risc0/sys/cxx/vendor/nvtx3 vendor/sppark/ff \
vendor/sppark/ntt vendor/sppark/util vendor/sppark/polynomial vendor/sppark/LICENSE \
LICENSE-APACHE LICENSE-MIT" ;;
    stwo) echo "cuda/include cuda/src LICENSE" ;;
    icicle) echo "icicle/include icicle/src/msm icicle/src/ntt icicle/src/vec_ops icicle/src/curves \
icicle/src/fields LICENSE" ;;
    esac
}

origin_of() {
    case $1 in
    sppark) echo github.com/supranational/sppark ;;
    risc0) echo github.com/risc0/risc0 ;;
    stwo) echo github.com/NethermindEth/stwo-gpu ;;
    icicle) echo github.com/ingonyama-zk/icicle ;;
    esac
}

if [ $# = 0 ]; then
    for r in risc0+risc0 supranational+sppark NethermindEth+stwo-gpu ingonyama-zk+icicle; do
        for d in "$mirror/$r/repo" "$mirror/$r"; do
            if [ -d "$d" ]; then
                set -- "$@" "$d"
                break
            fi
        done
    done
    [ $# -gt 0 ] || { echo "carry-corpus: no repositories given and none under $mirror" >&2; exit 1; }
fi

mkdir -p "$dest"
status=0
for src in "$@"; do
    ref=$(ref_of "$src")
    p=$(project_of "$src" "$ref")
    if [ -z "$p" ]; then
        echo "carry-corpus: $src is none of sppark, risc0, stwo-gpu, icicle v2; skipped" >&2
        status=1
        continue
    fi
    out=$dest/$p
    rm -rf "$out"
    mkdir -p "$out"
    # A partial snapshot makes git archive complain about blobs outside the paths
    # asked for; what counts is that every path asked for arrived.
    # shellcheck disable=SC2046
    g "$src" archive --format=tar "$ref" $(paths_of "$p") 2>"$dest/.err" | tar -x -C "$out" || true
    missing=""
    for f in $(paths_of "$p"); do
        [ -e "$out/$f" ] || missing="$missing $f"
    done
    if [ -n "$missing" ]; then
        echo "carry-corpus: could not copy$missing of $p from $src" >&2
        cat "$dest/.err" >&2
        rm -rf "$out" "$dest/.err"
        status=1
        continue
    fi
    rm -f "$dest/.err"
    echo "$ref" >"$out/COMMIT"
    origin_of "$p" >"$out/ORIGIN"
    # The tag, when the commit has one (ICICLE's v2.8.0).
    tag=$(g "$src" describe --tags --exact-match "$ref" 2>/dev/null || true)
    [ -n "$tag" ] && echo "$tag" >"$out/TAG"
    echo "carry-corpus: $p $(cut -c1-12 "$out/COMMIT")${tag:+ ($tag)} ($(find "$out" -type f | wc -l) files) in $out"
done
exit $status
