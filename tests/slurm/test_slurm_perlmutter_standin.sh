#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The in-job binding check of a Perlmutter hybrid job (2 nodes x 8 ranks x 16 threads), run for real
# under a stand-in `srun` that starts every rank on this host as if it were a Perlmutter CPU node:
# the fake-topology shim gives the rank the CPU mask a block layout of -c 32 --cpu-bind=cores gives
# it (16 cores and their siblings at +128), hwloc sees the perlmutter-cpu topology
# (HWLOC_SYNTHETIC), and the real libomp binds the threads. Every rank must print its mask and its
# 16 threads against bkm's plan, all matching, before the payload runs. The negative control gives
# libomp a wrong view of the node (siblings numbered side by side) and no correction: the check
# must fail, say so, and stop the job before the payload.
# Needs $BKM_TUNE and $BKM_SHIM (CTest sets them).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${BKM_TUNE:?}"
if [ -z "${BKM_SHIM:-}" ] || [ ! -e "$BKM_SHIM" ]; then
    echo "SKIP: the fake-topology shim (\$BKM_SHIM) is not built"
    exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-pm-standin.XXXXXX") || exit 3
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
mkdir bin
# Perlmutter's numbering for libomp's default method (the shim hands it over), a wrong one, and
# the perlmutter-cpu profile's synthetic description for hwloc
python3 - <<'PY' || fail "cannot write the topology files"
with open("pm.cpuinfo", "w") as f:
    for os in range(256):
        c = os % 128
        f.write("processor\t: %d\nphysical id\t: %d\ncore id\t\t: %d\n\n" % (os, c // 64, c % 64))
with open("wrong.cpuinfo", "w") as f:   # siblings side by side: PUs 2k and 2k+1 share a core
    for os in range(256):
        c = os // 2
        f.write("processor\t: %d\nphysical id\t: %d\ncore id\t\t: %d\n\n" % (os, c // 64, c % 64))
idx = ",".join("%d,%d" % (c, c + 128) for c in range(128))
with open("pm.synthetic", "w") as f:
    f.write("pack:2 group:4 [numa(memory=64GiB)] l3:2(size=32MiB) l2:8(size=512KiB) l1d:1(size=32KiB) "
            "core:1 pu:2(indexes=%s)" % idx)
PY
# the stand-in srun: -n W --ntasks-per-node=R -c C; rank r runs as local rank r%R of "node" r/R,
# on C/2 cores with both hardware threads, the ranks one after the other
cat >bin/srun <<'STANDIN'
#!/bin/bash
W=1 R=1 C=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) W=$2; shift 2 ;;
    --ntasks-per-node=*) R=${1#*=}; shift ;;
    -c) C=$2; shift 2 ;;
    --cpu-bind=* | --mpi=*) shift ;;
    *) break ;;
  esac
done
echo "$W $R $C" >>"$STANDIN_DIR/srun.calls"
rc=0
for ((r = 0; r < W; r++)); do
  k=$((C / 2)) l=$((r % R))
  a=$((l * k)) b=$((l * k + k - 1))
  env SLURM_PROCID=$r SLURM_NTASKS=$W SLURMD_NODENAME=nid0000$((r / R + 1)) \
    BKM_FAKE_NCPUS=256 BKM_FAKE_MASK="$a-$b,$((a + 128))-$((b + 128))" \
    BKM_FAKE_CPUINFO="$STANDIN_CPUINFO" HWLOC_SYNTHETIC="$(cat "$STANDIN_DIR/pm.synthetic")" \
    LD_PRELOAD="$STANDIN_SHIM" "$@" || rc=$?
done
exit $rc
STANDIN
chmod +x bin/srun

"$BKM_TUNE" sbatch --node perlmutter-cpu --workload alexnet --site-prior --nodes 2 --ranks-per-node 8 --threads 16 \
    --check-binding --command 'echo bkm-payload-ran' -o pm.sbatch 2>err || fail "tune sbatch: $(cat err)"
grep -q '^srun -n 16 --ntasks-per-node=8 -c 32 --cpu-bind=cores --mpi=cray_shasta \\$' pm.sbatch ||
    fail "no explicit srun -c 32 line: $(grep '^srun' pm.sbatch)"

# run_job CPUINFO TOPOLOGY-FIX: the job under the stand-in, output in out/errout; its exit code
run_job() {
    : >srun.calls
    PATH=$w/bin:$PATH STANDIN_DIR=$w STANDIN_SHIM=$BKM_SHIM STANDIN_CPUINFO=$1 BKM_LIBOMP_TOPOLOGY=$2 \
        BKM_TUNE=$BKM_TUNE timeout 300 bash pm.sbatch >out 2>errout
}

# --- the check passes: every rank, every thread, on its own NUMA node's cores -------------------
run_job "$w/pm.cpuinfo" always
rc=$?
[ $rc = 0 ] || { tail -20 out errout >&2; fail "the job exited $rc"; }
[ "$(wc -l <srun.calls)" = 2 ] || fail "srun ran $(wc -l <srun.calls) time(s), want 2 (the check, the run)"
for r in $(seq 0 15); do
    node=nid0000$((r / 8 + 1)) l=$((r % 8))
    a=$((16 * l)) b=$((16 * l + 15))
    p="bkm binding rank $r of 16 on $node: "
    grep -qxF "${p}process mask: $a-$b,$((a + 128))-$((b + 128)) (32 CPUs)" out ||
        fail "rank $r: no process mask line for cores $a-$b: $(grep -F "$p" out | head -2)"
    for t in $(seq 0 15); do
        grep -qE "^${p}$t +$((a + t)) +$((a + t)) +ok\$" out ||
            fail "rank $r thread $t: not on CPU $((a + t)) as planned: $(grep -E "^${p}$t " out)"
    done
    grep -qxF "${p}binding matches the plan" out || fail "rank $r: no verdict"
done
[ "$(grep -c '^bkm binding rank ' out)" = $((16 * 20)) ] || fail "not 20 lines for each of the 16 ranks"
[ "$(grep -c '^bkm-payload-ran$' out)" = 16 ] || fail "the payload did not run on the 16 ranks"

# --- the negative control: libomp with the wrong numbering, not corrected ------------------------
run_job "$w/wrong.cpuinfo" never
rc=$?
[ $rc = 1 ] || { tail -20 out errout >&2; fail "the job with a wrong binding exited $rc, want 1"; }
grep -qF "bkm: the binding check failed (see the lines above): not running the job" errout ||
    fail "no failure message: $(tail -3 errout)"
grep -qxF "bkm binding rank 0 of 16 on nid00001: binding does NOT match the plan" out ||
    fail "rank 0 does not say its binding differs: $(grep '^bkm binding rank 0 ' out | tail -3)"
grep -q '^bkm-payload-ran$' out && fail "the payload ran after a failed binding check"
[ "$(wc -l <srun.calls)" = 1 ] || fail "srun ran $(wc -l <srun.calls) time(s) after a failed check, want 1"
echo "ok"
