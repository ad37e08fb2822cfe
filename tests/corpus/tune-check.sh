#!/bin/sh
# tune-check.sh (GPU) - the tuner on real prover code. For each corpus program
# (tests/corpus/corpus.sh's, at one size, and stwo-gpu's whole proof):
#  1. its busiest kernels by GPU time inside the timed phase: `gpuaccel profile
#     --kernels --phase BEGIN END` (every feature off);
#  2. the tuner on those alone: `gpuaccel tune --kernel NAME,...`: the table's
#     entries (configurations proved bit-identical and faster) and its verdict
#     lines (what was tried and why nothing was kept);
#  3. what the table gains: the defaults, with and without it (GPUACCEL_TUNE=1
#     GPUACCEL_TUNE_TABLE), GA_TUNE_ROUNDS alternating rounds (the order
#     swapped each round) timed by the program's metric, every run's check
#     lines compared with the first's.
#
# usage: [GA_CORPUS_BIN=DIR] [GA_TUNE_ONLY="stwo icicle"] [OUT=DIR] sh tests/corpus/tune-check.sh
#   GA_CORPUS_BIN       the built drivers (tests/corpus/build.sh DEST); else
#                       $GA_CORPUS/bin (GA_CORPUS: default .carry/corpus of the tree)
#   GA_TUNE_ONLY        programs to check: a project, a program or an id (as
#                       advise-check.sh's GA_ADVISE_ONLY); default all
#   GA_TUNE_SIZE        log2 size of every program (default 20)
#   GA_TUNE_TOP         the busiest kernels tuned (default 10)
#   GA_TUNE_ROUNDS      alternating rounds of the A/B (default 5)
#   GA_TUNE_METRIC      the metric (default '^phase_ms: *([0-9.]+)')
#   GA_TUNE_DIGEST      the check lines (default '^digest: ')
#   GA_TUNE_BEGIN, GA_TUNE_END
#                       the lines around the timed phase (default '^phase: begin'
#                       and '^phase: end'; GA_TUNE_BEGIN set empty: the whole process)
#   GA_TUNE_PROGRAMS    other programs in place of the corpus (stand-ins):
#                       'ID CMD ARGS...;ID CMD ARGS...'; no GPU is required then
#   GA_TOOL, GA_LIB     gpuaccel and libgpuaccel.so (default: tools/gpuaccel and
#                       .libs/libgpuaccel.so of the tree)
# Prints one table (also to $OUT/tune-check.txt, or tune-check-WORDS.txt with
# GA_TUNE_ONLY); each program's profile, table and logs go to
# $OUT/tune-check/ID/. Exit status: 0 when every profile and tuner run worked
# and every run's check lines agreed, 1 otherwise, 77 when nothing ran.
set -u
check_name=tune-check check_stand_ins=${GA_TUNE_PROGRAMS:-}
. "$(dirname "$0")/common/check.sh"
cat >"$w/check.py" <<'PY'
import json, os, re, subprocess, sys

E = os.environ
src, tool, lib = E["GA_SRC"], E["GA_TOOL"], E["GA_LIB"]
sys.path.insert(0, os.path.join(src, "tests/corpus/common"))
from programs import programs, median, noise  # noqa: E402

work = sys.argv[1]
size = E.get("GA_TUNE_SIZE") or "20"
top = int(E.get("GA_TUNE_TOP") or 10)
rounds = int(E.get("GA_TUNE_ROUNDS") or 5)
metric_re = re.compile(E.get("GA_TUNE_METRIC") or r"^phase_ms: *([0-9.]+)", re.M)
digest_re = re.compile(E.get("GA_TUNE_DIGEST") or r"^digest: ")
begin = E.get("GA_TUNE_BEGIN", r"^phase: begin")
end = E.get("GA_TUNE_END") or r"^phase: end"
only = (E.get("GA_TUNE_ONLY") or "").split()
out_dir = E.get("OUT") or ""
clean = {k: v for k, v in E.items() if not k.startswith("GPUACCEL") and k != "LD_PRELOAD"}

progs = programs(src, size, only, E.get("GA_TUNE_PROGRAMS"), E.get("GA_CORPUS_BIN"),
                 E.get("GA_CORPUS"))
if not progs:
    print("SKIP: no program to check (GA_TUNE_ONLY, GA_CORPUS_BIN, GA_TUNE_PROGRAMS)")
    sys.exit(77)


def run(argv, log, env):
    """(exit status, output) of argv, its output also kept in log."""
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env)
    text = p.stdout.decode(errors="replace")
    with open(log, "w") as f:
        f.write(text)
    return p.returncode, text


