#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile input (issue 7 §2): values that crashed or hung `tune` end with exit 2 and a message that
# names the value, promptly (every command runs under `timeout 10`, so a hang fails the test
# instead of blocking it), and nothing is written: no database, no sweep row.
set -u
T=${BKM_TUNE:?BKM_TUNE not set}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect RC NEEDLE ARGS...: `tune ARGS` exits RC within 10 s and its stderr names NEEDLE
expect() {
    local want=$1 needle=$2 rc
    shift 2
    timeout 10 "$T" "$@" > out.txt 2> err.txt
    rc=$?
    [ $rc -ne 124 ] || fail "tune $*: still running after 10 s"
    [ $rc -eq "$want" ] || fail "tune $*: exit $rc, want $want: $(head -3 err.txt)"
    grep -qF -- "$needle" err.txt || fail "tune $*: the message does not name '$needle': $(head -3 err.txt)"
}

# --- --affinity values with blanks (SIGSEGV before) ----------------------------------------------
expect 2 "close" --workload gemm --dry-run --affinity 'OMP_PLACES=cores close' --db aff.sqlite
expect 2 "spread" --workload gemm --dry-run --affinity 'OMP_PROC_BIND=close spread' --db aff.sqlite
printf 'name = two\nsynthetic = pack:1 core:2 pu:1\n' > two.prof    # PUs 0 and 1
expect 2 "OS proc 2" --node two.prof --workload gemm --dry-run --affinity 'OMP_PLACES={0:2}, {2:2}' --db aff.sqlite
expect 2 "spread" --workload gemm --dry-run --affinity 'OMP_PLACES=cores OMP_PROC_BIND=close spread' --db aff.sqlite
expect 2 "given twice" --workload gemm --dry-run --affinity 'OMP_PLACES=cores OMP_PLACES=threads' --db aff.sqlite
expect 2 "needs a value" --workload gemm --dry-run --affinity 'OMP_PLACES= cores' --db aff.sqlite
expect 2 "'FOO'" --workload gemm --dry-run --affinity 'OMP_PLACES=cores FOO=1' --db aff.sqlite
expect 2 "spread" --workload gemm --affinity 'OMP_PROC_BIND=close spread' --db aff.sqlite
# the same values planned on the Cori Haswell profile (64 PUs): valid there, a plan and exit 0
timeout 10 "$T" --node haswell --workload gemm --dry-run --affinity 'OMP_PLACES={0:2}, {2:2}' \
    --db aff.sqlite > out.txt 2> err.txt || fail "'{0:2}, {2:2}' on haswell: exit $?: $(head -3 err.txt)"
grep -qF "OMP_PLACES={0:2}, {2:2}" out.txt || fail "'{0:2}, {2:2}' is not in the haswell plan"
[ ! -e aff.sqlite ] || fail "a bad --affinity wrote a database"

# --- files that are not regular files (hung or grew memory forever before) -------------------------
mkfifo fifo
printf 'name = fifonode\nxml = fifo\n' > xmlfifo.prof
expect 2 "'/dev/zero' is not a regular file" topo --xml /dev/zero
expect 2 "'fifo' is not a regular file (a FIFO)" topo --xml fifo
expect 2 "'fifo' is not a regular file (a FIFO)" topo --profile fifo
expect 2 "hwloc XML 'fifo' is not a regular file (a FIFO)" topo --profile xmlfifo.prof
expect 2 "'fifo' is not a regular file (a FIFO)" affinity explain --xml fifo --threads 2 compact
expect 2 "hwloc XML 'fifo' is not a regular file" --node xmlfifo.prof --workload gemm --dry-run --db dry.sqlite
truncate -s 65M huge.xml
expect 2 "limit of 64 MiB" topo --xml huge.xml
for cmd in "--workload gemm" "sweep --workload gemm --dry-run" "best --node auto --workload gemm" \
           "export --format csv" "replay"; do
    # shellcheck disable=SC2086
    expect 2 "results database 'fifo' is not a regular file (a FIFO)" $cmd --db fifo
done
BKM_DB=fifo expect 2 "results database 'fifo' is not a regular file" best --node auto --workload gemm
expect 2 "results database '.' is not a regular file (a directory)" --workload gemm --db .
expect 2 "results database 'fifo' is not a regular file" merge out.sqlite fifo
expect 2 "results database 'fifo' is not a regular file" merge fifo in.sqlite
[ ! -e out.sqlite ] && [ ! -e dry.sqlite ] || fail "a refused input left a database behind"

echo "hostile input: ok"
