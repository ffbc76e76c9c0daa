#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune topo`: text and JSON output for this host and the built-in profiles; bad input exits 2
# with a message naming the value.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$T" topo --help >"$tmp/help" || fail "--help exit $?"
grep -q -- "--synthetic" "$tmp/help" || fail "--help does not document --synthetic"
grep -q "blocktime = " "$tmp/help" || fail "--help does not document the profile format"

"$T" topo >"$tmp/host" || fail "tune topo (host) exit $?"
grep -Eq "^[0-9]+ packages? x [0-9]+ cores x [0-9]+ threads?" "$tmp/host" || fail "no summary line: $(head -3 "$tmp/host")"
grep -q "^  core 0 (pkg 0" "$tmp/host" || fail "no per-core line"
# libomp's own view of this host, compared with hwloc's (whether this host's CPUID agrees or not)
grep -Eq "^libomp \(.*\): .*(agrees with hwloc|DISAGREES with hwloc)$" "$tmp/host" ||
    fail "no libomp line: $(grep -i libomp "$tmp/host")"
BKM_LIBOMP_TOPOLOGY=always "$T" topo >"$tmp/always" || fail "tune topo (always) exit $?"
grep -q "with that correction libomp agrees with hwloc" "$tmp/always" || fail "the correction does not make libomp agree"
BKM_LIBOMP_TOPOLOGY=sometimes "$T" topo >"$tmp/bad" || fail "bad BKM_LIBOMP_TOPOLOGY: tune topo exit $?"
grep -q "BKM_LIBOMP_TOPOLOGY: .*'sometimes'" "$tmp/bad" || fail "bad BKM_LIBOMP_TOPOLOGY is not named"
"$T" topo --json >"$tmp/host.json" || fail "tune topo --json exit $?"
python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["libomp"]; assert l["checked"] and isinstance(l["agrees"], bool) and l["view"]["map"], l' \
    "$tmp/host.json" || fail "--json: no libomp view"
"$T" topo --synthetic "pack:2(indexes=3,1) core:2(indexes=4,0,4,0) pu:1" >"$tmp/ids" || fail "ids exit $?"
grep -q "^  core 1 (pkg 0, hardware ids: package 3 core 0): PUs 1$" "$tmp/ids" || fail "hardware ids not shown: $(cat "$tmp/ids")"
grep -q "^libomp" "$tmp/ids" && fail "libomp's view shown for a synthetic topology"
"$T" topo --synthetic "pack:2(indexes=3,1) core:2(indexes=4,0,4,0) pu:1" --cpuinfo >"$tmp/ci" || fail "--cpuinfo exit $?"
[ "$(tr '\n\t' '| ' <"$tmp/ci")" = "processor : 0|physical id : 3|core id  : 4||processor : 1|physical id : 3|core id  : 0||processor : 2|physical id : 1|core id  : 4||processor : 3|physical id : 1|core id  : 0||" ] ||
    fail "--cpuinfo: $(cat "$tmp/ci")"
"$T" topo --json --cpuinfo >/dev/null 2>&1 && fail "--json --cpuinfo accepted"

"$T" topo --node knl >"$tmp/knl" || fail "--node knl exit $?"
grep -q "^1 package x 68 cores x 4 threads, 34 tiles" "$tmp/knl" || fail "knl summary: $(sed -n 2p "$tmp/knl")"
grep -q "^  core 0 (pkg 0, tile 0): PUs 0,68,136,204$" "$tmp/knl" || fail "knl core 0 line"

"$T" topo --node haswell >"$tmp/hsw" || fail "--node haswell exit $?"
grep -q "^2 packages x 16 cores x 2 threads" "$tmp/hsw" || fail "haswell summary"
grep -q "^  core 17 (pkg 1): PUs 17,49$" "$tmp/hsw" || fail "haswell core 17 line"

# Perlmutter CPU: 2 x 64 x 2, 8 NUMA nodes (node 0 = 0-15,128-143), 16 L3 groups, siblings at +128,
# and NERSC's batch rules for it
"$T" topo --node perlmutter-cpu >"$tmp/pm" || fail "--node perlmutter-cpu exit $?"
grep -q "^2 packages x 64 cores x 2 threads (256 PUs, 256 allowed)$" "$tmp/pm" || fail "perlmutter summary: $(sed -n 3p "$tmp/pm")"
[ "$(grep -c "^  node [0-7]: 64 GiB, PUs " "$tmp/pm")" = 8 ] || fail "perlmutter: not 8 NUMA nodes of 64 GiB"
grep -q "^  node 0: 64 GiB, PUs 0-15,128-143$" "$tmp/pm" || fail "perlmutter NUMA node 0"
grep -q "^last-level cache groups: 16 (L3)$" "$tmp/pm" || fail "perlmutter: no 16 L3 groups"
grep -q "^  L3 group 15: cores 120-127, PUs 120-127,248-255$" "$tmp/pm" || fail "perlmutter L3 group 15"
grep -q "^hardware threads: PU N+128 is the sibling of PU N on every core$" "$tmp/pm" || fail "perlmutter siblings"
grep -q "^  core 64 (pkg 1): PUs 64,192$" "$tmp/pm" || fail "perlmutter core 64 line"
grep -q "^batch rules (NERSC): -C cpu -q regular; srun, -c rule node, cpu-bind auto, --mpi=cray_shasta; srun does not inherit" \
    "$tmp/pm" || fail "perlmutter batch rules: $(grep '^batch' "$tmp/pm")"
