#!/bin/bash
# SPDX-License-Identifier: MIT
# Signals and processes as a batch system delivers them. SIGTERM to the sweep's whole process
# group mid-trial (scancel, Slurm's time limit), and to the worker too, the worker first: exit
# 143, the sweep interrupted, nothing stored as crashed; the same command again gives the same
# trials as an uninterrupted sweep. A tuner started with SIGCHLD ignored works. ONEDNN_VERBOSE=1
# does not break a oneDNN trial. hwloc variables that describe another machine are refused.
. "$(dirname "$0")/sweep_common.sh"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
command -v setsid > /dev/null || { echo "SKIP: setsid (util-linux) is not installed"; exit 77; }
cmd=(--workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --affinity default
     --blocktime 0,infinite --strategy grid --min-time 0.3 --min-samples 5 --max-samples 10 --confirm-top 1
     --replicates-max 12)
n_space=$(space_size "${cmd[@]}")
[ "$n_space" -ge 4 ] || fail "the space has $n_space configurations"

# The reference: the same command, uninterrupted (meanwhile, in the background).
"$BKM_TUNE" "${cmd[@]}" --db "$tmp/ref.sqlite" > "$tmp/ref.out" 2> "$tmp/ref.err" &
ref=$!

search_set() { q "$1" "SELECT config_key || ' ' || status FROM trial WHERE role = 'search' ORDER BY config_key"; }
not_ok() { q "$1" "SELECT count(*) FROM trial WHERE status != 'ok'"; }

