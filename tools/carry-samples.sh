#!/bin/sh
# carry-samples.sh - copy NVIDIA's cuda-samples that build with the CUDA toolkit
# alone and run headless into DEST (default .carry/cuda-samples), with the
# manifest that tools/build-samples.sh and tests/gpu/samples.sh read. The GPU
# machine cannot reach the network. Their code is NVIDIA's (BSD-3-Clause):
# carried for a run, never committed here (.carry is ignored).
#
# usage: tools/carry-samples.sh CUDA_SAMPLES_GIT_DIR [DEST]
#   CUDA_SAMPLES_GIT_DIR: a clone or a bare git directory of
#   https://github.com/NVIDIA/cuda-samples (its HEAD is carried)
#
# The choice is read off each sample's CMakeLists.txt: a sample is left out when
# it needs a package beyond the toolkit (OpenGL, GLUT, Vulkan, EGL, MPI,
# FreeImage, NvSci, LLVM), is Windows-only, links cuFFT statically, has no
# program, or when a source or data file of it is absent from the git objects.
#
# DEST holds Common/, LICENSE, each chosen sample's folder (its doc/ and .vscode/
# left out), COMMIT (the commit carried), EXCLUDED (name TAB reason, one a line)
# and SAMPLES, one line a sample, seven fields separated by one TAB, "-" for
# an empty field:
#   name     the program's name (DEST/bin/NAME once built)
#   dir      the sample's folder, relative to DEST; it is run from there
#   sources  the program's sources, relative to dir (its add_executable)
#   libs     link libraries beyond cudart (e.g. -lcublas -lcuda)
#   flags    extra nvcc flags; @CUDA@ stands for the toolkit's root
#   prep     build steps in dir before compiling, space-separated:
#            fatbin:OUT:SRC or ptx:OUT:SRC (nvcc -fatbin / -ptx SRC -o OUT),
#            cuda-headers (links to the toolkit's cooperative_groups, cuda/ and
#            nv/ headers, which the program hands to NVRTC)
#   args     the arguments it runs with
set -eu
me=carry-samples
usage="usage: tools/carry-samples.sh CUDA_SAMPLES_GIT_DIR [DEST]"
src=${1:?$usage}
dest=${2:-$(cd "$(dirname "$0")/.." && pwd)/.carry/cuda-samples}
if git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    gd=$src
elif gd=$(git -C "$src" rev-parse --absolute-git-dir 2>/dev/null); then
    :
else
    echo "$me: $src is not a git directory" >&2
    exit 2
