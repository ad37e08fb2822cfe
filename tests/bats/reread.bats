#!/usr/bin/env bats
# reread.bats - coalescing's copies of large reads when a program reads the
# same unchanged columns again and again, in turn, more of them than the
# cache holds (stwo's decommitment: every queried position of every column
# read by copying the whole column, crates/prover/src/core/vcs/prover.rs and
# column.rs): the cache keeps what it holds and serves it on every pass
# rather than evicting each copy just before it is read again; every value
# read is what the device holds, also after a column is written anew between
# passes (tests/progs/query_prog.c, mode cyclic).
load helpers

setup() {
    setup_fake
}

# cyclic COLS BUDGET ROUNDS: query_prog's cyclic mode natively (every value
# right), then with coalescing alone and GPUACCEL_COALESCE_BUDGET=BUDGET.
cyclic() {
    run native "$PROGS/query_prog" "$PTX" cyclic "$3" "$1"
    echo "$output"
    has_words 'bad=0 gathers=0'
    run env GPUACCEL=0 GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_BUDGET="$2" GPUACCEL_LOG=info \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/query_prog" "$PTX" cyclic "$3" "$1"
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    hits=$(echo "$output" | sed -n 's/^gpuaccel: coalesce: hits=\([0-9]*\) .*/\1/p')
    kept=$(echo "$output" | sed -n 's/^gpuaccel: coalesce: .* kept=\([0-9]*\).*/\1/p')
    [ -n "$hits" ] && [ -n "$kept" ]
}

@test "re-reads: 192 columns read in turn, twice what the table holds: half served each pass" {
    # 96 slots. Before: each copy was evicted just before its next read, and
    # the counts that admit a large copy (its allocation's third miss) were
    # lost among more allocations than they were kept for: 0 hits of 1,536.
    # Now 96 copies kept and served on each pass from the third, anew after
    # the write (8 passes: 384 hits), the others not copied (kept=).
    cyclic 192 256M 8
    [ "$hits" -ge 300 ]
    [ "$kept" -ge 100 ]
}

@test "re-reads: 16 columns of 128 KiB read in turn, twice the budget of 1 MiB: served each pass" {
    # Eight copies fit the budget; the rest are refused by it, never evicting
    # them: 32 hits of 128 (passes 4 and 5, then 7 and 8 after the write).
    cyclic 16 1M 8
    [ "$hits" -ge 24 ]
}