grep -q "^site-recommended setting (a prior, not measured): OMP_PLACES=threads OMP_PROC_BIND=spread" "$tmp/pm" ||
    fail "perlmutter prior"
"$T" topo --node perlmutter-cpu --json >"$tmp/pm.json" || fail "perlmutter --json exit $?"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert (t["packages"], t["cores"], t["pus"], t["numa_nodes"], t["smt_stride"], len(t["llc_groups"]), t["llc_groups"][1]) == (2, 128, 256, 8, 128, 16, "8-15,136-143"), t["llc_groups"]' \
    "$tmp/pm.json" || fail "perlmutter --json"

"$T" topo --xml "$BKM_SOURCE_DIR/tests/affinity/data/knl-flat.xml" >"$tmp/flat" || fail "--xml exit $?"
grep -q "16 GiB MCDRAM" "$tmp/flat" || fail "MCDRAM node not shown"

json_num() { # file key
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
"$T" topo --node knl --json >"$tmp/knl.json" || fail "--json exit $?"
[ "$(json_num "$tmp/knl.json" packages)" = 1 ] || fail "json packages"
[ "$(json_num "$tmp/knl.json" cores)" = 68 ] || fail "json cores"
[ "$(json_num "$tmp/knl.json" pus)" = 272 ] || fail "json pus"
"$T" topo --json >"$tmp/host.json" || fail "host --json exit $?"
[ "$(json_num "$tmp/host.json" pus)" = "$(getconf _NPROCESSORS_ONLN)" ] || fail "host json pus"

"$T" topo --synthetic "pack:2 core:2 pu:2" --allowed 0-3 --json >"$tmp/r.json" || fail "--allowed exit $?"
[ "$(json_num "$tmp/r.json" allowed_pus)" = 4 ] || fail "--allowed 0-3 gives $(json_num "$tmp/r.json" allowed_pus)"

# --mask is the name (as in tune affinity explain); --allowed stays as its old spelling
"$T" topo --synthetic "pack:2 core:2 pu:2" --mask=0-3 --json >"$tmp/m.json" || fail "--mask exit $?"
[ "$(json_num "$tmp/m.json" allowed_pus)" = 4 ] || fail "--mask=0-3 gives $(json_num "$tmp/m.json" allowed_pus)"
"$T" topo --help | grep -q -- "--allowed, its former name" || fail "--help does not note --allowed as the old name"
# --node takes a profile file in topo and affinity explain, as in sweeps
printf 'name = two\nsynthetic = pack:1 core:2 pu:1\n' >"$tmp/two.prof"
"$T" topo --node "$tmp/two.prof" --json >"$tmp/two.json" || fail "topo --node FILE exit $?"
[ "$(json_num "$tmp/two.json" pus)" = 2 ] || fail "topo --node FILE: pus $(json_num "$tmp/two.json" pus), want 2"
"$T" affinity explain --node "$tmp/two.prof" --threads 2 compact >/dev/null || fail "explain --node FILE exit $?"

expect2() { # needle args...
    local needle=$1; shift
    "$T" topo "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    [ $rc -eq 2 ] || fail "tune topo $* exited $rc, want 2"
    grep -qF -- "$needle" "$tmp/err" || fail "tune topo $*: message does not name '$needle': $(cat "$tmp/err")"
}
expect2 "bogus" --node bogus
expect2 "pack:2 gizmo:3" --synthetic "pack:2 gizmo:3"
expect2 "/no/such.xml" --xml /no/such.xml
expect2 "/no/such.prof" --profile /no/such.prof
expect2 "--frobnicate" --frobnicate
expect2 "99" --node haswell --allowed 0,99
expect2 "--mask '0,99'" --node haswell --mask 0,99
expect2 "--node" --node
expect2 "at most one" --node knl --synthetic "pu:2"
echo "tune topo CLI: ok"
