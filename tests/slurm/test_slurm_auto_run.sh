#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost runs a script `tune sbatch --node auto` wrote: two ranks through srun,
# a small workload; its output shows the planned world size and, in every rank, the exported
# settings; `tune run` prints its result line in each.
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_local.sh"
slurm_local_start "knl,quad,cache"
w=$BKM_SLURM_DIR/work
mkdir -p "$w" && cd "$w"
fail() { echo "FAIL: $*" >&2; echo "--- job output:" >&2; cat job.out >&2 2>/dev/null || true; exit 1; }

ranks=$(nproc)
[ "$ranks" -ge 2 ] || ranks=1
"$tune" sbatch --node auto --workload gemm --default --ranks-per-node "$ranks" --param m=32 --param n=32 --param k=32 \
  --job-output job.out --time 5 -o auto.sbatch
grep -q "^srun -n $ranks " auto.sbatch || fail "no srun -n $ranks line"
# the same script through tune sbatch --submit: the job id comes back
out=$("$tune" sbatch --node auto --workload gemm --default --ranks-per-node "$ranks" --param m=32 --param n=32 \
  --param k=32 --job-output job.out --time 5 -o auto.sbatch --submit 2>/dev/null)
id=$(echo "$out" | sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "no job id in '$out'"
state=$(slurm_local_wait_job "$id" 120)
[ "$state" = COMPLETED ] || fail "job $id ended $state"
cat job.out >&2
grep -q "^bkm: planned world size $ranks " job.out || fail "no planned world size $ranks"
threads=$(sed -n 's/^export OMP_NUM_THREADS=//p' auto.sbatch)
for ((r = 0; r < ranks; r++)); do
  grep -q "^bkm rank $r of $ranks on nid00001: OMP_NUM_THREADS=$threads " job.out ||
    fail "rank $r of $ranks did not report the exported OMP_NUM_THREADS=$threads"
done
n=$(grep -c '^bkm rank ' job.out)
[ "$n" = "$ranks" ] || fail "$n rank lines, not $ranks"
n=$(grep -c 'median' job.out || true)
[ "$n" -ge "$ranks" ] || fail "$n result lines (median ...), not $ranks"
echo ok
