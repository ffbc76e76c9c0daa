#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every option of every `tune` command, from the command's own table (`tune CMD --help --json`).

The commands are the ones `tune --help` lists (a command whose table is {"subcommands": [...]},
as `tune affinity`, is walked per sub-command). For every option in the table:
  - it parses in both spellings, `--opt V` and `--opt=V` (and its old spelling, when it has one),
    with the table's example value or one derived from its kind and bounds: the command may then
    fail for other reasons (no workload, no database, ...), but never with "unknown option",
    "needs a value" or a range message about that option, never by a signal, never outside 0-4;
    a flag is refused with a value (`--flag=x`);
  - an out-of-range value (hi+1 for a number, lo-1 when hi is unbounded, an unlisted choice, a
    duration without a known unit and one over its bound) is exit 2 with a message naming the
    option and the value, and nothing is written: each case runs in an empty directory with --db
    pointing into it (where the command has --db), and the directory must stay empty.
Commands that would measure get --dry-run. Environment: BKM_TUNE (the binary).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

TUNE = os.environ.get("BKM_TUNE")
if not TUNE or not os.access(TUNE, os.X_OK):
    print("cli_options: BKM_TUNE is not set to an executable", file=sys.stderr)
    sys.exit(1)

failures = []
checked = {"parse": 0, "range": 0, "flag": 0}


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(argv, cwd):
    p = subprocess.run([TUNE] + argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def commands():
    rc, out, _ = run(["--help"], tempfile.gettempdir())
    if rc != 0:
        fail("tune --help exit %d" % rc)
        return []
    names, inside = [], False
    for line in out.splitlines():
        if line.startswith("commands:"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\S+)\s", line)
            if not m:
                break
            names.append(m.group(1))
    return names


def table(words):
    rc, out, err = run(words + ["--help", "--json"], tempfile.gettempdir())
    if rc != 0:
        fail("tune %s --help --json: exit %d: %s" % (" ".join(words), rc, err.strip()))
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        fail("tune %s --help --json is not JSON (%s): %r" % (" ".join(words), e, out[:200]))
        return None


def fmt_num(kind, x):
    if kind in ("int", "int64"):
        return "%d" % int(x)
    return repr(float(x)) if x != int(x) else "%d" % int(x)


def good_value(o):
    if o.get("example") is not None:
        return o["example"]
    k = o["kind"]
    if k in ("int", "int64", "number", "duration"):
        return fmt_num(k, o["lo"])
    if k == "choice":
        return o["choices"].split("|")[0]
    return "x"


def bad_values(o):
    """Values the option must refuse at parse time: [(value, what)]."""
    k, out = o["kind"], []
    if k in ("int", "int64", "number", "duration"):
        lo, hi = o["lo"], o["hi"]
        if hi < 9e18:
            out.append((fmt_num(k, hi + 1) if k in ("int", "int64") else fmt_num(k, hi * 2 + 1), "hi+1"))
        elif lo > -9e18:
            out.append((fmt_num(k, lo - 1), "lo-1"))
        if k == "duration":
            out.append(("5parsecs", "a bad duration"))
        else:
            out.append(("seven", "not a number"))
    elif k == "choice":
        out.append(("no-such-choice", "an unlisted choice"))
    return out


OPTION_TROUBLE = ("unknown option", "needs a value", "takes no value", "is given twice")


def check_command(words, t):
    names = {o["name"] for o in t["options"]}
    for o in t["options"]:
        base = ["--dry-run"] if "dry-run" in names and o["name"] != "dry-run" else []
        spellings = ["--" + o["name"]] + (["--" + o["alias"]] if o.get("alias") else [])
        if o.get("short"):
            spellings.append("-" + o["short"])
        with tempfile.TemporaryDirectory() as d:
            db = ["--db", os.path.join(d, "x.sqlite")] if "db" in names and o["name"] != "db" else []
            if o["kind"] == "flag":
                for sp in spellings:
                    argv = words + [sp] + base + db
                    rc, _, err = run(argv, d)
                    checked["flag"] += 1
                    if rc < 0 or rc > 4 or any(s in err for s in OPTION_TROUBLE):
                        fail("tune %s: exit %d: %s" % (shlex.join(argv), rc, err.strip()[:300]))
                    if sp.startswith("--"):
                        argv = words + [sp + "=x"] + base + db
                        rc, _, err = run(argv, d)
                        if rc != 2 or "takes no value" not in err:
                            fail("tune %s: exit %d, want 2 'takes no value': %s" % (shlex.join(argv), rc, err.strip()[:300]))
                continue
            v = good_value(o)
            for sp in spellings:
                forms = [[sp, v], [sp + "=" + v]] if sp.startswith("--") else [[sp, v], [sp + v]]
                for form in forms:
                    argv = words + form + base + db
                    rc, _, err = run(argv, d)
                    checked["parse"] += 1
                    named = re.search(re.escape(sp) + r" '[^']*' (is not|is longer|is unknown)", err)
                    if rc < 0 or rc > 4 or any(s in err for s in OPTION_TROUBLE) or named:
                        fail("tune %s: exit %d: %s" % (shlex.join(argv), rc, err.strip()[:300]))
            for bad, what in bad_values(o):
                for form in ([spellings[0], bad], [spellings[0] + "=" + bad]):
                    argv = words + form + base + db
                    rc, _, err = run(argv, d)
                    checked["range"] += 1
                    if rc != 2:
                        fail("tune %s (%s): exit %d, want 2: %s" % (shlex.join(argv), what, rc, err.strip()[:300]))
                    elif spellings[0] not in err or bad not in err:
                        fail("tune %s (%s): the message does not name %s and '%s': %s"
                             % (shlex.join(argv), what, spellings[0], bad, err.strip()[:300]))
                    left = os.listdir(d)
                    if left:
                        fail("tune %s (%s): wrote %s before refusing" % (shlex.join(argv), what, left))
                        for f in left:
                            os.unlink(os.path.join(d, f))


def main():
    cmds = commands()
    if len(cmds) < 8:
        fail("tune --help lists only %r" % cmds)
    for c in cmds:
        t = table([c])
        if t is None:
            continue
        if "subcommands" in t:
            for sub in t["subcommands"]:
                st = table([c, sub])
                if st is not None:
                    check_command([c, sub], st)
        else:
            check_command([c], t)
    # `tune --workload ...` is the sweep: same table
    if table(["--workload", "gemm"]) != table(["sweep"]):
        fail("tune --help --json with options is not the sweep's table")
    print("cli_options: %d commands, %d parses, %d flag checks, %d out-of-range refusals; %d failure(s)"
          % (len(cmds), checked["parse"], checked["flag"], checked["range"], len(failures)))
    if checked["parse"] < 50 or checked["range"] < 20:
        fail("too few options checked: %r" % checked)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
