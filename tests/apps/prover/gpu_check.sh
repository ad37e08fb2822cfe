#!/bin/sh
# gpu_check.sh - GPU-vs-reference check of the sample prover.
#
# Owns: running the built prover ($1) at a few small sizes on the GPU (with
# --verify) and on the CPU (--reference), asserting that the verifier
# accepts and both digests are equal.  Exit 0 pass, 1 fail, 77 skip (no GPU).
# With VAR=VALUE arguments the GPU runs have them in their environment (the
# CPU reference never does): tests/gpu/prover.sh passes LD_PRELOAD=libgpuaccel
# and every feature, so the library's proofs are held to the CPU's too.
# Usage: sh gpu_check.sh ./prover [VAR=VALUE...]
set -u

prover=${1:-}
if [ -z "$prover" ] || [ ! -x "$prover" ]; then
    echo "usage: gpu_check.sh /path/to/prover [VAR=VALUE...] (a built binary)" >&2
    exit 2
fi
shift
for v; do
    case $v in
    *=*) ;;
    *) echo "gpu_check.sh: '$v' is not VAR=VALUE" >&2; exit 2 ;;
    esac
done
[ $# -eq 0 ] || echo "GPU runs with: $*"

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "SKIP: no GPU: nvidia-smi is not installed"
    exit 77
fi
gpus=$(nvidia-smi -L 2>/dev/null) || gpus=
if [ -z "$gpus" ]; then
    echo "SKIP: no GPU: nvidia-smi lists none"
    exit 77
fi

tmp=${TMPDIR:-/tmp}/gpu_check.$$
trap 'rm -f "$tmp"' EXIT INT TERM
fail=0
for cfg in \
    "--log-n 1 --cols 1 --queries 1" \
    "--log-n 4 --cols 3 --queries 5" \
    "--log-n 6 --cols 2 --queries 4" \
    "--log-n 8 --cols 8 --queries 16 --proofs 3 --seed 7" \
    "--log-n 10 --cols 5 --queries 64 --proofs 2 --seed 0xdeadbeef"; do
    # shellcheck disable=SC2086
    gpu=$(env "$@" "$prover" $cfg --verify 2>"$tmp")
    rc=$?
    if [ $rc -eq 77 ]; then
        echo "SKIP: no GPU (prover: $(cat "$tmp"))"
        exit 77
    fi
    if [ $rc -ne 0 ] || ! grep -q '^verify: .* accepted$' "$tmp"; then
        echo "FAIL: prover $cfg --verify: exit $rc"
        sed 's/^/    /' "$tmp"
        fail=1
        continue
    fi
    # shellcheck disable=SC2086
    ref=$("$prover" $cfg --reference 2>"$tmp")
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: prover $cfg --reference: exit $rc"
        sed 's/^/    /' "$tmp"
        fail=1
        continue
    fi
    if ! printf '%s\n' "$gpu" | grep -Eq '^digest: [0-9a-f]{16}$'; then
        echo "FAIL: prover $cfg: bad output '$gpu'"
        fail=1
    elif [ "$gpu" != "$ref" ]; then
        echo "FAIL: prover $cfg: GPU '$gpu' != reference '$ref'"
        fail=1
    else
        echo "ok   $cfg: $gpu (GPU = reference, verified)"
    fi
done
[ $fail -eq 0 ] && echo "PASS" || echo "FAILED"
exit $fail
