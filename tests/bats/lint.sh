#!/bin/sh
# lint.sh - the Bats files keep the rules tools/check-bats states (a bare `!`
# only as a test's last command, no tests joined by && before it, numbers
# matched with a closed end); and the check is not blind: a file with planted
# violations beside the forms that are fine must give exactly the planted
# lines, each with its rule.
set -u
src=${GA_SRC:-.}
check=$src/tools/check-bats
sh "$check" "$src"/tests/bats/*.bats "$src"/tests/bats/helpers.bash ||
    { echo "FAIL: tests/bats breaks a rule of tools/check-bats (above)"; exit 1; }
echo "ok: tests/bats/*.bats and helpers.bash keep the rules"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each line that must be reported ends in "#! RULE"; nothing else may be.
cat >"$tmp/planted.bats" <<'PLANT'
load helpers

helper() {
    ! echo "$1" | grep -q x #! bang
    echo done
}

@test "a negation in the middle, one in a loop, one after a semicolon" {
    run true
    ! echo "$output" | grep -q 'gpuaccel: warning' #! bang
    for f in a b; do
        ! grep -q "$f" /dev/null #! bang
    done
    true; ! false; true #! bang
    [ -n "$(echo "$output" | grep -c 'ok=1')" ] #! count
    [[ "$output" == *"driver_waits=1"* ]] #! count
    [[ "$output" == *"1 verified entries"* ]] #! count
    echo "$output" | grep -Eq '^gpuaccel: pool: .*releases=1' #! count
    [ -s /etc/passwd ] && [ -n "$output" ] #! and
    [ -e / ] && [[ -d / ]] && [ ! -e /nonexistent ] #! and
    ! false || true #! bang
}

@test "one line" { ! false; true; } #! bang

@test "what is fine" {
    [ ! -e /nonexistent ]
    [[ ! -e /nonexistent ]]
    if ! false; then true; fi
    run ! false
    has_words 'driver_waits=1'
    echo "$output" | grep -qw 'releases=1'
    echo "$output" | grep -qx 'module old=0 new=222'
    [ "$(echo x | grep -cw 'ok=1')" -eq 0 ]
    [[ "$output" == *"waits=1 "* ]]
    [[ "$output" == *" waits=1 "* ]]
    [[ "$output" == *"FAIL: $2"* ]]
    grep -c ': 0 1$' /dev/null || true
    [ -e / ] && [ -d / ] || false
    [ -e /nonexistent ] && rm /nonexistent
    python3 -c '
! this is python, not a command
' || true
    cat <<EOF >/dev/null
! a here-document line
$(echo "*"1 verified"*")
EOF
    ! false
}

@test "the last command may be negated" { true; ! false; }

@test "the last command may join tests" {
    true
    [ -e / ] && [ -d / ]
}
PLANT
want=$(grep -n '#! ' "$tmp/planted.bats" | sed 's/^\([0-9]*\):.*#! \(.*\)$/\1: \2/')
out=$(sh "$check" "$tmp/planted.bats" 2>&1)
rc=$?
got=$(echo "$out" | sed -n 's|^[^:]*:\([0-9]*\): \([a-z]*\):.*|\1: \2|p' | sort -n)
if [ $rc -ne 1 ] || [ "$got" != "$want" ]; then
    echo "FAIL: tools/check-bats on the planted file (exit $rc)"
    echo "wanted (line: rule):"; echo "$want" | sed 's/^/  /'
    echo "got:"; echo "$out" | sed 's/^/  /'
    exit 1
fi
echo "ok: caught every planted line, and only those:"
echo "$out" | sort -t: -k2n | sed 's/^/  /'
echo "PASS: bats lint"
