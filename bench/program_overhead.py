#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What bkm's supervision of a user's program costs it: the same fixed-work OpenMP program
(tests/tuner/programs/omp_prog.c, mode "work": a fixed amount of arithmetic per region, so a
slowed-down run takes longer) run bare and under `tune run -- PROG` (its own process group,
the thread sampler reading /proc/PID/task every 20 ms, the team shim preloaded, the output
read through a pipe), interleaved in pairs (the order alternates), in one run of this script.

Two figures per pair, each as supervised / bare:
  wall      the process's wall time from fork to exit (bare: measured around the fork and the
            wait by this script; supervised: the program's wall_ms bkm stores)
  work      the sum of the region times the program prints itself (what a sampler stealing
            CPU time from the team would slow down)
Target (issue 24): the median ratio <= 1.01 for a program of about one second.

usage: bench/program_overhead.py [--tune build/tune] [--prog build/tests/tuner/omp_prog_gcc]
                                 [--pairs 10] [--threads 2] [--regions 10] [--ms 280]
Prints one line per pair, then the medians with their range and the CPU (`tune topo`).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

METRIC = r"avg time ([0-9.]+) millisecond"


def work_ms(text):
    return sum(float(m) for m in re.findall(METRIC, text))


def bare(argv, threads):
    env = {k: v for k, v in os.environ.items() if not re.match(r"^(OMP|KMP|GOMP)_", k)}
    env["OMP_NUM_THREADS"] = str(threads)
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    wall = (time.monotonic() - t0) * 1e3
    return wall, work_ms(p.stdout.decode())


def supervised(tune, argv, threads):
    p = subprocess.run([tune, "run", "--threads", str(threads), "--metric", METRIC, "--json", "--"] + argv,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    if p.returncode not in (0, 1):   # 1: a binding mismatch still measured the program
        sys.exit("program_overhead: tune run exited %d" % p.returncode)
    doc = json.loads(p.stdout)
    wall = doc["binding"]["program"]["wall_ms"]
    return wall, sum(doc["samples_ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tune", default="build/tune")
    ap.add_argument("--prog", default="build/tests/tuner/omp_prog_gcc")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--regions", type=int, default=10)
    ap.add_argument("--ms", type=float, default=280.0)
    a = ap.parse_args()
    for path in (a.tune, a.prog):
        if not os.access(path, os.X_OK):
            sys.exit("program_overhead: %s is not an executable (build first, or give --tune/--prog)" % path)
    argv = [os.path.abspath(a.prog), "work", str(a.regions), str(a.ms)]
    topo = subprocess.run([a.tune, "topo"], stdout=subprocess.PIPE, text=True).stdout.splitlines()
    print("cpu: " + " | ".join(topo[:2]))
    print("program: %s, OMP_NUM_THREADS=%d, %d pairs, order alternating" % (" ".join(argv), a.threads, a.pairs))
    bare(argv, a.threads)   # warm the page cache and the CPU frequency
    r_wall, r_work = [], []
    for i in range(a.pairs):
        if i % 2 == 0:
            b = bare(argv, a.threads)
            s = supervised(a.tune, argv, a.threads)
        else:
            s = supervised(a.tune, argv, a.threads)
            b = bare(argv, a.threads)
        r_wall.append(s[0] / b[0])
        r_work.append(s[1] / b[1])
        print("pair %2d  bare wall %8.1f ms work %8.1f ms | supervised wall %8.1f ms work %8.1f ms | "
              "ratio wall %.4f work %.4f" % (i + 1, b[0], b[1], s[0], s[1], r_wall[-1], r_work[-1]))
    for name, r in (("wall", r_wall), ("work", r_work)):
        print("%-4s supervised/bare: median %.4f (min %.4f, max %.4f) over %d pairs" %
              (name, statistics.median(r), min(r), max(r), len(r)))


if __name__ == "__main__":
    main()
