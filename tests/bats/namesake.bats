#!/usr/bin/env bats
# namesake.bats - kernels named like every row of the shipped replacement table
# (the same mangled names, the same parameters) that compute something else
# are never replaced, under the defaults or with every feature on; the same
# names with the code a rule lists are. Through the real wrappers over the
# fake driver, which runs each image's kernels with the arithmetic the image
# gives them (tests/fake/fakecuda.c, "kernels an image defines"), so a
# replacement launched where it should not be shows as another checksum than
# the native run's.
load helpers

setup() {
    setup_fake
    GA_TOOL="$GA_BUILD/tools/gpuaccel"
    T="$BATS_TEST_TMPDIR"
    P="$PROGS/namesake_prog"
    # The shipped rows, from the source table: original, replacement, grid
    # (all); those the fake driver can run (rows: pointers first, then
    # pointers and 32-bit words; not a structure passed by value); those for
    # the bundled prover's kernels (the build adds their code=) apart.
    grep -v '^#' "$GA_SRC/kernels/table.txt" | awk 'NF {print $1, $2, $3}' >"$T/all"
    : >"$T/rows"
    while read -r orig repl grid; do
        if params_of "$orig" | grep -qx ' .u64\( .u64\| .u32\)*'; then
            echo "$orig $repl $grid" >>"$T/rows"
        fi
    done <"$T/all"
    grep -v '^#' "$GA_SRC/kernels/table.txt" | awk 'NF && !/ code=/ {print $1, $2, $3}' >"$T/bundled"
}

