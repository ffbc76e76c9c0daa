#!/bin/bash
# SPDX-License-Identifier: MIT
# The default strategy against the exhaustive sweeps recorded on a 2-core VM (tests/tuner/data,
# recorded by data/record.sh; at least 3), replayed without running anything.
#  - best-pass oracle (per configuration its least disturbed pass, bootstrap-resampled): within 5%
#    of the exhaustive best using at most 25% of the evaluations in at least 45 of 50 seeds, and,
#    on every recording where the default is more than 5% from the best, a better median result
#    than random search at the same budget and seeds (tune replay --require).
#  - unseen-runs oracle (the honest one: one random run per evaluation, the pick judged on the
#    runs it did not see): printed for every recording, strategy vs random at equal budget; it
#    is not a bar yet (see README, "Search strategies, replayed honestly").
# Both are deterministic: the same seeds give the same picks.
set -u
: "${BKM_TUNE:?}" "${BKM_SOURCE_DIR:?}"
data=$BKM_SOURCE_DIR/tests/tuner/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 nonflat=0
for db in "$data"/*.sqlite; do
  [ -f "$db" ] || continue
  w=$(basename "$db" .sqlite)
  cp "$db" "$tmp/$w.sqlite"
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 --oracle best-pass --require 45 > "$tmp/$w.out" 2>&1
  rc=$?
  head -n 1 "$tmp/$w.out" | sed "s/^replay of sweep [0-9]* /$w: /"
  grep -E "^median pick|seeds within" "$tmp/$w.out" | sed "s/^/  best-pass: /"
  if [ $rc -ne 0 ]; then
    echo "FAIL: $w: the default strategy misses the bar (exit $rc)"
    grep -v "seed " "$tmp/$w.out" | head -n 20
    exit 1
  fi
  grep -q "flat: the default is within 5%" "$tmp/$w.out" || nonflat=$((nonflat + 1))
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 --oracle best-pass --require 45 > "$tmp/$w.again" 2>&1
  cmp -s "$tmp/$w.out" "$tmp/$w.again" || { echo "FAIL: $w: two best-pass replays with the same seeds differ"; exit 1; }
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 > "$tmp/$w.honest" 2>&1 ||
    { echo "FAIL: $w: unseen-runs replay: $(tail -n 2 "$tmp/$w.honest")"; exit 1; }
  head -n 1 "$tmp/$w.honest" | grep -o "the default at [0-9.]*x[^;]*" | sed "s/^/  unseen-runs: /"
  grep -E "^median pick|seeds within|had seen every run" "$tmp/$w.honest" | sed "s/^/  unseen-runs: /"
  "$BKM_TUNE" replay --db "$tmp/$w.sqlite" --seeds 50 > "$tmp/$w.honest2" 2>&1
  cmp -s "$tmp/$w.honest" "$tmp/$w.honest2" || { echo "FAIL: $w: two unseen-runs replays differ"; exit 1; }
  n=$((n + 1))
done
[ $n -ge 3 ] || { echo "FAIL: $n recorded exhaustive sweeps in $data, at least 3 are needed (run data/record.sh)"; exit 1; }
[ $nonflat -ge 2 ] || { echo "FAIL: only $nonflat recordings where the default is more than 5% from the best"; exit 1; }
echo "ok: the default strategy meets the best-pass bar on $n recordings ($nonflat not flat, where it beats random search)"
