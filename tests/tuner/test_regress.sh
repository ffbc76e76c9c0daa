#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune regress`: a baseline recorded with its provenance; checks whose outcome the statistics
# fix whatever the machine's noise (3 processes a side: the smallest one-sided Mann-Whitney p is
# 0.05, so at the default alpha 0.01 an A/A check can never report a regression, and a 16x
# slowdown — GEMM with kc=4 — is one at alpha 0.2); the sequential gate (--processes-max: blocks
# while a workload is undecided); JUnit XML; the gate run stored for the report; a baseline of
# another topology refused with exit 3; bad input exit 2.
set -u
T=${BKM_TUNE:?BKM_TUNE must point at tune}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"
small=(--workloads gemm,lstm --processes 3)
"$T" regress --record -o base.json "${small[@]}" > rec.out 2> rec.err || fail "record: exit $? ($(cat rec.err))"
python3 - base.json <<'PY' || fail "the baseline lacks its content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "bkm-regress-baseline" and d["version"] == 1, d.get("format")
assert d["git_revision"] and d["created_at"], "provenance"
h = d["host"]
assert h["hostname"] and h["fingerprint"] and h["isa"] and h["topology"]["pus"] >= 1, h
assert d["calibration"]["workload"] == "gemm"
assert [w["workload"] for w in d["workloads"]] == ["gemm", "lstm"], d["workloads"]
for w in d["workloads"]:
    assert len(w["values"]) == 3 and all(v > 0 for v in w["values"]), w
    assert len(w["workload_ms"]) == 3 and len(w["calibration_ms"]) == 3
    for v, a, b in zip(w["values"], w["workload_ms"], w["calibration_ms"]):
        assert abs(v - a / b) <= 1e-9 * v, (v, a, b)
PY
# A/A: never a regression with 3 processes a side at alpha 0.01
"$T" regress --baseline base.json --junit aa.xml --db g.sqlite > aa.out 2> aa.err
rc=$?
[ $rc -eq 0 ] || fail "A/A: exit $rc, expected 0: $(cat aa.out aa.err)"
grep -q '^verdict: pass' aa.out || fail "A/A: no pass verdict: $(cat aa.out)"
grep -q '<testsuite name="bkm.regress" tests="2" failures="0"' aa.xml || fail "A/A: JUnit: $(cat aa.xml)"
[ "$(sqlite3 g.sqlite "SELECT count(*) FROM gate_run WHERE verdict = 'pass' AND mode = 'baseline'")" = 1 ] ||
  fail "the gate run was not stored"
# a real slowdown: GEMM blocked with kc=4 (~16x slower), at alpha 0.2 (reachable with 3 vs 3)
"$T" regress --baseline base.json --workloads gemm --param kc=4 --alpha 0.2 --junit kc.xml --json --db g.sqlite \
  > kc.out 2> kc.err
rc=$?
[ $rc -eq 1 ] || fail "kc=4: exit $rc, expected 1: $(cat kc.out kc.err)"
python3 -c "
import json,sys; d=json.load(open('kc.out'))
assert d['verdict'] == 'regression' and d['regressions'] == 1, d
r = d['results'][0]
assert r['workload'] == 'gemm' and r['regression'] and r['ratio'] > 1.1 and 'kc=4' in r['params'], r
# the noise marks of the counted processes: every one has a mark or is counted as without one
assert 0 <= r['disturbed'] + r['noise_unknown'] <= r['n'], r
assert 0 <= r['ref_disturbed'] + r['ref_noise_unknown'] <= r['n'], r
" || fail "kc=4: the JSON does not report the regression: $(cat kc.out)"
grep -q 'failures="1"' kc.xml && grep -q '<failure message="REGRESSION' kc.xml || fail "kc=4: JUnit: $(cat kc.xml)"
grep -q 'disturbed processes (noise evidence, not used by the rule): [0-9]* of 3' kc.xml ||
  fail "kc=4: JUnit lacks the disturbed count: $(cat kc.xml)"
grep -q 'disturbed' aa.out && grep -Eq '^gemm +[0-9]+/[0-9]+ +3 +3 +[0-9]+/[0-9]+ ' aa.out ||
  fail "A/A: the table lacks the disturbed column: $(cat aa.out)"
[ "$(sqlite3 g.sqlite "SELECT count(*) FROM gate_run, json_each(gate_run.results_json) j
     WHERE json_type(j.value, '$.disturbed') = 'integer'")" -ge 3 ] || fail "the stored gate runs lack the disturbed counts"
