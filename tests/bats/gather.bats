#!/usr/bin/env bats
# gather.bats - coalescing's gathers on the fake driver: a query phase's
# scattered reads (columns, Merkle siblings, fold neighbours, every position
# following from one index) are learned, then each query's reads come from one
# gather; every value read is what the device holds, also when a column is
# rewritten (memset, device-to-device copy) between queries and when a read
# buffer is freed and replaced; a prover's long queries (hundreds of reads,
# fold positions that are masks) are gathered whole; a gather whose blocks
# never say they landed is given up after the driver's wait, and the reads go
# to the driver, every value still right; GPUACCEL_COALESCE_GATHER=0, none is
# made.
load helpers

setup() {
    setup_fake
}

# query [VAR=VALUE...] -- MODE ROUNDS: query_prog under the library, coalescing on.
query() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    # Windows of 256 bytes: the buffers (16 KiB and more) are read at random,
    # as a prover's are at sizes where 64 KiB windows rarely hold the next read.
    env GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_GATHER=1 GPUACCEL_COALESCE_WINDOW=256 \
        GPUACCEL_LOG=info "${envs[@]}" \
        LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/query_prog" "$PTX" "$@"
}

# gathered MODE ROUNDS MIN_GATHERS MIN_READS: natively every value is right
# and nothing is gathered; under the library every value is right too, at
# least MIN_GATHERS gathers were made and each fetched MIN_READS reads on
# average (the fake driver counts the launches, the library the reads).
gathered() {
    run native "$PROGS/query_prog" "$PTX" "$1" "$2"
    echo "$output"
    has_words 'bad=0 gathers=0'
    run query -- "$1" "$2"
    echo "$output"
    [ "$status" -eq 0 ]
    local g n
    g=$(echo "$output" | sed -n 's/.*bad=0 gathers=\([0-9]*\).*/\1/p')
    n=$(echo "$output" | sed -n 's/.* gathers=[0-9]* gathered=\([0-9]*\).*/\1/p')
    [ -n "$g" ]
    [ "$g" -ge "$3" ]
    [[ "$output" == *"gathers=$g gathered="* ]]
    [ "$n" -ge $((g * $4)) ]
}

@test "gather: a query phase is learned and its reads gathered, every value right" {
    # 4 rounds of 24 queries of 30 reads: learned within the first round,
    # then one gather a query.
    gathered plain 4 60 25
}

@test "gather: a prover's 522-read queries (digests, masked fold positions) are gathered" {
    # 3 rounds of 24 queries: learned after six, then nearly the whole query
    # in each gather.
    gathered prover 3 50 500
}

@test "gather: writes between queries are seen at once" {
    run query -- write 4
    echo "$output"
    [ "$status" -eq 0 ]
    has_words bad=0
}

@test "gather: a freed and replaced buffer is never read through the old pattern" {
    run query -- free 5
    echo "$output"
    [ "$status" -eq 0 ]
    has_words bad=0
    g=$(echo "$output" | sed -n 's/.*bad=0 gathers=\([0-9]*\).*/\1/p')
    [ "$g" -ge 40 ] # learned again after the change
}

@test "gather: GPUACCEL_COALESCE_GATHER=0 makes none; coalescing as shipped gathers" {
    run query GPUACCEL_COALESCE_GATHER=0 -- plain 3
    echo "$output"
    has_words 'bad=0 gathers=0'
    run env GPUACCEL_COALESCE=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/query_prog" "$PTX" plain 3
    echo "$output"
    [[ "$output" == *"bad=0 gathers="[1-9]* ]]
}

@test "gather: a gather that never says it landed is given up; the reads go to the driver" {
    # The fake kernel copies the cells but never sets its blocks' words: the
    # library spins, lets the driver wait, finds the words unset and lets the
    # program's own read go. Every gather launched counts none as made.
    run query FAKECUDA_GATHER_SILENT=1 -- plain 3
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" gathers=0 gathered=0 "* ]]
    [[ "$output" == *"bad=0 gathers="[1-9]* ]]
}
