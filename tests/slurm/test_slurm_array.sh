#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost runs a sweep split over a 2-task job array plus its merge job
# (`tune ... --slurm-array 2 --submit`): the merged database holds every trial of the unsplit
# sweep, once, and a best-known setting. Then a lost shard: the merge job, run by hand, merges
# the other shard and names the missing one (exit 4).
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_local.sh"
slurm_local_start "knl,quad,cache"
w=$BKM_SLURM_DIR/work
mkdir -p "$w" && cd "$w"
fail() {
  echo "FAIL: $*" >&2
  for f in "$w"/*.out; do echo "--- $f" >&2; tail -20 "$f" >&2; done
  exit 1
}
sweep=(--node auto --workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --affinity default
  --affinity compact --blocktime 0 --min-time 0.01 --min-samples 5 --max-samples 10 --confirm-top 1
  --counters none)

out=$("$tune" "${sweep[@]}" --slurm-array 2 --sbatch sweep.sbatch --db "$w/merged.sqlite" --slurm-time 10 \
  --job-name arr --submit 2>&1) || fail "tune --slurm-array --submit: $out"
echo "$out" >&2
ids=($(echo "$out" | sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p'))
[ "${#ids[@]}" = 2 ] || fail "two job ids expected: $out"
grep -q '^#SBATCH --array=0-1$' sweep.sbatch || fail "no --array=0-1"
scontrol show job -o "${ids[1]}" | grep -q "Dependency=afterok:${ids[0]}" ||
  scontrol show job -o "${ids[1]}" | grep -q "JobState=COMPLETED" || fail "the merge job does not depend on the array"
state=$(slurm_local_wait_job "${ids[1]}" 150)
[ "$state" = COMPLETED ] || fail "merge job ${ids[1]} ended $state"
for t in 0 1; do
  st=$(scontrol show job -o "${ids[0]}_$t" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  [ "$st" = COMPLETED ] || fail "array task $t ended $st"
done
ls merged.sqlite.shards/shard-0-of-2.sqlite merged.sqlite.shards/shard-1-of-2.sqlite >/dev/null || fail "shard files missing"

# the unsplit sweep, here, with the same options
"$tune" sweep "${sweep[@]}" --strategy grid --db "$w/unsplit.sqlite" >/dev/null 2>&1 || fail "unsplit sweep"
"$tune" export --db merged.sqlite --format json >merged.json
"$tune" export --db unsplit.sqlite --format json >unsplit.json
python3 - merged.json unsplit.json <<'PY' || fail "merged vs unsplit"
import json, sys
m = json.load(open(sys.argv[1])); u = json.load(open(sys.argv[2]))
key = lambda t: json.dumps(t["config"], sort_keys=True)
ms = [key(t) for t in m if t["role"] == "search"]
us = [key(t) for t in u if t["role"] == "search"]
assert len(ms) == len(set(ms)), "a search trial is in the merged database twice: %r" % ms
assert sorted(ms) == sorted(us), "merged %r\nunsplit %r" % (sorted(ms), sorted(us))
sweeps = {t["sweep"] for t in m}
assert len(sweeps) == 1, "the shards did not fold into one sweep: %r" % sweeps
conf = [t for t in m if t["role"] == "confirm"]
assert len(conf) >= 12, "no confirmation round in the merged database (%d trials)" % len(conf)
print("merged: %d search trials (= unsplit), %d confirmation trials, one sweep" % (len(ms), len(conf)))
PY
"$tune" best --node auto --workload gemm --db merged.sqlite >&2 || fail "no best-known setting in the merged database"

# a lost shard: the merge job, run by hand on a copy missing shard 1
mkdir -p lost && cp merged.sqlite.shards/shard-0-of-2.sqlite lost/
sed -e "s|^SHARDS=.*|SHARDS='$w/lost'|" -e "s|^DB=.*|DB='$w/partial.sqlite'|" sweep-merge.sbatch >lost.sh
set +e
bash lost.sh >lost.out 2>lost.err
rc=$?
set -e
cat lost.err >&2
[ "$rc" = 4 ] || fail "merge with a missing shard: exit $rc, not 4"
grep -q "shard(s) 1 of 2 missing" lost.err || fail "the missing shard is not named"
"$tune" export --db partial.sqlite --format json >partial.json
python3 - partial.json merged.json <<'PY' || fail "partial merge"
import json, sys
p = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
ps = [json.dumps(t["config"], sort_keys=True) for t in p if t["role"] == "search"]
assert ps and len(ps) < len([t for t in m if t["role"] == "search"]), "partial: %d trials" % len(ps)
assert not [t for t in p if t["role"] == "confirm"], "a confirmation ran without all shards"
PY

# the whole sweep as one job (`--sbatch FILE --submit`): node-local SQLite, merged into the chosen path
out=$("$tune" "${sweep[@]}" --sbatch one.sbatch --db "$w/one/bkm.sqlite" --slurm-time 10 --job-name one --submit 2>&1) ||
  fail "tune --sbatch --submit: $out"
id=$(echo "$out" | sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "no job id: $out"
state=$(slurm_local_wait_job "$id" 120)
[ "$state" = COMPLETED ] || fail "the sweep job ended $state"
"$tune" best --node auto --workload gemm --db one/bkm.sqlite >/dev/null || fail "no best-known setting from the sweep job"
ls /tmp/bkm-sweep-"$id".sqlite "${TMPDIR:-/tmp}/bkm-sweep-$id.sqlite" 2>/dev/null && fail "the node-local file was left behind"
echo ok
