#!/bin/bash
# SPDX-License-Identifier: MIT
# A claim carries its evidence: the confirmation round runs the default and each candidate in R
# fresh processes, in the stored order, and `tune best --json` shows the per-process medians of
# both sides, the test, its Holm correction, the ratio and its interval. `--aa` confirms the
# default against copies of itself through the same code and stores no best-known setting. Every
# trial stores its binding evidence (planned vs actual mask per thread) and the sweep the git
# revision of the build. (Whether a claim is made is the statistics' business, tested with
# controlled inputs in test_stats; the rates are measured by bench/aa_rate.sh.)
. "$(dirname "$0")/sweep_common.sh"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
cd "$tmp"
small=(--workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --affinity default
       --blocktime 0 --strategy grid --min-time 0.02 --min-samples 5 --max-samples 10)

# bad --replicates: exit 2 naming the value, nothing written
"$BKM_TUNE" "${small[@]}" --replicates 5 --db bad.sqlite > out.txt 2> err.txt
[ $? -eq 2 ] && grep -q "replicates '5'" err.txt || fail "--replicates 5 not refused: $(cat err.txt)"
[ ! -e bad.sqlite ] || fail "--replicates 5 wrote a database"

# a real sweep with 1 candidate and 7 processes per side
"$BKM_TUNE" "${small[@]}" --confirm-top 1 --replicates 7 --db real.sqlite --json > real.json 2> real.err ||
  fail "sweep: exit $?: $(tail -3 real.err)"
"$BKM_TUNE" best --node auto --workload gemm --db real.sqlite --json > best.json 2> best.err ||
  fail "tune best: $(cat best.err)"
python3 - real.json best.json <<'PY' || fail "evidence"
import json, sys
s = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
ev = b["evidence"]
assert ev == s["evidence"], "tune best shows other evidence than the sweep derived"
assert ev["replicates"] == 7 and ev["order"] == "abba-shuffled" and ev["correction"] == "holm"
assert len(ev["order_arms"]) == 14 and sorted(ev["order_arms"]) == [0] * 7 + [1] * 7, ev["order_arms"]
d, (c,) = ev["default"], ev["candidates"]
for arm, i in ((d, 0), (c, 1)):
    assert arm["processes"] == 7 and len(arm["process_median_ms"]) == 7, arm
    assert all(x > 0 for x in arm["process_median_ms"])
    # positions: where in the order this arm was measured
    assert [ev["order_arms"][p - 1] for p in arm["positions"]] == [i] * 7, (arm["positions"], ev["order_arms"])
    lo, hi = arm["median_ci95_order_stat"]
    assert lo <= arm["median_ms"] <= hi
    # each process's value with its precision from its own samples
    assert len(arm["process_median_ci95_order_stat"]) == 7
    for v, (plo, phi) in zip(arm["process_median_ms"], arm["process_median_ci95_order_stat"]):
        assert plo <= v <= phi, (plo, v, phi)
assert 0 < c["p"] <= 1 and c["p_holm"] == c["p"]          # one candidate: nothing to correct
lo, hi = c["ratio_ci95_exact_rank"]
assert lo <= c["ratio"] <= hi and c["ratio_ci_coverage"] >= 0.95
assert c["significant"] == ev["claim"] == b["significant"] == s["claim"]
assert (ev["winner"] == 1) == b["significant"]
assert b["median_ci95_order_stat"][0] <= b["median_ms"] <= b["median_ci95_order_stat"][1]
assert "ci95" not in b, "an interval named only ci95"
PY
db=real.sqlite
# confirmation trials: one per position of the order, 7 per arm
[ "$(q $db "SELECT count(*), min(round), max(round), count(DISTINCT round) FROM trial WHERE role = 'confirm'")" = "14|1|14|14" ] ||
  fail "confirm trials: $(q $db "SELECT role, round, config_key FROM trial WHERE role = 'confirm'")"
# binding evidence of every trial: planned and actual mask of each thread
python3 - <<PY || fail "binding_json"
import json, sqlite3
rows = sqlite3.connect("file:$db?mode=ro", uri=True).execute(
    "SELECT binding_json, json_extract(effective_json, '$.OMP_NUM_THREADS') FROM trial WHERE status = 'ok'").fetchall()
assert rows
for bj, threads in rows:
    b = json.loads(bj)
    assert len(b["threads"]) == int(threads), (bj, threads)
    for t in b["threads"]:
        assert "planned" in t and "actual" in t and "match" in t, t
PY
# the revision of this build (as `tune version` reports it), not "unknown", when built from a git
# checkout: a commit of that checkout
rev=$(q $db "SELECT git_revision FROM sweep")
built=$("$BKM_TUNE" version | sed -n 's/^revision //p')
[ "$rev" = "$built" ] || fail "git_revision '$rev', but tune version says '$built'"
if git -C "${BKM_SOURCE_DIR:-/nonexistent}" rev-parse HEAD > /dev/null 2>&1; then
  hash=$(printf '%s\n' "$rev" | sed -E 's/-dirty$//; s/.*-g([0-9a-f]+)$/\1/')
  git -C "$BKM_SOURCE_DIR" cat-file -e "$hash^{commit}" 2> /dev/null ||
    fail "git_revision '$rev' does not name a commit of $BKM_SOURCE_DIR"
else
  [ "$rev" = unknown ] || fail "not a git checkout, yet git_revision '$rev'"
fi

# A/A: the default against 2 copies of itself, 6 processes each, no search, nothing stored as best
"$BKM_TUNE" "${small[@]}" --aa --confirm-top 2 --db aa.sqlite --json > aa.json 2> aa.err
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "--aa: exit $rc: $(tail -3 aa.err)"
python3 - aa.json $rc <<'PY' || fail "A/A summary"
import json, sys
s = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
assert s["aa"] is True and s["replicates"] == 6
ev = s["evidence"]
assert ev["aa"] is True and len(ev["candidates"]) == 2 and ev["candidates_tested"] == 2
assert all(c["config"] == ev["default"]["config"] for c in ev["candidates"])
assert len(ev["order_arms"]) == 18
assert s["claim"] == ev["claim"] == (rc == 1) == any(c["significant"] for c in ev["candidates"])
assert s["best"]["verdict"].startswith("A/A: ")
PY
[ "$(q aa.sqlite "SELECT count(*) FROM trial WHERE role = 'search'")" -eq 0 ] || fail "--aa ran a search"
[ "$(q aa.sqlite "SELECT count(*), count(DISTINCT config_key) FROM trial WHERE role = 'confirm'")" = "18|1" ] ||
  fail "--aa: $(q aa.sqlite "SELECT count(*), count(DISTINCT config_key) FROM trial")"
[ "$(q aa.sqlite "SELECT count(*) FROM best")" -eq 0 ] || fail "--aa stored a best-known setting"
[ "$(q aa.sqlite "SELECT label FROM sweep")" = "A/A" ] || fail "--aa sweep not labelled"
# the same command resumes the A/A run: every process is found at its place, none is run again
"$BKM_TUNE" "${small[@]}" --aa --confirm-top 2 --db aa.sqlite --json > aa2.json 2> aa2.err
python3 -c "import json,sys; a=json.load(open('aa.json')); b=json.load(open('aa2.json')); assert b['resumed'] == 18 and a['evidence'] == b['evidence'], b" ||
  fail "A/A resume"
echo "ok: evidence stored and shown by tune best (7 processes per side, order, Holm, exact rank ratio CI)," \
     "binding evidence per trial, git revision $rev; A/A: 18 processes, no search, no best, exit $rc"
