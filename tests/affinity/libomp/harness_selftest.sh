#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Validates the fake-topology harness (shim + probe + KMP_CPUINFO_FILE) against the [RUN] rows of
# docs/affinity.md §2.2 (Haswell 2x16x2, Cori numbering), §2.3 (KNL 68x4, no tiles), §1.5
# (respect, dups/nodups), §1.7 (KMP_HW_SUBSET) and §8 (Perlmutter CPU 2x64x2, the sibling of N is
# N+128), before the differential test trusts it.
# Needs $BKM_SHIM, $BKM_PROBE, $BKM_LIBOMP_DIFF (set by CTest).
set -u
for v in BKM_SHIM BKM_PROBE BKM_LIBOMP_DIFF; do
    if [ -z "${!v:-}" ] || [ ! -e "${!v}" ]; then
        echo "SKIP: \$$v is not set or missing (run through ctest)"
        exit 77
    fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/bkm-harness-XXXXXX") || exit 3
trap 'rm -rf "$work"' EXIT
"$BKM_LIBOMP_DIFF" cpuinfo 2 16 2 cori "$work/haswell" || exit 3
"$BKM_LIBOMP_DIFF" cpuinfo 1 68 4 cori "$work/knl" || exit 3
"$BKM_LIBOMP_DIFF" cpuinfo 2 64 2 cori "$work/perlmutter" || exit 3

fails=0
checks=0
exp=""
# add T CPU...: append thread T's expected set (CPUs in increasing order) to $exp.
add() {
    local t=$1
    shift
    local IFS=,
    exp+="${exp:+,}{\"thread\":$t,\"cpus\":[$*]}"
}
# check NAME MACHINE NCPUS THREADS [VAR=VALUE ...]: run the probe and compare with $exp.
check() {
    local name=$1 machine=$2 ncpus=$3 threads=$4
    shift 4
    local out
    out=$(env -u KMP_AFFINITY -u OMP_PLACES -u OMP_PROC_BIND -u KMP_HW_SUBSET -u GOMP_CPU_AFFINITY \
        BKM_FAKE_NCPUS="$ncpus" KMP_CPUINFO_FILE="$work/$machine" KMP_BLOCKTIME=0 "$@" \
        LD_PRELOAD="$BKM_SHIM" "$BKM_PROBE" "$threads" 2>"$work/stderr")
    local rc=$?
    checks=$((checks + 1))
    local plan=${out#*\"plan\":[}
    plan=${plan%]\}}
    if [ $rc -ne 0 ] || [ "$plan" != "$exp" ]; then
        fails=$((fails + 1))
        echo "FAIL: $name ($machine, $threads threads, $*): probe exit $rc"
        echo "  expected: $exp"
        echo "  got:      $plan"
        sed 's/^/  stderr: /' "$work/stderr" | head -5
    else
        echo "ok: $name"
    fi
    exp=""
}

