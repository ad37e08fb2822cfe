#!/bin/sh
# selftest.sh - tests/corpus/corpus.sh's own logic, without a GPU: stand-in
# drivers (shell scripts printing digest, check and phase_ms lines, behaving by
# their environment), a stand-in nvidia-smi and an empty library to preload.
# Checks the medians and ranges, the rotation of the settings, the extra settings
# of GA_CORPUS_SETTINGS, that no GPUACCEL_* of the caller reaches a library run,
# the wall clock when no phase_ms is printed, and the verdicts: a library crash or
# non-zero exit fails (also when native varies), a differing digest fails unless
# native varies (NATIVE-VARIES, `varies`), a native failure fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler for the stand-in library"; exit 77; }
mkdir -p "$w/path" "$w/bin" "$w/corpus"
printf '#!/bin/sh\necho "GPU 0: stand-in (UUID: GPU-0)"\n' >"$w/path/nvidia-smi"
chmod +x "$w/path/nvidia-smi"
echo 'int ga_standin;' >"$w/e.c"
"$CC" -shared -fPIC -o "$w/lib.so" "$w/e.c" || { echo "FAIL: building the stand-in library"; exit 1; }
for p in sppark risc0 stwo icicle; do
    mkdir -p "$w/corpus/$p"
    echo 0123456789abcdef >"$w/corpus/$p/COMMIT"
    echo "github.com/standin/$p" >"$w/corpus/$p/ORIGIN"
done
# The stand-in: the n-th run of a setting prints the n-th time of its list (the
# first is the warm-up's); $MODE picks a misbehaviour.
cat >"$w/bin/standin" <<'EOF'
#!/bin/sh
k=native
[ -n "${LD_PRELOAD:-}" ] && k=defaults
[ "${GPUACCEL_STAGING:-}" = 1 ] && k=all
[ "${GPUACCEL_EXTRA:-}" = 1 ] && k=extra
[ -n "${GPUACCEL_LEAK:-}" ] && [ $k != native ] && { echo "GPUACCEL_LEAK reached a library run" >&2; exit 9; }
echo "$k" >>"$STANDIN_DIR/order"
c=$(cat "$STANDIN_DIR/n.$k" 2>/dev/null || echo 0)
c=$((c + 1))
echo $c >"$STANDIN_DIR/n.$k"
case $k in
native) t="999 300 200 500 400" ;;
defaults) t="999 10 30 20 40" ;;
all) t="999 7 7 7 7" ;;
extra) t="999 50 50 50 50" ;;
esac
d=0123
case ${MODE:-} in
crash) [ $k = all ] && kill -SEGV $$ ;;
exit) [ $k = extra ] && { echo "digest: $d"; exit 3; } ;;
differ) [ $k = extra ] && d=ffff ;;
varies) [ $k = native ] && d=$c ;;
varies-crash) [ $k = native ] && d=$c; [ $k = all ] && kill -SEGV $$ ;;
native-fails) [ $k = native ] && { echo "digest: $d"; echo "check: FAILED 1 of 2: x"; exit 1; } ;;
nophase) ;;
esac
[ "${MODE:-}" = nophase ] || echo "phase_ms: $(echo $t | cut -d' ' -f$c)"
echo "digest: $d"
echo "check: ok"
EOF
chmod +x "$w/bin/standin"
ln -s standin "$w/bin/sppark"

failures=0
# run MODE EXPECT_EXIT: run corpus.sh on the stand-in as sppark at one size, four
# rounds, the three settings and `extra`; leave the table in $w/table.
run() {
    rm -f "$w"/order "$w"/n.*
    env PATH="$w/path:$PATH" GA_SRC="$src" GA_LIB="$w/lib.so" GA_CORPUS="$w/corpus" \
        GA_CORPUS_BIN="$w/bin" GA_CORPUS_ONLY=sppark GA_CORPUS_SIZES=16 GA_CORPUS_RUNS=4 \
        GA_CORPUS_SETTINGS='extra=GPUACCEL_EXTRA=1' GPUACCEL_LEAK=1 STANDIN_DIR="$w" MODE="$1" \
        OUT="$w/out" sh "$src/tests/corpus/corpus.sh" >"$w/log" 2>&1
    rc=$?
    cp "$w/out/corpus.txt" "$w/table" 2>/dev/null || : >"$w/table"
    if [ "$rc" != "$2" ]; then
        echo "not ok: mode '$1': corpus.sh exited $rc, not $2"
        sed 's/^/   /' "$w/log"
        failures=$((failures + 1))
    fi
}
# expect SETTING FIELDS: the table's line for SETTING has these fields from the
# third on (status unit runs median min max ratio); `-` matches anything.
expect() {
    line=$(awk -v s="$1" '$1 !~ /^#/ && $2 == s' "$w/table")
    shift
    got=$(echo "$line" | awk '{$1 = $2 = ""; print}' | sed 's/^ *//')
    ok=1
    i=0
    for want in "$@"; do
        i=$((i + 1))
        f=$(echo "$got" | awk -v i="$i" '{print $i}')
        [ "$want" = - ] || [ "$want" = "$f" ] || ok=0
    done
    if [ $ok = 1 ]; then
        echo "ok: $mode: $line"
    else
        echo "not ok: $mode: expected '$*', got '$line'"
        failures=$((failures + 1))
    fi
}

mode=clean
run "" 0
# native 300 200 500 400: median 350 (even count), range 200-500.
expect native ok phase 4 350.00 200.00 500.00 1.000
expect defaults ok phase 4 25.00 10.00 40.00 14.000
expect all ok phase 4 7.00 7.00 7.00 50.000
expect extra ok phase 4 50.00 50.00 50.00 7.000
# Warm-up in order, then each round rotated by one.
order=$(tr '\n' ' ' <"$w/order")
want="native defaults all extra defaults all extra native all extra native defaults extra native defaults all native defaults all extra "
if [ "$order" = "$want" ]; then
    echo "ok: clean: order $order"
else
    echo "not ok: clean: order '$order', not '$want'"
    failures=$((failures + 1))
fi

mode=nophase
run nophase 0
expect native ok wall 4
expect all ok wall 4

mode=crash
run crash 1
expect native ok
expect all CRASH-SIG11
expect extra ok

mode=exit
run exit 1
expect extra EXIT-3

mode=differ
run differ 1
expect extra DIFFER
expect defaults ok

mode=varies
run varies 0
expect native NATIVE-VARIES
expect defaults varies
expect extra varies

mode=varies-crash
run varies-crash 1
expect native NATIVE-VARIES
expect all CRASH-SIG11
expect defaults varies

mode=native-fails
run native-fails 1
expect native NATIVE-FAILED

if [ $failures = 0 ]; then
    echo "PASS: corpus.sh self-test"
else
    echo "FAIL: corpus.sh self-test: $failures"
    exit 1
fi
