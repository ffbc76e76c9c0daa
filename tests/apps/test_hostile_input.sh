#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile input (docs/cli.md): values that crashed or hung `tune` end with exit 2 and a message that
# names the value, promptly (every command runs under `timeout 10`, so a hang fails the test
# instead of blocking it), and nothing is written: no database, no sweep row.
set -u
T=${BKM_TUNE:?BKM_TUNE not set}
TH=${BKM_TUNE_TESTHOOKS:?BKM_TUNE_TESTHOOKS not set}   # the test build (--inject)
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
# hwloc reads HWLOC_XMLFILE itself when it discovers the host: judged like --xml, by every command
HWLOC_XMLFILE=fifo expect 2 "HWLOC_XMLFILE (hwloc reads it as this host's topology) 'fifo' is not a regular file (a FIFO)" topo
HWLOC_XMLFILE=/dev/zero expect 2 "'/dev/zero' is not a regular file" best --node auto --workload gemm
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

# --- synthetic counts hwloc would read otherwise (0x100 is 256 to hwloc, 010 is 8): refused at once -----
expect 2 "count '0x100' of level 'pack:0x100' is not a plain decimal number" topo --synthetic "pack:0x100 core:0x100 pu:1"
expect 2 "count '010'" topo --synthetic "pack:010 core:1 pu:1"
printf 'name = hexnode\nsynthetic = pack:0x40 core:0x40 pu:4\n' > hex.prof
expect 2 "count '0x40'" --node hex.prof --workload gemm --dry-run --db dry.sqlite

# --- every option validated before anything is written (a sweep row was created, then abort) -----
g=(--workload gemm --param m=16 --param n=16 --param k=16 --counters none)
bad_opts() {  # DB: each bad option is exit 2 naming the value and its range; DB untouched
    expect 2 "--min-samples '200000' is not an integer in 1..100000" "${g[@]}" --min-samples 200000 --db "$1"
    expect 2 "--max-samples '100001' is not an integer in 1..100000" "${g[@]}" --max-samples 100001 --db "$1"
    expect 2 "--min-samples '0'" "${g[@]}" --min-samples 0 --db "$1"
    expect 2 "--budget '0' is not an integer in 1..100000000" "${g[@]}" --budget 0 --db "$1"
    expect 2 "--confirm-top '8' is not an integer in 0..7" "${g[@]}" --confirm-top 8 --db "$1"
    expect 2 "--min-time '86401' is not a duration in 0..86400 s" "${g[@]}" --min-time 86401 --db "$1"
    expect 2 "--trial-timeout '8d'" "${g[@]}" --trial-timeout 8d --db "$1"
    expect 2 "--trial-timeout '700000' is not a duration in 0.001..604800 s" "${g[@]}" --trial-timeout 700000 --db "$1"
    expect 2 "--min-time 700 s is not shorter than --trial-timeout 600 s" "${g[@]}" --min-time 700 --trial-timeout 600 --db "$1"
    expect 2 "--min-time 'inf'" "${g[@]}" --min-time inf --db "$1"
    expect 2 "--time '1e308h'" "${g[@]}" --time 1e308h --db "$1"
    expect 2 "--time 'nan'" "${g[@]}" --time nan --db "$1"
    expect 2 "--seed 'x'" "${g[@]}" --seed x --db "$1"
    expect 2 "--strategy 'annealing'" "${g[@]}" --strategy annealing --db "$1"
    expect 2 "unknown option '--inject'" "${g[@]}" --inject segv@1 --db "$1"
    T=$TH expect 2 "--inject 'boom@1'" "${g[@]}" --inject boom@1 --db "$1"
    expect 2 "--strategy 'annealing' is unknown" replay --db "$1" --strategy annealing
    expect 2 "--seeds '0'" replay --db "$1" --seeds 0
    expect 2 "--sweep '-1'" export --format csv --sweep -1 --db "$1"
    expect 2 "--format 'xml'" export --format xml --db "$1"
}
bad_opts none.sqlite
[ ! -e none.sqlite ] || fail "a bad option created a database"

# --strategy halving: the rung-1 trial (3 x 40000 samples) is clamped to the 100000-sample limit
# instead of failing validation and aborting the sweep; the sweep finishes
h=("${g[@]}" --threads 1,2 --affinity default --blocktime 0,1,200 --strategy halving --budget 6
   --min-samples 40000 --max-samples 40000 --min-time 0 --confirm-top 0 --db h.sqlite)
timeout 120 "$T" "${h[@]}" > out.txt 2> err.txt || fail "halving sweep at the sample limit: exit $?: $(tail -3 err.txt)"
# --confirm-top 0: it says what it stored and what not, never a median of nothing
grep -q "^best-known: none stored: no confirmation round (--confirm-top 0)" out.txt ||
    fail "--confirm-top 0 does not say that no best-known setting is stored: $(cat out.txt)"
! grep -qiw "nan" out.txt || fail "--confirm-top 0 prints nan: $(cat out.txt)"
if command -v sqlite3 > /dev/null; then
    q() { sqlite3 -readonly -batch -noheader h.sqlite "$1"; }
    [ "$(q "SELECT status FROM sweep")" = done ] || fail "the halving sweep is not done: $(q 'SELECT status FROM sweep')"
    n=$(q "SELECT count(*) FROM sample WHERE trial_id = (SELECT id FROM trial WHERE round = 1)")
    [ "$n" = 100000 ] || fail "the rung-1 trial has $n samples, want 100000 (3 x 40000, clamped)"
    # the same bad options against an existing database: no sweep row, no trial added
    before=$(q "SELECT count(*) FROM sweep"):$(q "SELECT count(*) FROM trial")
    sum=$(md5sum < h.sqlite)
    bad_opts h.sqlite
    [ "$(q "SELECT count(*) FROM sweep"):$(q "SELECT count(*) FROM trial")" = "$before" ] ||
        fail "a bad option added a sweep or a trial"
    [ "$(md5sum < h.sqlite)" = "$sum" ] || fail "a bad option modified the database"
else
    echo "note: sqlite3 CLI not installed: database contents not checked"
fi

echo "hostile input: ok"