python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse('kc.xml')" || fail "kc.xml is not XML"
# A/B against a build (this one): no baseline needed; 3 vs 3 never significant at 0.01
"$T" regress --against "$T" --workloads gemm --processes 3 --db g.sqlite > ab.out 2> ab.err
rc=$?
[ $rc -eq 0 ] || fail "A/B: exit $rc: $(cat ab.out ab.err)"
grep -q 'A/B' ab.out || fail "A/B: the table does not say A/B: $(cat ab.out)"
# the sequential gate: blocks of 3 up to 6 while a workload is undecided; each one says what was
# decided and after how many blocks; the gate run stores it
"$T" regress --against "$T" --workloads gemm,lstm --processes 3 --processes-max 6 --json --db g.sqlite \
  > seq.out 2> seq.err
rc=$?
[ $rc -eq 0 ] || fail "sequential A/B: exit $rc: $(cat seq.out seq.err)"
python3 - seq.out <<'PY' || fail "sequential A/B: $(cat seq.out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "pass" and d["regressions"] == 0, d["verdict"]
for r in d["results"]:
    assert r["processes_max"] == 6 and r["looks"] in (1, 2), r
    assert r["n"] <= 3 * r["looks"] and r["n_ref"] <= 3 * r["looks"], r
    assert r["decision"] in ("not-better", "undecided"), r
    assert (r["decision"] == "undecided") == r["verdict"].startswith("ok, undecided"), r
    assert r["looks"] == 2 or r["decision"] == "not-better", r   # an undecided one got its second block
    assert len(r["ratio_rci"]) == 2 and 0 < r["p"] <= 1 and 0 < r["nominal_level"] <= 0.01, r
PY
[ "$(sqlite3 g.sqlite "SELECT count(*) FROM gate_run, json_each(gate_run.results_json) j
     WHERE json_extract(j.value, '$.decision') IN ('not-better', 'undecided')")" -ge 2 ] ||
  fail "the stored gate run lacks the decisions"
# a baseline from another topology or ISA: exit 3 saying why, nothing compared
sed 's#"fingerprint": *"[^"]*"#"fingerprint": "2p/2n/64c/128t/avx2"#' base.json > other.json
"$T" regress --baseline other.json > other.out 2> other.err
rc=$?
[ $rc -eq 3 ] || fail "other topology: exit $rc, expected 3: $(cat other.err)"
grep -q '2p/2n/64c/128t/avx2' other.err && grep -q 'not comparable' other.err || fail "other topology: $(cat other.err)"
# bad input: exit 2 naming the value, nothing run
expect2() {  # what pattern args...
  local what=$1 pat=$2
  shift 2
  "$T" regress "$@" > bad.out 2> bad.err
  local rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, expected 2: $(cat bad.err)"
  grep -q -- "$pat" bad.err || fail "$what: the message does not name '$pat': $(cat bad.err)"
}
expect2 "no mode" "exactly one of"
expect2 "two modes" "exactly one of" --record -o x.json --baseline base.json
expect2 "--record without -o" "needs -o" --record
expect2 "--record with --processes-max" "processes-max is for a check" --record -o x.json --processes-max 9
expect2 "unknown parameter" "nosuch" --baseline base.json --param nosuch=1
expect2 "bad parameter value" "kc" --baseline base.json --param kc=-5
expect2 "unknown workload" "fft" --record -o x.json --workloads gemm,fft
echo '{"format": "something else"}' > garbage.json
expect2 "not a baseline" "not a bkm regression baseline" --baseline garbage.json
expect2 "missing baseline" "nosuch.json" --baseline nosuch.json
[ -e x.json ] && fail "a refused --record wrote its file"
# the MPI workload without MPICH's launcher on PATH: exit 3 naming mpiexec, nothing written
env -u SLURM_JOB_ID PATH=/nonexistent "$T" regress --record -o mpi.json --workloads fmnist-sgd > bad.out 2> bad.err
rc=$?
[ $rc -eq 3 ] || fail "fmnist-sgd without mpiexec: exit $rc, expected 3: $(cat bad.err)"
grep -q 'mpiexec' bad.err && grep -q 'fmnist-sgd' bad.err || fail "fmnist-sgd without mpiexec: $(cat bad.err)"
[ -e mpi.json ] && fail "a --record without mpiexec wrote its file"
"$T" regress --against /nonexistent/tune > bad.out 2> bad.err
[ $? -eq 3 ] || fail "--against a missing executable: expected exit 3: $(cat bad.err)"
echo ok
