#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The regression gate on the user's own program: `tune regress --record -o FILE -- PROG` and
# `tune regress --baseline FILE -- PROG`. PROG is a shell script that execs the gcc-built OpenMP
# program (GNU libgomp), so "rebuilding" it is rewriting the script: the same argv, another
# executable hash. Checked: the baseline records the argv, the executable's hash, the runtime
# (found by the probe run) and the program's values (normalised by calibration processes); two
# threads are bound with the variables libgomp reads, never KMP_*; a check of the same program
# passes and says it is the executable the baseline ran; a check after a rebuild that does three
# times the work is a regression (exit 1) and says the executable is another (the metric path,
# --metric, one thread); a baseline of another argv or metric, of bkm's suite, without the
# program, and options that do not apply to a program are refused (exit 2) naming the value.
#   test_regress_program.sh OMP_PROG_GCC
set -u
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}"
GCC_PROG=${1:?}
[ -x "$GCC_PROG" ] || { echo "SKIP: $GCC_PROG was not built (no gcc at configure time)"; exit 77; }
command -v sha256sum > /dev/null || { echo "SKIP: sha256sum is not installed"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs for a 2-thread team (nproc $(nproc))"; exit 77; }
T=$BKM_TUNE
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-regress-program.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
fail() { echo "FAIL: $*" >&2; for f in out err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done; exit 1; }
expect() {   # expect RC CMD...: stdout in out, stderr in err
  local want=$1 rc
  shift
  timeout 240 "$@" > out 2> err
  rc=$?
  [ "$rc" = "$want" ] || fail "'$*': exit $rc, expected $want"
}
export BKM_DB=$w/results.sqlite
METRIC='avg time ([0-9.]+) millisecond'
# the program, "built" with its amount of work: 4 regions of MS ms of fixed arithmetic
build() { printf '#!/bin/sh\nexec %s work 4 %s\n' "$GCC_PROG" "$1" > "$w/prog"; chmod +x "$w/prog"; }
build 15
sha_a=$(sha256sum "$w/prog" | cut -d' ' -f1)

# --- 1. record: argv, hash, runtime, values; two threads bound with libgomp's variables -------------
expect 0 "$T" regress --record -o base.json --threads 2 --processes 6 -- "$w/prog"
grep -q "wrote base.json: program prog (libgomp)" err || fail "record: no summary naming the program and runtime"
python3 - base.json "$w/prog" "$sha_a" <<'PY' || fail "record: $(head -c 3000 base.json)"
import json, sys
b = json.load(open(sys.argv[1])); (x,) = b["workloads"]
p = x["program"]
assert x["workload"] == "prog" and p["argv"] == [sys.argv[2]], x
assert p["exe_sha256"] == sys.argv[3] and p["runtime"] == "libgomp" and p["metric"] is None, p
env = x["spec"]["env"]
assert env.get("OMP_PLACES") == "cores" and env.get("OMP_PROC_BIND") == "close", env
assert not any(k.startswith("KMP_") for k in env), env
assert x["spec"]["threads"] == 2 and len(x["values"]) == 6 and all(v > 0 for v in x["values"]), x
# a value is the run's wall time over the calibration's fastest sample: a 60 ms program against a
# sub-millisecond SGEMM, far above 1
assert all(v > 5 for v in x["values"]), x["values"]
assert b["calibration"]["workload"] == "gemm", b["calibration"]
PY

# --- 2. the same program: passes, the same executable ---------------------------------------------
expect 0 "$T" regress --baseline base.json --threads 2 --json -- "$w/prog"
python3 - out <<'PY' || fail "same program: $(head -c 3000 out)"
import json, sys
d = json.load(open(sys.argv[1])); (r,) = d["results"]
assert d["verdict"] == "pass" and d["regressions"] == 0 and not r["regression"], r
assert r["program"]["same_executable"] is True and r["program"]["runtime"] == "libgomp", r["program"]
assert r["n"] == 6 and r["n_ref"] == 6, r
PY

# --- 3. the metric path: the fastest region the program prints, one thread ----------------------
expect 0 "$T" regress --record -o metric.json --processes 6 --metric "$METRIC" -- "$w/prog"
python3 - metric.json <<'PY' || fail "metric record: $(head -c 2000 metric.json)"
import json, sys
(x,) = json.load(open(sys.argv[1]))["workloads"]
assert x["program"]["metric"] == "avg time ([0-9.]+) millisecond" and x["spec"]["threads"] == 1, x
assert "OMP_PLACES" not in x["spec"]["env"], x["spec"]["env"]
PY
expect 0 "$T" regress --baseline metric.json --metric "$METRIC" -- "$w/prog"
grep -q "verdict: pass" out || fail "metric check: not a pass"

# --- 4. a rebuild that does three times the work: a regression, another executable -----------------
# (the metric, one thread: the fastest region of a run is what belongs to the program, so the
# slowdown stands out however busy the machine is; more blocks while it is undecided)
build 45
expect 1 "$T" regress --baseline metric.json --metric "$METRIC" --processes-max 18 -- "$w/prog"
grep -q "verdict: regression" out || fail "slower rebuild: no regression verdict"
grep -q "not the one the baseline ran" out || fail "slower rebuild: the table does not say the executable changed"
grep -q "^prog " out || fail "slower rebuild: no row for the program"
"$T" regress --baseline metric.json --metric "$METRIC" --processes-max 18 --json -- "$w/prog" > out 2> err
python3 - out "$sha_a" <<'PY' || fail "slower rebuild (JSON): $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"])' out)"
import json, sys
d = json.load(open(sys.argv[1])); (r,) = d["results"]
assert d["verdict"] == "regression" and r["regression"] and r["decision"] == "claimed", r
assert r["ratio"] > 1.5, r["ratio"]
assert r["program"]["same_executable"] is False and r["program"]["ref_exe_sha256"] == sys.argv[2], r["program"]
PY
build 15

