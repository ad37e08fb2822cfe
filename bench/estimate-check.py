#!/usr/bin/env python3
"""estimate-check.py - a profiler estimate against the gain it predicts.

Runs CMD once under `gpuaccel profile` (every feature off) and reads the
saving the report estimates for FEATURE; then times CMD natively and with
FEATURE alone (`gpuaccel ab`, alternating, RUNS each, after a warm-up) and
prints the measured saving (native median - FEATURE median) beside the
estimate, their ratio, and whether they agree within TOLERANCE.

Exit status 0 when they agree, 1 when they do not, 2 on a usage or run error.

usage: bench/estimate-check.py [--gpuaccel PATH] [--feature NAME] [--runs N]
                               [--tolerance F] -- CMD [ARGS...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def estimate(gpuaccel, feature, cmd, tmp):
    out = os.path.join(tmp, "profile")
    subprocess.run([gpuaccel, "profile", "--force", "-o", out, "--"] + cmd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(out + ".json") as f:
        for op in json.load(f)["opportunities"]:
            if op["feature"] == feature:
                return op["saving_ns"] / 1e9, op["reason"]
    raise SystemExit(f"estimate-check: the profile names no opportunity for {feature}")


def measured(gpuaccel, feature, runs, cmd, tmp):
    out = os.path.join(tmp, "ab.json")
    subprocess.run([gpuaccel, "ab", "-n", str(runs), "--feature", feature, "--export-json", out,
                    "--"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(out) as f:
        ab = json.load(f)
    return ab["native"]["median_s"], ab["rows"][0]["median_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpuaccel", default="tools/gpuaccel")
    ap.add_argument("--feature", default="pool")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            est, reason = estimate(a.gpuaccel, a.feature, cmd, tmp)
            nat, feat = measured(a.gpuaccel, a.feature, a.runs, cmd, tmp)
        except (subprocess.CalledProcessError, OSError, KeyError, ValueError) as e:
            print(f"estimate-check: {e}", file=sys.stderr)
            return 2
    gain = nat - feat
    ratio = est / gain if gain > 0 else float("inf")
    ok = gain > 0 and abs(ratio - 1) <= a.tolerance
    print(f"estimate-check {a.feature}: {' '.join(cmd)}")
    print(f"  profile says: {reason}")
    print(f"  estimate {est * 1e3:.2f} ms, measured {gain * 1e3:.2f} ms "
          f"(native {nat * 1e3:.2f} ms, {a.feature} {feat * 1e3:.2f} ms, medians of {a.runs}); "
          f"estimate/measured {ratio:.2f}: {'within' if ok else 'outside'} "
          f"{a.tolerance * 100:.0f}%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
