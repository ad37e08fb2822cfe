#!/usr/bin/env bats
# composition.bats - features compose: with any other feature on, and with
# every feature on, each serving feature serves at least what it serves alone
# (its own counter in the exit report), and the program's output is native's.
# tests/progs/mix_prog gives each feature its work. Where two features meet on
# one call by design, the rule is written below with its reason.
load helpers

setup() { setup_fake; }

# The features under test and the number each reports as served, from the
# GPUACCEL_LOG=info exit report on stdin. kernels and tune are left out here:
# they act on named kernels (tests/bats/namesake.bats and the tune tests).
FEATURES="pool async_pool streams lazy_sync graphs coalesce staging pinned"

served() { # FEATURE < report
    case $1 in
    pool) sed -n 's/^gpuaccel: pool: hits=\([0-9]*\).*/\1/p' ;;
    async_pool) sed -n 's/^gpuaccel: async_pool: \([0-9]*\) of .*/\1/p' ;;
    streams) sed -n 's/^gpuaccel: streams: \([0-9]*\) of .*/\1/p' ;;
    lazy_sync) sed -n 's/^gpuaccel: lazy_sync: \([0-9]*\) of .*/\1/p' ;;
    graphs) sed -n 's/^gpuaccel: graphs: .* replays=\([0-9]*\) .*/\1/p' ;;
    coalesce) sed -n 's/^gpuaccel: coalesce: hits=\([0-9]*\) .*/\1/p' ;;
    staging) sed -n 's/^gpuaccel: staging: htod=\([0-9]*\) dtoh=\([0-9]*\) .*/\1 \2/p' |
        awk '{print $1 + $2}' ;;
    pinned) sed -n 's/^gpuaccel: pinned: \([0-9]*\) of .*/\1/p' ;;
    esac | head -1 | grep . || echo 0
}

# Synchronizations answered without a wait: lazy_sync defers those it may;
# coalescing answers first those with nothing in flight (idle_syncs), which
# lazy_sync would otherwise have deferred. Either way the program's wait was
# served, so lazy_sync's share is counted with coalescing's.
syncs_served() { # < report
    local r
    r=$(cat)
    echo $(($(echo "$r" | served lazy_sync) +
        $(echo "$r" | sed -n 's/^gpuaccel: coalesce: .* idle_syncs=\([0-9]*\).*/\1/p' | grep . || echo 0)))
}

run_mix() { # ENV...: the report lines; fails unless the output is native's
    local out
    # every copy staging may serve staged: its admission by measured time
    # would make its count depend on the fake driver's timing
    out=$(env GPUACCEL=0 GPUACCEL_STAGING_ADAPT=0 "$@" GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/mix_prog" "$PTX" 2>"$BATS_TEST_TMPDIR/err") || {
        cat "$BATS_TEST_TMPDIR/err"
        echo "mix_prog failed with $*"
        return 1
    }
    if [ "$out" != "$want" ]; then
        echo "with $*: output differs from native: $out"
        return 1
    fi
    cat "$BATS_TEST_TMPDIR/err"
}

var() { echo "GPUACCEL_$(echo "$1" | tr 'a-z' 'A-Z')=1"; }

# FEATURE's count in REPORT against ALONE; lazy_sync counts syncs served.
keeps() { # FEATURE REPORT ALONE WITH
    local n
    if [ "$1" = lazy_sync ]; then n=$(echo "$2" | syncs_served); else n=$(echo "$2" | served "$1"); fi
    if [ "$n" -lt "$3" ]; then
        echo "$1 served $n with $4, $3 alone"
        return 1
    fi
}

@test "each feature keeps serving with any other, and with every feature on" {
    want=$(native "$PROGS/mix_prog" "$PTX")
    [ "$(echo "$want" | grep -c ' ok=1$')" -eq 7 ]
    declare -A alone
    local f g rep all_env=()
    for f in $FEATURES; do
        rep=$(run_mix "$(var "$f")")
        if [ "$f" = lazy_sync ]; then alone[$f]=$(echo "$rep" | syncs_served); else alone[$f]=$(echo "$rep" | served "$f"); fi
        # the program gives every feature something to serve
        [ "${alone[$f]}" -gt 0 ] || { echo "$f served nothing alone"; false; }
        all_env+=("$(var "$f")")
    done
    # every pair, then all: each break is listed, then the test fails
    local broken=0
    for f in $FEATURES; do
        for g in $FEATURES; do
            [[ "$f" < "$g" ]] || continue
            rep=$(run_mix "$(var "$f")" "$(var "$g")")
            keeps "$f" "$rep" "${alone[$f]}" "$g" || broken=$((broken + 1))
            keeps "$g" "$rep" "${alone[$g]}" "$f" || broken=$((broken + 1))
        done
    done
    rep=$(run_mix "${all_env[@]}")
    for f in $FEATURES; do
        keeps "$f" "$rep" "${alone[$f]}" "every feature" || broken=$((broken + 1))
    done
    [ "$broken" -eq 0 ]
}