# --- 5. refusals: exit 2, the value named, nothing measured ----------------------------------------
expect 2 "$T" regress --baseline base.json -- "$w/prog" extra
grep -q "recorded for the program \`$w/prog\`, not \`$w/prog extra\`" err || fail "other argv: $(cat err)"
expect 2 "$T" regress --baseline base.json --metric "$METRIC" -- "$w/prog"
grep -q "give the same --metric" err || fail "other metric: $(cat err)"
expect 2 "$T" regress --baseline base.json
grep -q "give it after -- to check it" err || fail "program baseline without the program: $(cat err)"
expect 0 "$T" regress --record -o suite.json --workloads gemm --processes 3
expect 2 "$T" regress --baseline suite.json -- "$w/prog"
grep -q "workload gemm is of bkm's suite, not a program" err || fail "suite baseline with a program: $(cat err)"
expect 2 "$T" regress --against "$T" -- "$w/prog"
grep -q "a program (-- $w/prog) is checked against a baseline" err || fail "--against with a program: $(cat err)"
expect 2 "$T" regress --record -o x.json --workloads gemm -- "$w/prog"
grep -q -- "--workloads 'gemm': with -- CMD the suite is the program alone" err || fail "--workloads: $(cat err)"
expect 2 "$T" regress --record -o x.json --param kc=64 -- "$w/prog"
grep -q -- "--param 'kc=64': a program has no bkm parameters" err || fail "--param: $(cat err)"
expect 2 "$T" regress --record -o x.json --metric "$METRIC"
grep -q -- "--metric is for your own program" err || fail "--metric without a program: $(cat err)"
[ ! -e x.json ] || fail "a refused record wrote x.json"
echo "ok: a program's baseline (argv, hash $sha_a, libgomp, 6 values), the same program passes, a 3x rebuild" \
     "regresses and is named as another executable, the metric path, every refusal"