def busiest(d):
    """The kernels of the profile with the most GPU time (a stand-in's shell
    writes one too: each process its own), busiest first: [(name, launches, ns)]."""
    best = []
    for f in sorted(os.listdir(d)):
        if not (f.startswith("profile") and f.endswith(".json")) or f.endswith("trace.json"):
            continue
        try:
            ks = json.load(open(os.path.join(d, f)))["kernels"]["list"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows = sorted(((k["name"], k["launches"], k["gpu_ns"]) for k in ks), key=lambda r: -r[2])
        if sum(r[2] for r in rows) > sum(r[2] for r in best):
            best = rows
    return best


lines, bad = [], 0
ROW = "%-22s %7s %7s %10s %10s %8s %s"


def table():
    head = ROW % ("program", "kernels", "entries", "defaults", "tuned", "gain", "runs")
    return "\n".join(["# tune-check: the %d busiest kernels by the profile, tuned; %d alternating "
                      "rounds after a warm-up, medians of %s" % (top, rounds, metric_re.pattern),
                      head] + lines) + "\n"


def save():
    """The table so far, after each program: a time limit that stops the
    check keeps what it found."""
    if out_dir:
        name = "tune-check%s.txt" % ("-" + "-".join(only) if only else "")
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(table())


def alternate(cmd, d, tpath, note):
    """The defaults with and without the table at tpath, alternating (round
    0 a warm-up, untimed): ({way: [metric of each timed run]}, whether every
    run's check lines equal the first's, whether a run failed)."""
    base = dict(clean, LD_PRELOAD=lib)
    ways = (("defaults", base),
            ("tuned", dict(base, GPUACCEL_TUNE="1", GPUACCEL_TUNE_TABLE=tpath)))
    times, first, agree, failed = {w: [] for w, _ in ways}, None, True, False
    for r in range(rounds + 1):
        for w, env in (ways if r % 2 else ways[::-1]):
            rc, text = run(cmd, os.path.join(d, "%s-%d.log" % (w, r)), env)
            m = metric_re.search(text)
            check = [l for l in text.splitlines() if digest_re.search(l)]
            if rc != 0 or not m or not check:
                failed = True
                note("%s run %d: %s" % (w, r, "exit %d" % rc if rc else
                                         "no metric" if not m else "no check line"))
                continue
            first = first or check
            agree &= check == first
            if r:
                times[w].append(float(m.group(1)))
    return times, agree, failed


def check_one(pid, cmd):
    """Profile, tune and time one program; its lines go to `lines`. Returns 1
    when something failed or differed, else 0."""
    d = os.path.join(out_dir or work, "tune-check", pid)
    os.makedirs(d, exist_ok=True)
    note = lambda s: lines.append("# %s: %s" % (pid, s))
    window = ["--phase", begin, end] if begin else []
    rc, _ = run([tool, "profile", "--kernels", "--lib", lib, "--force", "-o",
                 os.path.join(d, "profile")] + window + ["--"] + cmd,
                os.path.join(d, "profile.log"), clean)
    every = busiest(d)
    ks = every[:top]
    if not ks:
        note("no kernel timed (profile exited %d; see profile.log)" % rc)
        return 1
    total = sum(k[2] for k in every)
    note("busiest %d kernels: %.1f of %.1f ms of kernel time in the phase" %
         (len(ks), sum(k[2] for k in ks) / 1e6, total / 1e6))
    for name, n, ns in ks:
        note("  %9.3f ms %6d launches  %s" % (ns / 1e6, n, name))
    tpath = os.path.join(d, "tune.table")
    rc, out = run([tool, "tune", "--lib", lib, "--force", "-o", tpath, "--kernel",
                   ",".join(k[0] for k in ks), "--"] + cmd, os.path.join(d, "tune.log"), clean)
    try:
        tl = open(tpath).read().splitlines()
    except OSError:
        tl = []
    entries = [l for l in tl if l.strip() and not l.startswith("#")]
    verdicts = [l for l in tl if re.match(r"# (verified|no|tried)\b", l)]
    if rc != 0 or not tl:
        note("the tuner failed (exit %d; see tune.log)" % rc)
        return 1
    for l in verdicts[:2 * top]:
        note("  table: %s" % l[2:200])
    row = [pid, str(len(ks)), str(len(entries))]
    if not entries:
        lines.append(ROW % tuple(row + ["-", "-", "-", "no entry"]))
        return 0
    times, agree, failed = alternate(cmd, d, tpath, note)
    md, mt = median(times["defaults"]), median(times["tuned"])
    verdict = "FAILED" if failed else "agree" if agree else "DIFFER"
    if verdict == "agree" and mt == mt and md == md:
        spread = noise(times["defaults"]) + noise(times["tuned"])
        verdict += (", gain beyond noise" if md - mt > spread else
                    ", loss beyond noise" if mt - md > spread else
                    ", within noise (+-%.2f)" % spread)
    num = lambda x, f: "-" if x != x else f % x  # nan (no run timed): "-"
    lines.append(ROW % tuple(
        row + [num(md, "%.3f"), num(mt, "%.3f"), num(md / mt if mt else float("nan"), "%.3fx"),
               verdict]))
    return int(verdict in ("FAILED", "DIFFER"))


for pid, proj, cmd in progs:
    bad += check_one(pid, cmd)
    save()

print(table(), end="")
sys.exit(1 if bad else 0)
PY
python3 "$w/check.py" "$w"
