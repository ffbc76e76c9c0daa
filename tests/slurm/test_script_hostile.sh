#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Text bkm did not write never becomes a command of a script it writes: a crafted results
# database (read directly or after `tune merge`), a node profile named after its XML file, an
# argument with a newline, a script path that starts with '-'. Every script is run under stand-in
# `srun`, `sbatch` and `tune` (on PATH, or through BKM_TUNE, which the scripts honour) that log
# their argv and environment; the test checks that no file the hostile text asks for appeared and
# that each stand-in got exactly the intended argv. Scripts are written through planted links
# without touching the files the links point to, and a failed write leaves the old script whole.
set -u
: "${BKM_TUNE:?}" "${BKM_FIXTURE:?}" "${BKM_SOURCE_DIR:?}"
command -v python3 >/dev/null || { echo "python3 is needed to craft the databases"; exit 77; }
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-script-hostile.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect RC CMD...: run (10 s at most), check the exit code, keep stdout/stderr in out/err
    local want=$1 rc
    shift
    timeout 10 "$@" >out 2>err
    rc=$?
    [ "$rc" = "$want" ] || { cat out err >&2; fail "'$*': exit $rc, expected $want"; }
}
T=$BKM_TUNE
M=$w/marks            # a hostile value asks for a file here; the test fails if one appears
mkdir -p "$M" bin log run tmp
no_marks() { [ -z "$(ls -A "$M")" ] || fail "$1: a hostile value ran: $(ls -A "$M")"; }

# --- stand-ins: each logs its argv NUL-separated to log/NAME.N (N counts calls) and, for srun,
# the OpenMP variables it was given; `tune sweep ... --db F` creates F, as the real one would
for prog in srun sbatch tune; do
    cat >"bin/$prog" <<EOF
#!/bin/bash
n=\$(ls "$w/log" | grep -c "^$prog\\.")
printf '%s\\0' "\$@" >"$w/log/$prog.\$n"
if [ "$prog" = srun ]; then printf '%s\\0' "KMP_AFFINITY=\${KMP_AFFINITY-}" "KMP_BLOCKTIME=\${KMP_BLOCKTIME-}" \\
    "OMP_NUM_THREADS=\${OMP_NUM_THREADS-}" >"$w/log/env.\$n"; fi
if [ "$prog" = sbatch ]; then echo 4242; fi
if [ "$prog" = tune ] && [ "\$1" = sweep ]; then
  prev=; for a in "\$@"; do [ "\$prev" = --db ] && : >"\$a"; prev=\$a; done
fi
exit 0
EOF
    chmod +x "bin/$prog"
