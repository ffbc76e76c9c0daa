#!/bin/bash
# SPDX-License-Identifier: MIT
# A worker killed by SIGSEGV or SIGKILL mid-trial is stored as crashed, one over its timeout as
# timeout; the sweep completes every other configuration and exits 4.
. "$(dirname "$0")/sweep_common.sh"
# The faults come from the test build (tune_testhooks); the shipped tune has no --inject.
TH=${BKM_TUNE_TESTHOOKS:?BKM_TUNE_TESTHOOKS must point at the tune_testhooks executable}
n_space=$(space_size "${tiny[@]}")
check_sweep() {  # db status exit_info_pattern
  local db=$1
  [ "$(q "$db" "SELECT count(*) FROM trial WHERE role = 'search'")" -eq "$n_space" ] ||
    fail "$db: not every configuration was stored"
  [ "$(q "$db" "SELECT count(*) FROM trial WHERE status = '$2'")" -eq 1 ] ||
    fail "$db: expected one '$2' trial: $(q "$db" "SELECT status, exit_info FROM trial WHERE status != 'ok'")"
  q "$db" "SELECT exit_info FROM trial WHERE status = '$2'" | grep -q "$3" ||
    fail "$db: exit info of the $2 trial is not '$3': $(q "$db" "SELECT exit_info FROM trial WHERE status = '$2'")"
  [ "$(q "$db" "SELECT count(*) FROM trial WHERE status != 'ok'")" -eq 1 ] || fail "$db: other trials failed"
  [ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "$db: integrity_check"
}
# SIGSEGV inside the worker's timed loop (under -DBKM_SANITIZE=ON, ASan must let the signal kill it)
ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" "$TH" "${tiny[@]}" --db "$tmp/segv.sqlite" --inject segv@2 \
  > "$tmp/segv.out" 2> "$tmp/segv.err"
rc=$?
[ $rc -eq 4 ] || fail "segv: exit $rc, expected 4"
check_sweep "$tmp/segv.sqlite" crashed "signal 11"
grep -q "crashed" "$tmp/segv.err" || fail "segv: the crash was not reported"
# a hang over --trial-timeout
"$TH" "${tiny[@]}" --db "$tmp/hang.sqlite" --inject hang@3 --trial-timeout 3 > "$tmp/hang.out" 2> "$tmp/hang.err"
rc=$?
[ $rc -eq 4 ] || fail "hang: exit $rc, expected 4"
check_sweep "$tmp/hang.sqlite" timeout "signal 9"
# SIGKILL from outside while the worker runs its trial
"$TH" "${tiny[@]}" --db "$tmp/kill.sqlite" --inject hang@2 --trial-timeout 60 > "$tmp/kill.out" 2> "$tmp/kill.err" &
pid=$!
victim=
for _ in $(seq 1 600); do
  victim=$(pgrep -P "$pid" -f '"inject":"hang"' | head -n 1)
  [ -n "$victim" ] && break
  sleep 0.05
done
[ -n "$victim" ] || { kill "$pid"; fail "the hanging worker never appeared"; }
sleep 0.3
kill -KILL "$victim"
wait "$pid"
rc=$?
[ $rc -eq 4 ] || fail "sigkill: exit $rc, expected 4"
check_sweep "$tmp/kill.sqlite" crashed "signal 9"
echo "ok: SIGSEGV and SIGKILL stored as crashed, the hang as timeout; every sweep completed with exit 4"
