#!/bin/sh
# build-samples.sh - build the cuda-samples that tools/carry-samples.sh carried
# into DEST, in parallel, with nvcc alone (no CMake): DEST/bin/NAME (stripped),
# DEST/logs/NAME.log, and DEST/BUILT, one line a sample of the manifest
# (name TAB built, or name TAB failed TAB the first error line). Runs here and
# on the GPU machine; needs no GPU.
#
# usage: tools/build-samples.sh [--prep] DEST [JOBS [NAME...]]
#   JOBS     parallel builds (default: the number of cores)
#   NAME...  build only these samples (default: every one in DEST/SAMPLES)
#   --prep   build nothing: only remake the links to the toolkit's headers that
#            some samples hand to NVRTC (they point into this machine's toolkit)
#   NVCC     the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)
#   SAMPLES_ARCH  the GPU architecture (default sm_90)
set -u
me=build-samples

# One sample, in a worker: --one DEST NAME.
if [ "${1:-}" = --one ]; then
    dest=$2 name=$3
    log="$dest/logs/$name.log"
    tab=$(printf '\t')
    line=$(awk -F'\t' -v n="$name" '$1 == n' "$dest/SAMPLES" | head -1)
    [ -n "$line" ] || { echo "$name${tab}failed${tab}not in the manifest" >"$dest/logs/$name.status"; exit 1; }
    IFS=$tab read -r _ dir srcs libs flags prep _ <<EOF
$line
EOF
    [ "$srcs" != - ] || srcs=""
    [ "$libs" != - ] || libs=""
    [ "$flags" != - ] || flags=""
    [ "$prep" != - ] || prep=""
    flags=$(echo "$flags" | sed "s|@CUDA@|$CUDA_ROOT|g")
    common="-O2 -arch=$SAMPLES_ARCH -std=c++17 --extended-lambda -rdc=true -Wno-deprecated-gpu-targets"
    inc="-I$dest/Common -I."
    [ -d "$dest/$dir/inc" ] && inc="$inc -Iinc"
    # The toolkit's libraries are found at run time without LD_LIBRARY_PATH, also
    # on a machine whose toolkit keeps libNVVM apart (nvvm/lib64).
    rpath="-Xlinker -rpath=$CUDA_ROOT/lib64:$CUDA_ROOT/nvvm/lib64"
    [ -d "$CUDA_ROOT/nvvm/include" ] && inc="$inc -I$CUDA_ROOT/nvvm/include"
    [ -d "$CUDA_ROOT/nvvm/lib64" ] && rpath="$rpath -L$CUDA_ROOT/nvvm/lib64"
    rm -f "$dest/bin/$name"
    (
        cd "$dest/$dir" || exit 1
        for p in $prep; do
            case $p in
                fatbin:* | ptx:*)
                    kind=${p%%:*} rest=${p#*:}
                    out=${rest%%:*} ksrc=${rest#*:}
                    if [ "$kind" = fatbin ]; then karch="-arch=$SAMPLES_ARCH"; else karch=""; fi
                    echo "+ $NVCC -$kind $karch $inc -o $out $ksrc"
                    # shellcheck disable=SC2086
                    "$NVCC" -"$kind" $karch $inc -Wno-deprecated-gpu-targets -o "$out" "$ksrc" || exit 1
                    ;;
                cuda-headers) ;; # made by the parent, before the workers
                *) echo "unknown prep step $p"; exit 1 ;;
            esac
        done
        echo "+ $NVCC $common $inc $flags -o $dest/bin/$name $srcs $libs $rpath"
        # shellcheck disable=SC2086
        "$NVCC" $common $inc $flags -o "$dest/bin/$name" $srcs $libs $rpath || exit 1
        ${STRIP:-strip} "$dest/bin/$name" 2>/dev/null || :
    ) >"$log" 2>&1
    if [ -x "$dest/bin/$name" ]; then
        echo "$name${tab}built" >"$dest/logs/$name.status"
        echo "$me: $name built"
    else
        err=$(grep -m1 -E 'error[: ]|undefined reference|cannot find|No such file' "$log" || tail -1 "$log")
        echo "$name${tab}failed${tab}$err" >"$dest/logs/$name.status"
        echo "$me: $name FAILED: $err"
    fi
    exit 0
fi

prep_only=0
[ "${1:-}" = --prep ] && { prep_only=1; shift; }
dest=${1:?usage: tools/build-samples.sh [--prep] DEST [JOBS [NAME...]]}
[ -f "$dest/SAMPLES" ] || { echo "$me: no manifest $dest/SAMPLES (tools/carry-samples.sh makes it)" >&2; exit 2; }
dest=$(cd "$dest" && pwd)
jobs=${2:-$(nproc 2>/dev/null || echo 2)}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
NVCC=$(command -v "${NVCC:-nvcc}" || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "$me: no nvcc (set NVCC)" >&2; exit 2; }
CUDA_ROOT=$(cd "$(dirname "$NVCC")/.." && pwd)
SAMPLES_ARCH=${SAMPLES_ARCH:-sm_90}
export NVCC CUDA_ROOT SAMPLES_ARCH

# The headers the NVRTC samples find beside themselves: links into this
# toolkit (CUDA 13 keeps cuda/ and nv/ under include/cccl).
awk -F'\t' '$6 ~ /cuda-headers/ {print $2}' "$dest/SAMPLES" | while read -r dir; do
    inc=$CUDA_ROOT/include
    for h in cooperative_groups.h cooperative_groups cuda nv; do
        t=$inc/$h
        [ -e "$t" ] || t=$inc/cccl/$h
        [ -e "$t" ] && ln -sfn "$t" "$dest/$dir/$h"
    done
done
[ $prep_only = 1 ] && exit 0

mkdir -p "$dest/bin" "$dest/logs"
if [ $# -gt 0 ]; then
    names=$*
else
    names=$(cut -f1 "$dest/SAMPLES")
fi
count=$(echo "$names" | wc -w)
echo "$me: building $count samples with $jobs jobs ($NVCC, $SAMPLES_ARCH) into $dest/bin"
for n in $names; do rm -f "$dest/logs/$n.status"; done
# shellcheck disable=SC2086
printf '%s\n' $names | xargs -P "$jobs" -n 1 sh "$0" --one "$dest"

# BUILT: every sample of the manifest, in its order, from the latest status.
: >"$dest/BUILT.new"
# shellcheck disable=SC2013
for n in $(cut -f1 "$dest/SAMPLES"); do # names hold no blanks
    if [ -f "$dest/logs/$n.status" ]; then
        cat "$dest/logs/$n.status" >>"$dest/BUILT.new"
    elif [ -x "$dest/bin/$n" ]; then
        printf '%s\tbuilt\n' "$n" >>"$dest/BUILT.new"
    else
        printf '%s\tfailed\tnot built\n' "$n" >>"$dest/BUILT.new"
    fi
done
mv "$dest/BUILT.new" "$dest/BUILT"
built=$(awk -F'\t' '$2 == "built"' "$dest/BUILT" | wc -l)
total=$(wc -l <"$dest/BUILT")
echo "$me: $built of $total built ($(du -sh "$dest/bin" | cut -f1) in $dest/bin)"
for n in $names; do
    awk -F'\t' '$2 != "built" {print "  failed: " $1 ": " $3}' "$dest/logs/$n.status" 2>/dev/null
done
[ "$built" -gt 0 ]