done
# argv_is LOG WORD...: the stand-in's call LOG got exactly these words
argv_is() {
    local f=$1
    shift
    python3 - "$f" "$@" <<'PY' || fail "argv of $(basename "$f")"
import sys
got = open(sys.argv[1], "rb").read().split(b"\0")[:-1]
want = [a.encode("utf-8", "surrogateescape") for a in sys.argv[2:]]
if got != want:
    print("got  %r\nwant %r" % (got, want), file=sys.stderr)
    sys.exit(1)
PY
}
# run_script FILE: bash FILE in an empty folder, with the stand-ins first on PATH
run_script() {
    rm -rf run log/*
    mkdir run
    (cd run && PATH=$w/bin:$PATH TMPDIR=$w/tmp BKM_TUNE=$w/bin/tune SLURM_ARRAY_TASK_ID=${TASK:-0} \
        SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=76 bash "$1" >../run.out 2>&1)
    no_marks "$1"
    # a relative payload (file names hold no '/') would land in the script's folder
    [ -z "$(ls -A run)" ] || fail "$1: a hostile value ran: run/ holds $(ls -A run)"
}

# ==== 1. a crafted database: values read back reach `tune sbatch` ================================
"$BKM_FIXTURE" base.sqlite knl gemm 3 best >/dev/null || fail "fixture"
craft() { # craft OUT PYTHON: a copy of base.sqlite changed by the statements (c is the connection)
    cp base.sqlite "$1"
    python3 - "$1" "$M" <<PY || fail "crafting $1"
import sqlite3, sys, json
c = sqlite3.connect(sys.argv[1]); M = sys.argv[2]
$2
c.commit()
PY
}
# provenance text (host, revision, uuid, time) with newlines and substitutions: comments only
craft prov.sqlite '
c.execute("INSERT INTO host(hostname, cpu_model, fingerprint) VALUES(?, ?, ?)",
          ("nid1\ntouch %s/host #" % M, "cpu $(touch %s/cpu)" % M, "fp`touch %s/fp`" % M))
c.execute("UPDATE sweep SET host_id = 1, git_revision = ?, uuid = ?",
          ("abc\ntouch %s/rev #" % M, "u\r\ntouch %s/uuid #" % M))
c.execute("UPDATE best SET created_at = ?", ("2026\ntouch %s/created #" % M,))'
expect 0 "$T" sbatch --node knl --workload gemm --db prov.sqlite -o prov.sbatch
grep -q '^# Setting: the best-known setting of node knl, workload gemm' prov.sbatch || fail "no provenance comment"
grep -q 'on host nid1\\ntouch' prov.sbatch || fail "the host's newline is not escaped in the comment"
bash -n prov.sbatch || fail "prov.sbatch is not valid shell"
run_script "$w/prov.sbatch"
argv_is log/srun.0 -n 1 --ntasks-per-node=1 -c 272 --cpu-bind=cores --mpi=pmi2 bash -c \
    "$(sed -n "s/^  bash -c '\(.*\)' bkm-rank \\\\$/\1/p" prov.sbatch)" bkm-rank "$w/bin/tune" run --workload gemm \
    --threads 2
# ... and after `tune merge` of it: refused naming the table, the row and the reason; OUT untouched
expect 3 "$T" merge merged.sqlite prov.sqlite
grep -q "table host, id 1: hostname 'nid1?touch" err || fail "merge does not name the row: $(cat err)"
# a stored setting whose values are no setting: refused by name, nothing written
craft backend.sqlite '
c.execute("""UPDATE best SET config_json = ?""", (json.dumps({"backend": "n;touch b1", "threads": 2}),))'
expect 2 "$T" sbatch --node knl --workload gemm --db backend.sqlite -o backend.sbatch
grep -q "backend 'n;touch b1'" err || fail "the backend is not named: $(cat err)"
[ ! -e backend.sbatch ] || fail "a script was written from a refused setting"
craft param.sqlite '
c.execute("""UPDATE best SET config_json = ?""", (json.dumps({"params": {"m": "1 $(touch %s/p1)" % M}, "threads": 2}),))'
expect 2 "$T" sbatch --node knl --workload gemm --db param.sqlite -o param.sbatch
craft env.sqlite '
c.execute("""UPDATE best SET config_json = ?""", (json.dumps({"env": {"KMP_AFFINITY": "compact\x27;touch %s/e1;\x27" % M},
                                                   "threads": 2}),))'
expect 2 "$T" sbatch --node knl --workload gemm --db env.sqlite -o env.sbatch
# the merged database (a clean source merged, then the crafted provenance refused): what sbatch
# writes from it runs only srun, with the stored parameters as single words
craft good.sqlite '
c.execute("""UPDATE best SET config_json = ?""",
          (json.dumps({"backend": "native", "env": {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "0"},
                       "params": {"k": "16", "m": "64"}, "threads": 2}, sort_keys=True, separators=(",", ":")),))'
expect 0 "$T" merge merged.sqlite good.sqlite
expect 3 "$T" merge merged.sqlite prov.sqlite
expect 0 "$T" sbatch --node knl --workload gemm --db merged.sqlite -o merged.sbatch
run_script "$w/merged.sbatch"
argv_is log/srun.0 -n 1 --ntasks-per-node=1 -c 272 --cpu-bind=cores --mpi=pmi2 bash -c \
    "$(sed -n "s/^  bash -c '\(.*\)' bkm-rank \\\\$/\1/p" merged.sbatch)" bkm-rank "$w/bin/tune" run --workload gemm \
    --threads 2 --affinity granularity=fine,compact,1,0 --blocktime 0 --backend native --param k=16 --param m=64
argv_is log/env.0 KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=0 OMP_NUM_THREADS=2

# ==== 2. a node profile named after its XML file; relative paths =================================
xml=$BKM_SOURCE_DIR/tests/affinity/data/knl-flat.xml
cp "$xml" './x$(touch xml1).xml'
expect 2 "$T" --node './x$(touch xml1).xml' --workload gemm --sbatch xml.sbatch --db "$w/x.sqlite"
grep -q "is not a node name" err || fail "the XML's file name is not refused: $(cat err)"
[ ! -e xml.sbatch ] || fail "a script was written for a refused name"
mkdir -p prof && cp "$xml" prof/mynode.xml
expect 0 "$T" --node ./prof/mynode.xml --workload gemm --slurm-array 2 --sbatch arr.sbatch --db rel.sqlite \
    --threads 1,2 --label "x';touch $M/label1;'"
for s in arr.sbatch arr-merge.sbatch; do bash -n "$s" || fail "$s is not valid shell"; done
TASK=1 run_script "$w/arr.sbatch"
group=$(sed -n 's/.*BKM_SHARD_GROUP:-\([0-9a-f]*\)}.*/\1/p' arr.sbatch)
[ -n "$group" ] || fail "no shard group in arr.sbatch"
local1=$(tr '\0' '\n' <log/tune.0 | sed -n '/^--db$/{n;p}')
case $local1 in "$w/tmp/bkm-shard-76-1."*/shard.sqlite) ;; *) fail "the shard's SQLite file '$local1' is not in a new folder of its own";; esac
[ ! -e "$(dirname "$local1")" ] || fail "the shard's node-local folder was left behind"
argv_is log/tune.0 sweep --node "$w/prof/mynode.xml" --workload gemm --threads 1,2 --label "x';touch $M/label1;'" \
    --strategy grid --db "$local1" --shard 1/2 --shard-group "$group"
