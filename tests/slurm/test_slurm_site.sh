#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm on localhost set up as an invented cluster's site (features milan,ib, partition batch,
# only QOS normal allowed): the script `tune sbatch` writes from that site's profile file (its
# constraint, QOS, partition, account, a core per thread, MPICH's mpiexec as the launcher) passes
# `sbatch --test-only`; the same profile with a QOS the site refuses is refused with Slurm's own
# words (exit 3); and the job runs for real: mpiexec binds each of its ranks to a core of this host,
# and the binding check prints each rank's mask and thread against bkm's plan before the payload.
set -euo pipefail
tune=${1:-$BKM_TUNE}
here=$(cd "$(dirname "$0")" && pwd)
command -v mpiexec >/dev/null || { echo "SKIP: mpiexec (Debian: mpich) is not installed"; exit 77; }
command -v lstopo-no-graphics >/dev/null || { echo "SKIP: lstopo-no-graphics (Debian: hwloc) is not installed"; exit 77; }
. "$here/slurm_local.sh"
BKM_SLURM_QOS=normal
BKM_SLURM_PARTITION=batch
slurm_local_start "milan,ib"
w=$BKM_SLURM_DIR/work
mkdir -p "$w" && cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }

# the site's profile describes this host (its hwloc XML), so that one rank per core fits
lstopo-no-graphics --of xml host.xml
cores=$("$tune" topo --profile host.xml --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cores"])')
[ "$cores" -ge 2 ] || { echo "SKIP: this host has $cores core(s); the job needs two ranks on two cores"; exit 77; }
profile() { # QOS
    cat <<PROF
name = tundra-cpu
site = Tundra
xml = host.xml
constraint = milan&ib
qos = $1
account = proj01
partition = batch
cpus_per_task = cores
cpu_bind = cores
launcher = mpiexec
prior = KMP_AFFINITY=granularity=fine,compact,1,0
prior_source = the Tundra user guide
PROF
}
profile normal >tundra.prof
profile premium >premium.prof

set +e
"$tune" sbatch --node tundra.prof --workload gemm --site-prior --ranks-per-node 2 --threads 1 --check-binding \
    --command 'echo bkm-payload-ran' -o t.sbatch --submit --test-only >out.txt 2>err.txt
rc=$?
set -e
cat err.txt >&2
[ "$rc" = 0 ] || fail "--test-only of the site's script: exit $rc"
grep -q "to start at .* in partition batch" err.txt || fail "sbatch --test-only did not take partition batch"
grep -qxF '#SBATCH -C milan&ib' t.sbatch && grep -qxF '#SBATCH -q normal' t.sbatch || fail "not the site's -C/-q"
[ "$(grep -c '^mpiexec -n 2 -ppn 2 -bind-to core:1 \\$' t.sbatch)" = 2 ] || fail "not the site's launcher: $(grep '^mpiexec' t.sbatch)"

# a QOS the site refuses: Slurm's refusal, verbatim, exit 3
set +e
"$tune" sbatch --node premium.prof --workload gemm --site-prior --ranks-per-node 2 --threads 1 -o p.sbatch \
    --submit --test-only >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" = 3 ] || fail "QOS premium: exit $rc, not 3"
grep -q "invalid qos 'premium'" err.txt || fail "Slurm's refusal is not shown: $(cat err.txt)"

# for real: mpiexec (Hydra, inside the allocation) binds each rank to one core. The local Slurm's
# network is the loopback: Hydra's proxies connect back to mpiexec by the host's name, which a
# fresh machine (a chroot) may not resolve, so Hydra is told to use the loopback's address
# (sbatch passes the variable on to the job)
export HYDRA_IFACE=lo
id=$(sbatch --parsable t.sbatch)
out=$w/bkm-gemm-$id.out
st=$(slurm_local_wait_job "$id" 180) || {
  echo "--- the job's output so far:" >&2; cat "$out" >&2
  echo "--- its processes:" >&2; ps -eo pid,ppid,stat,etime,args | grep -E 'mpiexec|hydra|srun|tune|slurmstepd' | grep -v grep >&2
  fail "job $id did not finish: $st"; }
[ "$st" = COMPLETED ] || { cat "$out" >&2; fail "job $id: $st"; }
masks=""
for r in 0 1; do
    p="bkm binding rank $r of 2 on nid00001: "
    m=$(sed -n "s/^${p}process mask: \([0-9]*\) (1 CPU)\$/\1/p" "$out")
    [ -n "$m" ] || fail "rank $r is not bound to one CPU: $(grep -F "$p" "$out" | head -2)"
    grep -qE "^${p}0 +$m +$m +ok\$" "$out" || fail "rank $r's thread is not on CPU $m as planned"
    grep -qxF "${p}binding matches the plan" "$out" || fail "rank $r: no verdict"
    masks="$masks $m"
done
[ "$(echo $masks | tr ' ' '\n' | sort -u | wc -l)" = 2 ] || fail "both ranks on the same CPU:$masks"
[ "$(grep -c '^bkm-payload-ran$' "$out")" = 2 ] || fail "the payload did not run on both ranks"
echo "ok"