# ---- §2.2 Haswell ----------------------------------------------------------------------------
for i in $(seq 0 31); do add "$i" "$i"; done
check "fine,compact,1,0 x32: T_i -> {i}" haswell 64 32 KMP_AFFINITY=granularity=fine,compact,1,0
for i in $(seq 0 63); do add "$i" "$i"; done
check "fine,compact,1,0 x64: T_i -> {i}" haswell 64 64 KMP_AFFINITY=granularity=fine,compact,1,0
for k in $(seq 0 15); do add $((2 * k)) "$k" $((k + 32)); add $((2 * k + 1)) "$k" $((k + 32)); done
check "compact x32: two threads per core, socket 0 only" haswell 64 32 KMP_AFFINITY=compact
for k in $(seq 0 15); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((k + 32)); done
check "fine,compact x32: T2k -> {k}, T2k+1 -> {k+32}" haswell 64 32 KMP_AFFINITY=granularity=fine,compact
for k in $(seq 0 15); do add $((2 * k)) "$k" $((k + 32)); add $((2 * k + 1)) $((16 + k)) $((48 + k)); done
check "scatter x32: alternating sockets" haswell 64 32 KMP_AFFINITY=scatter
for k in $(seq 0 15); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((16 + k)); done
check "fine,scatter x32: T2k -> {k}, T2k+1 -> {16+k}" haswell 64 32 KMP_AFFINITY=granularity=fine,scatter
for k in $(seq 0 15); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((16 + k)); done
for k in $(seq 0 15); do add $((32 + 2 * k)) $((32 + k)); add $((33 + 2 * k)) $((48 + k)); done
check "fine,scatter x64: second HTs after the first" haswell 64 64 KMP_AFFINITY=granularity=fine,scatter
for k in $(seq 0 7); do add $((2 * k)) "$k" $((k + 32)); add $((2 * k + 1)) "$k" $((k + 32)); done
check "core,compact x16: 8 cores, 2 threads each" haswell 64 16 KMP_AFFINITY=granularity=core,compact
for i in $(seq 0 15); do add "$i" "$i" $((i + 32)); done
check "core,compact,1 x16: socket 0, one per core" haswell 64 16 KMP_AFFINITY=granularity=core,compact,1
for k in $(seq 0 7); do add $((2 * k)) "$k" $((k + 32)); add $((2 * k + 1)) $((16 + k)) $((48 + k)); done
check "core,scatter x16" haswell 64 16 KMP_AFFINITY=granularity=core,scatter
for i in $(seq 0 31); do add "$i" "$i" $((i + 32)); done
check "balanced x32: one per core, socket 0 first" haswell 64 32 KMP_AFFINITY=balanced
for j in 0 1 2 3; do add $((2 * j)) $((2 + j)); add $((2 * j + 1)) $((34 + j)); done
check "fine,compact,0,4 x8: offset 4 in the sorted list" haswell 64 8 KMP_AFFINITY=granularity=fine,compact,0,4
add 0 1
check "fine,compact,0,2 x1: T0 -> {1}" haswell 64 1 KMP_AFFINITY=granularity=fine,compact,0,2
for k in $(seq 0 15); do add $((2 * k)) "$k" $((k + 32)); add $((2 * k + 1)) $((16 + k)) $((48 + k)); done
check "compact,2 = scatter" haswell 64 32 KMP_AFFINITY=compact,2
for i in $(seq 0 15); do add "$i" "$i" $((i + 32)); done
check "scatter,1 = compact,1" haswell 64 16 KMP_AFFINITY=scatter,1

# ---- §1.5 respect and dups, §1.7 KMP_HW_SUBSET, §1.8 OMP_PLACES ------------------------------
add 0 0 32; add 1 0 32; add 2 1 33; add 3 1 33
check "respect initial mask 0-3,32-35, compact x4" haswell 64 4 BKM_FAKE_MASK=0-3,32-35 KMP_AFFINITY=compact
add 0 0 32; add 1 0 32; add 2 1 33; add 3 1 33
check "core,compact dups x4" haswell 64 4 KMP_AFFINITY=granularity=core,compact,dups
add 0 0 32; add 1 1 33; add 2 2 34; add 3 3 35
check "core,compact nodups x4" haswell 64 4 KMP_AFFINITY=granularity=core,compact,nodups
for i in 0 1 2; do add "$i" 0 1 2 3; done
check "KMP_HW_SUBSET=1s,4c,1t without KMP_AFFINITY: float on {0-3}" haswell 64 3 KMP_HW_SUBSET=1s,4c,1t
add 0 50; add 1 51; add 2 52; add 3 53
check "KMP_HW_SUBSET=1s@1,4c@2,1t@1 keeps PUs 50-53" haswell 64 4 KMP_HW_SUBSET=1s@1,4c@2,1t@1 \
    KMP_AFFINITY=granularity=fine,compact
t=0
for p in 0 2 5 8 11 13 16 19 22 24 27 30; do add $t "$p" $((p + 32)); t=$((t + 1)); done
check "OMP_PLACES=cores OMP_PROC_BIND=spread x12" haswell 64 12 OMP_PLACES=cores OMP_PROC_BIND=spread
# libomp 14 parses the variables in environment-block order, and this pair depends on it:
# OMP_PROC_BIND=false before OMP_PLACES=cores binds (compact over cores, as §1.8 says), the other
# order leaves every thread unbound.
add 0 0 32; add 1 1 33
check "OMP_PROC_BIND=false, then OMP_PLACES=cores: still binds" haswell 64 2 OMP_PROC_BIND=false OMP_PLACES=cores
for i in 0 1; do add "$i" $(seq 0 63); done
check "OMP_PLACES=cores, then OMP_PROC_BIND=false: unbound" haswell 64 2 OMP_PLACES=cores OMP_PROC_BIND=false

