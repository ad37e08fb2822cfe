#!/bin/sh
# oom.sh (GPU) - the program's own allocation that fails while the library's
# caches hold memory gets its memory once they give it back (oom_test.cu):
# natively, with the defaults and with every feature, each of the three
# checks must print ok=1 and the program exit 0.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu oom
T="$GA_BUILD/tests/gpu/oom_test"
require_built "$T"
check() { # LABEL ENV...
    label=$1
    shift
    out=$(env "$@" "$T" 2>"$tmp/err") || { cat "$tmp/err"; fail "$label: oom_test exited non-zero: $out"; }
    for c in pool async host; do
        echo "$out" | grep -qx "$c ok=1" || { cat "$tmp/err"; fail "$label: no '$c ok=1' in: $out"; }
    done
    echo "ok: $label -> $(echo "$out" | tr '\n' ' ')"
    grep '^gpuaccel:' "$tmp/err" | grep -Ev '^gpuaccel: (debug|calls):' | sed 's/^/   /'
}
check native -u LD_PRELOAD
check defaults LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=info
# shellcheck disable=SC2086
check every-feature LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=info $ALL_FEATURES
echo "PASS: oom"
