#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune affinity explain`: text table and JSON plan for the built-in Haswell/KNL profiles and a
# synthetic topology; an invalid setting exits 2 and names the bad token.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$T" affinity --help >"$tmp/help" || fail "--help exit $?"
for opt in --places --proc-bind --hw-subset --gomp-cpu-affinity --blocktime --threads --json; do
    grep -q -- "$opt" "$tmp/help" || fail "--help does not document $opt"
done
grep -q "example" "$tmp/help" || fail "--help has no example"

# Text: Haswell compact (granularity=core default) packs 2 threads per core and leaves socket 1 idle.
"$T" affinity explain --node haswell --threads 32 compact >"$tmp/txt" || fail "explain exit $?"
grep -q "^effective: *KMP_AFFINITY='noverbose,warnings,respect,granularity=core,compact,0,0'" "$tmp/txt" \
    || fail "effective line: $(grep effective "$tmp/txt")"
grep -Eq "^1 +0,32 +0 +0$" "$tmp/txt" || fail "thread 1 row: $(grep -E '^1 ' "$tmp/txt")"
grep -q "^topology: *2 sockets x 16 cores/socket x 2 threads/core" "$tmp/txt" || fail "topology line"
grep -q "2 threads share core 0" "$tmp/txt" || fail "no shared-core warning"
grep -q "socket 1 idle" "$tmp/txt" || fail "no idle-socket warning"

# JSON: the contract the differential harness compares against.
"$T" affinity explain --node haswell --threads 4 --json granularity=fine,scatter >"$tmp/json" || fail "--json exit $?"
python3 - "$tmp/json" <<'PY' || fail "json content: $(cat "$tmp/json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["threads"] == 4 and j["bound"] is True, j
assert [t["thread"] for t in j["plan"]] == [0, 1, 2, 3]
assert [t["cpus"] for t in j["plan"]] == [[0], [16], [1], [17]], j["plan"]
assert j["effective"] == "noverbose,warnings,respect,granularity=thread,scatter,0,0", j["effective"]
assert isinstance(j["warnings"], list)
PY

# OMP_PLACES/OMP_PROC_BIND on KNL: spread 64 threads over 68 cores skips cores 13, 27, 41, 55.
"$T" affinity explain --node knl --threads 64 --places cores --proc-bind spread --json >"$tmp/knl" \
    || fail "knl spread exit $?"
python3 - "$tmp/knl" <<'PY' || fail "knl spread content"
import json, sys
j = json.load(open(sys.argv[1]))
firsts = sorted(t["cpus"][0] for t in j["plan"])
assert sorted(set(range(68)) - set(firsts)) == [13, 27, 41, 55], firsts
PY

# Synthetic topology, KMP_HW_SUBSET, initial mask, precedence.
"$T" affinity explain --synthetic "pack:2 core:2 pu:2" --threads 2 --hw-subset 1s@1,1c,1t --json >"$tmp/hw" \
    || fail "hw-subset exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["bound"] is False and j["plan"][1]["cpus"]==[4], j' \
    "$tmp/hw" || fail "hw-subset content: $(cat "$tmp/hw")"
"$T" affinity explain --node haswell --mask 0-3,32-35 --threads 8 granularity=fine,scatter --json >"$tmp/mask" \
    || fail "--mask exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [t["cpus"][0] for t in j["plan"]]==[0,1,2,3,32,33,34,35], j' \
    "$tmp/mask" || fail "--mask content"
"$T" affinity explain --node haswell --threads 2 --gomp-cpu-affinity 3 --places cores >"$tmp/prec" || fail "precedence exit $?"
grep -q "OMP_PLACES ignored" "$tmp/prec" || fail "no precedence warning"

# Perlmutter CPU: what libomp 14 makes of ll_caches / numa_domains (sockets / cores), said with the
# explicit place list of the 16 L3 groups; that list places one thread per L3; KMP_HW_SUBSET's LL.
"$T" affinity explain --node perlmutter-cpu --threads 4 --places ll_caches --proc-bind spread >"$tmp/pm" ||
    fail "perlmutter ll_caches exit $?"
grep -q "^2        64-127,192-255 " "$tmp/pm" || fail "ll_caches: thread 2 not on socket 1: $(sed -n 9,14p "$tmp/pm")"
grep -q "takes the socket as the last-level cache.*OMP_PLACES='{0:8,128:8}:16:8'" "$tmp/pm" ||
    fail "ll_caches: no note naming the L3 place list"
"$T" affinity explain --node perlmutter-cpu --threads 8 --places numa_domains --proc-bind spread >"$tmp/pm" ||
    fail "perlmutter numa_domains exit $?"
grep -q "W#192" "$tmp/pm" && grep -q "OMP_PLACES='{0:16,128:16}:8:16'" "$tmp/pm" || fail "numa_domains: no W#192 note and list"
"$T" affinity explain --node perlmutter-cpu --threads 16 --places '{0:8,128:8}:16:8' --proc-bind spread --json >"$tmp/pm" ||
    fail "perlmutter L3 list exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [t["cpus"][0] for t in j["plan"]]==list(range(0,128,8)), j' \
    "$tmp/pm" || fail "the L3 list does not place one thread per L3"
"$T" affinity explain --node perlmutter-cpu --threads 2 --hw-subset 1LL@1 granularity=fine,compact --json >"$tmp/pm" ||
    fail "perlmutter 1LL@1 exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [t["cpus"] for t in j["plan"]]==[[64],[192]], j' \
    "$tmp/pm" || fail "KMP_HW_SUBSET=1LL@1 is not socket 1"

# Bad input: exit 2, message names the token.
"$T" affinity explain --node haswell --threads 2 granularity=core,sideways >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "sideways: exit $rc, want 2"
grep -q "sideways" "$tmp/err" || fail "message does not name 'sideways': $(cat "$tmp/err")"
"$T" affinity explain --node haswell --threads 2 --places "{0-3}" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "{0-3}: exit $rc"
"$T" affinity explain --node haswell --threads 0 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "'0'" "$tmp/err" || fail "--threads 0: exit $rc $(cat "$tmp/err")"
"$T" affinity explain --node haswell --threads 2 --blocktime 10ms 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "10ms" "$tmp/err" || fail "--blocktime 10ms: exit $rc"
"$T" affinity frobnicate 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "unknown subcommand: exit $rc"
echo "ok"