# ---- §2.3 KNL 68x4 (no tiles; harness default granularity core) ------------------------------
for i in $(seq 0 135); do add "$i" "$i"; done
check "KNL fine,compact,1,0 x136" knl 272 136 KMP_AFFINITY=granularity=fine,compact,1,0
for k in $(seq 0 67); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((k + 68)); done
check "KNL fine,balanced x136: HT0 and HT1 of every core" knl 272 136 KMP_AFFINITY=granularity=fine,balanced
for k in $(seq 0 67); do
    add $((2 * k)) "$k" $((k + 68)) $((k + 136)) $((k + 204))
    add $((2 * k + 1)) "$k" $((k + 68)) $((k + 136)) $((k + 204))
done
check "KNL core,balanced x136" knl 272 136 KMP_AFFINITY=balanced
for k in $(seq 0 31); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((k + 68)); done
for j in $(seq 0 35); do add $((64 + j)) $((32 + j)); done
check "KNL fine,balanced x100: cores 0-31 get two threads" knl 272 100 KMP_AFFINITY=granularity=fine,balanced
for i in $(seq 0 67); do add "$i" "$i" $((i + 68)) $((i + 136)) $((i + 204)); done
check "KNL scatter x68" knl 272 68 KMP_AFFINITY=scatter
for i in $(seq 0 67); do add "$i" "$i"; done
check "KNL fine,scatter x68" knl 272 68 KMP_AFFINITY=granularity=fine,scatter

# ---- Perlmutter CPU 2x64x2: socket 0 = cores 0-63, the sibling of N is N+128 -----------------
for i in $(seq 0 127); do add "$i" "$i"; done
check "PM fine,compact,1,0 x128: T_i -> {i}, socket 0 first" perlmutter 256 128 KMP_AFFINITY=granularity=fine,compact,1,0
for k in $(seq 0 63); do add $((2 * k)) "$k" $((k + 128)); add $((2 * k + 1)) $((k + 64)) $((k + 192)); done
check "PM scatter x128: alternating sockets, whole cores" perlmutter 256 128 KMP_AFFINITY=scatter
for k in $(seq 0 127); do add $((2 * k)) "$k"; add $((2 * k + 1)) $((k + 128)); done
check "PM fine,compact x256: T2k -> {k}, T2k+1 -> {k+128}" perlmutter 256 256 KMP_AFFINITY=granularity=fine,compact
for i in $(seq 0 15); do add "$i" "$i"; done
check "PM one rank of 8 (0-15,128-143), OMP_PLACES=threads OMP_PROC_BIND=spread x16: one thread per core" \
    perlmutter 256 16 BKM_FAKE_MASK=0-15,128-143 OMP_PLACES=threads OMP_PROC_BIND=spread
add 0 $(seq 0 63) $(seq 128 191); add 1 $(seq 64 127) $(seq 192 255)
check "PM OMP_PLACES=ll_caches spread x2: without hwloc the LL cache is the socket" perlmutter 256 2 \
    OMP_PLACES=ll_caches OMP_PROC_BIND=spread
add 0 0 128; add 1 32 160; add 2 64 192; add 3 96 224
check "PM OMP_PLACES=numa_domains spread x4: no NUMA layer (W#192), cores" perlmutter 256 4 \
    OMP_PLACES=numa_domains OMP_PROC_BIND=spread
for i in $(seq 0 15); do add "$i" $(seq $((8 * i)) $((8 * i + 7))) $(seq $((128 + 8 * i)) $((135 + 8 * i))); done
check "PM OMP_PLACES={0:8,128:8}:16:8 spread x16: one thread per L3 group" perlmutter 256 16 \
    "OMP_PLACES={0:8,128:8}:16:8" OMP_PROC_BIND=spread
add 0 64; add 1 192
check "PM KMP_HW_SUBSET=1LL@1: the LL layer is the socket" perlmutter 256 2 KMP_HW_SUBSET=1LL@1 \
    KMP_AFFINITY=granularity=fine,compact

echo "$((checks - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
