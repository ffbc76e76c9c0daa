#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fuzz test of the scripts bkm writes from text it did not write.

Each case fills the text fields of a results database (host name, CPU model, fingerprint, sweep
uuid, revision, label, command, dates, the stored setting's variables, parameters and backend)
with random and hostile strings: shell substitutions, quotes, newlines, carriage returns, escape
sequences, ill-formed UTF-8. It merges the database into a growing merged one (`tune merge`, which
accepts it or refuses it naming the table and row, exit 3), then writes `tune sbatch` scripts from
the merged and from the crafted database, and --sbatch / --slurm-array scripts whose database
path, label, script name and node profile file name are hostile. Every script that is written is
run by bash under stand-in `srun` and `tune` (PATH, BKM_TUNE) that record their argv. A case
fails when:
  - a hostile string ran: a file it asks for appeared, or the script's folder got a file;
  - a stand-in got other argv than intended (the stored setting's values as single words; the
    sweep's own arguments, unchanged, with the node profile's absolute path);
  - tune exited with another code than 0, 2 (a value refused by name) or, for merge, 3;
  - tune wrote a script although it refused, or took longer than BKM_FUZZ_TIMEOUT seconds.
Environment: BKM_TUNE, BKM_FIXTURE (tests/results/results_fixture), BKM_SOURCE_DIR,
BKM_FUZZ_CASES (default 200), BKM_FUZZ_SEED (default 22).
"""
import json
import os
import random
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile

TUNE = os.environ.get("BKM_TUNE")
FIXTURE = os.environ.get("BKM_FIXTURE")
SRC = os.environ.get("BKM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = int(os.environ.get("BKM_FUZZ_CASES", "200"))
SEED = int(os.environ.get("BKM_FUZZ_SEED", "22"))
TIMEOUT = float(os.environ.get("BKM_FUZZ_TIMEOUT", "20"))
for what, path in (("BKM_TUNE", TUNE), ("BKM_FIXTURE", FIXTURE)):
    if not path or not os.access(path, os.X_OK):
        print("script_fuzz: %s is not set to an executable" % what, file=sys.stderr)
        sys.exit(1)
if shutil.which("bash") is None:
    print("script_fuzz: bash is needed to run the scripts")
    sys.exit(77)

W = tempfile.mkdtemp(prefix="bkm-script-fuzz.")
MARKS = os.path.join(W, "marks")          # hostile strings ask for files here
LOG = os.path.join(W, "log")
BIN = os.path.join(W, "bin")
RUN = os.path.join(W, "run")
TMP = os.path.join(W, "tmp")
for d in (MARKS, LOG, BIN, RUN, TMP):
    os.makedirs(d)
rng = random.Random(SEED)

# stand-ins: argv NUL-separated to log/NAME.N; srun also records the OpenMP variables it got;
# `tune sweep ... --db F` creates F as the real one would
STAND_IN = r'''#!/bin/bash
n=$(ls "%(log)s" | grep -c "^%(name)s\.")
printf '%%s\0' "$@" >"%(log)s/%(name)s.$n"
if [ "%(name)s" = srun ]; then
  printf '%%s\0' "KMP_AFFINITY=${KMP_AFFINITY-}" "KMP_BLOCKTIME=${KMP_BLOCKTIME-}" "KMP_HW_SUBSET=${KMP_HW_SUBSET-}" \
    "OMP_PLACES=${OMP_PLACES-}" "OMP_PROC_BIND=${OMP_PROC_BIND-}" "OMP_NUM_THREADS=${OMP_NUM_THREADS-}" >"%(log)s/env.$n"
fi
if [ "%(name)s" = tune ] && [ "$1" = sweep ]; then
  prev=; for a in "$@"; do [ "$prev" = --db ] && : >"$a"; prev=$a; done
fi
exit 0
'''
for name in ("srun", "tune", "sbatch"):
    p = os.path.join(BIN, name)
    with open(p, "w") as f:
        f.write(STAND_IN % {"log": LOG, "name": name})
    os.chmod(p, 0o755)


def payloads(tag):
    """Hostile strings that would create MARKS/tag (or ./tag) if a shell ran them."""
    m = os.path.join(MARKS, tag)
    return [
        "$(touch %s)" % m, "`touch %s`" % m, ";touch %s;" % m, "\ntouch %s\n" % m, "\ntouch %s #" % m,
        "'; touch %s; '" % m, "\"; touch %s; \"" % m, "\r\ntouch %s #" % m, "${IFS}touch${IFS}%s" % m,
        "a\\\ntouch %s" % m, "$'\\ntouch %s'" % m, "|touch %s" % m, "&&touch %s" % m, "\x1b[2J\ntouch %s #" % m,
        "\u2028touch %s" % m, "-x", "--db", "' || touch %s #" % m,
    ]


def rand_text(tag):
    """A random or hostile string (no NUL: argv and C strings cannot hold one)."""
    k = rng.random()
    if k < 0.55:
        return rng.choice(payloads(tag))
    alphabet = "ab01 \t\n\r'\"\\$`;|&()<>{}*?~#!=%,.:/-@" + "\u00e9\u4e2d\U0001f600"
    s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
    if k < 0.8:
        return s + rng.choice(payloads(tag))
    return s


def fail(case, msg, detail=""):
    print("script_fuzz: case %d (seed %d): %s" % (case, SEED, msg), file=sys.stderr)
    if detail:
        print(detail, file=sys.stderr)
    sys.exit(1)


def tune(case, args, codes, env=None):
    """Run tune ARGS; its exit code must be in CODES. Returns (code, stderr)."""
    try:
        p = subprocess.run([TUNE] + args, cwd=W, capture_output=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        fail(case, "tune %s: no exit within %g s" % (shlex.join(args), TIMEOUT))
    if p.returncode not in codes:
        fail(case, "tune %s: exit %d (want %s)" % (shlex.join(args), p.returncode, codes),
             p.stderr.decode(errors="replace")[-2000:])
    return p.returncode, p.stderr.decode(errors="replace")


def calls(name):
    out = []
    n = 0
    while os.path.exists(os.path.join(LOG, "%s.%d" % (name, n))):
        with open(os.path.join(LOG, "%s.%d" % (name, n)), "rb") as f:
            out.append([a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")[:-1]])
        n += 1
    return out


def run_script(case, path, task=0):
    """bash PATH in an empty folder under the stand-ins; nothing hostile may run."""
    shutil.rmtree(LOG)
    os.makedirs(LOG)
    shutil.rmtree(RUN)
    os.makedirs(RUN)
    env = dict(os.environ, PATH=BIN + ":" + os.environ.get("PATH", "/usr/bin:/bin"), TMPDIR=TMP,
               BKM_TUNE=os.path.join(BIN, "tune"), SLURM_ARRAY_TASK_ID=str(task), SLURM_JOB_ID="77",
               SLURM_ARRAY_JOB_ID="76")
    try:
        p = subprocess.run(["bash", path], cwd=RUN, env=env, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(case, "script %r: no exit within %g s" % (path, TIMEOUT))
    marks = os.listdir(MARKS) + os.listdir(RUN)
    if marks:
        fail(case, "script %r: a hostile string ran (%r)" % (path, marks),
             open(path, errors="replace").read()[:4000] + "\n--- output:\n" + p.stderr.decode(errors="replace"))
    return p


# the base database: a sweep with a best-known setting for (knl, gemm), through bkm's own store
BASE = os.path.join(W, "base.sqlite")
subprocess.run([FIXTURE, BASE, "knl", "gemm", "3", "best"], check=True, capture_output=True)
MERGED = os.path.join(W, "merged.sqlite")
tune(-1, ["merge", MERGED, BASE], (0,))
XML = os.path.join(SRC, "tests", "affinity", "data", "knl-flat.xml")

KNOWN_ENV = ["KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_HW_SUBSET", "OMP_PLACES", "OMP_PROC_BIND"]
SAFE_ENV = {"KMP_AFFINITY": ["compact", "granularity=fine,compact,1,0", "scatter"], "KMP_BLOCKTIME": ["0", "1", "200"]}


def crafted_config(case):
    """A stored setting: sometimes valid, sometimes with hostile variables, parameters, backend."""
    cfg = {"threads": rng.choice([1, 2, 4, 68])}
    env = {}
    for k, vals in SAFE_ENV.items():
        if rng.random() < 0.5:
            env[k] = rng.choice(vals) if rng.random() < 0.6 else rand_text("env%d" % case)
    if rng.random() < 0.2:
        env[rng.choice(KNOWN_ENV[2:])] = rand_text("env%d" % case)
    if env:
        cfg["env"] = env
    if rng.random() < 0.6:
        cfg["params"] = {"m": rng.choice(["16", "64"])}
        if rng.random() < 0.4:
            cfg["params"][rng.choice(["k", "n", "m"])] = rand_text("param%d" % case)
    if rng.random() < 0.4:
        cfg["backend"] = rng.choice(["native", "onednn", rand_text("be%d" % case)[:15]])
    return cfg


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def one_line(s):
    return "".join(ch for ch in s if ord(ch) >= 0x20 and ord(ch) != 0x7f)


def craft_db(case, path):
    shutil.copy(BASE, path)
    c = sqlite3.connect(path)
    # every other database keeps its names on one line (the store's rule): those are merged,
    # and their substitutions, quotes and escapes reach the scripts written from the merge
    flat = rng.random() < 0.5
    t = lambda: one_line(rand_text("db%d" % case)) if flat else rand_text("db%d" % case)
    c.execute("INSERT INTO host(hostname, cpu_model, fingerprint) VALUES(?, ?, ?)", (t(), t(), t()))
    c.execute("UPDATE sweep SET host_id = 1, uuid = ?, git_revision = ?, label = ?, command = ?, started_at = ?",
              (t() + str(case), t(), t(), t(), t()))
    cfg = crafted_config(case)
    # the newest best-known setting of the merged database is the last one merged: dates grow
    c.execute("UPDATE best SET config_json = ?, created_at = ?",
              (canonical(cfg), "2030-01-01T00:%06dZ" % case + (t() if rng.random() < 0.5 else "")))
    if rng.random() < 0.2:   # bytes that are no UTF-8
        c.execute("UPDATE sweep SET git_revision = CAST(x'61ff0a746f756368' AS TEXT)")
    c.commit()
    c.close()
    return cfg


def expect_srun(case, script, cfg):
    """The script ran srun once with the stored setting as single words, and exported it as is."""
    srun = calls("srun")
    if len(srun) != 1:
        fail(case, "%r: srun ran %d times" % (script, len(srun)))
    argv = srun[0]
    try:
        tail = argv[argv.index("bkm-rank") + 1:]
    except ValueError:
        fail(case, "%r: srun argv has no bkm-rank: %r" % (script, argv))
    want = [os.path.join(BIN, "tune"), "run", "--workload", "gemm", "--threads", str(cfg["threads"])]
    env = cfg.get("env", {})
    for var, opt in (("KMP_AFFINITY", "--affinity"), ("KMP_BLOCKTIME", "--blocktime"), ("KMP_HW_SUBSET", "--hw-subset"),
                     ("OMP_PLACES", "--places"), ("OMP_PROC_BIND", "--proc-bind")):
        if var in env:
            want += [opt, env[var]]
    if cfg.get("backend"):
        want += ["--backend", cfg["backend"]]
    for k, v in cfg.get("params", {}).items():
        want += ["--param", "%s=%s" % (k, v)]
    if tail != want:
        fail(case, "%r: srun argv\n  got  %r\n  want %r" % (script, tail, want))
    got_env = dict(a.split("=", 1) for a in calls("env")[0])
    for var in KNOWN_ENV:
        if got_env.get(var, "") != env.get(var, ""):
            fail(case, "%r: %s=%r reached srun, stored %r" % (script, var, got_env.get(var), env.get(var)))


def sbatch_case(case, db, cfg):
    out = os.path.join(W, "s%d.sbatch" % case)
    code, err = tune(case, ["sbatch", "--node", "knl", "--workload", "gemm", "--db", db, "-o", out], (0, 2))
    if code == 2:
        if os.path.exists(out):
            fail(case, "sbatch refused (%s) but wrote %s" % (err.strip(), out))
        return 0
    run_script(case, out)
    expect_srun(case, out, cfg)
    os.unlink(out)
    return 1


LAST = {"cfg": {"threads": 2}}   # the setting the merged database holds last (the fixture's)


def db_case(case):
    """A crafted database: merged (or refused by name), then scripts from both."""
    name = "c%d-%s.sqlite" % (case, rand_text("dbname%d" % case).replace("/", "_").replace("\0", ""))
    if len(name.encode()) > 200:
        name = "c%d.sqlite" % case
    db = os.path.join(W, name)
    cfg = craft_db(case, db)
    code, err = tune(case, ["merge", MERGED, db], (0, 3))
    if code == 3 and "table " not in err:
        fail(case, "merge refused without naming the table and row: %s" % err)
    if code == 0:
        LAST["cfg"] = cfg
    written = sbatch_case(case, db, cfg)
    written += sbatch_case(case, MERGED, LAST["cfg"])
    os.unlink(db)
    return written, code == 0


def argv_case(case):
    """--sbatch / --slurm-array with a hostile database path, label, script name and profile file."""
    label = rand_text("label%d" % case)
    dbname = rand_text("db%d" % case).replace("/", "_")
    sub = os.path.join(W, "d%d" % case)
    os.makedirs(sub, exist_ok=True)
    db = os.path.join(sub, dbname or "x") + ".sqlite"
    node = "knl"
    if rng.random() < 0.5:
        prof = os.path.join(sub, (rand_text("prof%d" % case).replace("/", "_") or "p") + ".prof")
        with open(prof, "w") as f:
            f.write("name = fz%d\nxml = %s\n" % (case, XML))
        node = prof
    script = os.path.join(sub, (rand_text("script%d" % case).replace("/", "_") or "s") + ".sbatch")
    array = rng.random() < 0.5
    args = ["--node", node, "--workload", "gemm", "--label", label, "--threads", "1,2"]
    # the sweep's own words as the scripts must pass them on: tune drops the database and the
    # Slurm options, and names a profile file by its absolute path
    words = ["--node", os.path.realpath(node) if node != "knl" else "knl"] + args[2:]
    if array:
        args += ["--slurm-array", "2"]
    args += ["--sbatch", script, "--db", db]
    if rng.random() < 0.3:
        args += ["--job-name", rand_text("jn%d" % case)]
    code, err = tune(case, args, (0, 2))
    merge = script[:-len(".sbatch")] + "-merge.sbatch"
    if code == 2:
        if os.path.exists(script) or os.path.exists(merge):
            fail(case, "refused (%s) but a script was written" % err.strip())
        return 0
    if array:
        words += ["--strategy", "grid"]
    for task in ((0, 1) if array else (0,)):
        run_script(case, script, task)
        got = calls("tune")
        if not got or got[0][0] != "sweep":
            fail(case, "%r: no tune sweep: %r" % (script, got))
        sweep = got[0]
        local = sweep[sweep.index("--db") + 1]
        want = ["sweep"] + words + ["--db", local]
        if array:
            group = sweep[-1]
            want += ["--shard", "%d/2" % task, "--shard-group", group]
        if sweep != want:
            fail(case, "%r: tune sweep argv\n  got  %r\n  want %r" % (script, sweep, want))
        if not local.startswith(TMP + "/"):
            fail(case, "%r: the node-local database %r is not under TMPDIR" % (script, local))
    if array:
        run_script(case, merge)
        got = calls("tune")
        shards = [db + ".shards/shard-%d-of-2.sqlite" % i for i in (0, 1)]
        local = got[0][1]
        want = [["merge", local] + shards, ["sweep"] + words + ["--db", local], ["merge", db, local],
                ["best", "--node", "fz%d" % case if node != "knl" else "knl", "--workload", "gemm", "--db", db]]
        if got != want:
            fail(case, "%r: tune calls\n  got  %r\n  want %r" % (merge, got, want))
    else:
        got = calls("tune")
        if got[1:] != [["merge", db, got[0][got[0].index("--db") + 1]],
                       ["best", "--node", "fz%d" % case if node != "knl" else "knl", "--workload", "gemm", "--db", db]]:
            fail(case, "%r: tune calls after the sweep: %r" % (script, got))
    shutil.rmtree(sub)
    return 1 + array


written = merged = 0
try:
    for case in range(CASES):
        if case % 3 == 2:
            written += argv_case(case)
        else:
            n, m = db_case(case)
            written += n
            merged += m
    if written == 0:
        fail(-1, "no case wrote a script: nothing was run")
    print("script_fuzz: %d cases (seed %d): %d scripts run under stand-ins, %d crafted databases merged, "
          "nothing hostile ran" % (CASES, SEED, written, merged))
finally:
    shutil.rmtree(W, ignore_errors=True)