fi
g() { git --git-dir="$gd" "$@"; }
commit=$(g rev-parse HEAD)
rm -rf "$dest"
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every file of Samples/ and Common/ ("path TAB present|absent"), doc/ and
# .vscode/ left out; a partial clone may lack some objects.
g ls-tree -r "$commit" -- Samples Common | awk -F'\t' '
    { split($1, m, " "); if (m[2] != "blob" || ("/" $2 "/") ~ /\/(doc|\.vscode)\//) next
      print m[3] > "'"$work/objs"'"; print $2 > "'"$work/paths"'" }'
g cat-file --batch-check <"$work/objs" | awk '{print ($2 == "missing") ? "absent" : "present"}' |
    paste "$work/paths" - >"$work/files"

# The sample folders, in the order the CMake tree adds them (categories 0-7;
# 8_Platform_Specific is Tegra-only).
sample_dirs() {
    for cat in $(g show "$commit:Samples/CMakeLists.txt" | sed -n 's/^ *add_subdirectory(\([0-7]_[A-Za-z_]*\)).*/\1/p'); do
        g show "$commit:Samples/$cat/CMakeLists.txt" | sed 's/#.*//' |
            sed -n 's/^ *add_subdirectory(\([^)]*\)).*/\1/p' | sed "s|^|Samples/$cat/|"
    done
}

# cmake_fields DIR: one line "exe<TAB>sources<TAB>libs<TAB>packages<TAB>prep<TAB>defines"
# read off DIR/CMakeLists.txt (comments dropped, lines joined).
cmake_fields() {
    g show "$commit:$1/CMakeLists.txt" | sed 's/#.*//' | tr '\n' ' ' | awk '
    function body(s, name,   i, j) {
        i = index(s, name "(")
        if (!i) return ""
        s = substr(s, i + length(name) + 1)
        j = index(s, ")")
        return substr(s, 1, j - 1)
    }
    function file_of(s, var,   v) {
        if (!match(s, "set\\(" var " \"\\$\\{CMAKE_CURRENT_(BINARY|SOURCE)_DIR\\}/[^\"]*\"")) return ""
        v = substr(s, RSTART, RLENGTH); sub(/.*\//, "", v); sub(/"$/, "", v)
        return v
    }
    {
        s = $0
        n = split(body(s, "add_executable"), a, " ")
        exe = a[1]; srcs = ""
        for (i = 2; i <= n; i++) if (a[i] != "WIN32") srcs = srcs " " a[i]
        libs = ""; rest = s
        while ((i = index(rest, "target_link_libraries(")) > 0) {
            rest = substr(rest, i + 22)
            j = index(rest, ")")
            n = split(substr(rest, 1, j - 1), a, " ")
            for (k = 2; k <= n; k++) libs = libs " " a[k]
        }
        pk = ""; rest = s
        while ((i = index(rest, "find_package(")) > 0) {
            rest = substr(rest, i + 13)
            split(rest, a, /[ )]/)
            pk = pk " " a[1]
        }
        # LLVM is found once for all of 7_libNVVM.
        if (s ~ /LLVM_INCLUDE_DIRS|llvm_libs/) pk = pk " LLVM"
        prep = ""; ks = file_of(s, "CUDA_KERNEL_SOURCE")
        if ((out = file_of(s, "CUDA_FATBIN_FILE")) != "" && ks != "") prep = "fatbin:" out ":" ks
        if ((out = file_of(s, "CUDA_PTX_FILE")) != "" && ks != "") prep = "ptx:" out ":" ks
        # libNVVM samples link libcudadevrt.a at run time from a path CMake defines.
        if (s ~ /LIBCUDADEVRT=/) defs = "-DLIBCUDADEVRT=\"@CUDA@/lib64/libcudadevrt.a\""
        # The headers it copies beside the program, for NVRTC.
        if (s ~ /cooperative_groups/) prep = prep " cuda-headers"
        sub(/^ /, "", srcs); sub(/^ /, "", libs); sub(/^ /, "", pk); sub(/^ /, "", prep)
        printf "%s\t%s\t%s\t%s\t%s\t%s\n", exe, srcs, libs, pk, prep, defs
    }'
}

# libs_of "CMAKE LIBS": the nvcc link flags.
# shellcheck disable=SC2016
libs_of() {
    out=""
    for l in $1; do
        case $l in
            PUBLIC | PRIVATE | INTERFACE | CUDA::cudart | socket) ;;
            CUDA::cuda_driver | '${CUDA_LIB}') out="$out -lcuda" ;;
            # CMake's CUDA::cusolver brings cuSPARSE, which the samples call too.
            CUDA::cusolver) out="$out -lcusolver -lcusparse" ;;
            CUDA::*) out="$out -l${l#CUDA::}" ;;
            '${NVJITLINK_LIB}') out="$out -lnvJitLink" ;;
            '${NVVM_LIB}') out="$out -lnvvm" ;;
            OpenMP::*) out="$out -lgomp" ;;
            '$'*) ;;
            *) out="$out -l$l" ;;
        esac
    done
    echo "${out# }"
}

# normal PATH: PATH with "." and "dir/.." taken out.
normal() {
    echo "$1" | awk -F/ '{ n = 0
        for (i = 1; i <= NF; i++) if ($i == "..") n--; else if ($i != "." && $i != "") p[++n] = $i
        s = p[1]; for (i = 2; i <= n; i++) s = s "/" p[i]; print s }'
}

