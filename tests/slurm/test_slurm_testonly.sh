#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost: a script `tune sbatch` writes for KNL passes `sbatch --test-only` on a
# node with features knl,quad,cache, and is refused -- with Slurm's own message, exit 3 -- on a
# node without them. Inherited SBATCH_*/SLURM_* variables do not change the submission.
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_local.sh"
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

# the node loses its KNL features: Slurm refuses, and tune shows Slurm's own words, exit 3
slurm_local_features "haswell"
set +e
"$tune" sbatch --node knl --workload alexnet --seed-bkm -o knl.sbatch --submit --test-only >out.txt 2>err.txt
rc=$?
slurm_msg=$(sbatch --test-only knl.sbatch 2>&1)
set -e
cat err.txt >&2
[ "$rc" = 3 ] || fail "refused job: exit $rc, not 3"
grep -q "Slurm refused the job" err.txt || fail "no refusal message"
echo "$slurm_msg" | grep -q -e "Requested node configuration is not available" -e "Invalid feature specification" ||
  fail "control: sbatch itself said '$slurm_msg'"
grep -qF "$(echo "$slurm_msg" | head -1)" err.txt || fail "Slurm's message '$slurm_msg' is not shown verbatim"

# a Haswell script is accepted there; a bad time limit is Slurm's refusal too (exit 3)
"$tune" sbatch --node haswell --workload alexnet --seed-bkm -o hsw.sbatch --submit --test-only 2>err.txt ||
  fail "haswell script refused on a haswell node: $(cat err.txt)"
set +e
"$tune" sbatch --node knl --workload alexnet --seed-bkm -o x.sbatch \
  --submit --test-only --time 1-99:99 >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" = 3 ] || fail "a time limit Slurm refuses: exit $rc, not 3 ($(cat err.txt))"
grep -q "Slurm refused" err.txt || fail "bad time: $(cat err.txt)"
echo "ok"
