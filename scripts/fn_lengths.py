#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lengths of the C functions under some folders, and a check that none is over a limit.

    scripts/fn_lengths.py [--limit N] [--warn M] [--all] [--allow FILE:NAME]... PATH...

PATH: folders (every *.c and *.h below them) or files. A function's length is its lines from the
line of its name to its closing brace, both included. Prints every function longer than N lines
(default 150) and, with --warn M, those longer than M as well (marked "warn"), longest first, as
`LINES path:line name`; --all prints every function. --allow FILE:NAME exempts the function NAME
of a file whose path ends in FILE (e.g. tuner/runner.c:bkm_tune_trial_run) from the limit while it
is being reworked: it is listed, marked "allowed", and does not count; an --allow that exempts
nothing (no such function over the limit) is an error, so that the entry goes once the function
is split. Exit 1 when a function is longer than N (or an --allow is stale), 0 otherwise, 2 for bad
usage or an unreadable file.

Reads the source as text: comments, string and character literals and preprocessor lines
(functions written inside a macro are not seen) are blanked, then top-level braces are matched;
a block is a function when the text before it ends in a parameter list.
"""
import argparse
import bisect
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*$")


def blank(text):
    """text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out, i, n, line_start = [], 0, len(text), True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a directive, with its continuation lines
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
            continue
        out.append(c)
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


def function_name(header):
    """(name, its offset in @p header) of the function whose parameter list ends @p header, or None."""
    h = header.rstrip()
    if not h.endswith(")"):
        return None
    depth, i = 0, len(h) - 1
    while i >= 0:  # the '(' that matches the final ')'
        if h[i] == ")":
            depth += 1
        elif h[i] == "(":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return None
    before = h[:i].rstrip()
    m = IDENT.search(before)
    if m is None or m.group(0) in ("if", "for", "while", "switch", "return", "sizeof"):
        return None
    # a declaration with an initialiser ("x = f(a) {" does not occur in C) or a struct
    if "=" in re.sub(r"\([^()]*\)", "", before):
        return None
    return m.group(0), m.start()


def functions(path):
    """(name, first line, last line) of every function defined in the file @p path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    res, depth, start, i, n = [], 0, 0, 0, len(text)
    line_at = [0]  # offset of the first character of each line
    for k, ch in enumerate(text):
        if ch == "\n":
            line_at.append(k + 1)

    def line_of(off):
        return bisect.bisect_right(line_at, off)

    open_fn = None  # (name, first line) of the function whose body is open
    transparent = 0  # extern "C" { ... } blocks that do not nest
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                header = text[start:i]
                if re.search(r"\bextern\s*\"\s*\"\s*$", header):
                    transparent += 1
                    start = i + 1
                    i += 1
                    continue
                fn = function_name(header)
                open_fn = (fn[0], line_of(start + fn[1])) if fn is not None else None
            depth += 1
        elif c == "}":
            if depth == 0 and transparent:
                transparent -= 1
                start = i + 1
            elif depth > 0:
                depth -= 1
                if depth == 0:
                    if open_fn is not None:
                        res.append((open_fn[0], open_fn[1], line_of(i)))
                        open_fn = None
                    start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1
        i += 1
    return res


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith((".c", ".h")):
                        yield os.path.join(root, f)
        elif os.path.isfile(p):
            yield p
        else:
            raise OSError(f"{p}: no such file or folder")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=150, help="fail on a function longer than this")
    ap.add_argument("--warn", type=int, default=None, help="also list functions longer than this")
    ap.add_argument("--all", action="store_true", help="list every function")
    ap.add_argument("--allow", action="append", default=[], metavar="FILE:NAME",
                    help="exempt this function from the limit (an entry that exempts nothing fails)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if a.limit < 1 or (a.warn is not None and a.warn < 1):
        print("fn_lengths: --limit and --warn take a positive number of lines", file=sys.stderr)
        return 2
    allow = []
    for entry in a.allow:
        file, sep, name = entry.rpartition(":")
        if not sep or not file or not IDENT.match(name):
            print(f"fn_lengths: --allow '{entry}' is not FILE:NAME", file=sys.stderr)
            return 2
        allow.append((entry, file, name))

    def allowed(path, name):
        """The --allow entry that exempts function @p name of @p path, or None."""
        norm = path.replace(os.sep, "/")
        for entry, file, fname in allow:
            if fname == name and (norm == file or norm.endswith("/" + file.lstrip("/"))):
                return entry
        return None
    rows = []
    try:
        for path in sources(a.paths):
            for name, first, last in functions(path):
                rows.append((last - first + 1, path, first, name))
    except OSError as e:
        print(f"fn_lengths: {e}", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    exempt = {(r[1], r[2]): allowed(r[1], r[3]) for r in rows if r[0] > a.limit and allowed(r[1], r[3])}
    over = [r for r in rows if r[0] > a.limit and (r[1], r[2]) not in exempt]
    shown = rows if a.all else [r for r in rows if r[0] > (a.warn if a.warn is not None else a.limit)]
    for length, path, first, name in shown:
        tag = ("  allowed" if (path, first) in exempt else "  OVER") if length > a.limit else \
            ("  warn" if a.warn is not None and length > a.warn else "")
        print(f"{length:5d} {path}:{first} {name}{tag}")
    stale = [entry for entry, _, _ in allow if entry not in exempt.values()]
    for entry in stale:
        print(f"fn_lengths: --allow {entry}: no such function over {a.limit} lines: remove the entry",
              file=sys.stderr)
    print(f"fn_lengths: {len(rows)} functions in {' '.join(a.paths)}; {len(over)} over {a.limit} lines"
          + (f" ({len(exempt)} more allowed)" if exempt else "")
          + (f", {len([r for r in rows if r[0] > a.warn])} over {a.warn}" if a.warn is not None else ""))
    return 1 if over or stale else 0


if __name__ == "__main__":
    sys.exit(main())
