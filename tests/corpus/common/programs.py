"""programs.py - what the corpus checks written in Python share
(tests/corpus/advise-check.sh, tune-check.sh): the corpus programs as
tests/corpus/corpus.sh names and runs them, stand-ins in their place, and the
median, noise and gain interval of sets of timed runs."""
import os
import random
import re
import shlex

# (id, project, arguments after the size): the programs every check runs, as
# tests/corpus/corpus.sh runs them (stwo-gpu's whole proof: 8 columns).
CORPUS = (("sppark_ntt", "sppark", []), ("risc0_poseidon2", "risc0", ["poseidon2"]),
          ("risc0_sha256", "risc0", ["sha256"]), ("stwo_commit", "stwo", []),
          ("stwo_proof", "stwo", ["8", "proof"]), ("icicle_groth16", "icicle", []))


def programs(src, size, only, stand_ins, corpus_bin, carried):
    """[(id, project, argv)]. stand_ins ('ID CMD ARGS...;ID CMD ARGS...') take
    the corpus's place when given; else each program of CORPUS whose driver
    is built in corpus_bin or carried/bin (default carried: src's
    .carry/corpus), at `size`. `only`
    keeps those named by id, project or id without its size."""
    progs = []
    if stand_ins:
        for entry in stand_ins.split(";"):
            words = shlex.split(entry)
            if len(words) >= 2:
                progs.append((words[0], words[0], words[1:]))
    else:
        c = carried or os.path.join(src, ".carry/corpus")

        def bin_of(p):
            for d in (corpus_bin or "", os.path.join(c, "bin")):
                if d and os.access(os.path.join(d, p), os.X_OK):
                    return os.path.join(d, p)
            return None

        for pid, proj, extra in CORPUS:
            b = bin_of(proj)
            if b:
                progs.append(("%s_%s" % (pid, size), proj, [b, size] + extra))
            else:
                print("# note: %s: no driver built (GA_CORPUS_BIN; tests/corpus/build.sh): "
                      "left out" % pid)
    if only:
        progs = [p for p in progs
                 if p[0] in only or p[1] in only or re.sub(r"_\d+$", "", p[0]) in only]
    return progs


def median(v):
    s = sorted(v)
    n = len(s)
    return float("nan") if not n else s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def noise(v):
    """The runs' own spread: 1.4826 MAD, at least 2% of the median."""
    m = median(v)
    return max(0.02 * m, 1.4826 * median([abs(x - m) for x in v])) if v else float("nan")


def gain_ci(a, b, n=2000):
    """The 95% interval of median(a) - median(b) (a gain when a is native's runs):
    with five runs a side or fewer, from the runs' ranges (the order statistics
    give a median no narrower interval than its runs' range there, 94% for five;
    a bootstrap of so few runs is narrower than it should be); with more, by a
    bootstrap of each side (seeded: the same runs give the same interval)."""
    if len(a) < 2 or len(b) < 2:
        return None
    if min(len(a), len(b)) <= 5:
        return min(a) - max(b), max(a) - min(b)
    rng = random.Random(20261130)
    d = sorted(median(rng.choices(a, k=len(a))) - median(rng.choices(b, k=len(b)))
               for _ in range(n))
    return d[int(0.025 * n)], d[int(0.975 * n) - 1]
