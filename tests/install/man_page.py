#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man page tune(1) (BUILD/tune.1, generated at build time by `tune help --man`) against the
commands' own tables (`tune CMD --help --json`, as test_cli_options reads them):
  - every command `tune --help` lists has its section (".SS "tune CMD"", affinity's sub-commands
    each) and its line in COMMANDS;
  - every option of every table that is not hidden is in its command's section, as \\-\\-name (and
    -s for a short form), with its metavar; no hidden option is;
  - the page is what `tune help --man` prints now (the build did not leave a stale one);
  - groff reads it without a warning other than a line it cannot adjust or break (long words),
    and renders NAME, SYNOPSIS, COMMAND REFERENCE, EXIT STATUS, ENVIRONMENT and FILES.
Environment: BKM_TUNE, BKM_MAN_PAGE.
"""
import json
import os
import re
import shutil
import subprocess
import sys

TUNE = os.environ.get("BKM_TUNE")
PAGE = os.environ.get("BKM_MAN_PAGE")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(argv):
    p = subprocess.run([TUNE] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode(errors="replace")


def roff(s):
    return s.replace("\\", "\\e").replace("-", "\\-").replace('"', "\\(dq")


def commands():
    _, out = run(["--help"])
    names, inside = [], False
    for line in out.splitlines():
        if line.startswith("commands:"):
            inside = True
        elif inside:
            m = re.match(r"^  (\S+)\s", line)
            if not m:
                break
            names.append(m.group(1))
    return names


def sections(text):
    """{"run": section text, "affinity explain": ...} split at .SS lines."""
    out, name, buf = {}, None, []
    for line in text.splitlines():
        m = re.match(r'^\.SS "tune (.*)"$', line)
        if m or line.startswith(".SH "):
            if name is not None:
                out[name] = "\n".join(buf)
            name, buf = (m.group(1).replace("\\-", "-") if m else None), []
        elif name is not None:
            buf.append(line)
    if name is not None:
        out[name] = "\n".join(buf)
    return out


def main():
    if not TUNE or not PAGE or not os.path.isfile(PAGE):
        print("man_page: BKM_TUNE or BKM_MAN_PAGE (%s) is not set to a file" % PAGE, file=sys.stderr)
        return 1
    text = open(PAGE, encoding="utf-8").read()
    rc, now = run(["help", "--man"])
    if rc != 0 or now != text:
        fail("%s differs from `tune help --man` now (exit %d): a stale page" % (PAGE, rc))
    secs = sections(text)
    checked = 0
    for cmd in commands():
        if "\\fB%s\\fR" % roff(cmd) not in text.split('.SH "COMMAND REFERENCE"')[0]:
            fail("COMMANDS does not list %s" % cmd)
        rc, out = run([cmd, "--help", "--json"])
        table = json.loads(out)
        subs = [cmd + " " + s for s in table.get("subcommands", [])] or [cmd]
        for name in subs:
            sec = secs.get(name)
            if sec is None:
                fail("no section .SS \"tune %s\"" % name)
                continue
            if name != cmd:
                rc, out = run(name.split() + ["--help", "--json"])
                table = json.loads(out)
            for o in table["options"]:
                tag = "\\fB\\-\\-%s\\fR" % roff(o["name"])
                present = tag in sec
                if o["hidden"]:
                    if present:
                        fail("tune %s: hidden option --%s is in the page" % (name, o["name"]))
                    continue
                checked += 1
                if not present:
                    fail("tune %s: --%s is not in its section" % (name, o["name"]))
                if o.get("short") and "\\fB\\-%s\\fR" % o["short"] not in sec:
                    fail("tune %s: -%s (--%s) is not in its section" % (name, o["short"], o["name"]))
                if o.get("metavar") and "\\fI%s\\fR" % roff(o["metavar"]) not in sec:
                    fail("tune %s: --%s's metavar %s is not in its section" % (name, o["name"], o["metavar"]))
    if checked < 50:
        fail("only %d options checked: the tables were not read" % checked)
    if shutil.which("groff"):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbu", PAGE], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        for line in p.stderr.decode(errors="replace").splitlines():
            if not re.search(r"(cannot|can't) (adjust|break) line", line):
                fail("groff: " + line)
        shown = p.stdout.decode(errors="replace")
        for head in ("NAME", "SYNOPSIS", "COMMAND REFERENCE", "EXIT STATUS", "ENVIRONMENT", "FILES"):
            if not re.search(r"^%s$" % head, shown, re.M):
                fail("the rendered page has no %s" % head)
    else:
        print("note: groff is not installed: the page is not rendered (apt-get install groff-base)")
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("man page: %d sections, %d options checked against the tables" % (len(secs), checked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
