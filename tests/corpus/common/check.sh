# check.sh - sourced first by the corpus checks written in Python
# (advise-check.sh, tune-check.sh), with check_name (the check's name) and
# check_stand_ins (the value of its stand-in variable) set: sets and exports
# GA_SRC, GA_TOOL and GA_LIB (defaults: the tree's), skips (77) without
# python3, fails without gpuaccel or the library, requires a GPU unless
# check_stand_ins is set, and leaves $w, a temporary folder removed at exit,
# for the check's Python. (A file sourced with `.` takes no arguments in sh.)
src=$(cd "$(dirname "$0")/../.." && pwd)
GA_SRC=${GA_SRC:-$src}
GA_TOOL=${GA_TOOL:-$src/tools/gpuaccel}
GA_LIB=${GA_LIB:-$src/.libs/libgpuaccel.so}
export GA_SRC GA_TOOL GA_LIB
command -v python3 >/dev/null 2>&1 || { echo "SKIP: $check_name needs python3"; exit 77; }
[ -x "$GA_TOOL" ] || { echo "FAIL: no gpuaccel at $GA_TOOL (GA_TOOL)"; exit 1; }
[ -f "$GA_LIB" ] || { echo "FAIL: no library at $GA_LIB (GA_LIB)"; exit 1; }
if [ -z "$check_stand_ins" ]; then
    . "$GA_SRC/tests/gpu/common.sh"
    require_gpu "$check_name"
fi
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
