#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The user's own program through the command line: `tune --node auto ... -- PROG ARGS` and
# `tune run ... -- PROG ARGS` on a C OpenMP program built with gcc (GNU libgomp), with clang (LLVM
# libomp) and without OpenMP. A libgomp program's sweep holds only variables libgomp reads, a
# libomp program's the KMP_* space; every trial's team is proven bound as planned, the runtime it
# was planned for is stored, and `tune sbatch` writes the program's job with its runtime's
# variables, its argv quoted word by word (a hostile file name and argument run nothing), which a
# stand-in `srun` then runs for real. Bad input exits 2 naming the value; a crash, a hang and a
# missing metric are failed trials (exit 3); a variable the runtime ignores is named as ignored.
#   test_program_cli.sh OMP_PROG_GCC OMP_PROG_CLANG OMP_PROG_NONE
set -u
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}"
GCC_PROG=${1:?} CLANG_PROG=${2:?} NONE_PROG=${3:?}
command -v sqlite3 > /dev/null || { echo "SKIP: the sqlite3 command-line tool is not installed"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs to tell a bound team from an unbound one (nproc $(nproc))"; exit 77; }
for p in "$GCC_PROG" "$CLANG_PROG" "$NONE_PROG"; do
  [ -x "$p" ] || { echo "SKIP: $p was not built (no gcc or clang at configure time)"; exit 77; }
done
T=$BKM_TUNE
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-program-cli.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
fail() { echo "FAIL: $*" >&2; for f in out err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done; exit 1; }
# expect RC CMD...: run it (120 s at most), check the exit code; stdout in out, stderr in err
expect() {
  local want=$1 rc
  shift
  timeout 120 "$@" > out 2> err
  rc=$?
  [ "$rc" = "$want" ] || fail "'$*': exit $rc, expected $want"
}
q() { sqlite3 -readonly -batch -noheader "$1" "$2"; }
METRIC='avg time ([0-9.]+) millisecond'
mkdir -p bin log

# A copy of the gcc program under a hostile folder name: the script must quote it as one word.
# A hostile value asks for a file named MARK-*, in whatever folder it would run; none may appear.
hdir="$w/dir \$(touch MARK-dollar) \`touch MARK-tick\`"
mkdir -p "$hdir"
HPROG="$hdir/omp prog;touch MARK-semi"
cp "$GCC_PROG" "$HPROG"
HARG="x'; touch MARK-arg #"
no_marks() { [ -z "$(find "$w" -name 'MARK-*')" ] || fail "$1: a hostile value ran: $(find "$w" -name 'MARK-*')"; }

# --- 1. the libgomp program: only the variables libgomp reads are swept ------------------------
expect 0 "$T" --node auto --workload omp-gcc --db g.sqlite --threads 1,2 --metric "$METRIC" \
  -- "$HPROG" ok 4 20 "$HARG"
grep -q "loads GNU OpenMP (ELF closure" err || fail "the sweep did not say which runtime the program loads"
n=$(q g.sqlite "SELECT count(*) FROM trial")
[ "$n" -ge 8 ] || fail "libgomp sweep: only $n trials"
bad=$(q g.sqlite "SELECT count(*) FROM trial t, json_each(t.config_json, '\$.env') e WHERE e.key NOT IN
                  ('OMP_PLACES','OMP_PROC_BIND','GOMP_CPU_AFFINITY','OMP_WAIT_POLICY','GOMP_SPINCOUNT')")
[ "$bad" = 0 ] || fail "libgomp sweep: $bad settings of a variable libgomp does not read: \
$(q g.sqlite "SELECT DISTINCT config_json FROM trial WHERE config_json LIKE '%KMP_%'")"
placed=$(q g.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%OMP_PLACES%'")
[ "$placed" -ge 1 ] || fail "libgomp sweep: no OMP_PLACES setting was measured"
[ "$(q g.sqlite "SELECT count(*) FROM trial WHERE status <> 'ok'")" = 0 ] || fail "libgomp sweep: a trial failed"
unproven=$(q g.sqlite "SELECT count(*) FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1")
[ "$unproven" = 0 ] || fail "libgomp sweep: $unproven trials without a proven binding: \
$(q g.sqlite "SELECT json_extract(binding_json, '\$.summary') FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1 LIMIT 3")"
[ "$(q g.sqlite "SELECT DISTINCT json_extract(binding_json, '\$.runtime.planned_for') FROM trial")" = libgomp ] ||
  fail "libgomp sweep: the stored runtime is not libgomp for every trial"
# every team thread checked, and bound to one CPU where the setting binds
[ "$(q g.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%OMP_PROC_BIND%' AND config_json LIKE '%\"threads\":2%'
                 AND json_extract(binding_json, '\$.team.check.match') <> 2")" = 0 ] || fail "a bound team of 2 not matched member by member"
[ "$(q g.sqlite "SELECT count(*) FROM trial WHERE json_extract(binding_json, '\$.program.argv[4]') = '$(printf %s "$HARG" | sed "s/'/''/g")'")" = "$n" ] ||
  fail "the program's argv was not stored word for word"
[ "$(q g.sqlite "SELECT count(DISTINCT json_extract(binding_json, '\$.program.sha256')) FROM trial")" = 1 ] || fail "no executable hash"
grep -q "^best-known: " out || fail "the sweep made no best-known statement"
# the export carries the runtime, the argv and the hash
expect 0 "$T" export --db g.sqlite --format csv
head -1 out | grep -q ',runtime,program,exe_sha256,binding' || fail "export CSV header: $(head -1 out)"
grep -q ',libgomp,' out || fail "export CSV: no libgomp runtime cell"

# the report shows the program, its runtime and its team's check, and counts every trial as bound
expect 0 "$T" report --db g.sqlite -o report.html
grep -q "runtime planned for: libgomp" report.html || fail "report: no runtime"
grep -q "<th>team thread</th>" report.html || fail "report: no team table"
grep -q "<b>$n</b> trial(s) bound as planned" report.html || fail "report: not every trial counted as bound"

# The job: OMP_* only, the program's argv quoted; run by a stand-in srun that drops its own options
cat > bin/srun << EOF
#!/bin/bash
printf '%s\\0' "\$@" > "$w/log/srun.argv"
env | grep -E '^(OMP|KMP|GOMP)_' | sort > "$w/log/srun.env"
while [ \$# -gt 0 ]; do
  case \$1 in -n|-c|-N) shift 2 ;; -*) shift ;; *) break ;; esac
done
export SLURM_PROCID=0 SLURM_NTASKS=1
exec "\$@"
EOF
chmod +x bin/srun
expect 0 "$T" sbatch --node auto --workload omp-gcc --db g.sqlite -o job.sbatch
grep -q '^export OMP_NUM_THREADS=' job.sbatch || fail "job: no OMP_NUM_THREADS"
if grep -E '^export (KMP_|OMP_NUM_THREADS=.*KMP)' job.sbatch; then fail "job: exports a KMP_* variable for a libgomp program"; fi
grep -q 'GNU' job.sbatch || fail "job: does not name the runtime it wrote the variables for"
grep -q '^TUNE=.*run' job.sbatch && fail "job: runs tune run instead of the program"
(cd log && PATH="$w/bin:$PATH" timeout 60 bash ../job.sbatch > ../job.out 2> ../job.err) || fail "job: $(cat job.err)"
no_marks "the job"
grep -q '^avg time .* millisecond' job.out || fail "job: the program did not run: $(cat job.out job.err)"
grep -q "^bkm rank 0 of .*OMP_NUM_THREADS=" job.out || fail "job: no rank line"
best=$(q g.sqlite "SELECT config_json FROM best_known WHERE workload = 'omp-gcc'" 2> /dev/null)
grep -q OMP_NUM_THREADS log/srun.env || fail "job: srun got no OMP_NUM_THREADS"
if grep -q '^KMP_' log/srun.env; then fail "job: srun got a KMP_* variable: $(cat log/srun.env) (best $best)"; fi
tr '\0' '\n' < log/srun.argv | grep -qxF "$HPROG" || fail "job: the program path did not reach srun as one word"
tr '\0' '\n' < log/srun.argv | grep -qxF "$HARG" || fail "job: the hostile argument did not reach srun as one word"

# --- 2. the libomp program: the KMP_* space, planned by the libomp model -----------------------
expect 0 "$T" --node auto --workload omp-clang --db c.sqlite --threads 2 --strategy grid \
  --affinity default --affinity granularity=fine,compact --affinity granularity=fine,scatter --blocktime 0,200 \
  --metric "$METRIC" -- "$CLANG_PROG" ok 4 20
grep -q "loads LLVM OpenMP\|loads LLVM libomp\|libomp" err || fail "the clang sweep did not name libomp"
[ "$(q c.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%KMP_AFFINITY%'")" -ge 1 ] || fail "libomp sweep: no KMP_AFFINITY setting"
[ "$(q c.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%GOMP_%'")" = 0 ] || fail "libomp sweep: a GOMP_* setting"
[ "$(q c.sqlite "SELECT count(*) FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1")" = 0 ] ||
  fail "libomp sweep: a trial without a proven binding: $(q c.sqlite "SELECT json_extract(binding_json, '\$.summary') FROM trial WHERE json_extract(binding_json, '\$.verified') IS NOT 1 LIMIT 2")"
[ "$(q c.sqlite "SELECT DISTINCT json_extract(binding_json, '\$.runtime.planned_for') FROM trial")" = libomp ] ||
  fail "libomp sweep: the stored runtime is not libomp"
expect 0 "$T" sbatch --node auto --workload omp-clang --db c.sqlite -o clang.sbatch
grep -q 'LLVM' clang.sbatch || fail "clang job: does not name libomp"
if grep -E '^export GOMP_' clang.sbatch; then fail "clang job: exports a GOMP_* variable"; fi
grep -qF "$CLANG_PROG" clang.sbatch || fail "clang job: the program is not on the srun line"

# --- 3. no OpenMP: only the thread count ---------------------------------------------------------
expect 0 "$T" --node auto --workload plain --db n.sqlite --threads 1,2 -- "$NONE_PROG" ok 2 10
grep -q "no OpenMP" err || fail "the no-OpenMP sweep did not say so"
[ "$(q n.sqlite "SELECT count(*) FROM trial WHERE config_json LIKE '%\"env\":{}%'")" = "$(q n.sqlite "SELECT count(*) FROM trial")" ] ||
  fail "no-OpenMP sweep: a setting of an OpenMP variable"

# --- 4. a variable the runtime ignores is named -------------------------------------------------
expect 0 "$T" run --threads 2 --affinity granularity=fine,compact,1,0 --blocktime 1 -- "$GCC_PROG" ok 2 10
grep -q "KMP_AFFINITY.*ignore\|ignore.*KMP_AFFINITY" err out || fail "tune run did not say KMP_AFFINITY is ignored by libgomp"
expect 0 "$T" --node auto --workload omp-gcc --db g2.sqlite --threads 2 --affinity compact --dry-run -- "$GCC_PROG"
grep -q "KMP_AFFINITY" out err || fail "a libgomp sweep given --affinity did not name it"

# --- 5. failures are trials: crash, hang, no metric (exit 3) --------------------------------------
expect 3 "$T" run --threads 2 -- "$GCC_PROG" crash 2 10
grep -q "SIGSEGV" out err || fail "crash: no signal named"
expect 3 "$T" run --threads 2 --trial-timeout 2 -- "$GCC_PROG" hang 2 10
grep -q "timeout" out err || fail "hang: not a timeout"
expect 3 "$T" run --threads 2 --metric "$METRIC" -- "$GCC_PROG" nometric 2 10
grep -q "no line matching --metric" out err || fail "no metric: not said"
expect 3 "$T" run --threads 2 -- "$GCC_PROG" exit3 2 10
grep -q "exited with code 3" out err || fail "exit 3: not said"
printf '#!/bin/sh\necho "rate 0 img/s"\n' > zero.sh && chmod +x zero.sh
expect 3 "$T" run --runtime none --metric 'rate ([0-9.]+)' --metric-higher -- ./zero.sh
grep -q "throughput of 0" out err || fail "a throughput of 0: not said"
printf '#!/bin/sh\necho "time -2 ms"\n' > neg.sh && chmod +x neg.sh
expect 3 "$T" run --runtime none --metric 'time ([-0-9.]+) ms' -- ./neg.sh
grep -qF "'-2'" out err || fail "a negative metric: not named"
# two runtimes in one process: a finding, the team still judged by the runtime that ran it
expect 0 "$T" run --threads 2 --places cores --proc-bind close -- "$GCC_PROG" dlopen 2 10
grep -q "TWO OpenMP runtimes" out || fail "two runtimes: no finding"
grep -q "affinity libgomp" out || fail "two runtimes: not planned for libgomp, the runtime of the team"

# --- 6. bad input: exit 2, the value named ------------------------------------------------------
expect 2 "$T" run --threads 2 --
grep -q -- "--" err || fail "'--' alone: $(cat err)"
expect 2 "$T" run -- "$w/no such program"
grep -qF "no such program" err || fail "missing program not named: $(cat err)"
mkfifo fifo
expect 2 "$T" run -- "$w/fifo"
grep -qF "fifo" err || fail "a FIFO as the program not named: $(cat err)"
expect 2 "$T" run --metric 'avg time [0-9.]+' -- "$GCC_PROG"
grep -q "capture group" err || fail "a metric without a capture group: $(cat err)"
expect 2 "$T" run --metric '(' -- "$GCC_PROG"
grep -qF "'('" err || fail "a bad regex not named: $(cat err)"
expect 2 "$T" run --runtime openmp-9 -- "$GCC_PROG"
grep -qF "openmp-9" err || fail "a bad --runtime not named: $(cat err)"
no_marks "the test"
echo "ok: program sweeps (libgomp, libomp, none), jobs, failures and bad input"
