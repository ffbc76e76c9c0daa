#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CLI fuzz test of `tune`: random and hostile argv for every command.

Each case runs one `tune` command line, built from the command's own option names (in both
`--opt value` and `--opt=value` spellings, shuffled, some repeated, some missing their value)
with values drawn from a hostile pool (empty, huge, negative, NaN, overlong, invalid UTF-8,
format strings, /dev/zero, a FIFO, a directory, a missing path, settings that once crashed the
parser) and from random bytes. Commands that would measure get --dry-run. It fails on:
  - a death by signal (SIGSEGV, SIGABRT, ...) or a sanitizer report;
  - a hang (no exit within BKM_FUZZ_TIMEOUT seconds, default 30);
  - an exit status outside 0-4 (tune's documented codes);
  - a --dry-run that wrote a database;
  - an input database that changed (best, export, replay and merge inputs are compared byte
    for byte).
Environment: BKM_TUNE (the binary), BKM_SOURCE_DIR, BKM_FUZZ_CASES (default 300),
BKM_FUZZ_SEED (default 20261201). A failing case is printed as a shell-quoted command line so it
can be replayed by hand.
"""
import hashlib
import os
import random
import shlex
import shutil
import sqlite3
import signal
import stat
import subprocess
import sys
import tempfile
import time

TUNE = os.environ.get("BKM_TUNE")
SRC = os.environ.get("BKM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = int(os.environ.get("BKM_FUZZ_CASES", "300"))
SEED = int(os.environ.get("BKM_FUZZ_SEED", "20261201"))
TIMEOUT = float(os.environ.get("BKM_FUZZ_TIMEOUT", "30"))

if not TUNE or not os.access(TUNE, os.X_OK):
    print("cli_fuzz: BKM_TUNE is not set to an executable", file=sys.stderr)
    sys.exit(1)

# Options of each command, as `tune CMD --help` documents them. 'flag' takes no value.
COMMON_NODE = ["--node", "--profile", "--xml", "--synthetic"]
COMMANDS = {
    "topo": {"opts": COMMON_NODE + ["--mask", "--allowed"], "flags": ["--json"]},
    "affinity explain": {
        "opts": COMMON_NODE + ["--mask", "--kmp-affinity", "--places", "--proc-bind", "--hw-subset",
                               "--gomp-cpu-affinity", "--blocktime", "--wait-policy", "--threads"],
        "flags": ["--json", "--tiles", "--mic", "--env"], "positional": True},
    "affinity verify": {
        "opts": ["--kmp-affinity", "--places", "--proc-bind", "--hw-subset", "--gomp-cpu-affinity",
                 "--blocktime", "--wait-policy", "--threads"],
        "flags": ["--json", "--env"], "positional": True},
    "run": {
        "opts": ["--workload", "--backend", "--threads", "--affinity", "--blocktime", "--param",
                 "--warmup", "--min-samples", "--iters", "--min-time", "--max-samples", "--max-time", "--data-seed",
                 "--seed", "--counters", "--trial-timeout"],
        "flags": ["--json"], "always": ["--dry-run"]},
    "sweep": {
        "opts": ["--workload", "--node", "--threads", "--affinity", "--blocktime", "--hw-subset",
                 "--param", "--backend", "--strategy", "--budget", "--time", "--seed", "--data-seed", "--min-time",
                 "--min-samples", "--max-samples", "--trial-timeout", "--confirm-top", "--counters",
                 "--db", "--sbatch", "--slurm-array", "--account", "--qos", "--partition", "--slurm-time",
                 "--job-name", "--shard", "--shard-group"],
        "flags": ["--tunables", "--fresh", "--json"], "always": ["--dry-run"]},
    "": {  # `tune --workload ...` is the sweep too
        "opts": ["--workload", "--node", "--threads", "--affinity", "--blocktime", "--param",
                 "--strategy", "--budget", "--min-samples", "--db"],
        "flags": ["--json"], "always": ["--dry-run"]},
    "replay": {"opts": ["--db", "--strategy", "--budget", "--seeds", "--sweep", "--require"],
               "flags": ["--json"]},
    "best": {"opts": ["--node", "--workload", "--db"], "flags": ["--json"]},
    "export": {"opts": ["--format", "--db", "--sweep", "--node", "--workload"], "flags": []},
    "merge": {"opts": [], "flags": [], "merge": True},
    "version": {"opts": [], "flags": []},
    "sbatch": {"opts": ["--node", "--workload", "--db", "--output", "--account", "--qos", "--partition", "--time",
                        "--nodes", "--ranks-per-node", "--job-name", "--job-output", "--mpi", "--param", "--command"],
               "flags": ["--default", "--seed-bkm"]},
    "lint": {"opts": ["--node"], "flags": ["--json"], "positional": True},
    "report": {"opts": ["--db", "--output", "-o", "--sweep", "--node", "--workload", "--peak", "--title"],
               "flags": []},
    # kept cheap: one workload, 3 processes a side (a --record or an A/B run measures for real)
    "regress": {"opts": ["--output", "--baseline", "--against", "--junit", "--threads", "--param", "--threshold",
                         "--alpha", "--seed", "--db"],
                "flags": ["--record", "--json"], "always": ["--workloads", "gemm", "--processes", "3"]},
    "worker": {"opts": ["--spec", "--parent"], "flags": []},
    "train": {"opts": ["--workload", "--threads", "--param"], "flags": ["--json"], "always": ["--dry-run"]},
}

# Values that are meaningful for some option (so parsing gets past the first check) ...
GOOD = {
    "--node": ["auto", "knl", "haswell"],
    "--workload": ["gemm", "conv2d", "alexnet"],
    "--backend": ["native", "onednn"],
    "--threads": ["1", "2", "1,2", "4", "68"],
    "--affinity": ["granularity=fine,compact", "none", "default", "scatter",
                   "OMP_PLACES=cores OMP_PROC_BIND=close", "granularity=fine,compact,1,0"],
    "--kmp-affinity": ["granularity=fine,compact,1,0", "scatter", "explicit,proclist=[0,1]"],
    "--places": ["cores", "threads(2)", "{0:2}:4:2", "sockets"],
    "--proc-bind": ["close", "spread,close", "false", "primary"],
    "--hw-subset": ["1s,2c,1t", "64c@4,1t", "none"],
    "--gomp-cpu-affinity": ["0 1", "0-30:10"],
    "--blocktime": ["0", "200", "infinite", "0,200", "1s"],
    "--wait-policy": ["active", "passive"],
    "--param": ["m=32", "n=32,64", "k=16", "batch=1", "shape=alexnet:conv3", "mc=64"],
    "--strategy": ["grid", "random", "halving", "local"],
    "--budget": ["1", "5", "20"],
    "--time": ["90s", "5m", "1h"],
    "--seed": ["1", "7"],
    "--data-seed": ["1", "12345678901"],
    "--seeds": ["1", "3"],
    "--min-time": ["0.05", "0", "1"],
    "--min-samples": ["5", "1"],
    "--max-samples": ["50", "1"],
    "--trial-timeout": ["10", "0.5"],
    "--confirm-top": ["0", "3"],
    "--counters": ["none", "perf::TASK-CLOCK"],
    "--format": ["csv", "json"],
    "--peak": ["auto", "none"],
    "--threshold": ["0.1", "0.5"],
    "--alpha": ["0.01", "0.2"],
    "--output": ["r.html", "base.json"],
    "-o": ["r.html", "base.json"],
    "--sweep": ["1", "2"],
    "--require": ["1", "45"],
    "--iters": ["5", "1"],
    "--warmup": ["1", "0"],
    "--max-time": ["1", "0"],
    "--allowed": ["0", "0-1"],
    "--mask": ["0", "0-3,32-35"],
    "--synthetic": ["pack:2 core:4 pu:2", "pack:1 l2:2 core:2 pu:4"],
    "--spec": ['{"workload":"nope","threads":1}', '{"threads":-1}', "{", "[]", "null"],
    "--parent": ["1", "0", "-1"],
}
# Values that once crashed or hung `tune` (issue 7), kept as regressions for their options.
REGRESS = {
    "--affinity": ["OMP_PLACES=cores close", "OMP_PLACES={0:2}, {2:2}", "OMP_PROC_BIND=close spread"],
    "--places": ["cores close", "{0:2}, {2:2}"],
    "--proc-bind": ["close spread"],
    "--min-samples": ["200000"],
    "--max-samples": ["200000"],
}
# ... and hostile ones, for any option. Paths are filled in per run (see hostile_paths).
HOSTILE = ["", " ", "0", "-1", "-0", "1e308", "1e-320", "nan", "NaN", "inf", "-inf", "0x10", "1 ",
           " 1", "+1", "1,", ",", ",,,", "1-", "-", "--", "--json", "--help", "=", "==", "a=b=c",
           "9223372036854775807", "9223372036854775808", "-9223372036854775808",
           "99999999999999999999999", "4097", "65536", "1048577", "2147483648", "4294967296",
           "%s%s%s%n", "%x%x", "\\", "'", '"', "{", "}", "{0:2}, {2:2}", "OMP_PLACES=cores close",
           "OMP_PLACES={0:2}, {2:2}", "OMP_PROC_BIND=close spread", "OMP_PLACES=", "OMP_PROC_BIND=",
           "KMP_AFFINITY=compact", "granularity=", "compact,,", "compact,1,2,3,4,5",
           "explicit,proclist=[", "proclist=[0-99999]", "1t@1t", "999999c", "0c,0t", "m=0",
           "m=-1", "m=", "=5", "batch=99999999", "shape=", "shape=alexnet:conv99", "k=1e9",
           "1ms", "5 m", "-5m", "1e9h", "infinite,0", "A" * 5000, "\u00e9\u00e8", "\t\n",
           "threads(", "threads(0)", "threads(-1)", "cores(99999999999)", "{0:0}", "{0:-1}",
           "{0:2}:-4:2", "{0:2}:4:0", "{99999:1}", "!{0}", "{0,0,0}"]


def hostile_paths(tmp):
    """Files of every awkward kind, made once per run."""
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    garbage = os.path.join(tmp, "garbage.xml")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    prof_fifo = os.path.join(tmp, "fifo.profile")
    with open(prof_fifo, "w") as f:
        f.write("name = fifo\nxml = fifo\n")
    prof_bad = os.path.join(tmp, "bad.profile")
    with open(prof_bad, "w") as f:
        f.write("name = \nsynthetic = pack:0\nthreads = 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n")
    notdb = os.path.join(tmp, "notdb.sqlite")
    with open(notdb, "wb") as f:
        f.write(b"SQLite format 3\0" + os.urandom(2000))
    return [fifo, empty, garbage, prof_fifo, prof_bad, notdb, tmp, "/dev/zero", "/dev/null",
            "/nonexistent/dir/x", "/proc/self/mem", os.path.join(tmp, "missing.sqlite")]


def rand_bytes(rng):
    n = rng.randint(0, 40)
    # argv cannot hold NUL; anything else goes, invalid UTF-8 included
    return bytes(rng.randint(1, 255) for _ in range(n))


def mutate(rng, s):
    """A meaningful value, slightly broken: the inputs that get deepest into a parser."""
    pieces = [" ", ",", ":", "{", "}", "=", "-", "0", "9", "@", "(", ")", "!", " close", ",spread",
              "OMP_PLACES=", " OMP_PROC_BIND=", "KMP_AFFINITY="]
    s = list(s)
    for _ in range(rng.randint(1, 3)):
        k = rng.random()
        i = rng.randint(0, len(s))
        if k < 0.4:
            s[i:i] = list(rng.choice(pieces))
        elif k < 0.7 and s:
            del s[min(i, len(s) - 1)]
        elif s:
            j = rng.randint(0, len(s))
            s[i:i] = s[min(i, j):max(i, j)]          # duplicate a slice
    return "".join(s)


def pick_value(rng, opt, paths, dbs):
    r = rng.random()
    if opt in ("--db", "--xml", "--profile") and r < 0.6:
        return rng.choice(paths + dbs)
    if r < 0.08 and opt in REGRESS:
        return rng.choice(REGRESS[opt])
    if r < 0.3 and opt in GOOD:
        return rng.choice(GOOD[opt])
    if r < 0.55 and opt in GOOD:
        return mutate(rng, rng.choice(GOOD[opt]))
    if r < 0.85:
        return rng.choice(HOSTILE + paths)
    return rand_bytes(rng)


def to_bytes(x):
    return x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape")


def make_argv(rng, cmd, spec, paths, dbs):
    argv = cmd.split() if cmd else []
    opts, flags = spec["opts"], spec["flags"]
    if spec.get("merge"):
        items = [rng.choice(paths + dbs + [os.path.join(os.path.dirname(dbs[0]), "out.sqlite")])
                 for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            items.append(rand_bytes(rng))
        return argv + items
    n = rng.randint(0, 7)
    for _ in range(n):
        r = rng.random()
        if r < 0.12 and flags:
            argv.append(rng.choice(flags))
        elif r < 0.17:
            argv.append(rng.choice(["--bogus", "-x", "--", "-", "--threads=", "--=", "---threads"]))
        elif r < 0.22 and spec.get("positional"):
            argv.append(pick_value(rng, "--kmp-affinity", paths, dbs))
        elif opts:
            opt = rng.choice(opts)
            if rng.random() < 0.05:
                argv.append(opt)          # value missing (maybe last)
                continue
            val = pick_value(rng, opt, paths, dbs)
            if rng.random() < 0.3:
                argv.append(to_bytes(opt) + b"=" + to_bytes(val))
            else:
                argv += [opt, val]
    # mostly keep the required workload so parsing goes deep
    if cmd in ("run", "sweep", "") and rng.random() < 0.8 and "--workload" not in argv:
        argv += ["--workload", rng.choice(GOOD["--workload"])]
    if cmd == "" and "--workload" not in argv:
        argv += ["--workload", "gemm"]
    if cmd.startswith("affinity") and rng.random() < 0.8 and "--threads" not in argv:
        argv += ["--threads", rng.choice(["1", "2", "3"])]
    argv += spec.get("always", [])
    return argv


def fixed_cases(paths, dbs):
    """The command lines issue 7 reported, run first in every seed."""
    fifo, prof_fifo = paths[0], paths[3]
    out = os.path.join(os.path.dirname(dbs[0]), "out.sqlite")
    cases = [["--workload", "gemm", "--dry-run", "--affinity", a] for a in REGRESS["--affinity"]]
    cases += [["topo", "--xml", "/dev/zero"], ["topo", "--xml", fifo], ["topo", "--profile", prof_fifo],
              ["best", "--node", "auto", "--workload", "gemm", "--db", fifo],
              ["sweep", "--workload", "gemm", "--min-samples", "200000", "--dry-run"],
              ["merge", out, fifo], ["merge", out, dbs[0], dbs[0]]]
    return cases


def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def tree_files(root):
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def main():
    rng = random.Random(SEED)
    tmp = tempfile.mkdtemp(prefix="bkm-fuzz-")
    failures = []
    try:
        paths = hostile_paths(tmp)
        dbs = []
        src = os.path.join(SRC, "tests", "tuner", "data")
        data = os.path.join(tmp, "pristine")   # the input databases as loaded, to restore from
        os.mkdir(data)
        for name in ("gemm64", "conv2d"):
            # the recordings are SQL text: each loaded into a database, then copied for the cases
            pristine = os.path.join(data, name + ".sqlite")
            with open(os.path.join(src, name + ".sql"), encoding="utf-8") as f:
                con = sqlite3.connect(pristine)
                con.executescript(f.read())
                con.close()
            dst = os.path.join(tmp, name + ".sqlite")
            shutil.copyfile(pristine, dst)
            dbs.append(dst)
        sums = {p: digest(p) for p in dbs}
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMP_", "KMP_", "GOMP_", "BKM_DB", "HWLOC_"))}
        env["OMP_NUM_THREADS"] = "1"
        names = sorted(COMMANDS)
        t0 = time.monotonic()
        fixed = fixed_cases(paths, dbs)
        for case in range(CASES):
            if case < len(fixed):
                argv = [TUNE] + fixed[case]
                cmd = argv[1] if not argv[1].startswith("-") else ""
            else:
                cmd = rng.choice(names)
                argv = [TUNE] + make_argv(rng, cmd, COMMANDS[cmd], paths, dbs)
            bargv = [to_bytes(a) for a in argv]
            cwd = tempfile.mkdtemp(prefix="case-", dir=tmp)
            shown = " ".join(shlex.quote(a.decode("utf-8", "backslashreplace")) for a in bargv)
            start = time.monotonic()
            p = subprocess.Popen(bargv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            try:
                out, err = p.communicate(timeout=TIMEOUT)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                failures.append(f"case {case}: hang (no exit in {TIMEOUT:.0f} s): {shown}")
                continue
            finally:
                try:
                    os.killpg(p.pid, signal.SIGKILL)   # nothing of the case may outlive it
                except ProcessLookupError:
                    pass
            why = None
            if rc < 0:
                why = f"killed by signal {signal.Signals(-rc).name}"
            elif rc > 4:
                why = f"exit status {rc} outside 0-4"
            elif b"AddressSanitizer" in err or b"runtime error:" in err or b"LeakSanitizer" in err:
                why = "sanitizer report"
            elif "--dry-run" in argv and tree_files(cwd):
                why = f"--dry-run wrote {sorted(tree_files(cwd))}"
            else:
                changed = [d for d in dbs if digest(d) != sums[d] and not (cmd == "merge" and bargv[2:3] == [to_bytes(d)])]
                if changed:
                    why = f"input database changed: {changed}"
            if why:
                tail = err.decode("utf-8", "replace")[-800:]
                failures.append(f"case {case}: {why}: {shown}\n  stderr: {tail}")
                for d in dbs:   # restore, so one failure does not cascade
                    shutil.copyfile(os.path.join(data, os.path.basename(d)), d)
            if cmd == "merge":   # a merge may legitimately write its OUT: start the next case clean
                for d in dbs:
                    shutil.copyfile(os.path.join(data, os.path.basename(d)), d)
            shutil.rmtree(cwd, ignore_errors=True)
            if time.monotonic() - start > 10:
                print(f"cli_fuzz: case {case} took {time.monotonic() - start:.1f} s: {shown}", file=sys.stderr)
        secs = time.monotonic() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL " + f)
    print(f"cli_fuzz: seed {SEED}, {CASES} cases in {secs:.1f} s")
    print(f"{CASES - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
