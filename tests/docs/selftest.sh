#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The documentation checker (check_docs.py) must find what it is there to find: a tree that breaks
# each rule once reports each violation; the same tree repaired passes; the README of 113818d
# (the lab notebook the documentation replaced), where the history holds it, fails.
# Needs $BKM_PYTHON3 and $BKM_SOURCE_DIR (set by CTest).
# check_docs: fixtures, not citations (the paths below are planted in a scratch tree)
set -u
: "${BKM_PYTHON3:?}" "${BKM_SOURCE_DIR:?}"
check=$BKM_SOURCE_DIR/tests/docs/check_docs.py
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-docs.XXXXXX")
trap 'rm -rf "$w"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- a tree that breaks every rule once ----------------------------------------------------------
bad=$w/bad
mkdir -p "$bad/docs" "$bad/src"
{
  echo "# Project"
  echo "See [the guide](docs/guide.md), [a section](docs/guide.md#nope) and [gone](docs/gone.md)."
  echo "Measured in this session by the previous engineer, 14:24 UTC."
  echo "On branch c3d my runs were faster; I measured 0.9 in the third pass."
  for i in $(seq 400); do echo "line $i"; done
} >"$bad/README.md"
printf '# Guide\n\n## 1. One\n\nA helper wrote this.\n' >"$bad/docs/guide.md"
cat >"$bad/src/x.c" <<'EOF'
/* The rule of reference/affinity.md §3.3, and docs/guide.md §9, and docs/guide.md, "Nope". */
static int x;
EOF
out=$("$BKM_PYTHON3" "$check" --root "$bad") && fail "the broken tree passed: $out"
for want in "README.md:404: readme-length: 404 lines" \
            "README.md:3: diary (session)" "README.md:3: diary (previous engineer)" \
            "README.md:3: diary (time of day in prose)" "README.md:4: diary (branch)" \
            "README.md:4: diary (working branch name)" "README.md:4: diary (first person)" \
            "README.md:4: diary (pass of a work round)" "docs/guide.md:5: diary (helper)" \
            "README.md:2: link: docs/gone.md does not exist" \
            "README.md:2: link: docs/guide.md has no heading #nope" \
            "src/x.c:1: citation: reference/affinity.md is not in the repository" \
            "docs/guide.md has no section §9" "docs/guide.md has no section \"Nope\""; do
  grep -qF -- "$want" <<<"$out" || fail "not reported: $want"
done

# ---- the same tree repaired passes --------------------------------------------------------------
good=$w/good
mkdir -p "$good/docs" "$good/src"
# (names in code spans and code blocks are text about a name, not a diary)
printf '# Project\n\nSee [the guide](docs/guide.md) and [its first section](docs/guide.md#1-one).\nThe word `session` and the name `c3d` in code spans.\n\n```sh\nmy_tool --session 1   # 14:24 UTC\n```\n' \
  >"$good/README.md"
printf '# Guide\n\n## 1. One\n\nWhat is true, and how to reproduce it (2026-12-01 14:24 in a table row:)\n\n| date | figure |\n|---|---|\n| 2026-12-01 14:24 UTC | 0.9 |\n' \
  >"$good/docs/guide.md"
printf '/* The rule of docs/guide.md §1 and docs/guide.md, "One". */\nstatic int x;\n' >"$good/src/x.c"
out=$("$BKM_PYTHON3" "$check" --root "$good") || fail "the repaired tree failed: $out"

# ---- the README this documentation replaced -----------------------------------------------------
if git -C "$BKM_SOURCE_DIR" cat-file -e 113818d:README.md 2>/dev/null; then
  old=$w/old
  mkdir -p "$old"
  git -C "$BKM_SOURCE_DIR" show 113818d:README.md >"$old/README.md"
  out=$("$BKM_PYTHON3" "$check" --root "$old") && fail "the old README passed"
  for want in "README.md:1696: readme-length" "diary (session)" "diary (previous engineer)" \
              "diary (time of day in prose)" "diary (branch)" "diary (first person)"; do
    grep -qF -- "$want" <<<"$out" || fail "old README: not reported: $want"
  done
else
  echo "note: commit 113818d is not in this checkout's history; the old-README case was not run"
fi

[ "$fails" = 0 ] || exit 1
echo "check_docs finds every planted violation and passes the repaired tree"
