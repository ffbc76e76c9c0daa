#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The rules of bkm's documentation (docs/testing.md, "Documentation tests"):

  1. README.md has at most 400 lines.
  2. README.md and docs/*.md read as documentation, not as a diary: no diary words (see DIARY),
     no clock time with a time zone in prose (table rows may carry dated provenance).
  3. Every document a source file, script, CMake file or document cites (a path ending in .md)
     exists in the repository; a cited numbered section (docs/affinity.md §3.3) or quoted section
     (docs/measurement.md, "Claims") exists in that document.
  4. Every relative link in README.md and docs/*.md resolves to a file, and its #anchor to a
     heading of that file.

usage: check_docs.py [--root DIR]   (default: the repository holding this script)
Prints one line per violation, FILE:LINE: rule: what; exit 1 if any, 0 if none.
"""
import os
import re
import subprocess
import sys

README_MAX_LINES = 400

# Diary words: (rule name, compiled pattern). Case-insensitive unless the pattern says otherwise.
DIARY = [
    ("session", re.compile(r"\bsessions?\b", re.I)),
    ("helper", re.compile(r"(?<!hidden )\bhelpers?\b", re.I)),  # libomp's "hidden helper threads" are a term
    ("previous engineer", re.compile(r"\b(previous|other|next|the) engineers?\b", re.I)),
    ("pass of a work round", re.compile(r"\b(first|second|third|fourth|fifth|final) pass\b", re.I)),
    ("branch", re.compile(r"\bbranch(es)?\b", re.I)),
    ("working branch name",
     re.compile(r"\b(c3d|speed2|slurm2|noiserep|mpiexact|mpitune|net3|conv3dperf|issue\d+)\b", re.I)),
    ("first person", re.compile(r"\b(my|myself|mine)\b|\bI'(m|ve|d|ll)\b", re.I)),
    ("first person",
     re.compile(r"(?<![\w/])I (am|was|have|had|did|do|don't|measured|ran|run|think|thought|found|"
                r"added|used|tried|made|could|would|will|can|see|saw|kept|left|wrote|checked|"
                r"re-measured|removed|changed|believe|also|then|got|need|needed)\b")),
    ("time of day in prose",
     re.compile(r"\b\d{1,2}:\d{2}(\s*[–-]\s*\d{1,2}:\d{2})?\s*(UTC|GMT|CET|CEST|PST|EST)\b")),
    ("timestamp in prose", re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")),
]

# A cited document: a path ending in .md, not part of a longer name or a C member access.
CITE = re.compile(r"(?<![\w.>/-])((?:\.\./|\./)*(?:[\w-]+/)*[A-Za-z][\w-]*\.md)(?![\w/-])")
SECTION_NUM = re.compile(r"((?:[\w-]+/)*[\w-]+\.md)\s*,?\s*§\s*(\d+(?:\.\d+)*)")
SECTION_NAME = re.compile(r"((?:[\w-]+/)*[\w-]+\.md)\s*,\s*\(?\"([^\"]{2,80})\"")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
# A file that holds the checker's own test fixtures says so in its first lines and is not scanned.
FIXTURES = "check_docs: fixtures, not citations"
SCANNED_EXT = (".c", ".h", ".sh", ".py", ".cmake", ".in", ".sbatch", ".md", ".txt")


def repo_files(root):
    """Tracked files (git) or, outside a git checkout, every file below root except build trees."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
        files = [f for f in out.stdout.decode().split("\0") if f]
        if files:
            # files added but not yet committed count too (the test runs on a work tree)
            extra = subprocess.run(["git", "-C", root, "ls-files", "-z", "--others", "--exclude-standard"],
                                   capture_output=True, check=True)
            return sorted(set(files) | {f for f in extra.stdout.decode().split("\0") if f})
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith((".git", "build"))]
        for n in names:
            files.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(files)


def scanned(path):
    if path.startswith("fuzz/corpus/"):
        return False
    base = os.path.basename(path)
    return base == "CMakeLists.txt" or path.endswith(SCANNED_EXT) or path.startswith(("scripts/", ".ci/"))


def read(root, path):
    try:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def prose_lines(text):
    """(line number, line) of a markdown text outside fenced code blocks."""
    fence = False
    for i, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield i, line


def strip_code_spans(line):
    return re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor of a heading."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(text):
    out = []
    for _, line in prose_lines(text):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            out.append(m.group(2))
    return out


def anchors(text):
    seen, out = {}, set()
    for h in headings(text):
        s = slug(h)
        n = seen.get(s, 0)
        out.add(s if n == 0 else "%s-%d" % (s, n))
        seen[s] = n + 1
    return out


def resolve(root, citing, target):
    """The repository path a cited document names, or None. A document citing another resolves
    relative to itself or to the root; code and scripts resolve relative to the root or to their
    own folder. A path leaving the repository never resolves."""
    cands = [os.path.normpath(os.path.join(os.path.dirname(citing), target)), os.path.normpath(target)]
    for c in cands:
        if c.startswith("..") or os.path.isabs(c):
            continue
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def check(root):
    problems = []
    files = repo_files(root)
    docs = ["README.md"] + sorted(f for f in files if f.startswith("docs/") and f.endswith(".md"))
    docs = [d for d in docs if os.path.isfile(os.path.join(root, d))]

    # 1. README length
    readme = read(root, "README.md")
    if readme is None:
        problems.append("README.md:0: readme: missing")
    else:
        n = len(readme.rstrip("\n").split("\n"))
        if n > README_MAX_LINES:
            problems.append("README.md:%d: readme-length: %d lines, at most %d" % (n, n, README_MAX_LINES))

    # 2. diary words
    for d in docs:
        text = read(root, d) or ""
        for i, line in prose_lines(text):
            plain = strip_code_spans(line)
            for name, pat in DIARY:
                if name.startswith(("time of day", "timestamp")) and line.lstrip().startswith("|"):
                    continue  # a table row: dated provenance
                m = pat.search(plain)
                if m:
                    problems.append("%s:%d: diary (%s): %r" % (d, i, name, m.group(0)))

    # 3. cited documents and their sections
    heads = {}
    for f in files:
        if not scanned(f):
            continue
        text = read(root, f)
        if text is None or FIXTURES in "\n".join(text.split("\n")[:8]):
            continue
        for i, line in enumerate(text.split("\n"), 1):
            for m in CITE.finditer(line):
                if resolve(root, f, m.group(1)) is None:
                    problems.append("%s:%d: citation: %s is not in the repository" % (f, i, m.group(1)))
        # sections, with citations wrapped over comment lines joined
        joined = re.sub(r"[ \t]*\n[ \t]*(?:\*+|#+|//)?[ \t]*", " ", text)
        for pat, kind in ((SECTION_NUM, "num"), (SECTION_NAME, "name")):
            for m in pat.finditer(joined):
                doc = resolve(root, f, m.group(1))
                if doc is None:
                    continue  # reported above
                if doc not in heads:
                    heads[doc] = [h.replace("`", "") for h in headings(read(root, doc) or "")]
                want = m.group(2)
                if kind == "num":
                    ok = any(re.match(r"^%s(\.?\s|\.$|$)" % re.escape(want), h) for h in heads[doc])
                else:
                    w = want.lower().replace("`", "")
                    ok = any(re.sub(r"^\d+(\.\d+)*\.?\s+", "", h).lower().startswith(w) or h.lower().startswith(w)
                             for h in heads[doc])
                if not ok:
                    line = joined[: m.start()].count("\n") + 1 if kind == "num" else 0
                    problems.append("%s:%s: section: %s has no section %s%s" %
                                    (f, line or "?", doc, "§" if kind == "num" else "", want if kind == "num"
                                     else '"%s"' % want))

    # 4. relative links
    for d in docs:
        text = read(root, d) or ""
        for i, line in prose_lines(text):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(d), path)) if path else d
                if dest.startswith("..") or not os.path.exists(os.path.join(root, dest)):
                    problems.append("%s:%d: link: %s does not exist" % (d, i, target))
                    continue
                if anchor and os.path.isfile(os.path.join(root, dest)):
                    if anchor not in anchors(read(root, dest) or ""):
                        problems.append("%s:%d: link: %s has no heading #%s" % (d, i, dest, anchor))
    return problems


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if len(argv) == 3 and argv[1] == "--root":
        root = argv[2]
    elif len(argv) != 1:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    print("check_docs: %d problem(s) in %s" % (len(problems), root))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
