"""programs.py - what the corpus checks written in Python share
(tests/corpus/advise-check.sh, tune-check.sh): the corpus programs as
tests/corpus/corpus.sh names and runs them, stand-ins in their place, and the
median and noise of a set of timed runs."""
import os
import re
import shlex

# (id, project, arguments after the size): the programs every check runs.
CORPUS = (("sppark_ntt", "sppark", []), ("risc0_poseidon2", "risc0", ["poseidon2"]),
          ("risc0_sha256", "risc0", ["sha256"]), ("stwo_commit", "stwo", []),
          ("icicle_groth16", "icicle", []))


def programs(src, size, only, stand_ins, corpus_bin, carried, more=()):
    """[(id, project, argv)]. stand_ins ('ID CMD ARGS...;ID CMD ARGS...') take
    the corpus's place when given; else each program of CORPUS (and `more`,
    entries of the same form) whose driver is built in corpus_bin or
    carried/bin (default carried: src's .carry/corpus), at `size`. `only`
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

        for pid, proj, extra in tuple(CORPUS) + tuple(more):
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
