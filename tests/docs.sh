#!/bin/sh
# docs.sh - the lists that restate a source match it (tools/gen-docs --check:
# the settings table of doc/settings.md, the hooks of core/hooks.h, the
# feature order, events and file tables of doc/architecture.md), and the check
# catches drift planted in a copy of the tree: a settings row edited by hand,
# a hook dropped, a handler no event dispatches, a file or a feature folder
# with no row. --write then repairs what it writes. And every unit test and
# Bats file in the tree is run (autogen.sh's lists of them are current), and
# bench/results/README.md is what bench/results/render writes.
# make check sets GA_SRC and GA_BUILD.
set -u
src=${GA_SRC:?GA_SRC: the source tree (make check sets it)}
tool=${GA_BUILD:?GA_BUILD: the build tree}/tools/gpuaccel
gen=$src/tools/gen-docs
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$gen" --check "$src" "$tool"; then
    echo "FAIL: the docs differ from their sources; run make docs (tools/gen-docs --write)"
    fail=1
fi

# bench/results/README.md is what bench/results/render writes from README.in
# and the device folders (its latest-figures table included).
py=${PYTHON3:-$(command -v python3 || true)}
if [ ! -f "$src/bench/results/render" ]; then
    # a release tarball: the measured runs stay in the repository
    echo "note: no bench/results in this tree (a release tarball): no results page to compare"
elif [ -z "$py" ]; then
    echo "note: no python3: bench/results/README.md not compared with render's output"
elif ! "$py" "$src/bench/results/render" --check; then
    echo "FAIL: bench/results/README.md differs from bench/results/render's output: run it"
    fail=1
fi

# Every unit test and Bats file in the tree is one make check runs (autogen.sh
# lists them in tests/unit/unit.am and tests/bats/bats.am; a test added since
# the last ./autogen.sh would not run).
for t in "$src"/tests/unit/*/test_*.c; do
    t=${t#"$src"/}
    [ -x "$GA_BUILD/${t%.c}" ] && continue
    echo "FAIL: $t is not built by make check: run ./autogen.sh (it lists tests/unit/*/test_*.c)"
    fail=1
done

for t in "$src"/tests/bats/*.bats; do
    t=${t#"$src"/}
    grep -qF "$t" "$GA_BUILD/Makefile" && continue
    echo "FAIL: $t is not run by make check: run ./autogen.sh (it lists tests/bats/*.bats)"
    fail=1
done

# copy: a fresh copy of the sources gen-docs reads, in $tmp/t
copy() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t"
    (cd "$src" && find doc src -name '*.[ch]' -o -name '*.def' -o -name '*.map' -o -name '*.md' \
        -o -name sources.am) |
        (cd "$src" && tar -cf - -T -) | (cd "$tmp/t" && tar -xf -)
}

# planted WHAT EXPECTED: gen-docs --check on $tmp/t must fail, saying EXPECTED.
planted() {
    if "$gen" --check "$tmp/t" "$tool" >"$tmp/out" 2>&1; then
        echo "FAIL: $1: not caught"
        fail=1
    elif ! grep -qF -- "$2" "$tmp/out"; then
        echo "FAIL: $1: caught, but no line says '$2':"
        cat "$tmp/out"
        fail=1
    else
        echo "ok: caught $1"
    fi
}

copy
sed -i 's/^| `GPUACCEL_GRAPH_MIN` | 5 |/| `GPUACCEL_GRAPH_MIN` | 4 |/' "$tmp/t/doc/settings.md"
planted "a settings row edited by hand" "doc/settings.md: block 'settings' differs"
"$gen" --write "$tmp/t" "$tool" >/dev/null
if "$gen" --check "$tmp/t" "$tool" >"$tmp/out" 2>&1; then
    echo "ok: --write repaired it"
else
    echo "FAIL: --write did not repair the settings table:"
    cat "$tmp/out"
    fail=1
fi

copy
sed -i '/^ \*   hooks\/hostmem.c/d' "$tmp/t/src/core/hooks.h"
planted "a hook dropped from core/hooks.h" "src/core/hooks.h: block 'hooks' differs"

copy
sed -i 's|^    void (\*exit)(void);|&\n    void (*forgotten)(void);|' "$tmp/t/src/features/feature.h"
planted "a handler no event dispatches" "handler \`forgotten\` (observed) is in no GA_EVENTS entry"

copy
echo '/* new.c */' >"$tmp/t/src/hooks/new.c"
planted "a hooks file with no row" "src/hooks/new.c has no row in the hooks table"

copy
mkdir "$tmp/t/src/features/newfeature"
: >"$tmp/t/src/features/newfeature/sources.am"
planted "a feature folder with no row" "src/features/newfeature/ has no row in the features table"

copy
sed -i 's/^GA_FEATURE(pool, /GA_FEATURE(pools, /' "$tmp/t/src/features/features.def"
planted "a feature renamed in features.def" "doc/architecture.md: block 'order' differs"

[ $fail -eq 0 ] && echo "PASS: docs"
exit $fail
