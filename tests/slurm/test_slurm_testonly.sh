#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost: a script `tune sbatch` writes for KNL passes `sbatch --test-only` on a
# node with features knl,quad,cache, and is refused -- with Slurm's own message, exit 3 -- on a
# node without them. Inherited SBATCH_*/SLURM_* variables do not change the submission. An unknown
# partition, a QOS the site refuses and a bad time limit are Slurm's refusals too: shown verbatim, exit 3.
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_local.sh"
# QOS names other than these are refused at submission (job_submit.lua, see slurm_local.sh)
BKM_SLURM_QOS=regular,debug
BKM_SLURM_MAXTIME=02:00:00   # longer time limits are refused at submission
slurm_local_start "knl,quad,cache"
w=$BKM_SLURM_DIR/work
mkdir -p "$w" && cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tune" sbatch --node knl --workload alexnet --seed-bkm -o knl.sbatch
grep -q '^#SBATCH -C knl,quad,cache$' knl.sbatch || fail "no -C knl,quad,cache line"
# a poisoned environment: plain sbatch would obey these (bad partition, 3 nodes, a hold)
set +e
SBATCH_PARTITION=nosuch SBATCH_HOLD=1 SLURM_NNODES=3 "$tune" sbatch --node knl --workload alexnet --seed-bkm \
  -o knl.sbatch --submit --test-only >out.txt 2>err.txt
rc=$?
set -e
cat err.txt >&2
[ "$rc" = 0 ] || fail "--test-only on a knl,quad,cache node: exit $rc"
grep -q "cleared for the submission" err.txt || fail "the inherited SBATCH_*/SLURM_* variables were not reported cleared"
grep -q "to start at" err.txt || fail "sbatch --test-only said nothing about the start"
# the control: sbatch itself, with the same poisoned environment, is refused
if SBATCH_PARTITION=nosuch sbatch --test-only knl.sbatch >/dev/null 2>&1; then
  fail "control: plain sbatch accepted SBATCH_PARTITION=nosuch (the clearing test proves nothing)"
fi

# refused NODE PATTERN OPTION...: `tune sbatch --node NODE OPTION... --submit --test-only` exits 3
# showing every line of sbatch's own refusal, which the control (plain sbatch --test-only on the
# script tune wrote) must give too, matching PATTERN
refused() {
  local rc msg node=$1 pat=$2
  shift 2
  set +e
  "$tune" sbatch --node "$node" --workload alexnet --seed-bkm -o r.sbatch "$@" --submit --test-only >/dev/null 2>err.txt
  rc=$?
  msg=$(sbatch --test-only r.sbatch 2>&1)
  set -e
  cat err.txt >&2
  [ "$rc" = 3 ] || fail "$node $*: exit $rc, not 3"
  grep -q "Slurm refused the job" err.txt || fail "$node $*: no refusal message"
  echo "$msg" | grep -qi -e "$pat" || fail "$node $*: control: sbatch itself said '$msg'"
  while IFS= read -r line; do
    grep -qF -- "$line" err.txt || fail "$node $*: Slurm's line '$line' is not shown verbatim"
  done <<<"$msg"
}

# the node loses its KNL features: Slurm refuses, and tune shows Slurm's own words, exit 3
slurm_local_features "haswell"
refused knl "Requested node configuration is not available\|Invalid feature specification"
# a Haswell script is accepted there; a bad time limit, an unknown partition and a QOS the site
# refuses are Slurm's refusals too (exit 3)
"$tune" sbatch --node haswell --workload alexnet --seed-bkm -o hsw.sbatch --submit --test-only 2>err.txt ||
  fail "haswell script refused on a haswell node: $(cat err.txt)"
refused haswell "time limit" --time 03:00:00
refused haswell "invalid partition" --partition nosuch
grep -q '^#SBATCH -p nosuch$' r.sbatch || fail "no #SBATCH -p line"
refused haswell "invalid qos 'bogus'" --qos bogus
"$tune" sbatch --node haswell --workload alexnet --seed-bkm -o ok.sbatch --qos debug --partition debug \
  --submit --test-only 2>err.txt || fail "qos debug, partition debug refused: $(cat err.txt)"
echo "ok"
