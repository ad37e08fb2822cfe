#!/usr/bin/env python3
"""tune-compare.py - how close the tuner's default search (power-of-two block
sizes) comes to an exhaustive one (every multiple of 32): reads two tables
written by `gpuaccel tune` and `gpuaccel tune --exhaustive` for the same
program and prints, per kernel configuration, the best time each found and
their ratio. Exit status 1 when a configuration the default search rewrote is
more than 5% slower than the exhaustive best.

usage: bench/tune-compare.py DEFAULT.table EXHAUSTIVE.table
"""
import re
import sys

BEST = re.compile(r"original ([0-9.]+) us, best ([0-9.]+) us")


def read(path):
    """{(name, grid, block, shmem): (best_us, rewritten)} from a tune table."""
    out, pending = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = BEST.search(line)
            if line.startswith("# no: ") and m:
                words = line[6:].split()
                out[tuple(words[:3]) + (words[3].rstrip(":"),)] = (float(m.group(2)), False)
            elif line.startswith("# verified:") and m:
                pending = float(m.group(2))
            elif pending is not None and line and not line.startswith("#"):
                w = line.split()  # name device grid block shmem -> ...
                out[(w[0], w[2], w[3], w[4])] = (pending, True)
                pending = None
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    base, full = read(sys.argv[1]), read(sys.argv[2])
    bad = 0
    print("%-34s %-12s %-8s %10s %10s %7s" % ("kernel", "grid", "block", "default", "exhaust.",
                                             "ratio"))
    for key in sorted(set(base) & set(full)):
        (b, rewritten), (e, _) = base[key], full[key]
        ratio = b / e if e > 0 else 0
        flag = rewritten and ratio > 1.05
        bad += flag
        print("%-34s %-12s %-8s %8.2fus %8.2fus %6.3fx%s" % (key[0][:34], key[1], key[2], b, e,
                                                           ratio, "  > 5%" if flag else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
