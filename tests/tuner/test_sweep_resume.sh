#!/bin/bash
# SPDX-License-Identifier: MIT
# kill -9 of the tuner mid-sweep, then the same command again: the sweep completes, no completed
# trial is lost or run again, and PRAGMA integrity_check says ok.
. "$(dirname "$0")/sweep_common.sh"
db=$tmp/resume.sqlite
n_space=$(space_size "${tiny[@]}")
[ "$n_space" -ge 8 ] || fail "the tiny space has $n_space configurations"
"$BKM_TUNE" "${tiny[@]}" --db "$db" > "$tmp/1.out" 2> "$tmp/1.err" &
pid=$!
wait_trials "$db" 3
kill -9 "$pid" 2> /dev/null || fail "the sweep ended before it could be killed"
wait "$pid" 2> /dev/null
before=$(q "$db" "SELECT id, config_key, role, round, finished_at FROM trial ORDER BY id")
n1=$(printf '%s\n' "$before" | grep -c .)
[ "$n1" -ge 3 ] || fail "only $n1 trials stored before the kill"
[ "$n1" -lt "$n_space" ] || fail "the sweep finished ($n1 trials) before the kill: nothing to resume"
"$BKM_TUNE" "${tiny[@]}" --db "$db" --json > "$tmp/2.out" 2> "$tmp/2.err"
rc=$?
[ $rc -eq 0 ] || fail "the resumed sweep exited $rc"
grep -q "\"resumed\": $n1," "$tmp/2.out" || fail "the resumed sweep did not reuse the $n1 stored trials: $(cat "$tmp/2.out")"
after=$(q "$db" "SELECT id, config_key, role, round, finished_at FROM trial ORDER BY id")
[ "$(printf '%s\n' "$after" | head -n "$n1")" = "$before" ] || fail "trials stored before the kill changed"
n_search=$(q "$db" "SELECT count(*) FROM trial WHERE role = 'search'")
n_keys=$(q "$db" "SELECT count(DISTINCT config_key) FROM trial WHERE role = 'search'")
[ "$n_search" -eq "$n_space" ] || fail "$n_search search trials stored for $n_space configurations"
[ "$n_keys" -eq "$n_space" ] || fail "$n_keys distinct configurations for $n_search search trials: one was repeated"
[ "$(q "$db" "SELECT count(*) FROM sweep")" -eq 1 ] || fail "the rerun created a second sweep instead of resuming"
[ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check: $(q "$db" "PRAGMA integrity_check")"
[ "$(q "$db" "SELECT count(*) FROM best")" -eq 1 ] || fail "no best-known setting stored"
# --node auto (the default) is stored under this host's resolved name, and tune best finds it
node=$(q "$db" "SELECT node FROM sweep")
[ -n "$node" ] && [ "$node" != auto ] || fail "node stored as '$node', not resolved"
[ "$(q "$db" "SELECT node FROM best")" = "$node" ] || fail "best stored under another node than the sweep"
"$BKM_TUNE" best --node auto --workload gemm --db "$db" > "$tmp/best.out" 2>&1 || fail "tune best --node auto: $(cat "$tmp/best.out")"
grep -q "node $node," "$tmp/best.out" || fail "tune best --node auto does not show node $node: $(cat "$tmp/best.out")"
# SIGTERM: the sweep stops after the running trial, says so, exits 143, and resumes later
db2=$tmp/term.sqlite
"$BKM_TUNE" "${tiny[@]}" --db "$db2" > "$tmp/3.out" 2> "$tmp/3.err" &
pid=$!
wait_trials "$db2" 2
kill -TERM "$pid" 2> /dev/null || fail "the sweep ended before SIGTERM"
wait "$pid"
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc, expected 143"
grep -q "interrupted" "$tmp/3.out" || fail "SIGTERM: the summary does not say interrupted: $(cat "$tmp/3.out")"
[ "$(q "$db2" "SELECT status FROM sweep")" = interrupted ] || fail "SIGTERM: sweep stored as $(q "$db2" "SELECT status FROM sweep"), not interrupted"
[ "$(q "$db2" "PRAGMA integrity_check")" = ok ] || fail "SIGTERM: integrity_check"
n_term=$(q "$db2" "SELECT count(*) FROM trial")
"$BKM_TUNE" "${tiny[@]}" --db "$db2" --json > "$tmp/4.out" 2> "$tmp/4.err" || fail "the sweep after SIGTERM did not complete"
grep -q "\"resumed\": $n_term," "$tmp/4.out" || fail "after SIGTERM: $n_term stored trials not resumed: $(cat "$tmp/4.out")"
[ "$(q "$db2" "SELECT status FROM sweep")" = done ] || fail "after SIGTERM: the resumed sweep is $(q "$db2" "SELECT status FROM sweep"), not done"
# the adaptive default strategy resumes too: fed the stored medians, it asks for them again first
db3=$tmp/local.sqlite
loc=("${tiny[@]}" --strategy local)
"$BKM_TUNE" "${loc[@]}" --db "$db3" > "$tmp/5.out" 2> "$tmp/5.err" &
pid=$!
wait_trials "$db3" 3
kill -9 "$pid" 2> /dev/null || fail "local: the sweep ended before it could be killed"
wait "$pid" 2> /dev/null
n3=$(q "$db3" "SELECT count(*) FROM trial")
"$BKM_TUNE" "${loc[@]}" --db "$db3" --json > "$tmp/6.out" 2> "$tmp/6.err" || fail "local: the resumed sweep failed"
grep -q "\"resumed\": $n3," "$tmp/6.out" || fail "local: $n3 stored trials not resumed: $(cat "$tmp/6.out")"
[ "$(q "$db3" "PRAGMA integrity_check")" = ok ] || fail "local: integrity_check"
# kill -9 of the tuner during a long trial: its worker (in its own process group) dies with it
# instead of finishing the 20 s trial as an orphan
db4=$tmp/orphan.sqlite
"$BKM_TUNE" --workload gemm --param m=64 --param n=64 --param k=64 --threads 1 --affinity default \
  --blocktime 0 --strategy grid --min-time 20 --min-samples 5 --max-samples 100000 --confirm-top 1 \
  --db "$db4" > "$tmp/7.out" 2> "$tmp/7.err" &
pid=$!
worker=""
for _ in $(seq 1 200); do worker=$(pgrep -P "$pid" | head -n 1); [ -n "$worker" ] && break; sleep 0.05; done
[ -n "$worker" ] || fail "orphan: no worker process of the sweep seen in 10 s"
sleep 0.5
kill -9 "$pid" 2> /dev/null || fail "orphan: the sweep ended before it could be killed"
wait "$pid" 2> /dev/null
alive() { local st; st=$(ps -o stat= -p "$1" 2> /dev/null) && [ "${st#Z}" = "$st" ]; }
for _ in $(seq 1 60); do alive "$worker" || break; sleep 0.05; done
alive "$worker" && { kill -9 "$worker"; fail "orphan: worker $worker still runs 3 s after kill -9 of its sweep"; }
echo "ok: killed after $n1 trials, resumed, $n_search search trials for $n_space configurations, integrity ok;" \
     "SIGTERM after $n_term trials: exit 143, resumed; local strategy killed after $n3, resumed"
