#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/fn_lengths.py on planted files: a function over the limit fails (exit 1, marked OVER); one
# under it passes; --allow FILE:NAME exempts exactly that function of that file (marked allowed);
# an --allow that exempts nothing fails naming itself; a malformed one is bad usage (exit 2).
set -u
py=${1:?python3} script=${2:?fn_lengths.py}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/a" "$tmp/b"
{ echo "int long_one(int x)"; echo "{"; for i in $(seq 1 20); do echo "    x += $i;"; done; echo "    return x;"; echo "}"
  echo "static int short_one(void) { return 0; }"; } > "$tmp/a/f.c"
cp "$tmp/a/f.c" "$tmp/b/f.c"
run() { "$py" "$script" "$@" > "$tmp/out" 2> "$tmp/err"; echo $?; }
[ "$(run --limit 30 "$tmp/a")" = 0 ] || fail "a 24-line function fails a limit of 30: $(cat "$tmp/out")"
[ "$(run --limit 10 "$tmp/a")" = 1 ] || fail "a 24-line function passes a limit of 10"
grep -q "^   24 .*/a/f.c:1 long_one  OVER$" "$tmp/out" || fail "not listed as OVER: $(cat "$tmp/out")"
[ "$(run --limit 10 --allow a/f.c:long_one "$tmp/a")" = 0 ] || fail "--allow did not exempt it: $(cat "$tmp/out" "$tmp/err")"
grep -q "long_one  allowed$" "$tmp/out" || fail "the exempted function is not listed as allowed: $(cat "$tmp/out")"
# the exemption is for that file only
[ "$(run --limit 10 --allow a/f.c:long_one "$tmp/a" "$tmp/b")" = 1 ] || fail "--allow a/f.c exempted b/f.c too"
# stale: nothing over the limit by that name
[ "$(run --limit 30 --allow a/f.c:long_one "$tmp/a")" = 1 ] || fail "a stale --allow passes"
grep -q -- "--allow a/f.c:long_one: no such function over 30 lines: remove the entry" "$tmp/err" ||
  fail "a stale --allow is not named: $(cat "$tmp/err")"
[ "$(run --limit 10 --allow a/f.c:short_one --allow a/f.c:long_one "$tmp/a")" = 1 ] ||
  fail "an --allow of a short function passes"
[ "$(run --limit 10 --allow long_one "$tmp/a")" = 2 ] || fail "--allow without FILE: is not bad usage"
echo "ok: over the limit fails, --allow exempts one function of one file, a stale --allow fails"
