#!/bin/bash
# SPDX-License-Identifier: MIT
# The sweep's refusals and plans: a foreign file as --db (exit 3, unchanged), --node knl on a
# host that is not KNL (plan + explanation + how to run it there, nothing recorded), bad input
# named with exit 2, --dry-run runs nothing.
. "$(dirname "$0")/sweep_common.sh"
cd "$tmp"
expect() {  # rc pattern cmd...
  local want=$1 pat=$2; shift 2
  "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc -eq "$want" ] || fail "'$*': exit $rc, expected $want: $(cat err.txt)"
  grep -q -- "$pat" out.txt err.txt || fail "'$*': output does not name '$pat': $(cat out.txt err.txt | head -5)"
}
# (d) a foreign file is refused, named, and left unchanged
printf 'not a database, keep me\n' > foreign.txt
sum=$(md5sum < foreign.txt)
expect 3 foreign.txt "$BKM_TUNE" "${tiny[@]}" --db foreign.txt
[ "$(md5sum < foreign.txt)" = "$sum" ] || fail "the foreign file was modified"
# (e) --node knl here: the plan and the explanation, never a run or a record
if [ "$(nproc --all)" -eq 272 ]; then
  echo "SKIP: this host is a KNL node"; exit 77
fi
expect 0 "not a knl node" "$BKM_TUNE" --node knl --workload alexnet --db knl.sqlite
grep -q "never records this host's timings" out.txt || fail "knl: no explanation"
grep -q "tune sweep --node knl --workload alexnet" out.txt || fail "knl: no command to run on the node"
grep -q "knl,quad,cache" out.txt || fail "knl: no Slurm constraint"
grep -q '\[0\] threads=68 (default)' out.txt || fail "knl: the plan does not start with the default (68 threads)"
# a screenful: drops and merges counted by cause, not listed one by one
[ "$(wc -l < out.txt)" -le 30 ] || fail "knl: the plan is $(wc -l < out.txt) lines, more than a screen"
grep -q "^  48 dropped: KMP_HW_SUBSET=68c,1t with 136/272 threads oversubscribes its 68 PUs$" out.txt ||
  fail "knl: the oversubscribed settings are not counted by cause"
grep -q "^  [0-9]* merged: settings that place every thread as an earlier setting does" out.txt ||
  fail "knl: the merges of identical plans are not counted"
grep -q "note: " out.txt && fail "knl: the summary lists single notes"
# the command to run it there is this one without the --dry-run and --json given as options, never
# dropping a value that looks like one (the parser says which words were options)
expect 0 "not a knl node" "$BKM_TUNE" --node knl --workload alexnet --label --json --dry-run --db knl.sqlite
grep -q -- "tune sweep --node knl --workload alexnet --label --json --db knl.sqlite$" out.txt ||
  fail "knl: the command to run there lost a value or kept --dry-run: $(grep 'tune sweep' out.txt)"
# --verbose (and --dry-run) keep every merge, drop and configuration
expect 0 "not a knl node" "$BKM_TUNE" --node knl --workload alexnet --db knl.sqlite --verbose
grep -q "\u2261\|≡" out.txt || fail "knl --verbose: no merge of identical plans listed"
grep -q "note: dropped default KMP_HW_SUBSET=68c,1t at 136 threads" out.txt || fail "knl --verbose: a drop is missing"
grep -q '^  \[647\] threads=272' out.txt || fail "knl --verbose: not every configuration is listed"
expect 0 "not a knl node" "$BKM_TUNE" --node knl --workload alexnet --db knl.sqlite --dry-run
grep -q '^  \[300\] ' out.txt || fail "knl --dry-run: not every configuration is listed"
[ ! -e knl.sqlite ] || fail "knl: a database was written"
expect 0 '"host_matches_node": false' "$BKM_TUNE" --node knl --workload alexnet --db knl.sqlite --json
python3 -c "
import json, sys
d = json.load(open('out.txt'))
assert len(d['configs']) == 648 and len(d['notes']) > 200, 'full lists'
assert sum(c['count'] for c in d['causes'] if c['kind'] == 'dropped') == d['dropped'], 'dropped by cause'
assert sum(c['count'] for c in d['causes'] if c['kind'] == 'merged') == d['merged'], 'merged by cause'
" || fail "knl --json: not the full lists with the counts by cause"
[ ! -e knl.sqlite ] || fail "knl --json: a database was written"
# --dry-run: lists, runs nothing
expect 0 "Planned sweep of gemm" "$BKM_TUNE" "${tiny[@]}" --db dry.sqlite --dry-run
[ ! -e dry.sqlite ] || fail "--dry-run wrote a database"
# the kernel's rules are checked while the space is built: avx2's 6-row micro-tile refuses mc=56
if grep -qw avx512f /proc/cpuinfo; then
  expect 0 "note: dropped parameters: gemm: isa=avx2: parameter mc=56 is not a multiple of 6" \
    "$BKM_TUNE" "${tiny[@]}" --param isa=avx2,avx512 --param mc=14,28,56 --db dry.sqlite --dry-run
  grep -q "^  1 dropped: gemm: isa=avx2: parameter mc=14 is not a multiple of 6$" out.txt ||
    fail "--dry-run: the dropped combinations are not counted by cause"
  grep -q "isa=avx2 mc=" out.txt && fail "--dry-run: a configuration the kernel refuses is planned"
  expect 2 "mc=56 is not a multiple of 6" "$BKM_TUNE" "${tiny[@]}" --param isa=avx2 --param mc=56 --db dry.sqlite
  [ ! -e dry.sqlite ] || fail "a space with no valid combination wrote a database"
