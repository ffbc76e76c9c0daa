#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune affinity explain --runtime gomp`: GNU libgomp 12's plan as text and JSON (worked examples,
# nested teams, what libgomp ignores), values libgomp rejects (exit 2 naming them, or --lenient),
# option errors, and --runtime libomp staying the default.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$T" affinity --help >"$tmp/help" || fail "--help exit $?"
for opt in --runtime --nested --num-threads --max-active-levels --omp-nested --spincount --lenient; do
    grep -q -- "$opt" "$tmp/help" || fail "--help does not document $opt"
done

# Haswell spread 12 on 32 cores: places 0 3 6 9 12 15 18 21 24 26 28 30.
"$T" affinity explain --runtime gomp --node haswell --threads 12 --places cores --proc-bind spread --json \
    >"$tmp/spread" || fail "spread exit $?"
python3 - "$tmp/spread" <<'PY' || fail "spread content: $(cat "$tmp/spread")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["runtime"] == "libgomp" and j["threads"] == 12 and j["bound"] is True, j
assert [t["place"] for t in j["plan"]] == [0, 3, 6, 9, 12, 15, 18, 21, 24, 26, 28, 30], j["plan"]
assert j["plan"][1]["cpus"] == [3, 35] and j["plan"][1]["partition"] == [3, 4, 5], j["plan"][1]
assert j["plan"][11]["sockets"] == [1]
assert j["places_source"] == "OMP_PLACES" and len(j["places"]) == 32 and j["places"][0] == [0, 32]
assert j["proc_bind"] == ["spread"] and j["proc_bind_display"] == "SPREAD"
assert j["initial_pin"] == {"pinned": True, "cpus": [0, 32]}, j["initial_pin"]
assert j["wait"]["spin_count"] == 300000 and j["messages"] == [] and j["fatal"] is None
assert j["key"].startswith("pin:0,32;")
PY

# Text, with KMP_* variables given: libgomp ignores them, and says so. GOMP_CPU_AFFINITY "0 1" with
# 4 threads: 0,0,1,1 (the list does not restart).
"$T" affinity explain --runtime gomp --node haswell --threads 4 --gomp-cpu-affinity "0 1" --blocktime 1 \
    granularity=fine,compact,1,0 >"$tmp/txt" || fail "text exit $?"
grep -q "^runtime: *GNU libgomp 12" "$tmp/txt" || fail "no runtime line: $(cat "$tmp/txt")"
grep -q "^places from: *GOMP_CPU_AFFINITY (2 places)" "$tmp/txt" || fail "places line"
grep -q "^initial thread: pinned to 0 by libgomp's constructor" "$tmp/txt" || fail "pin line"
grep -Eq "^1 +0 +0-1 +0 " "$tmp/txt" || fail "thread 1 row: $(grep -E '^1 ' "$tmp/txt")"
grep -Eq "^2 +1 +0-1 +1 " "$tmp/txt" || fail "thread 2 row: $(grep -E '^2 ' "$tmp/txt")"
grep -q "KMP_AFFINITY=granularity=fine,compact,1,0 is ignored: GNU libgomp reads no KMP_\* variable" "$tmp/txt" \
    || fail "no KMP_AFFINITY note"
grep -q "KMP_BLOCKTIME=1 is ignored" "$tmp/txt" || fail "no KMP_BLOCKTIME note"

# Nested teams: spread,close over cores, 2 x 2.
"$T" affinity explain --runtime gomp --node haswell --threads 2 --nested 2 --places cores \
    --proc-bind spread,close --json >"$tmp/nested" || fail "nested exit $?"
python3 - "$tmp/nested" <<'PY' || fail "nested content: $(cat "$tmp/nested")"
import json, sys
j = json.load(open(sys.argv[1]))
got = {t["path"]: t["cpus"] for t in j["plan"]}
assert got == {"0": [0, 32], "1": [16, 48], "0.0": [0, 32], "0.1": [1, 33], "1.0": [16, 48], "1.1": [17, 49]}, got
assert j["levels"] == 2 and j["proc_bind"] == ["spread", "close"] and j["max_active_levels"] == 255
PY

# KNL spread 64 over 68 cores: the first 4 subpartitions have 2 places.
"$T" affinity explain --runtime gomp --node knl --threads 64 --places cores --proc-bind spread --json \
    >"$tmp/knl" || fail "knl exit $?"
