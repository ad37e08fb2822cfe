#!/bin/sh
# advise-check.sh (GPU) - does `gpuaccel advise` find the win on a real prover,
# and do `gpuaccel profile`'s estimates match what each feature gains? For each
# corpus program (tests/corpus/corpus.sh names, sizes and runs them the same way):
#
#  1. advise's pick (its figure from the fresh rounds advise gives the pick after
#     its search): `gpuaccel advise --metric ... --window BEGIN END --check-digest ...
#     --budget B --write pick.conf` (its profile run counts only inside the timed
#     phase, whose lines the drivers print), its speedup and interval; then an exhaustive check: every
#     subset of the features advise reports as paid (a feature alone whose interval
#     of the median speedup is above 1.0x: advise's own rule; at most 4 of them, the
#     fastest first: 16 subsets), each run with the library and only those features
#     on (the empty subset is native: the program without the library, as advise's
#     "native" pick means), and the pick (GPUACCEL_CONFIG=pick.conf) beside them, in
#     GA_ADVISE_ROUNDS alternating rounds (the order rotated each round), timed by
#     the same metric. The pick must be within 10% of the best subset (median
#     against median); and `gpuaccel ab --config pick.conf` must reproduce advise's
#     speedup within 10%.
#  2. every opportunity of `gpuaccel profile --phase BEGIN END -o FILE -- PROGRAM`
#     (FILE.json's saving_ns, counted inside the timed phase only: the drivers'
#     Phase prints "phase: begin" and "phase: end" around it) beside the measured gain of that feature alone (native's median
#     less the feature's, by the metric): from the exhaustive rounds where the
#     feature paid, else from advise's own runs of it alone; coalesce_mirrors is
#     measured as coalesce with GPUACCEL_COALESCE_MIRRORS=1 against coalesce alone.
#     Within 25%, or the reason it cannot be (no estimate, nothing to act on, below
#     the runs' noise, the gain's 95% interval (programs.py's gain_ci) reaches the
#     estimate's +-25% band, the saving falls outside the timed phase, ...).
#
# usage: [GA_CORPUS_BIN=DIR] [GA_ADVISE_ONLY="sppark risc0_sha256"] [OUT=DIR]
#        sh tests/corpus/advise-check.sh
#   GA_CORPUS_BIN       the built drivers (tests/corpus/build.sh DEST); else
#                       $GA_CORPUS/bin (GA_CORPUS: default .carry/corpus of the tree)
#   GA_ADVISE_ONLY      programs to check: a project (sppark risc0 stwo icicle), a
#                       program (risc0_sha256) or an id (risc0_sha256_20); default all:
#                       sppark_ntt, risc0_poseidon2, risc0_sha256, stwo_commit,
#                       stwo_proof, icicle_groth16. Parallel lanes: one GA_ADVISE_ONLY and one
#                       CUDA_VISIBLE_DEVICES (passed on untouched) each.
#   GA_ADVISE_SIZE      log2 size of every program (default 20)
#   GA_ADVISE_BUDGET    seconds per program, all of it (default 90): the profile, advise
#                       (--budget: 40% of it, at least 5 s; its first pass runs every
#                       setting once however long that takes), the exhaustive rounds
#                       (as many of GA_ADVISE_ROUNDS as fit, said so when fewer) and ab
#   GA_ADVISE_ROUNDS    exhaustive rounds (default 5)
#   GA_ADVISE_AB_RUNS   ab --config's runs (-r, default 5, after one warm-up: with 3, stwo-gpu's
#                       commitment, whose runs of one setting spread 90-170 ms, missed
#                       advise's figure by a quarter)
#   GA_ADVISE_METRIC    the metric (default '^phase_ms: *([0-9.]+)')
#   GA_ADVISE_DIGEST    the check line (default '^digest: ')
#   GA_ADVISE_BEGIN, GA_ADVISE_END
#                       the lines around the timed phase that the profile counts in
#                       (default '^phase: begin' and '^phase: end'; GA_ADVISE_BEGIN
#                       set empty: the whole process)
#   GA_ADVISE_PROGRAMS  other programs in place of the corpus (stand-ins):
#                       'ID CMD ARGS...;ID CMD ARGS...'; no GPU is required then
#   GA_ADVISE_STAGE     all (default); advise: stop each program after advise (its
#                       files, stage.json among them, in $OUT/advise-check/ID); rounds:
#                       take each program's profile and advise from GA_ADVISE_FROM/ID
#                       (a folder the advise stage wrote, copied anywhere) and go on
#                       from the exhaustive rounds, GA_ADVISE_BUDGET then counting from
#                       there. For a program whose check passes a call's limit (ICICLE:
#                       ~4.4 s a run, ~20 settings of 5 rounds): two calls. table: the
#                       tables again from a whole check's folder (its rounds.txt and
#                       ab.json too), running nothing
#   GA_TOOL, GA_LIB     gpuaccel and libgpuaccel.so (default: tools/gpuaccel and
#                       .libs/libgpuaccel.so of the tree)
# Prints two tables (also to $OUT/advise-check.txt, or advise-check-WORDS.txt with
# GA_ADVISE_ONLY, so that lanes do not overwrite each other); each program's
# files (advise's output and export, pick.conf, the profile, ab's export, every
# timed run) go to $OUT/advise-check/ID/. Exit status: 0 when every pick is within
# 10% of the best subset and ab reproduces it, 1 otherwise, 77 when nothing ran.
set -u
# (no GPU needed for stand-ins, nor to make the tables again from saved runs)
check_name=advise-check check_stand_ins=${GA_ADVISE_PROGRAMS:-}
[ "${GA_ADVISE_STAGE:-}" = table ] && check_stand_ins=table
. "$(dirname "$0")/common/check.sh"
cat >"$w/check.py" <<'PY'
import json, math, os, re, shutil, subprocess, sys, time
from itertools import combinations

