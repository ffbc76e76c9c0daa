#!/bin/bash
# SPDX-License-Identifier: MIT
# Two sweeps writing one database at the same time both complete with all their trials stored.
. "$(dirname "$0")/sweep_common.sh"
db=$tmp/both.sqlite
a=("${tiny[@]}" --seed 1)
b=("${tiny[@]}" --seed 2 --strategy random)
n_a=$(space_size "${a[@]}")
"$BKM_TUNE" "${a[@]}" --db "$db" > "$tmp/a.out" 2> "$tmp/a.err" &
pa=$!
"$BKM_TUNE" "${b[@]}" --db "$db" > "$tmp/b.out" 2> "$tmp/b.err" &
pb=$!
wait "$pa"; ra=$?
wait "$pb"; rb=$?
[ $ra -eq 0 ] || fail "sweep A exited $ra"
[ $rb -eq 0 ] || fail "sweep B exited $rb"
[ "$(q "$db" "SELECT count(*) FROM sweep")" -eq 2 ] || fail "expected two sweeps"
for s in $(q "$db" "SELECT id FROM sweep"); do
  n=$(q "$db" "SELECT count(*) FROM trial WHERE sweep_id = $s AND role = 'search' AND status = 'ok'")
  [ "$n" -eq "$n_a" ] || fail "sweep $s stored $n of $n_a search trials"
  [ "$(q "$db" "SELECT status FROM sweep WHERE id = $s")" = done ] || fail "sweep $s is not done"
done
[ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check"
echo "ok: two concurrent sweeps, $n_a search trials each, integrity ok"
