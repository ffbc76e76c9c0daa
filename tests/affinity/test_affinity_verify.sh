#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune affinity verify` on this host: a fresh child process runs the binding probe with only the
# setting's variables in its environment; plan and actual masks must agree (exit 0).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# An inherited setting must not leak into the probe.
export KMP_AFFINITY=granularity=fine,scatter OMP_PROC_BIND=spread

"$T" affinity verify --threads 1 >"$tmp/one" 2>&1 || fail "verify --threads 1: exit $? $(cat "$tmp/one")"
grep -q "binding matches the plan" "$tmp/one" || fail "verify --threads 1 output: $(cat "$tmp/one")"

ncpu=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$ncpu" -lt 2 ]; then
    echo "skip: this host allows $ncpu CPU(s); the 2-thread check needs 2"
    exit 77
fi
"$T" affinity verify --threads 2 granularity=fine,compact >"$tmp/two" 2>&1 \
    || fail "verify --threads 2 granularity=fine,compact: exit $? $(cat "$tmp/two")"
"$T" affinity verify --threads 2 --json granularity=fine,compact >"$tmp/json" 2>&1 || fail "verify --json exit $?"
python3 - "$tmp/json" <<'PY' || fail "verify json: $(cat "$tmp/json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["match"] is True, j
planned = [c["planned"] for c in j["compare"]]
assert len(planned) == 2 and len(set(planned)) == 2, planned   # two different single CPUs
assert all(c["planned"] == c["actual"] for c in j["compare"])
PY
"$T" affinity verify --threads 2 granularity=core,sideways 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q sideways "$tmp/err" || fail "bad setting: exit $rc"
echo "ok"