E = os.environ
src, tool, lib = E["GA_SRC"], E["GA_TOOL"], E["GA_LIB"]
work = sys.argv[1]
budget = float(E.get("GA_ADVISE_BUDGET") or 90)
nrounds = int(E.get("GA_ADVISE_ROUNDS") or 5)
ab_runs = int(E.get("GA_ADVISE_AB_RUNS") or 5)
metric = E.get("GA_ADVISE_METRIC") or r"^phase_ms: *([0-9.]+)"
digest = E.get("GA_ADVISE_DIGEST") or r"^digest: "
begin = E.get("GA_ADVISE_BEGIN", r"^phase: begin")
end = E.get("GA_ADVISE_END") or r"^phase: end"
window = ["--phase", begin, end] if begin else []  # profile's; advise takes --window
size = E.get("GA_ADVISE_SIZE") or "20"
only = (E.get("GA_ADVISE_ONLY") or "").split()
out_dir = E.get("OUT") or ""
stage = E.get("GA_ADVISE_STAGE") or "all"
from_dir = E.get("GA_ADVISE_FROM") or ""
if stage not in ("all", "advise", "rounds", "table") or \
        (stage in ("rounds", "table")) != bool(from_dir):
    print("advise-check: GA_ADVISE_STAGE is all, advise, rounds or table (rounds and table with "
          "GA_ADVISE_FROM, a folder an earlier stage wrote), not %r" % stage, file=sys.stderr)
    sys.exit(2)
metric_re, digest_re = re.compile(metric), re.compile(digest)

# The switchable features, as advise names them (features.def's rows with 1).
feats = []
try:
    for l in open(os.path.join(src, "src/features/features.def")):
        m = re.match(r"GA_FEATURE\([a-z_]*, *GPUACCEL_([A-Z_]*), *1\)$", l.strip())
        if m:
            feats.append(m.group(1).lower())
except OSError:
    pass
feats = feats or ["graphs", "kernels", "tune", "pool", "async_pool", "pinned", "coalesce",
                  "staging", "streams", "lazy_sync"]
VAR = lambda f: "GPUACCEL_" + f.upper()
clean = {k: v for k, v in E.items() if not k.startswith("GPUACCEL")}
for k in ("GA_TOOL",):
    clean[k] = E[k]  # stand-ins may ask `gpuaccel env` what they run under

# ---- the programs -------------------------------------------------------------------
sys.path.insert(0, os.path.join(src, "tests/corpus/common"))
from programs import programs, median, noise, gain_ci  # noqa: E402

progs = programs(src, size, only, E.get("GA_ADVISE_PROGRAMS"), E.get("GA_CORPUS_BIN"),
                 E.get("GA_CORPUS"))
if not progs:
    print("SKIP: no program to check (GA_ADVISE_ONLY, GA_CORPUS_BIN, GA_ADVISE_PROGRAMS)")
    sys.exit(77)