# The PTX parameter list of a mangled name: pointers (P, PK or PP before j,
# a class the table names (4qm31, 9ShaDigest, 2Fp) or a substitution S_,
# S0_ ...; a bare substitution is a pointer too in the table's names) and
# 32-bit words (j, i).
params_of() {
    local m=${1#_Z} len
    len=${m%%[!0-9]*}
    m=${m#"$len"}
    echo "${m:$len}" | sed 's/P[PK]*\(4qm31\|9ShaDigest\|2Fp\|S[0-9]*_\|j\)/ .u64/g; s/S[0-9]*_/ .u64/g; s/[ij]/ .u32/g'
}

# ptx MUL ADD [replacements]: a kernel for every shipped row (named as the
# original, or as its replacement), the k-th computing x * MUL + ADD + k + s;
# ROWS (default: every shipped row) names the rows.
ptx() {
    local k=0 name orig repl grid
    printf '.version 8.0\n.target sm_90\n.address_size 64\n'
    while read -r orig repl grid; do
        name=$orig
        [ -z "${3:-}" ] || name=$repl
        printf '\n.visible .entry %s(' "$name"
        params_of "$orig" | tr ' ' '\n' | grep . | awk -v n="$name" \
            '{printf "%s\n\t.param %s %s_param_%d", (NR > 1 ? "," : ""), $1, n, NR - 1} END {print "\n)"}'
        printf '{\n\tfake.arith %s %s;\n\tret;\n}\n' "$1" $(($2 + k))
        k=$((k + 1))
    done <"${ROWS:-$T/rows}"
}

# table IMAGE [writes]: a user table replacing every row's original by its
# replacement, for the code IMAGE holds under the original's name; with
# `writes`, each row says what the kernel writes (the fake's arithmetic: the
# second pointer when there are two or more, else the first, its first 32-bit
# parameter's count of words).
table() {
    local orig repl grid code w
    while read -r orig repl grid; do
        code=$("$GA_TOOL" kernels ids "$1" "$orig" | grep -v '^#' | cut -d' ' -f2)
        [ -n "$code" ] || { echo "no identity for $orig in $1" >&2; return 1; }
        w=
        if [ "${2:-}" = writes ]; then
            w=$(params_of "$orig" | awk '{p = 0; for (i = 1; i <= NF && $i == ".u64"; i++) p++
                printf " writes=%d:%d*4", (p > 1 ? 1 : 0), p}')
        fi
        echo "$orig $repl $grid $code$w"
    done <"$T/rows"
}

report() { # the library's exit report of swaps
    echo "$output" | grep '^gpuaccel: kernels: swapped='
}

@test "namesake_prog launches a kernel for every shipped row, by its name and parameters" {
    ptx 3 1 >"$T/verified.ptx"
    run native "$P" "$T/verified.ptx"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | cut -d' ' -f1)" = "$(cut -d' ' -f1 "$T/rows")" ]
    [ "$(echo "$output" | sort -u -k2 | wc -l)" -eq "$(wc -l <"$T/rows")" ] # all different
}

@test "user table: a namesake of other arithmetic keeps its kernels, the verified code is swapped" {
    ptx 3 1 >"$T/verified.ptx"
    ptx 5 2 >"$T/namesake.ptx"
    ptx 3 1 replacements >"$T/repl.ptx"
    table "$T/verified.ptx" >"$T/user.table"
    n=$(wc -l <"$T/rows")
    extra="GPUACCEL_KERNELS_EXTRA=$T/repl.ptx:$T/user.table"
    for set in GPUACCEL_KERNELS=1 GPUACCEL=all; do
        like_native $set "$extra" -- "$P" "$T/namesake.ptx"
        [ "$(report)" = "gpuaccel: kernels: swapped=0 other_code=$n unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
        like_native $set "$extra" -- "$P" "$T/verified.ptx"
        [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * n)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
        like_native $set "$extra" -- "$P" "$T/verified.ptx" library # cudart's way
        [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * n)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    done
    # Not blind: a table naming the namesake's own code swaps it, and the
    # output is no longer the program's.
    table "$T/namesake.ptx" >"$T/wrong.table"
    want=$(native "$P" "$T/namesake.ptx")
    run env GPUACCEL_LOG=info GPUACCEL_KERNELS_EXTRA="$T/repl.ptx:$T/wrong.table" \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$P" "$T/namesake.ptx"
    [ "$status" -eq 0 ]
    [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * n)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" != "$want" ]
}

@test "GPUACCEL_KERNELS_VERIFY: a replacement that writes other bytes is caught and dropped" {
    ptx 3 1 >"$T/verified.ptx"
    ptx 5 2 >"$T/namesake.ptx"
    ptx 3 1 replacements >"$T/repl.ptx"
    n=$(wc -l <"$T/rows")
    # Planted: rows naming the namesake's own code (5 2) with replacements of
    # other arithmetic (3 1). Checked on each one's first swapped launch:
    # every one differs, the original's bytes are kept (the output is the
    # program's), the replacement dropped (its next launch is the original).
    table "$T/namesake.ptx" writes >"$T/wrong.table"
    want=$(native "$P" "$T/namesake.ptx")
    run env GPUACCEL_LOG=info GPUACCEL_KERNELS_VERIFY=2 \
        GPUACCEL_KERNELS_EXTRA="$T/repl.ptx:$T/wrong.table" \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$P" "$T/namesake.ptx"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
    [ "$(echo "$output" | grep -c 'its replacement wrote other bytes than the original')" -eq "$n" ]
    echo "$output" | grep -qx "gpuaccel: kernels: checked beside the original (GPUACCEL_KERNELS_VERIFY): same=0 differed=$n"
    # Without the check the same table changes the output (namesake test above).
    # The verified code and right replacements: both swapped launches of each
    # kernel checked and kept.
    table "$T/verified.ptx" writes >"$T/right.table"
    for set in GPUACCEL_KERNELS=1 GPUACCEL=all; do
        like_native $set GPUACCEL_KERNELS_VERIFY=2 "GPUACCEL_KERNELS_EXTRA=$T/repl.ptx:$T/right.table" \
            -- "$P" "$T/verified.ptx"
        [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * n)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    done
    # (with every feature on, graphs may hold launches: no check is made)
    like_native GPUACCEL_KERNELS_VERIFY=2 "GPUACCEL_KERNELS_EXTRA=$T/repl.ptx:$T/right.table" \
        -- "$P" "$T/verified.ptx"
    echo "$output" | grep -qx "gpuaccel: kernels: checked beside the original (GPUACCEL_KERNELS_VERIFY): same=$((2 * n)) differed=0"
}

@test "kernels list --program: each row against a program's kernels, replaced or why not" {
    ptx 3 1 >"$T/verified.ptx"
    ptx 5 2 >"$T/namesake.ptx"
    ptx 3 1 replacements >"$T/repl.ptx"
    table "$T/verified.ptx" >"$T/user.table"
    n=$(wc -l <"$T/rows")
    export GPUACCEL_KERNELS_EXTRA="$T/repl.ptx:$T/user.table"
    run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$T/verified.ptx"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c ': replaced: its code is one the row lists$')" -eq "$n" ]
    run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$T/namesake.ptx"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c ': replaced:')" -eq 0 ]
    [ "$(echo "$output" | grep -c "named, not replaced: the program's code (code=[0-9a-f]*) is not one the row lists$")" -ge "$n" ]
    # a program without those kernels, and a file that is none
    printf '.version 8.0\n.target sm_90\n.address_size 64\n' >"$T/empty.ptx"
    run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$T/empty.ptx"
    [ "$(echo "$output" | grep -c ': not in the program$')" -ge "$n" ]
    run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$T/empty.ptx" extra
    [ "$status" -ne 0 ]
    echo "$output" | grep -q "kernels list takes no arguments but --program FILE"
    # the rows are read as the library reads them: a bad one named by its line, left out
    echo "_Z3badPj ga_bad grid=sometimes" >>"$T/user.table"
    bad=$(wc -l <"$T/user.table")
    run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$T/verified.ptx"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q "user.table:$bad: expected .*; line skipped"
    [ "$(echo "$output" | grep -c '^_Z3badPj')" -eq 0 ]
    [ "$(echo "$output" | grep -c ': replaced: its code is one the row lists$')" -eq "$n" ]
}

@test "the defaults: the shipped rows replace the bundled prover's own code, never a namesake's" {
    [ -n "$NVCC" ] || skip "built without nvcc: the library ships no replacements"
    command -v objcopy >/dev/null || skip "no objcopy to take the prover's fatbin out"
    prover="$GA_BUILD/tests/apps/prover/prover"
    # The prover's fatbin holding its kernels, as cudart hands it to the driver.
    off=$("$GA_TOOL" kernels ids "$prover" | awk '/^#.*\.nv_fatbin\+/ {o = $0} /^_Z5scalePjjj / {print o}' |
        sed 's/.*\.nv_fatbin+\(0x[0-9a-f]*\).*/\1/')
    [ -n "$off" ]
    objcopy -O binary --only-section=.nv_fatbin "$prover" "$T/nv_fatbin"
    tail -c +$((off + 1)) "$T/nv_fatbin" >"$T/prover.fatbin"
    # The fake runs the originals in a real fatbin, and the shipped
    # replacements, with one arithmetic (what verify proves of the real ones);
    # the prover holds the bundled rows' kernels, the namesake every row's.
    { ROWS="$T/bundled" ptx 3 1; ROWS="$T/bundled" ptx 3 1 replacements | sed 1,3d; } >"$T/fake_kernels.ptx"
    export FAKECUDA_KERNELS="$T/fake_kernels.ptx"
    ptx 5 2 >"$T/namesake.ptx"
    n=$(wc -l <"$T/rows") nb=$(wc -l <"$T/bundled")
    [ "$nb" -ge 1 ]
    [ "$nb" -lt "$n" ]
    for set in GPUACCEL_LOG=info GPUACCEL=all; do
        like_native $set -- "$P" "$T/namesake.ptx"
        [ "$(report)" = "gpuaccel: kernels: swapped=0 other_code=$n unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    done
    like_native GPUACCEL_LOG=info -- "$P" "$T/prover.fatbin"
    [ "$(echo "$output" | grep -c ' absent$')" -eq $((n - nb)) ]
    [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * nb)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    like_native GPUACCEL_LOG=info -- "$P" "$T/prover.fatbin" fatbin # cuModuleLoadFatBinary
    [ "$(report)" = "gpuaccel: kernels: swapped=$((2 * nb)) other_code=0 unidentified=0 abi_mismatch=0 denied=0 failed=0" ]
    # the namesake under a switched-off feature: not even looked at
    like_native GPUACCEL_KERNELS=0 -- "$P" "$T/namesake.ptx"
    [ -z "$(report)" ]
}

@test "tests/gpu/namesake (the GPU test's program): every shipped name, none of the shipped code" {
    [ -n "$NVCC" ] || skip "built without nvcc: the GPU programs are not built"
    run "$GA_TOOL" kernels ids "$GA_BUILD/tests/gpu/namesake"
    echo "$output"
    [ "$status" -eq 0 ]
    ids=$(echo "$output" | grep -v '^#')
    [ "$(echo "$ids" | cut -d' ' -f1 | sort)" = "$(cut -d' ' -f1 "$T/all" | sort)" ]
    run "$GA_TOOL" kernels --lib "$GA_LIB" list
    shipped=$(echo "$output" | grep -v '^#' | awk 'NF {print $1, $4}')
    [ "$(echo "$shipped" | wc -l)" -eq "$(wc -l <"$T/all")" ]
    [ -z "$(echo "$ids" | grep -xF "$shipped")" ] # no name with a shipped code
}

@test "the public rows name the code of the carried corpus build (SKIP without the corpus)" {
    bin="$GA_SRC/.carry/corpus/bin"
    [ -x "$bin/stwo" ] && [ -x "$bin/risc0" ] || skip "no carried corpus build (tools/carry-corpus.sh)"
    for p in stwo risc0; do
        run "$GA_TOOL" kernels --lib "$GA_LIB" list --program "$bin/$p"
        echo "$output"
        [ "$status" -eq 0 ]
        want=$(grep -v '^#' "$GA_SRC/kernels/table.txt" | awk -v p="$p" 'NF && / code=/ && $2 ~ "^ga_" p "_" {print $1}' | sort)
        [ -n "$want" ]
        got=$(echo "$output" | grep ': replaced: its code is one the row lists$' | awk '{print $1}' | sort -u)
        [ "$got" = "$want" ]
    done
}