: >"$dest/SAMPLES"
: >"$dest/EXCLUDED"
exclude() { printf '%s\t%s\n' "$1" "$2" >>"$dest/EXCLUDED"; }
n=0
for d in $(sample_dirs); do
    name=${d##*/}
    if ! grep -q "^$d/CMakeLists.txt	present" "$work/files"; then
        exclude "$name" "no CMakeLists.txt"
        continue
    fi
    f=$(cmake_fields "$d")
    exe=$(echo "$f" | cut -f1)
    srcs=$(echo "$f" | cut -f2)
    clibs=$(echo "$f" | cut -f3)
    pkgs=$(echo "$f" | cut -f4)
    prep=$(echo "$f" | cut -f5)
    flags=$(echo "$f" | cut -f6)
    [ -n "$exe" ] || { exclude "$name" "no program (its CMakeLists adds tests of ptxgen only)"; continue; }
    needs=""
    for p in $pkgs; do
        case $p in OpenGL | GLUT | Vulkan | EGL | MPI | FreeImage | NVSCI | LLVM) needs="$needs $p" ;; esac
    done
    [ -z "$needs" ] || { exclude "$exe" "needs$needs"; continue; }
    case $exe in
        *D3D*) exclude "$exe" "Windows only (Direct3D)"; continue ;;
    esac
    case " $clibs " in
        *" CUDA::cufft_static "*) exclude "$exe" "links cuFFT statically (libcufft_static.a, a binary of hundreds of MB)"; continue ;;
    esac
    missing=""
    for s in $srcs; do
        grep -q "^$(normal "$d/$s")	present" "$work/files" || missing="$missing $s"
    done
    [ -z "$missing" ] || { exclude "$exe" "source absent from the repository:$missing"; continue; }
    absent=$(awk -F'\t' -v d="$d/" 'index($1, d) == 1 && $2 == "absent" {printf " %s", substr($1, length(d) + 1)}' "$work/files")
    [ -z "$absent" ] || { exclude "$exe" "file absent from the git objects:$absent"; continue; }

    libs=$(libs_of "$clibs")
    args=""
    case " $clibs " in *" OpenMP::"*) flags="${flags:+$flags }-Xcompiler -fopenmp" ;; esac
    case $exe in
        # What 7_libNVVM's CMake defines for it: where libdevice is.
        ptxgen)
            flags='-DLIBNVVM_HOME=@CUDA@/nvvm -DLIBDEVICE_MAJOR_VERSION=1 -DLIBDEVICE_MINOR_VERSION=0'
            args="test.ll -arch=compute_90"
            ;;
    esac
    awk -F'\t' -v d="$d/" 'index($1, d) == 1 && $2 == "present" {print $1}' "$work/files" >>"$work/copy"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$exe" "$d" "${srcs:--}" "${libs:--}" "${flags:--}" \
        "${prep:--}" "${args:--}" >>"$dest/SAMPLES"
    n=$((n + 1))
done
awk -F'\t' 'index($1, "Common/") == 1 && $2 == "present" {print $1}' "$work/files" >>"$work/copy"
echo LICENSE >>"$work/copy"
# git archive names the objects it skips on stderr even when no path asked for one.
# shellcheck disable=SC2016
xargs sh -c 'gd=$1 c=$2 d=$3; shift 3; git --git-dir="$gd" archive --format=tar "$c" -- "$@" 2>/dev/null |
    tar -x -C "$d"' sh "$gd" "$commit" "$dest" <"$work/copy"
copied=$(find "$dest" -type f | wc -l)
[ "$copied" -ge "$(wc -l <"$work/copy")" ] || { echo "$me: copied $copied of $(wc -l <"$work/copy") files" >&2; exit 1; }
echo "$commit" >"$dest/COMMIT"
echo "$me: $n samples at $(echo "$commit" | cut -c1-12) in $dest ($(wc -l <"$dest/EXCLUDED") left out: $dest/EXCLUDED)"