def run_tool(args, log, env=None):
    with open(log, "w") as f:
        t0 = time.time()
        p = subprocess.run([tool] + args, stdin=subprocess.DEVNULL, stdout=f,
                           stderr=subprocess.STDOUT, env=env or clean)
        return p.returncode, time.time() - t0

def fmt(x, d=2):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.*f" % (d, x)

def advise_stage(cmd, d, conf):
    """1. the profile (every feature off): the estimates, and a run's cost; 2. advise,
    with 40% of the budget for its measuring. Their times and advise's exit status."""
    base = os.path.join(d, "profile")
    _, t_prof = run_tool(["profile", "--lib", lib, "--force", "-o", base] + window + ["--"] + cmd,
                         os.path.join(d, "profile.log"))
    for f in os.listdir(d):
        if f.endswith(".trace.json"):
            os.unlink(os.path.join(d, f))  # large, and not read here
    b_adv = max(5, int(budget * 0.4))
    rc, t_adv = run_tool(["advise", "--lib", lib, "--budget", str(b_adv), "--metric", metric] +
                         (["--window", begin, end] if begin else []) +
                         ["--check-digest", digest, "--write", conf, "--export-json",
                          os.path.join(d, "advise.json"), "--"] + cmd, os.path.join(d, "advise.txt"))
    return t_prof, t_adv, rc