[ -f "$w/rel.sqlite.shards/shard-1-of-2.sqlite" ] || fail "the shard file was not copied to the absolute shard folder"
: >"$w/rel.sqlite.shards/shard-0-of-2.sqlite"
run_script "$w/arr-merge.sbatch"
local2=$(tr '\0' '\n' <log/tune.0 | sed -n '2p')
argv_is log/tune.0 merge "$local2" "$w/rel.sqlite.shards/shard-0-of-2.sqlite" "$w/rel.sqlite.shards/shard-1-of-2.sqlite"
argv_is log/tune.1 sweep --node "$w/prof/mynode.xml" --workload gemm --threads 1,2 --label "x';touch $M/label1;'" \
    --strategy grid --db "$local2"
argv_is log/tune.2 merge "$w/rel.sqlite" "$local2"
argv_is log/tune.3 best --node mynode --workload gemm --db "$w/rel.sqlite"

# ==== 3. a newline in an argument: never out of the "Written by" comment ==========================
expect 0 "$T" --node knl --workload gemm --sbatch nl.sbatch --db "$w/nl.sqlite" --label $'a\ntouch '"$M"$'/nl1 #'
grep -q "^# Written by bkm .*--label 'a\\\\ntouch" nl.sbatch || fail "the newline is not escaped in the comment"
run_script "$w/nl.sbatch"
argv_is log/tune.0 sweep --node knl --workload gemm --label $'a\ntouch '"$M"$'/nl1 #' \
    --db "$(tr '\0' '\n' <log/tune.0 | sed -n '/^--db$/{n;p}')"
nl2=$'s\ntouch nl2 #'
expect 0 "$T" sbatch --node knl --workload alexnet --seed-bkm -o "$nl2"
run_script "$w/$nl2"
argv_is log/srun.0 -n 1 --ntasks-per-node=1 -c 272 --cpu-bind=cores --mpi=pmi2 bash -c \
    "$(sed -n "s/^  bash -c '\(.*\)' bkm-rank \\\\$/\1/p" "$w/$nl2")" bkm-rank "$w/bin/tune" run \
    --workload alexnet --threads 68 --affinity granularity=fine,compact,1,0 --blocktime 1
expect 2 "$T" sbatch --node knl --workload gemm --seed-bkm --command $'./a.out\x1b[2J'

# ==== 4. a script path that starts with '-' is never an option of sbatch ===========================
expect 0 env PATH="$w/bin:$PATH" "$T" sbatch --node knl --workload alexnet --seed-bkm -o -x.sbatch --submit
argv_is "$(ls log/sbatch.* | tail -1)" --parsable ./-x.sbatch
rm -f log/*
expect 0 env PATH="$w/bin:$PATH" "$T" --node knl --workload gemm --slurm-array 2 --sbatch -y.sbatch --db "$w/y.sqlite" \
    --submit
argv_is log/sbatch.0 --parsable ./-y.sbatch
argv_is log/sbatch.1 --parsable --dependency=afterany:4242 ./-y-merge.sbatch

# ==== 5. script files: written through a planted link without touching its target; a failed =====
# write leaves the old script whole; -o at a FIFO writes to it; a FIFO nobody reads is refused
echo "precious" >victim
ln -s victim link.sbatch
expect 0 "$T" sbatch --node knl --workload alexnet --seed-bkm -o link.sbatch
[ "$(cat victim)" = precious ] || fail "the file a planted link points to was overwritten"
[ -f link.sbatch ] && [ ! -L link.sbatch ] && grep -q '^srun ' link.sbatch || fail "link.sbatch is not the script"
ln -s victim sweep-link.sbatch
expect 0 "$T" --node knl --workload gemm --sbatch sweep-link.sbatch --db "$w/z.sqlite"
[ "$(cat victim)" = precious ] || fail "--sbatch wrote through a planted link"
expect 0 "$T" sbatch --node knl --workload alexnet --seed-bkm -o old.sbatch
cp old.sbatch old.copy
(ulimit -f 1; trap '' XFSZ; "$T" sbatch --node knl --workload gemm --seed-bkm -o old.sbatch >out 2>err)
rc=$?
[ "$rc" = 3 ] || fail "a write beyond the file size limit: exit $rc, want 3: $(cat err)"
cmp -s old.sbatch old.copy || fail "a failed write left a partial script"
[ -z "$(ls -A . | grep '\.tmp-')" ] || fail "a failed write left its temporary: $(ls -A)"
mkfifo fifo
cat fifo >from-fifo &
reader=$!
expect 0 "$T" sbatch --node knl --workload alexnet --seed-bkm -o fifo
wait "$reader"
grep -q '^srun ' from-fifo || fail "-o FIFO: the script did not reach its reader"
mkfifo lonely
expect 3 "$T" sbatch --node knl --workload alexnet --seed-bkm -o lonely
grep -q "nobody reads" err || fail "a FIFO without reader: $(cat err)"
expect 2 "$T" sbatch --node knl --workload alexnet --seed-bkm -o .
no_marks "the whole test"
echo "hostile scripts: ok"
