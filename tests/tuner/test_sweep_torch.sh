#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The program the seed's users run: a PyTorch training script on Debian's python3-torch (which
# loads GNU libgomp), swept by `tune --node auto --workload torch-cnn -- /usr/bin/python3 SCRIPT`.
# The runtime is found by a probe run (an interpreter has no ELF closure to read), the sweep holds
# only variables libgomp reads, every trial's OpenMP team (or, at one thread, its initial thread)
# is proven bound as planned, the runtime is stored, a best-known statement is made, and
# `tune sbatch` writes a job with OMP_* variables that a stand-in srun runs for real. The seed's
# KMP_* lines given to `tune run` are named as ignored.
set -u
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}" "${BKM_SOURCE_DIR:?}"
PY=/usr/bin/python3   # Debian's own interpreter, the one python3-torch installs into
command -v sqlite3 > /dev/null || { echo "SKIP: the sqlite3 command-line tool is not installed"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: $PY is not installed"; exit 77; }
"$PY" -c 'import torch' 2> /dev/null || { echo "SKIP: Debian's PyTorch is not installed (apt-get install python3-torch)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs (nproc $(nproc))"; exit 77; }
T=$BKM_TUNE
SCRIPT=$BKM_SOURCE_DIR/tests/tuner/programs/torch_cnn.py
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-program-torch.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
fail() { echo "FAIL: $*" >&2; for f in out err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done; exit 1; }
expect() {
  local want=$1 rc
  shift
  timeout 600 "$@" > out 2> err
  rc=$?
  [ "$rc" = "$want" ] || fail "'$*': exit $rc, expected $want"
}
q() { sqlite3 -readonly -batch -noheader "$1" "$2"; }

expect 0 "$T" --node auto --workload torch-cnn --db t.sqlite --threads 1,2 --budget 8 \
  --metric 'step [0-9]+ time ([0-9.]+) ms' -- "$PY" "$SCRIPT" 5
grep -q "is run by an interpreter" err || fail "no word that the runtime is found by a probe run"
grep -q "loads GNU OpenMP (probe run" err || fail "the probe did not find libgomp"
n=$(q t.sqlite "SELECT count(*) FROM trial")
[ "$n" -ge 8 ] || fail "only $n trials"
[ "$(q t.sqlite "SELECT count(*) FROM trial t, json_each(t.config_json, '\$.env') e WHERE e.key NOT IN
     ('OMP_PLACES','OMP_PROC_BIND','GOMP_CPU_AFFINITY','OMP_WAIT_POLICY','GOMP_SPINCOUNT')")" = 0 ] ||
  fail "a setting of a variable libgomp does not read"
[ "$(q t.sqlite "SELECT count(*) FROM trial WHERE status <> 'ok'")" = 0 ] || fail "a trial failed"
[ "$(q t.sqlite "SELECT count(*) FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1")" = 0 ] ||
  fail "trials without a proven binding: $(q t.sqlite "SELECT config_json || ': ' || json_extract(binding_json, '\$.summary') FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1 LIMIT 3")"
[ "$(q t.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%\"threads\":1%' AND
     json_extract(binding_json, '\$.team.check.initial_only') = 1")" -ge 1 ] || fail "no one-thread trial judged by its initial thread"
[ "$(q t.sqlite "SELECT DISTINCT json_extract(binding_json, '\$.runtime.planned_for') FROM trial")" = libgomp ] ||
  fail "the stored runtime is not libgomp"
[ "$(q t.sqlite "SELECT count(*) FROM trial WHERE json_extract(binding_json, '\$.runtime.loaded[0].kind') = 'libgomp'")" = "$n" ] ||
  fail "not every trial saw libgomp mapped in the process"
grep -q "^best-known: " out || fail "no best-known statement"

mkdir bin
cat > bin/srun << EOF
#!/bin/bash
env | grep -E '^(OMP|KMP|GOMP)_' | sort > "$w/srun.env"
while [ \$# -gt 0 ]; do
  case \$1 in -n|-c|-N) shift 2 ;; -*) shift ;; *) break ;; esac
done
export SLURM_PROCID=0 SLURM_NTASKS=1
exec "\$@"
EOF
chmod +x bin/srun
expect 0 "$T" sbatch --node auto --workload torch-cnn --db t.sqlite -o job.sbatch
grep -q '^export OMP_NUM_THREADS=' job.sbatch || fail "job: no OMP_NUM_THREADS"
if grep -q '^export KMP_' job.sbatch; then fail "job: a KMP_* variable for a libgomp program"; fi
grep -q 'GNU' job.sbatch || fail "job: does not name libgomp"
grep -qF "$SCRIPT" job.sbatch || fail "job: the script is not on the srun line"
PATH="$w/bin:$PATH" timeout 120 bash job.sbatch > job.out 2> job.err || fail "job: $(tail -5 job.err)"
grep -q 'avg time .* millisecond' job.out || fail "job: the program did not run: $(tail -5 job.out job.err)"
if grep -q '^KMP_' srun.env; then fail "job: srun got a KMP_* variable"; fi

# the seed's BKM lines on this program: named as ignored, not applied
expect 0 "$T" run --threads 2 --affinity granularity=fine,compact,1,0 --blocktime 1 -- "$PY" "$SCRIPT" 3
grep -q "KMP_AFFINITY.*ignore\|ignore.*KMP_AFFINITY" out err || fail "tune run did not say KMP_AFFINITY is ignored"
echo "ok: torch sweep ($n trials), job, seed lines named as ignored"