table1, table2, notes, bad = [], [], [], 0
for pid, proj, cmd in progs:
    t_start = time.time()
    d = os.path.join(out_dir, "advise-check", pid) if out_dir else os.path.join(work, pid)
    os.makedirs(d, exist_ok=True)
    say = lambda s: (notes.append("# %s: %s" % (pid, s)), print("# %s: %s" % (pid, s), file=sys.stderr,
                                                                flush=True))
    conf = os.path.join(d, "pick.conf")
    if stage in ("rounds", "table"):  # the earlier stage's files, then its figures
        prev = os.path.join(from_dir, pid)
        try:
            st = json.load(open(os.path.join(prev, "stage.json")))
        except (OSError, ValueError):  # a whole check's folder has none (the table stage)
            st = {"dir": prev, "t_prof": 0, "t_adv": 0, "rc": 0} if stage == "table" else None
        if st is None or not os.path.exists(os.path.join(prev, "advise.json")):
            say("no advise stage in %s (stage.json, advise.json)" % prev)
            table1.append((pid, "FAILED", "-", "-", "-", "-", "-", "-", "no", "-", "no", "-", "0"))
            bad = 1
            continue
        if os.path.abspath(prev) != os.path.abspath(d):
            for f in os.listdir(prev):
                shutil.copy(os.path.join(prev, f), d)
        # a tune table advise kept beside pick.conf moved with it
        if os.path.exists(conf):
            text = open(conf).read().replace(st["dir"] + "/", d + "/")
            open(conf, "w").write(text)
        t_prof, t_adv, rc = st["t_prof"], st["t_adv"], st["rc"]
    else:
        t_prof, t_adv, rc = advise_stage(cmd, d, conf)
        if stage == "advise":
            json.dump({"dir": d, "t_prof": t_prof, "t_adv": t_adv, "rc": rc},
                      open(os.path.join(d, "stage.json"), "w"))
            say("advise stage done (exit %d, %.0f s): the rounds next, with GA_ADVISE_FROM" %
                (rc, time.time() - t_start))
            continue
    prof = None
    cands = [os.path.join(d, f) for f in sorted(os.listdir(d))
             if f.startswith("profile.") and f.endswith(".json") and not f.endswith("trace.json")]
    for c in cands:  # a stand-in's shell writes one too: the one with CUDA work
        try:
            j = json.load(open(c))
        except (OSError, ValueError):
            continue
        if prof is None or sum(o.get("acts_on", 0) for o in j["opportunities"]) > \
                sum(o.get("acts_on", 0) for o in prof["opportunities"]):
            prof = j
    if prof is None:
        say("no profile came back (see profile.log)")
    est = {o["feature"]: o for o in (prof or {}).get("opportunities", [])}
    text = open(os.path.join(d, "advise.txt")).read()
    try:
        adv = json.load(open(os.path.join(d, "advise.json")))
    except (OSError, ValueError):
        adv = None
    if rc != 0 or adv is None or not os.path.exists(conf):
        say("advise failed (exit %d; see advise.txt): %s" % (rc, text.strip().splitlines()[-1:]))
        table1.append((pid, "FAILED", "-", "-", "-", "-", "-", "-", "no", "-", "no", "-",
                       "%.0f" % (time.time() - t_start)))
        bad = 1
        continue
    advice = next((l for l in text.splitlines() if l.startswith("advice: ")), "")
    m = re.match(r"advice: (\S+) \(.*\): ([0-9.]+)x of native, 95% interval ([0-9.]+)-([0-9.]+)x", advice)
    fastest = ""
    if m:
        pick, pick_x, pick_lo, pick_hi = m.group(1), float(m.group(2)), m.group(3), m.group(4)
    else:  # native: nothing separated, or every setting slower
        m = re.search(r"([0-9.]+)x(?:,| with) (?:a )?95% interval (?:of )?([0-9.]+)-([0-9.]+)x", advice)
        pick, pick_x, pick_lo, pick_hi = "native", 1.0, "1.00", "1.00"
        fastest = ",fastest=%sx:%s-%s" % m.groups() if m else ""
    on = [f for f in feats if re.search(r"^%s=1$" % VAR(f), open(conf).read(), re.M)]
    failed = set(l.split()[0] for l in text.splitlines() if re.search(r" (FAILED|differs?)$", l))
    rows = {r["feature"]: r for r in adv["rows"]}
    adv_native = adv["native"]["times"]
    paid = [f for f in feats if f in rows and f not in failed and rows[f].get("outputs_agree") is not False
            and (rows[f].get("speedup_interval_low") or 0) > 1.0]
    paid.sort(key=lambda f: -(rows[f].get("speedup_paired_median") or 0))
    table = re.search(r"^GPUACCEL_TUNE_TABLE=(.*)$", open(conf).read(), re.M)
    if "tune" in paid and not table:
        paid.remove("tune")
        say("tune paid, but advise kept no table (its pick has no tune): left out of the subsets")
    if len(paid) > 4:
        say("paid: %s; the subsets of the first 4 only" % ",".join(paid))
        paid = paid[:4]
    # 3. the exhaustive rounds: native, every subset of the paid features, the pick.
    # The empty subset is native: advise's "no setting" is the program without the
    # library, never the library with every feature off.
    settings = [("native", None)]
    for k in range(1, len(paid) + 1):
        for s in combinations(paid, k):
            env = dict(clean, LD_PRELOAD=lib, GPUACCEL="safe")
            env.update({VAR(f): "1" if f in s else "0" for f in feats})
            if table and "tune" in s:
                env["GPUACCEL_TUNE_TABLE"] = table.group(1)
            settings.append(("{" + ",".join(s) + "}", env))
    if pick != "native":
        settings.append(("pick", dict(clean, LD_PRELOAD=lib, GPUACCEL_CONFIG=os.path.abspath(conf))))
    mir = est.get("coalesce_mirrors")
    if mir and mir.get("acts_on"):
        for lab, extra in (("{coalesce}", {}), ("coalesce+mirrors", {"GPUACCEL_COALESCE_MIRRORS": "1"})):
            if lab not in [s[0] for s in settings]:
                env = dict(clean, LD_PRELOAD=lib, GPUACCEL="safe", **extra)
                env.update({VAR(f): "1" if f == "coalesce" else "0" for f in feats})
                settings.append((lab, env))
    # a run's cost: advise's runs (the profile's when none were counted)
    nruns = len(adv_native) + sum(r.get("runs", 0) for r in adv["rows"])
    t_run = min(t_prof, t_adv / max(1, nruns + 1)) if nruns else t_prof
    ab_cost = (1 + ab_runs) * 2 * t_run
    left = budget - (time.time() - t_start) - ab_cost
    fit = int(left // (len(settings) * t_run)) if t_run > 0 else nrounds
    rounds = max(1, min(nrounds, fit))
    if rounds < nrounds and stage != "table":
        say("%d exhaustive round%s of %d: %d settings at ~%.1f s a run, %.0f s of the %.0f s budget "
            "left before ab" % (rounds, "" if rounds == 1 else "s", nrounds, len(settings), t_run,
                                max(0, left), budget))
    vals = {s[0]: [] for s in settings}
    walls = {s[0]: [] for s in settings}
    state = {s[0]: "ok" for s in settings}
    ref = None

    def record(ref, lab, rc, mv, wall, dg):
        """One run of setting lab (mv its metric, None: no metric line): kept, or
        the setting left out. The reference digest (native's first) after it."""
        if rc != 0 or mv is None:
            state[lab] = "FAILED" if rc else "NO-METRIC"
            say("%s: run failed (exit %d%s)" % (lab, rc, "" if mv is not None else ", no metric line"))
            return ref
        if lab == "native" and ref is None:
            ref = dg
        elif dg != ref:
            state[lab] = "DIFFERS"
            say("%s: digest %s, native's %s: left out" % (lab, dg, ref))
            return ref
        vals[lab].append(mv), walls[lab].append(wall * 1000)
        return ref

    if stage == "table":  # the runs as rounds.txt has them
        rounds = 0
        for l in open(os.path.join(d, "rounds.txt")):
            if l.startswith("#") or not l.strip():
                continue
            r, lab, rc, mv, wall, dg = (l.rstrip("\n").split(" ", 5) + [""] * 6)[:6]
            if lab in state and state[lab] == "ok":
                ref = record(ref, lab, int(rc), None if mv == "-" else float(mv), float(wall),
                             None if dg == "None" else dg)
            rounds = max(rounds, int(r))
    else:
        log = open(os.path.join(d, "rounds.txt"), "w")
        log.write("# round setting rc metric wall_s digest\n")
        for r in range(rounds):
            for i in range(len(settings)):
                lab, env = settings[(i + r) % len(settings)]
                if state[lab] != "ok":
                    continue
                t0 = time.time()
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env if env else
                                   {k: v for k, v in clean.items() if k != "LD_PRELOAD"})
                wall = time.time() - t0
                out = p.stdout.decode(errors="replace").splitlines()
                mv = [mm.group(1) for mm in map(metric_re.search, out) if mm]
                dg = next((l for l in out if digest_re.search(l)), None)
                log.write("%d %s %d %s %.3f %s\n" % (r + 1, lab, p.returncode, mv[-1] if mv else "-",
                                                     wall, dg))
                ref = record(ref, lab, p.returncode, float(mv[-1]) if mv else None, wall, dg)
        log.close()
    med = {k: median(v) for k, v in vals.items()}
    subs = [s[0] for s in settings if state[s[0]] == "ok" and vals[s[0]] and (s[0] == "native" or (
            s[0].startswith("{") and set(filter(None, s[0][1:-1].split(","))) <= set(paid)))]
    best = min(subs, key=lambda s: med[s]) if subs else None
    pick_lab = "pick" if pick != "native" else "native"
    pm = med.get(pick_lab) if vals.get(pick_lab) else None
    ratio = pm / med[best] if best and pm and med[best] > 0 else None
    within = "yes" if ratio is not None and ratio <= 1.10 else "no"
    # 4. ab --config: does the pick reproduce?
    rc = 0
    if stage != "table":
        rc, _ = run_tool(["ab", "--lib", lib, "-r", str(ab_runs), "--config", conf, "--metric",
                          metric, "--check-digest", digest, "--export-json",
                          os.path.join(d, "ab.json"), "--"] + cmd, os.path.join(d, "ab.txt"))
    repro, repro_ok = None, "no"
    try:
        ab = json.load(open(os.path.join(d, "ab.json")))
        abx = ab["native"]["median"] / ab["rows"][0]["median"]
        repro = abx / pick_x
        repro_ok = "yes" if abs(repro - 1) <= 0.10 and rc == 0 else "no"
    except (OSError, ValueError, KeyError, IndexError, ZeroDivisionError, TypeError):
        say("ab --config failed (exit %d; see ab.txt)" % rc)
    if within != "yes" or repro_ok != "yes":
        bad = 1
    table1.append((pid, pick, "%.2fx(%s-%s%s)" % (pick_x, pick_lo, pick_hi, fastest), ",".join(paid) or "none",
                   best or "-", fmt(med[best]) if best else "-", fmt(pm), fmt(ratio, 3), within,
                   fmt(repro, 3), repro_ok, "%d/%d" % (rounds, nrounds), "%.0f" % (time.time() - t_start)))
    say("pick %s: %s on" % (pick, ",".join(on) or "none"))
    # 5. each estimate beside the gain of its feature alone.
    nat = vals["native"] or []
    nz = noise(nat) if nat else noise(adv_native)
    for f, o in est.items():
        e_ms = o["saving_ns"] / 1e6
        src_lab, g, gw, ci = None, None, None, None
        if f == "coalesce_mirrors":
            if vals.get("coalesce+mirrors") and vals.get("{coalesce}"):
                g = med["{coalesce}"] - med["coalesce+mirrors"]
                ci = gain_ci(vals["{coalesce}"], vals["coalesce+mirrors"])
                src_lab = "rounds(%d), vs coalesce" % len(vals["coalesce+mirrors"])
        elif vals.get("{%s}" % f):
            g = (med["native"] - med["{%s}" % f])
            ci = gain_ci(vals["native"], vals["{%s}" % f])
            gw = median(walls["native"]) - median(walls["{%s}" % f])
            src_lab = "rounds(%d)" % len(vals["{%s}" % f])
        elif f in rows and rows[f].get("runs") and f not in failed:
            g = median(adv_native) - rows[f]["median"]
            ci = gain_ci(adv_native, rows[f].get("times") or [])
            src_lab = "advise(%d)" % rows[f]["runs"]
        r2 = g / e_ms if g is not None and e_ms > 0 else None
        # the runs cannot tell the gain from the estimate: its interval reaches the band
        untold = ci is not None and e_ms > 0 and ci[0] <= 1.25 * e_ms and ci[1] >= 0.75 * e_ms
        if o["verdict"] == "unknown":
            why = "n/a: no estimate (only a measurement can tell)"
        elif g is None:
            why = "n/a: not measured alone" + (" (nothing to act on: advise left it out)"
                                                if not o.get("acts_on") else " (its runs failed)"
                                                if f in failed else "")
        elif e_ms < nz and abs(g) < nz:
            why = "n/a: estimate and gain both within the noise (+-%.2f)" % nz
        elif r2 is not None and 0.75 <= r2 <= 1.25:
            why = "yes"
        elif untold:
            why = ("n/a: the gain's 95%% interval, %.2f to %.2f, reaches the estimate's +-25%%: "
                   "too few or too spread runs to tell them apart" % ci)
        else:
            why = "no"
            if not o.get("acts_on"):
                why += ": estimated nothing to act on, measured %.2f (beyond +-%.2f)" % (g, nz)
            elif g < 0 and (ci is None or ci[1] < 0):
                why += ": it costs more here than it saves (its own cost is not estimated)"
            elif ci is not None and ci[1] < 0.75 * e_ms:
                why += (": the estimate is above the gain's 95%% interval (%.2f to %.2f): the "
                        "one profiled run's costs were not these runs'" % ci)
            elif gw is not None and e_ms > 0 and 0.75 <= gw / e_ms <= 1.25:
                why += ": outside the timed phase (whole-process gain %.1f ms matches)" % gw
            elif f == "coalesce_mirrors":
                why += ": the estimate is before the mirrors' copies (not recorded)"
            elif "assumed" in o.get("reason", ""):
                why += ": the estimate rests on an assumed figure"
            elif e_ms < nz:
                why += ": the estimate is below the noise (+-%.2f), the gain beyond it" % nz
            elif r2 is not None:
                why += ": the gain is %.2fx the estimate" % r2
        table2.append((pid, f, o["verdict"], fmt(e_ms), fmt(g), src_lab or "-",
                       "%s..%s" % (fmt(ci[0]), fmt(ci[1])) if ci else "-", fmt(r2), why))

