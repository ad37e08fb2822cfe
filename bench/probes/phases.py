#!/usr/bin/env python3
"""phases.py - where a whole process's time goes, natively and under the library.

Runs one command under several environments, alternating, and timestamps its
output lines (stdout and stderr) as they arrive: 'before' is spawn to the first line matching
--mark (the bundled prover prints its 'stage' lines just before it returns
from main), 'after' is that line to the process's exit (atexit handlers,
CUDA's teardown), 'whole' is spawn to exit, 'value' a number the program
printed (--value, group 1: the prover's stage total by default). Medians of
--runs after one warm-up of each. A probe, not a benchmark row: it decides where to look.

    phases.py --runs 7 --lib .libs/libgpuaccel.so \
        --env native: --env lib:GPUACCEL_COALESCE=1 -- ./prover
"""
import argparse
import os
import re
import statistics
import subprocess
import time


def run_once(cmd, env, mark, value):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t_mark, v = None, float("nan")
    for line in p.stdout:
        text = line.decode(errors="replace")
        if t_mark is None and mark.search(text):
            t_mark = time.perf_counter()
        m = value.search(text) if value else None
        if m:
            v = float(m.group(1))
    p.wait()
    t1 = time.perf_counter()
    if t_mark is None:
        t_mark = t1
    return (t_mark - t0, t1 - t_mark, t1 - t0, p.returncode, v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--mark", default=r"^stage ")
    ap.add_argument("--value", default=r"^stage total ([0-9.]+)",
                    help="a number the program prints (group 1), its median shown too")
    ap.add_argument("--env", action="append", default=[],
                    help="NAME:VAR=VAL,VAR=VAL ('native' runs without the library)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    mark = re.compile(a.mark)
    value = re.compile(a.value) if a.value else None
    setups = []
    for spec in a.env or ["native:", "lib:"]:
        name, _, vars_ = spec.partition(":")
        env = dict(os.environ)
        if name != "native":
            env["LD_PRELOAD"] = os.path.abspath(a.lib)
        for kv in filter(None, vars_.split(",")):
            k, _, v = kv.partition("=")
            env[k] = v
        setups.append((name, env))
    res = {name: [] for name, _ in setups}
    for rep in range(a.runs + 1):
        for name, env in setups:
            r = run_once(cmd, env, mark, value)
            if r[3] != 0:
                print(f"{name}: exit status {r[3]}")
            if rep:
                res[name].append(r)
    print(f"{' '.join(cmd)}: medians of {a.runs} (ms)")
    print(f"{'setup':<24}{'before':>10}{'after':>10}{'whole':>10}{'value':>10}")
    for name, _ in setups:
        cols = [statistics.median(x[i] for x in res[name]) * 1e3 for i in range(3)]
        val = statistics.median(x[4] for x in res[name])
        print(f"{name:<24}{cols[0]:>10.1f}{cols[1]:>10.1f}{cols[2]:>10.1f}{val:>10.3f}")


if __name__ == "__main__":
    main()
