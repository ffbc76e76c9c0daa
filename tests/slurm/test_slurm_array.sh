#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost runs a sweep split over a 2-task job array plus its merge job
# (`tune ... --slurm-array 2 --submit`): the merged database holds every trial of the unsplit
# sweep, once, and a best-known setting. Then a failed shard: the merge job (afterany) still runs,
# merges the other shard into the database and names the failed one (exit 4).
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
scontrol show job -o "${ids[1]}" | grep -q "Dependency=afterany:${ids[0]}" ||
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

# a failed shard: shard 1's `tune sweep` fails (a wrapper, through BKM_TUNE, which the scripts
# honour and sbatch passes on); the merge job still runs (afterany), merges shard 0 into the
# database and exits 4 naming shard 1
cat >failing-tune <<EOF
#!/bin/bash
if [ "\$1" = sweep ] && [ "\${SLURM_ARRAY_TASK_ID:-}" = 1 ]; then echo "injected: shard 1 fails" >&2; exit 1; fi
exec '$tune' "\$@"
EOF
chmod +x failing-tune
out=$(BKM_TUNE=$w/failing-tune "$tune" "${sweep[@]}" --slurm-array 2 --sbatch fail.sbatch --db "$w/partial.sqlite" \
  --slurm-time 10 --job-name fail --submit 2>&1) || fail "tune --slurm-array --submit (failing shard): $out"
ids=($(echo "$out" | sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p'))
[ "${#ids[@]}" = 2 ] || fail "two job ids expected: $out"
state=$(slurm_local_wait_job "${ids[1]}" 150)
[ "$state" = FAILED ] || fail "merge job after a failed shard ended $state, not FAILED (exit 4)"
scontrol show job -o "${ids[1]}" | grep -q "ExitCode=4:0" || fail "merge job: $(scontrol show job -o "${ids[1]}")"
st=$(scontrol show job -o "${ids[0]}_1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
[ "$st" = FAILED ] || fail "the injected shard 1 ended $st"
# it ran after both shards had ended (a merge started without waiting would name shards 0 and 1)
tm() { scontrol show job -o "$1" | sed -n "s/.* $2=\([0-9T:-]*\).*/\1/p"; }
for t in 0 1; do
  [[ ! "$(tm "${ids[1]}" StartTime)" < "$(tm "${ids[0]}_$t" EndTime)" ]] || fail "the merge job started before shard $t ended"
done
cat fail-merge-"${ids[1]}".out >&2
grep -q "shard(s) 1 of 2 missing" fail-merge-"${ids[1]}".out || fail "the merge job does not name the missing shard"
"$tune" export --db partial.sqlite --format json >partial.json
python3 - partial.json merged.json <<'PY' || fail "partial merge"
import json, sys
p = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
key = lambda t: json.dumps(t["config"], sort_keys=True)
ps = [key(t) for t in p if t["role"] == "search"]
ms = [key(t) for t in m if t["role"] == "search"]
assert ps and len(ps) < len(ms) and set(ps) <= set(ms), "partial: %r of %r" % (ps, ms)
assert len(ps) == len(set(ps)), "a trial twice: %r" % ps
assert not [t for t in p if t["role"] == "confirm"], "a confirmation ran without all shards"
print("partial merge: shard 0's %d of %d search trials, no confirmation" % (len(ps), len(ms)))
PY

# the whole sweep as one job (`--sbatch FILE --submit`): node-local SQLite, merged into the chosen path
out=$("$tune" "${sweep[@]}" --sbatch one.sbatch --db "$w/one/bkm.sqlite" --slurm-time 10 --job-name one --submit 2>&1) ||
  fail "tune --sbatch --submit: $out"
id=$(echo "$out" | sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "no job id: $out"
state=$(slurm_local_wait_job "$id" 120)
[ "$state" = COMPLETED ] || fail "the sweep job ended $state"
"$tune" best --node auto --workload gemm --db one/bkm.sqlite >/dev/null || fail "no best-known setting from the sweep job"
ls -d /tmp/bkm-sweep-"$id".* "${TMPDIR:-/tmp}/bkm-sweep-$id".* 2>/dev/null && fail "the node-local folder was left behind"
echo ok