# ---- the tables ---------------------------------------------------------------------
lines = ["# advise-check: budget %.0f s a program, %d exhaustive rounds asked, ab --config -r %d; "
         "metric %s, digest %s, profiled between %s" % (budget, nrounds, ab_runs, metric, digest,
                                                       "%s and %s" % (begin, end) if begin
                                                       else "start and exit")] + notes
h1 = ("program", "pick", "advise(95%)", "paid", "best_subset", "best_med", "pick_med", "pick/best",
      "within10", "ab/advise", "reproduced", "rounds", "secs")
w1 = [max(len(str(r[i])) for r in [h1] + table1) for i in range(len(h1))]
lines += ["  ".join(str(c).ljust(w1[i]) for i, c in enumerate(r)).rstrip() for r in [h1] + table1]
lines.append("")
h2 = ("program", "feature", "verdict", "est_ms", "gain_ms", "measured_by", "gain_95%", "gain/est",
      "within25")
w2 = [max(len(str(r[i])) for r in [h2] + table2) for i in range(len(h2) - 1)] + [0]
lines += ["  ".join(str(c).ljust(w2[i]) for i, c in enumerate(r)).rstrip() for r in [h2] + table2]
text = "\n".join(lines) + "\n"
print(text, end="")
if out_dir:
    name = "advise-check%s.txt" % ("-" + "-".join(only) if only else "")
    open(os.path.join(out_dir, name), "w").write(text)
sys.exit(bad)
PY
[ -n "${OUT:-}" ] && mkdir -p "$OUT"
python3 "$w/check.py" "$w"