fi
# (f) bad input: exit 2 naming the value
expect 2 "nosuchnode" "$BKM_TUNE" --node nosuchnode --workload gemm --db bad.sqlite
expect 2 "nosuchwl" "$BKM_TUNE" --workload nosuchwl --db bad.sqlite
expect 2 "threads 999" "$BKM_TUNE" --workload gemm --threads 999 --db bad.sqlite
expect 2 "threads 300" "$BKM_TUNE" --node knl --workload gemm --threads 300 --db bad.sqlite
expect 2 "sideways" "$BKM_TUNE" --workload gemm --affinity granularity=fine,sideways --db bad.sqlite
expect 2 "abc" "$BKM_TUNE" --workload gemm --threads 1,abc --db bad.sqlite
expect 2 "annealing" "$BKM_TUNE" --workload gemm --strategy annealing --db bad.sqlite
expect 2 "--budget" "$BKM_TUNE" --workload gemm --budget -3 --db bad.sqlite
expect 2 "kc" "$BKM_TUNE" --workload gemm --param kc=banana --db bad.sqlite
expect 2 "a,,b" "$BKM_TUNE" --workload gemm --counters a,,b --db bad.sqlite
[ ! -e bad.sqlite ] || fail "bad input wrote a database"
expect 2 "--data-seed '-1'" "$BKM_TUNE" --workload gemm --data-seed -1 --db bad.sqlite
[ ! -e bad.sqlite ] || fail "bad input wrote a database"
expect 0 "usage: tune \[sweep\]" "$BKM_TUNE" sweep --help
grep -q -- "--data-seed S" out.txt || fail "sweep --help lacks --data-seed"
# (g) --data-seed: the workload's data seed reaches every trial (its check value follows it) and is
# part of the sweep's identity; --data-seed 1, the default, is the same sweep as none
ds=(--workload gemm --param m=16 --param n=16 --param k=16 --threads 1 --affinity default --hw-subset none
    --blocktime 200 --strategy grid --confirm-top 0 --min-time 0.01 --counters none --db ds.sqlite)
"$BKM_TUNE" "${ds[@]}" > ds1.out 2> ds1.err || fail "a sweep with the default data seed: exit $?"
"$BKM_TUNE" "${ds[@]}" --data-seed 2 > ds2.out 2> ds2.err || fail "a sweep with --data-seed 2: exit $?"
"$BKM_TUNE" "${ds[@]}" --data-seed 1 > ds3.out 2> ds3.err || fail "a sweep with --data-seed 1: exit $?"
[ "$(q ds.sqlite 'SELECT count(*) FROM sweep')" = 2 ] ||
  fail "--data-seed 2 resumed the other sweep, or --data-seed 1 did not: $(q ds.sqlite 'SELECT id, command FROM sweep')"
[ "$(q ds.sqlite 'SELECT count(DISTINCT check_json) FROM trial WHERE sweep_id = 1')" = 1 ] &&
  [ "$(q ds.sqlite 'SELECT count(DISTINCT check_json) FROM trial')" = 2 ] ||
  fail "the data seed does not reach the trials: $(q ds.sqlite 'SELECT sweep_id, check_json FROM trial')"
echo "ok: foreign db refused and unchanged, knl planned not run, bad input named with exit 2, --data-seed in every trial"