python3 -c 'import json,sys; p=[t["place"] for t in json.load(open(sys.argv[1]))["plan"]]; assert p[:6]==[0,2,4,6,8,9] and p[-1]==67, p' \
    "$tmp/knl" || fail "knl content"

# No --threads: libgomp's own team size (OMP_NUM_THREADS, else the CPUs of the mask); --env.
"$T" affinity explain --runtime gomp --node haswell --mask 0-3,32-35 --proc-bind close --json >"$tmp/mask" \
    || fail "mask exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["threads"]==8 and j["plan"][1]["cpus"]==[32], j' \
    "$tmp/mask" || fail "mask content"
OMP_PLACES=cores OMP_PROC_BIND=close OMP_NUM_THREADS=3 "$T" affinity explain --runtime gomp --node haswell --env \
    --json >"$tmp/env" || fail "--env exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["threads"]==3 and j["places_source"]=="OMP_PLACES", j' \
    "$tmp/env" || fail "--env content"

# A value libgomp rejects: exit 2 naming it; with --lenient, what libgomp does with it.
"$T" affinity explain --runtime gomp --node haswell --threads 2 --places '{0-3}' --proc-bind close \
    >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "rejected OMP_PLACES: exit is not 2"
grep -q "OMP_PLACES='{0-3}'" "$tmp/err" || fail "message does not name the value: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "output on error: $(cat "$tmp/out")"
"$T" affinity explain --runtime gomp --node haswell --threads 2 --places '{0-3}' --proc-bind close --lenient \
    >"$tmp/len" || fail "--lenient exit $?"
grep -q "libgomp: Invalid value for environment variable OMP_PLACES" "$tmp/len" || fail "no libgomp message"
grep -q "^places from: *default (64 places)" "$tmp/len" || fail "rejected OMP_PLACES not treated as unset"
for bad in "--spincount 5kk" "--gomp-cpu-affinity 3-1" "--proc-bind true,close" "--num-threads 0" \
    "--wait-policy lazy" "--omp-nested yes" "--max-active-levels -1"; do
    # shellcheck disable=SC2086
    "$T" affinity explain --runtime gomp --node haswell --threads 2 $bad >/dev/null 2>"$tmp/err"
    [ $? -eq 2 ] || fail "$bad: exit is not 2"
    val=${bad#* }
    grep -qF "'$val'" "$tmp/err" || fail "$bad: message does not name '$val': $(cat "$tmp/err")"
done
"$T" affinity explain --runtime gomp --node haswell --mask 0-3 --threads 2 --gomp-cpu-affinity "0 8" \
    >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "fatal GOMP_CPU_AFFINITY: exit is not 2"
grep -q "Thread creation failed" "$tmp/err" || fail "fatal not explained: $(cat "$tmp/err")"

# Option errors: exit 2 naming the value.
"$T" affinity explain --runtime gomp --node haswell --threads 2 --nested 2,x >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "'x'" "$tmp/err" || fail "--nested 2,x: $(cat "$tmp/err")"
"$T" affinity explain --runtime gomp --node haswell --threads 2 --nested 1,1,1,1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--nested with 4 nested levels accepted"
"$T" affinity explain --runtime bogus --node haswell --threads 2 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "bogus" "$tmp/err" || fail "--runtime bogus: $(cat "$tmp/err")"
"$T" affinity explain --node haswell --threads 2 --nested 2 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "runtime gomp" "$tmp/err" || fail "--nested without --runtime gomp: $(cat "$tmp/err")"
"$T" affinity explain --node haswell --places cores >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--threads N is required" "$tmp/err" || fail "libomp without --threads accepted"

# --runtime libomp stays the default, and is what it was.
"$T" affinity explain --node haswell --threads 2 --places cores --proc-bind spread >"$tmp/omp" || fail "libomp exit $?"
grep -q "^effective: *KMP_AFFINITY=" "$tmp/omp" || fail "the default runtime is not libomp: $(head -3 "$tmp/omp")"
"$T" affinity explain --runtime libomp --node haswell --threads 2 --places cores --proc-bind spread >"$tmp/omp2" \
    || fail "--runtime libomp exit $?"
cmp -s "$tmp/omp" "$tmp/omp2" || fail "--runtime libomp differs from the default"
echo "ok"
