#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A site's own node profile file (an invented cluster, "Tundra": another constraint, QOS, account,
# partition, -c rule and launcher) makes `tune sbatch`, the sweep's --sbatch job and `tune topo` follow
# its rules; options given on the command line win over them; a malformed profile is refused, exit
# 2, naming the file, the line and the key, before anything is written.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-site-profile.XXXXXX") || exit 3
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1

cat >tundra.prof <<'PROF'
# Tundra HPC centre, CPU partition
name = tundra-cpu
site = Tundra
description = 2 sockets x 8 cores x 2 HT
synthetic = pack:2 core:8 pu:2
isa = avx512
constraint = milan&ib
qos = normal
account = proj01
partition = batch
cpus_per_task = cores
cpu_bind = cores
launcher = mpiexec
mpi = default
srun_inherits_c = no
prior = KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=0
prior_source = the Tundra user guide
PROF

"$T" topo --node tundra.prof >topo.txt || fail "tune topo --node tundra.prof: exit $?"
grep -qxF "batch rules (Tundra): -C milan&ib -q normal -A proj01 -p batch; mpiexec, -c rule cores, cpu-bind cores; srun does not inherit the job's -c (Slurm 22.05 and later): scripts set srun -c" topo.txt ||
    fail "tune topo does not show the rules: $(grep '^batch' topo.txt)"
grep -q "^site-recommended setting (a prior, not measured): KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=0 (the Tundra user guide)$" topo.txt ||
    fail "tune topo does not show the prior"

# tune sbatch by Tundra's rules: 4 ranks x 2 threads on 2 nodes, a whole core per thread
"$T" sbatch --node tundra.prof --workload gemm --site-prior --nodes 2 --ranks-per-node 4 --threads 2 --check-binding \
    --command 'echo payload' -o t.sbatch 2>err || fail "tune sbatch: $(cat err)"
for l in '#SBATCH -N 2' '#SBATCH -C milan&ib' '#SBATCH -p batch' '#SBATCH -q normal' '#SBATCH -A proj01' \
    "export KMP_AFFINITY='granularity=fine,compact,1,0'" "export KMP_BLOCKTIME='0'" 'export OMP_NUM_THREADS=2'; do
    grep -qxF "$l" t.sbatch || fail "no line '$l' in the script"
done
[ "$(grep -c '^mpiexec -n 8 -ppn 4 -bind-to core:2 \\$' t.sbatch)" = 2 ] || fail "not two mpiexec lines: $(grep '^mpiexec' t.sbatch)"
grep -q "^# mpiexec (MPICH Hydra) by Tundra's rules on tundra-cpu (32 CPUs, 16 cores): -c = 2 thread(s) x 2 hardware" t.sbatch ||
    fail "no comment naming Tundra's rule"
grep -q "^# Setting: RECOMMENDED for node tundra-cpu by the Tundra user guide" t.sbatch || fail "no provenance of the prior"
grep -q 'srun' t.sbatch && fail "the script uses srun, Tundra launches with mpiexec"
grep -q -- '--mpi' t.sbatch && fail "an --mpi option under mpiexec"
# the command line wins over the profile
"$T" sbatch --node tundra.prof --workload gemm --site-prior --qos debug --account other --partition short -o o.sbatch 2>err ||
    fail "tune sbatch with overrides: $(cat err)"
grep -qxF '#SBATCH -q debug' o.sbatch && grep -qxF '#SBATCH -A other' o.sbatch && grep -qxF '#SBATCH -p short' o.sbatch ||
    fail "--qos/--account/--partition do not replace the profile's"
# the rule's counts do not fit: named
"$T" sbatch --node tundra.prof --workload gemm --site-prior --ranks-per-node 4 --threads 5 -o x.sbatch 2>err && fail "4 ranks x 5 cores accepted"
grep -q "exceed the 32 of the node" err || fail "the refusal does not name the counts: $(cat err)"

# the sweep's own job (tune --sbatch) asks for the same -C, -q, -A, -p
"$T" --node tundra.prof --workload gemm --threads 2 --sbatch s.sbatch --db "$w/r.sqlite" >/dev/null 2>err ||
    fail "tune --sbatch: $(cat err)"
for l in '#SBATCH -C milan&ib' '#SBATCH -p batch' '#SBATCH -q normal' '#SBATCH -A proj01'; do
    grep -qxF "$l" s.sbatch || fail "the sweep's job lacks '$l'"
done

# malformed profiles: exit 2 naming the file, the line and the key; nothing written
expect_bad() { # LINE KEY-TEXT PROFILE-LINES...
    local line=$1 key=$2 rc
    shift 2
    printf '%s\n' "$@" >bad.prof
    rm -f bad.sbatch
    "$T" sbatch --node bad.prof --workload gemm --default -o bad.sbatch >out 2>err
    rc=$?
    [ $rc = 2 ] || fail "bad profile ($*): tune sbatch exit $rc, want 2"
    grep -q "profile 'bad.prof' line $line: .*$key" err || fail "the refusal does not name bad.prof, line $line, '$key': $(cat err)"
    [ -e bad.sbatch ] && fail "a script was written from a bad profile"
    "$T" topo --node bad.prof >out 2>err
    [ $? = 2 ] && grep -q "bad.prof' line $line" err || fail "tune topo accepts the bad profile or does not name it: $(cat err)"
    "$T" --node bad.prof --workload gemm >out 2>err
    [ $? = 2 ] && grep -q "bad.prof' line $line" err || fail "tune sweep accepts the bad profile or does not name it: $(cat err)"
}
base=("name = b" "synthetic = pack:1 core:2 pu:1")
expect_bad 3 "bad qos 'a b'" "${base[@]}" "qos = a b"
expect_bad 4 "bad launcher 'aprun'" "${base[@]}" "# a comment" "launcher = aprun"
expect_bad 3 "bad constraint" "${base[@]}" "constraint = cpu;reboot"
expect_bad 3 "unknown key 'qos_default'" "${base[@]}" "qos_default = x"
expect_bad 4 "key 'partition' is given twice (first on line 3)" "${base[@]}" "partition = a" "partition = b"
expect_bad 3 "prior: .*cancel each other" "${base[@]}" "prior = KMP_AFFINITY=compact OMP_PLACES=cores"
expect_bad 3 "bad cpus_per_task" "${base[@]}" "cpus_per_task = all"
echo "ok"
