#!/bin/bash
# SPDX-License-Identifier: MIT
# The default strategy against the exhaustive sweeps recorded on a 2-core VM (tests/tuner/data,
# recorded by data/record.sh): within 5% of the exhaustive best using at most 25% of the
# evaluations in at least 45 of 50 seeded replays, on every recorded workload (at least 3).
# Replay runs nothing: the stored trials are the oracle (bkm_tune_replay_run).
set -u
: "${BKM_TUNE:?}" "${BKM_SOURCE_DIR:?}"
data=$BKM_SOURCE_DIR/tests/tuner/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for db in "$data"/*.sqlite; do
  [ -f "$db" ] || continue
  w=$(basename "$db" .sqlite)
  cp "$db" "$tmp/$w.sqlite"
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 --require 45 > "$tmp/$w.out" 2>&1
  rc=$?
  tail -n 1 "$tmp/$w.out" | sed "s/^/$w (default strategy): /"
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 --strategy random | tail -n 1 | sed "s/^/$w (random, for comparison): /"
  if [ $rc -ne 0 ]; then
    echo "FAIL: $w: the default strategy misses the bar (exit $rc)"
    grep -v "within 5%" "$tmp/$w.out" | head -n 60
    exit 1
  fi
  # replay is deterministic: the same seeds give the same picks
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 > "$tmp/$w.again" 2>&1
  cmp -s "$tmp/$w.out" "$tmp/$w.again" || { echo "FAIL: $w: two replays with the same seeds differ"; exit 1; }
  n=$((n + 1))
done
[ $n -ge 3 ] || { echo "FAIL: $n recorded exhaustive sweeps in $data, at least 3 are needed (run data/record.sh)"; exit 1; }
echo "ok: the default strategy meets the bar on $n recorded exhaustive sweeps"