# interrupt NAME HOW: start the sweep in a process group of its own (as a batch job), wait until
# it has stored a trial and runs a worker, then SIGTERM the group (HOW=group; the sweep is
# started with SIGTERM blocked, as a parent may leave it) or the worker and then the group, in
# one kill (HOW=job: what slurmstepd does to every process of the job).
blocked=(perl -MPOSIX -e 'sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGTERM)) or die; exec @ARGV or die "exec: $!"')
interrupt() {
  local db=$tmp/$1.sqlite how=$2 pid pgid worker rc pre=()
  [ "$how" = group ] && pre=("${blocked[@]}")
  setsid "${pre[@]}" "$BKM_TUNE" "${cmd[@]}" --db "$db" > "$tmp/$1.1.out" 2> "$tmp/$1.1.err" &
  pid=$!
  wait_trials "$db" 1 || fail "$1: no trial stored in 30 s"
  worker=""
  for _ in $(seq 1 600); do
    worker=$(pgrep -P "$pid" -f ' worker ' | head -n 1)
    [ -n "$worker" ] && break
    sleep 0.05
  done
  [ -n "$worker" ] || fail "$1: no worker of the sweep seen"
  pgid=$(ps -o pgid= -p "$pid" | tr -d ' ')
  [ "$pgid" = "$pid" ] || fail "$1: the sweep is not the leader of its process group ($pgid)"
  if [ "$how" = job ]; then kill -TERM -- "$worker" "-$pgid"; else kill -TERM -- "-$pgid"; fi
  wait "$pid"
  rc=$?
  [ $rc -eq 143 ] || fail "$1: exit $rc after SIGTERM, expected 143"
  [ "$(q "$db" "SELECT status FROM sweep")" = interrupted ] ||
    fail "$1: sweep stored as '$(q "$db" "SELECT status FROM sweep")', not interrupted"
  [ "$(not_ok "$db")" -eq 0 ] ||
    fail "$1: the cut-short trial was stored: $(q "$db" "SELECT status, exit_info, error FROM trial WHERE status != 'ok'")"
  n_before=$(q "$db" "SELECT count(*) FROM trial")
  [ "$n_before" -lt $((n_space + 2 * 2)) ] || fail "$1: the sweep had finished before SIGTERM"
  # the same command again resumes and completes
  "$BKM_TUNE" "${cmd[@]}" --db "$db" --json > "$tmp/$1.2.out" 2> "$tmp/$1.2.err"
  rc=$?
  [ $rc -eq 0 ] || fail "$1: the resumed sweep exited $rc"
  grep -q "\"resumed\": $n_before," "$tmp/$1.2.out" || fail "$1: the $n_before stored trials were not resumed"
  [ "$(q "$db" "SELECT status FROM sweep")" = done ] || fail "$1: the resumed sweep is not done"
  [ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "$1: integrity_check"
}
interrupt group group
interrupt job job

wait "$ref"
rc=$?
[ $rc -eq 0 ] || fail "the uninterrupted sweep exited $rc"
want=$(search_set "$tmp/ref.sqlite")
[ "$(printf '%s\n' "$want" | grep -c ' ok$')" -eq "$n_space" ] || fail "reference: not every configuration is ok: $want"
for db in group job; do
  [ "$(search_set "$tmp/$db.sqlite")" = "$want" ] ||
    fail "$db: search trials differ from the uninterrupted sweep's:
$(search_set "$tmp/$db.sqlite")
--- uninterrupted:
$want"
  # how many confirmation blocks ran depends on the values (the sequential design): every one the
  # resumed sweep counted is stored once, none lost, none run twice
  [ "$(q "$tmp/$db.sqlite" "SELECT count(*) FROM trial WHERE role = 'confirm'")" = \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["confirm_processes"])' "$tmp/$db.2.out")" ] ||
    fail "$db: the confirmation trials stored are not the ones the resumed sweep counted"
  [ "$(not_ok "$tmp/$db.sqlite")" -eq 0 ] || fail "$db: a trial is not ok after the resume"
done

# Ctrl-C stops the running trial at once (not after its 20 s); a second Ctrl-C exits at once even
# while the tuner waits (here for a database lock held by another process) to mark the sweep.
db=$tmp/int.sqlite
alive() { local st; st=$(ps -o stat= -p "$1" 2> /dev/null) && [ "${st#Z}" = "$st" ]; }
"$BKM_TUNE" --workload gemm --param m=64 --param n=64 --param k=64 --threads 1 --affinity default --blocktime 0 \
  --strategy grid --min-time 20 --min-samples 5 --max-samples 100000 --confirm-top 1 --db "$db" \
  > "$tmp/int.out" 2> "$tmp/int.err" &
pid=$!
worker=""
for _ in $(seq 1 600); do worker=$(pgrep -P "$pid" -f ' worker ' | head -n 1); [ -n "$worker" ] && break; sleep 0.05; done
[ -n "$worker" ] || fail "Ctrl-C: no worker seen"
python3 - "$db" "$tmp/locked" "$tmp/unlock" << 'PY' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
t = time.time()
while not os.path.exists(sys.argv[3]) and time.time() - t < 25:
    time.sleep(0.05)
c.execute("ROLLBACK")
PY
locker=$!
for _ in $(seq 1 600); do [ -e "$tmp/locked" ] && break; sleep 0.05; done
[ -e "$tmp/locked" ] || fail "Ctrl-C: could not lock the database"
kill -INT "$pid"
for _ in $(seq 1 100); do alive "$worker" || break; sleep 0.05; done
alive "$worker" && fail "Ctrl-C: the running trial's worker still runs 5 s after SIGINT"
alive "$pid" || fail "Ctrl-C: the tuner exited although the database was locked (nothing left to wait for)"
t0=$(date +%s%N)
kill -INT "$pid"
wait "$pid"
rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
touch "$tmp/unlock"
wait "$locker"
[ $rc -eq 130 ] || fail "second Ctrl-C: exit $rc, expected 130"
[ "$took" -lt 5000 ] || fail "second Ctrl-C: the tuner took $took ms to exit"
[ "$(q "$db" "SELECT status FROM sweep")" = running ] ||
  fail "second Ctrl-C: sweep marked '$(q "$db" "SELECT status FROM sweep")': the first signal was not still winding down"
[ "$(q "$db" "SELECT count(*) FROM trial")" -eq 0 ] || fail "Ctrl-C: the cut-short trial was stored"

# tune run: SIGTERM kills its worker at once and exits 143.
"$BKM_TUNE" run --workload gemm --param m=64 --param n=64 --param k=64 --min-time 20 --max-samples 100000 \
  > "$tmp/run.out" 2> "$tmp/run.err" &
pid=$!
worker=""
for _ in $(seq 1 600); do worker=$(pgrep -P "$pid" -f ' worker ' | head -n 1); [ -n "$worker" ] && break; sleep 0.05; done
[ -n "$worker" ] || fail "tune run: no worker seen"
t0=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
rc=$?
took_run=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 143 ] || fail "tune run: exit $rc after SIGTERM, expected 143"
[ "$took_run" -lt 5000 ] || fail "tune run: $took_run ms to stop its 20 s trial"
grep -q interrupted "$tmp/run.err" || fail "tune run: does not say interrupted: $(cat "$tmp/run.err")"
for _ in $(seq 1 100); do alive "$worker" || break; sleep 0.05; done
alive "$worker" && fail "tune run: its worker still runs after SIGTERM"

