#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune replay` without --sweep replays the sweep with the most ok search trials; among sweeps with
# as many, the one whose first trial comes first (by trial id). The recording gemm64 (3 passes of
# 16 configurations) gets, in a temporary database:
#  - sweep 4 "early": a copy of pass 1 under trial ids below all others (tied at 16, first);
#  - sweep 5 "late": another copy, after all others (tied at 16);
#  - sweep 6 "many": 15 ok search trials and 100 failed ones (more trials, fewer that count);
#  - 3000 sweeps of 100 failed trials each (300 000 trials that count for none).
# The pick must be sweep 4: not the lowest tied id (1), not the highest (5), not the sweep with
# the most trials (6); and within the time a pick that compares every trial with every other
# (9e10 comparisons) cannot take.
set -u
: "${BKM_TUNE:?}" "${BKM_SOURCE_DIR:?}"
command -v sqlite3 > /dev/null ||
  { echo "SKIP: the sqlite3 command-line tool is not installed (apt-get install sqlite3): it loads the recording"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
db=$tmp/pick.sqlite
sqlite3 -bail "$db" < "$BKM_SOURCE_DIR/tests/tuner/data/gemm64.sql" || fail "gemm64.sql does not load"
sqlite3 -bail "$db" <<'SQL' || fail "the extra sweeps could not be added"
BEGIN;
INSERT INTO sweep(id, uuid, key, node, workload, started_at, status) VALUES
  (4, 'early', 'k4', 'early', 'gemm', '2026-12-01T00:00:00Z', 'done'),
  (5, 'late', 'k5', 'late', 'gemm', '2026-12-01T00:00:00Z', 'done'),
  (6, 'many', 'k6', 'many', 'gemm', '2026-12-01T00:00:00Z', 'done');
CREATE TEMP TABLE c AS SELECT * FROM trial WHERE sweep_id = 1;
UPDATE c SET id = id - 1000, sweep_id = 4;
INSERT INTO trial SELECT * FROM c;
UPDATE c SET id = id + 2001000, sweep_id = 5;
INSERT INTO trial SELECT * FROM c;
UPDATE c SET id = id + 1000000, sweep_id = 6;
INSERT INTO trial SELECT * FROM c WHERE id < (SELECT max(id) FROM c);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 99)
INSERT INTO trial(id, sweep_id, config_key, config_json, status, role, round)
  SELECT 3500000 + i, 6, 'failed-' || i, '{}', 'failed', 'search', 0 FROM s;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 3000)
INSERT INTO sweep(id, uuid, key, node, workload, started_at, status)
  SELECT 100 + i, 'pad-' || i, 'p' || i, 'pad', 'pad', '2026-12-01T00:00:00Z', 'done' FROM s;
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299999)
INSERT INTO trial(id, sweep_id, config_key, config_json, status, role, round)
  SELECT 100000 + i, 101 + i / 100, 'c' || i, '{}', 'failed', 'search', 0 FROM s;
COMMIT;
SQL
[ "$(sqlite3 "$db" 'SELECT count(*) FROM trial')" = 300195 ] || fail "the database holds $(sqlite3 "$db" 'SELECT count(*) FROM trial') trials"
start=$(date +%s)
timeout 60 "$BKM_TUNE" replay --db "$db" --seeds 1 > "$tmp/out" 2> "$tmp/err"
rc=$?
took=$(( $(date +%s) - start ))
[ $rc -ne 124 ] || fail "the pick over 300 195 trials did not finish in 60 s"
[ $rc -eq 0 ] || fail "replay: exit $rc: $(cat "$tmp/err")"
head -n 1 "$tmp/out" | grep -q '^replay of sweep 4 (gemm on early): 16 configurations, 1-1 runs each' ||
  fail "the pick is not sweep 4 (tied, first by trial id): $(head -n 1 "$tmp/out")"
# an explicit sweep is replayed as asked, whatever the pick
"$BKM_TUNE" replay --db "$db" --seeds 1 --sweep 6 > "$tmp/out6" 2> "$tmp/err" || fail "--sweep 6: $(cat "$tmp/err")"
head -n 1 "$tmp/out6" | grep -q '^replay of sweep 6 (gemm on many): 15 configurations' ||
  fail "--sweep 6: $(head -n 1 "$tmp/out6")"
# without sweep 4, the first tied sweep by trial id is pass 1, pooled with passes 2 and 3
sqlite3 "$db" "DELETE FROM trial WHERE sweep_id = 4; DELETE FROM sweep WHERE id = 4"
"$BKM_TUNE" replay --db "$db" --seeds 1 > "$tmp/out1" 2> "$tmp/err" || fail "without sweep 4: $(cat "$tmp/err")"
head -n 1 "$tmp/out1" | grep -q '^replay of sweep 1 (gemm on auto): 16 configurations, 3-3 runs each' ||
  fail "without sweep 4 the pick is not pass 1: $(head -n 1 "$tmp/out1")"
echo "ok: the pick is the first of the tied sweeps, not the largest sweep, over 300 195 trials in ${took} s"
