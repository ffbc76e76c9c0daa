#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost with two nodes declared as Perlmutter CPU nodes (2 sockets x 64 cores x
# 2 threads, feature cpu): the hybrid job `tune sbatch` writes for 2 nodes x 8 ranks x 16 threads
# passes `sbatch --test-only`, sets srun -c 32 explicitly on both of its srun lines, is refused
# (Slurm's own words, exit 3) where no node has the feature, and runs for real: its binding check
# prints, for every rank on its node, the CPU mask and each of its 16 threads against bkm's plan
# (on this host the ranks share its real CPUs: Slurm cannot bind the declared ones), then the
# payload runs on every rank. `tune lint` finds nothing to say about its -c and warns about a
# script that leaves -c to inheritance.
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_local.sh"
BKM_SLURM_NODES=2
BKM_SLURM_SHAPE=2:64:2
BKM_SLURM_QOS=regular,debug
slurm_local_start "cpu"
w=$BKM_SLURM_DIR/work
mkdir -p "$w" && cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
"$tune" sbatch --node perlmutter-cpu --workload alexnet --site-prior --nodes 2 --ranks-per-node 8 --threads 16 \
    --check-binding --command 'echo bkm-payload-ran' -o pm.sbatch --submit --test-only >out.txt 2>err.txt
rc=$?
set -e
cat err.txt >&2
[ "$rc" = 0 ] || fail "--test-only on two Perlmutter-shaped nodes: exit $rc"
grep -q "to start at .* using 512 processors on nodes nid\[00001-00002\]" err.txt ||
    fail "sbatch --test-only did not place the job on both nodes"
grep -q '^#SBATCH -N 2$' pm.sbatch && grep -q '^#SBATCH -C cpu$' pm.sbatch && grep -q '^#SBATCH -q regular$' pm.sbatch ||
    fail "the #SBATCH lines are not Perlmutter's"
[ "$(grep -c '^srun -n 16 --ntasks-per-node=8 -c 32 --cpu-bind=cores --mpi=cray_shasta \\$' pm.sbatch)" = 2 ] ||
    fail "the check and the run do not both give srun -c 32: $(grep '^srun' pm.sbatch)"

# the linter has nothing to say about -c in it, and warns about a script that relies on inheritance
"$tune" lint pm.sbatch >lint.txt 2>&1 || fail "tune lint pm.sbatch: exit $?: $(cat lint.txt)"
grep -q "cpus-per-task" lint.txt && fail "tune lint flags the -c of bkm's own script: $(grep cpus-per-task lint.txt)"
printf '#!/bin/bash\n#SBATCH -N 1 -C cpu\n#SBATCH --ntasks-per-node=8\n#SBATCH -c 32\nexport OMP_NUM_THREADS=16\nsrun -n 8 --cpu-bind=cores ./a.out\n' >inherit.sbatch
"$tune" lint inherit.sbatch >lint.txt 2>&1 || true
grep -q "relies on inheriting #SBATCH -c 32" lint.txt || fail "tune lint does not warn about -c inheritance: $(cat lint.txt)"

# no node has the feature: Slurm refuses, tune shows its words, exit 3
slurm_local_features "knl"
set +e
"$tune" sbatch --node perlmutter-cpu --workload alexnet --site-prior --nodes 2 --ranks-per-node 8 --threads 16 \
    -o r.sbatch --submit --test-only >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" = 3 ] || fail "-C cpu on nodes without the feature: exit $rc, not 3"
grep -q "Slurm refused the job" err.txt || fail "no refusal message: $(cat err.txt)"
slurm_local_features "cpu"

# the job for real
id=$(sbatch --parsable pm.sbatch)
st=$(slurm_local_wait_job "$id" 180) || fail "job $id did not finish: $st"
out=$w/bkm-alexnet-$id.out
[ "$st" = COMPLETED ] || { cat "$out" >&2; fail "job $id: $st"; }
for r in $(seq 0 15); do
    p="bkm binding rank $r of 16 on nid0000$((r / 8 + 1)): "
    grep -q "^${p}process mask: " "$out" || fail "rank $r printed no mask on its node: $(grep "rank $r " "$out" | head -2)"
    for t in $(seq 0 15); do
        grep -qE "^${p}$t +[0-9,-]+ +[0-9,-]+ +ok\$" "$out" || fail "rank $r printed no matching line for thread $t"
    done
    grep -qxF "${p}binding matches the plan" "$out" || fail "rank $r: no verdict"
done
[ "$(grep -c '^bkm-payload-ran$' "$out")" = 16 ] || fail "the payload did not run on the 16 ranks"
echo "ok"