# SIGCHLD ignored by the parent (inherited through exec): the workers are still waited for.
ign=(perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV or die "exec: $!"')
mask=$("${ign[@]}" awk '/^SigIgn/ { print $2 }' /proc/self/status)
(( (0x$mask >> 16) & 1 )) || fail "the wrapper does not leave SIGCHLD ignored (SigIgn $mask)"
"${ign[@]}" "$BKM_TUNE" run --workload gemm --param m=32 --param n=32 --param k=32 --min-time 0.01 \
  > "$tmp/chld.out" 2> "$tmp/chld.err" || fail "tune run with SIGCHLD ignored: exit $?: $(cat "$tmp/chld.err")"
"${ign[@]}" "$BKM_TUNE" --workload gemm --param m=32 --param n=32 --param k=32 --threads 1,2 --affinity default \
  --strategy grid --min-time 0.01 --confirm-top 0 --db "$tmp/chld.sqlite" > "$tmp/chld2.out" 2> "$tmp/chld2.err" ||
  fail "a sweep with SIGCHLD ignored: exit $?: $(tail -3 "$tmp/chld2.err")"
[ "$(not_ok "$tmp/chld.sqlite")" -eq 0 ] || fail "a sweep with SIGCHLD ignored stored failed trials"

# ONEDNN_VERBOSE=1: oneDNN prints on stdout; the JSON has its own descriptor.
ONEDNN_VERBOSE=1 "$BKM_TUNE" run --workload conv2d --backend onednn --param shape=alexnet:conv5 --param batch=1 \
  --min-time 0.01 --json > "$tmp/dnn.out" 2> "$tmp/dnn.err" || fail "ONEDNN_VERBOSE=1: exit $?: $(tail -3 "$tmp/dnn.err")"
grep -q '^{"status":"ok"' "$tmp/dnn.out" || fail "ONEDNN_VERBOSE=1: the trial is not ok: $(head -c 400 "$tmp/dnn.out")"
grep -q 'onednn_verbose' "$tmp/dnn.out" || fail "ONEDNN_VERBOSE=1: oneDNN printed nothing (the stderr tail has no onednn_verbose line): the test proves nothing"

# LD_PRELOAD passes to the worker: a second OpenMP runtime preloaded that way fails the trial's
# single-runtime check (binding mismatch, exit 1) instead of being measured.
gomp=$(ldconfig -p 2> /dev/null | awk '/libgomp\.so\.1 .*x86-64|libgomp\.so\.1 / { print $NF; exit }')
if [ -n "$gomp" ] && [ -e "$gomp" ]; then
  LD_PRELOAD=$gomp "$BKM_TUNE" run --workload gemm --param m=32 --param n=32 --param k=32 --threads 1 --min-time 0.01 \
    > "$tmp/gomp.out" 2> "$tmp/gomp.err"
  rc=$?
  [ $rc -eq 1 ] || fail "LD_PRELOAD=$gomp: tune run exited $rc, expected 1 (binding mismatch)"
  grep -q 'libgomp' "$tmp/gomp.out" "$tmp/gomp.err" || fail "LD_PRELOAD=$gomp: libgomp not named"
else
  echo "note: libgomp.so.1 not found; the LD_PRELOAD case is not checked"
fi

# hwloc told to describe another machine: measuring is refused (exit 3, named), planning is not.
HWLOC_SYNTHETIC="pack:2 core:4 pu:2" "$BKM_TUNE" run --workload gemm --min-time 0.01 > "$tmp/hw.out" 2> "$tmp/hw.err"
rc=$?
[ $rc -eq 3 ] || fail "HWLOC_SYNTHETIC: tune run exited $rc, expected 3"
grep -q HWLOC_SYNTHETIC "$tmp/hw.err" || fail "HWLOC_SYNTHETIC: not named: $(cat "$tmp/hw.err")"
HWLOC_XMLFILE=/nonexistent/knl.xml HWLOC_SYNTHETIC="pack:1 core:2 pu:1" "$BKM_TUNE" "${cmd[@]}" \
  --db "$tmp/hw.sqlite" > "$tmp/hw2.out" 2> "$tmp/hw2.err"
rc=$?
[ $rc -eq 3 ] || fail "HWLOC_*: the sweep exited $rc, expected 3: $(cat "$tmp/hw2.err")"
grep -q 'HWLOC_' "$tmp/hw2.err" || fail "HWLOC_*: the sweep did not name the variable: $(cat "$tmp/hw2.err")"
[ ! -e "$tmp/hw.sqlite" ] || fail "HWLOC_*: the refused sweep created its database"
HWLOC_SYNTHETIC="pack:1 core:2 pu:1" "$BKM_TUNE" "${cmd[@]}" --dry-run > "$tmp/hw3.out" 2>&1 ||
  fail "HWLOC_SYNTHETIC: --dry-run (planning only) was refused: $(cat "$tmp/hw3.out")"
echo "ok: SIGTERM to the process group and to the job mid-trial: exit 143, interrupted, nothing crashed; resumed" \
     "to the uninterrupted sweep's $n_space search trials; Ctrl-C stops the trial, a second exits at once ($took ms);" \
     "SIGCHLD ignored works; ONEDNN_VERBOSE=1 ok; HWLOC_* refused"
