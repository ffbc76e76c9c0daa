#!/bin/bash
# SPDX-License-Identifier: MIT
# Noise evidence of a sweep (issue 16): every trial stores the OS values (nothing "unavailable"
# on Linux with /proc), `tune export` (JSON and CSV) shows them, the sweep summary and `tune
# best` count the disturbed processes, and --rerun-disturbed re-runs a disturbed confirmation
# process (stored beyond the planned positions) instead of counting it. Whether a process IS
# disturbed depends on the machine's load: the counts are checked for consistency, not value
# (test_noise_hog makes a disturbance on purpose).
. "$(dirname "$0")/sweep_common.sh"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
cd "$tmp"

# a small sweep: every trial stores the values, and export shows them (JSON and CSV)
"$BKM_TUNE" --workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --strategy grid \
  --min-time 0.02 --min-samples 5 --max-samples 10 --confirm-top 1 --replicates 6 --rerun-disturbed 1 \
  --db s.sqlite --json > sweep.json 2> sweep.err || fail "sweep: exit $?: $(tail -3 sweep.err)"
"$BKM_TUNE" export --db s.sqlite --format json > export.json 2> export.err || fail "export: $(cat export.err)"
"$BKM_TUNE" export --db s.sqlite --format csv > export.csv 2> export.err || fail "export csv: $(cat export.err)"
"$BKM_TUNE" best --node auto --workload gemm --db s.sqlite --json > best.json 2> best.err || fail "best: $(cat best.err)"
"$BKM_TUNE" best --node auto --workload gemm --db s.sqlite > best.txt 2> best.err || fail "best: $(cat best.err)"
python3 - sweep.json export.json export.csv best.json <<'PY' || fail "sweep noise evidence"
import csv, json, sys
s = json.load(open(sys.argv[1])); rows = json.load(open(sys.argv[2]))
b = json.load(open(sys.argv[4]))
assert len(rows) == s["trials"], (len(rows), s["trials"])
def walk(x, path):
    if isinstance(x, dict):
        assert "unavailable" not in x, (path, x.get("unavailable"))
        for k, v in x.items():
            walk(v, path + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, path + "[%d]" % i)
for r in rows:
    assert r["status"] == "ok" and r["noise"] is not None, r
    walk(r["noise"], "trial %d" % r["id"])
    assert r["disturbed"] == r["noise"]["disturbed"] and r["noise_share"] == r["noise"]["share"], r
    assert len(r["noise"]["threads"]) == r["config"]["threads"]
dist = sum(r["disturbed"] for r in rows)
assert s["disturbed_processes"] == dist, (s["disturbed_processes"], dist)
# re-runs: a disturbed confirmation process was replaced, stored beyond the planned positions
planned = len(b["evidence"]["order_arms"])   # every position of every block
extra = [r for r in rows if r["role"] == "confirm" and r["round"] > planned]
assert len(extra) == s["confirm_reruns"], (len(extra), s["confirm_reruns"])
ev = b["evidence"]
assert ev["noise"]["rerun_disturbed"] == 1 and ev["noise"]["reruns"] == s["confirm_reruns"]
counted = sum(arm["disturbed_processes"] for arm in [ev["default"]] + ev["candidates"])
assert counted == ev["noise"]["disturbed_counted"] == s["confirm_disturbed_counted"]
for arm in [ev["default"]] + ev["candidates"]:
    assert len(arm["process_disturbed"]) == arm["processes"]
c = list(csv.DictReader(open(sys.argv[3], newline="")))
assert len(c) == len(rows) and all(x["disturbed"] in ("0", "1") and x["involuntary_switches"] != "" for x in c)
print("sweep: %d trials, %d disturbed, %d confirmation re-runs" % (len(rows), dist, s["confirm_reruns"]))
PY
# the same command resumes: nothing runs again, the same processes are found disturbed and re-run
"$BKM_TUNE" --workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --strategy grid \
  --min-time 0.02 --min-samples 5 --max-samples 10 --confirm-top 1 --replicates 6 --rerun-disturbed 1 \
  --db s.sqlite --json > again.json 2> again.err || fail "resumed sweep: exit $?: $(tail -3 again.err)"
python3 - sweep.json again.json <<'PY' || fail "resumed sweep counts differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["resumed"] == b["trials"] == a["trials"], (a["trials"], b["trials"], b["resumed"])
for k in ("disturbed_processes", "confirm_disturbed_counted", "confirm_reruns"):
    assert a[k] == b[k], (k, a[k], b[k])
assert a["evidence"]["default"]["process_median_ms"] == b["evidence"]["default"]["process_median_ms"]
PY
grep -q "^  noise: .* re-run (--rerun-disturbed 1)" best.txt || fail "tune best text has no noise line: $(cat best.txt)"

echo PASS
