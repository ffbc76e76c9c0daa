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
grep -q "\u2261\|≡" out.txt || fail "knl: no merge of identical plans listed"
[ ! -e knl.sqlite ] || fail "knl: a database was written"
expect 0 '"host_matches_node": false' "$BKM_TUNE" --node knl --workload alexnet --db knl.sqlite --json
[ ! -e knl.sqlite ] || fail "knl --json: a database was written"
# --dry-run: lists, runs nothing
expect 0 "Planned sweep of gemm" "$BKM_TUNE" "${tiny[@]}" --db dry.sqlite --dry-run
[ ! -e dry.sqlite ] || fail "--dry-run wrote a database"
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
expect 0 "usage: tune \[sweep\]" "$BKM_TUNE" sweep --help
echo "ok: foreign db refused and unchanged, knl planned not run, bad input named with exit 2"
