#!/usr/bin/env python3
"""tune-compare.py - how close the tuner's default search (power-of-two block
sizes) comes to an exhaustive one (every multiple of 32): reads two tables
written by `gpuaccel tune` and `gpuaccel tune --exhaustive` for the same
program and prints, per kernel configuration, the best time each found and
their ratio, raw and relative to the original configuration's time in the same
run. The relative ratio is the one judged: the two tables come from two
processes whose timings of the very same launch drift apart by up to 30% (see
bench/tune-retime.py, which times the finished tables side by side). Exit
status 1 when a configuration the default search rewrote is more than 5%
slower, relative to its original, than the exhaustive best.

usage: bench/tune-compare.py DEFAULT.table EXHAUSTIVE.table
"""
import re
import sys

BEST = re.compile(r"original ([0-9.]+) us, best ([0-9.]+) us")


def read(path):
    """{(name, grid, block, shmem): (original_us, best_us, rewritten)} from a tune table."""
    out, pending = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = BEST.search(line)
            if line.startswith("# no: ") and m:
                words = line[6:].split()
                out[tuple(words[:3]) + (words[3].rstrip(":"),)] = (
                    float(m.group(1)), float(m.group(2)), False)
            elif line.startswith("# verified:") and m:
                pending = (float(m.group(1)), float(m.group(2)))
            elif pending is not None and line and not line.startswith("#"):
                w = line.split()  # name device grid block shmem -> ...
                out[(w[0], w[2], w[3], w[4])] = pending + (True,)
                pending = None
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    base, full = read(sys.argv[1]), read(sys.argv[2])
    bad = 0
    print("%-30s %-10s %-7s %9s %9s %7s %9s %9s %7s" % (
        "kernel", "grid", "block", "default", "exhaust.", "ratio", "def/orig", "exh/orig",
        "ratio"))
    for key in sorted(set(base) & set(full)):
        (bo, b, rewritten), (eo, e, _) = base[key], full[key]
        ratio = b / e if e > 0 else 0
        rel_b, rel_e = (b / bo if bo > 0 else 0), (e / eo if eo > 0 else 0)
        rel = rel_b / rel_e if rel_e > 0 else 0
        flag = rewritten and rel > 1.05
        bad += flag
        print("%-30s %-10s %-7s %7.2fus %7.2fus %6.3fx %9.3f %9.3f %6.3fx%s" % (
            key[0][:30], key[1], key[2], b, e, ratio, rel_b, rel_e, rel,
            "  > 5%" if flag else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
