#!/bin/bash
# SPDX-License-Identifier: MIT
# Records the exhaustive sweeps that tests/tuner/test_replay.sh replays: one database per
# workload, kept as reviewable SQL text (<name>.sql, written by dump.sh; the database itself is
# removed), holding PASSES (default 7) passes of the same exhaustive sweep (every configuration of
# the space, each pass in another random order, no confirmation round), recorded one after the
# other: `tune replay` treats each pass as one run (worker process) of every configuration; an
# evaluation draws one run, the pick is judged on the median of the runs it did not see, so more
# passes make a steadier judge and a burst of load during one pass does not decide the truth (the
# random orders keep a slow period from hitting one corner of the space). After each recording it prints, per pass, how
# much slower its runs typically were than the fastest run of their configuration, flagging a
# pass over 1.10x as DISTURBED: re-record it (or record more passes) before committing.
# Run on the machine whose data you want:  bash tests/tuner/data/record.sh [BUILD_DIR] [WHICH...]
# Each pass takes 1-3 minutes on a 2-core VM; the landscapes marked "new" below take less, so that
# PASSES=7 records each in <= 8 minutes: one smoke pass each (PASSES=1 MIN_TIME=0.01, 2026-12-01
# 12:49 UTC, load average 5-9 from other builds) took convtun5 43 s, convtun6 53 s, gemmtun 3 s,
# convtun7 26 s; quiet, convtun3's 37 configurations took 9 s a pass. Expected with PASSES=7 on a
# quiet 2-core node: convtun5 ~2 min, convtun6 ~3 min, gemmtun ~1 min, convtun7 ~2 min (at the
# loaded smoke pace: 5, 6.5, 0.5 and 3 min). OUT=DIR writes the recordings there instead, e.g. a
# smoke run: PASSES=1 OUT=/tmp/x MIN_TIME=0.01 bash tests/tuner/data/record.sh build convtun5
# Record new ones with: PASSES=7 bash tests/tuner/data/record.sh build convtun5 convtun6 gemmtun convtun7
# then `sqlite3 /tmp/<name>.sqlite < tests/tuner/data/<name>.sql && tune replay --db /tmp/<name>.sqlite`
# says whether each is eligible (not flat, not disturbed, not judge-limited); commit the .sql of
# those that are (and of the flat ones, labelled by the test).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tune=${1:-$here/../../../build}/tune
shift || true
which=${*:-gemm gemm64 conv2d alexnet convtun convtun2}
passes=${PASSES:-7}
out=${OUT:-$here}
# --budget 100000: every configuration (the default budget of random is a quarter of the space)
common=(--strategy random --budget 100000 --confirm-top 0 --fresh --min-time 0.1 --max-samples 50)
for w in $which; do
  case $w in
  gemm)    # 2 thread counts x {unbound, compact} x mc, kc, nc at {def/2, def, 2 def}: 108 configurations
    args=(--workload gemm --param m=512 --param n=512 --param k=512 --threads 1,2
          --affinity default --affinity granularity=fine,compact --blocktime 200 --tunables) ;;
  gemm64)  # a 64^3 gemm: too small for 2 threads, and KMP_BLOCKTIME=0 makes 2 threads 8x slower:
           # the default is 13% off the best here (threads x affinity x blocktime: 16)
    # (--min-time 0.01: a 25 us iteration gives ~400 samples, which keeps the file small)
    args=(--workload gemm --param m=64 --param n=64 --param k=64 --hw-subset none --min-time 0.01) ;;
  conv2d)  # AlexNet conv3 at batch 8, every direction: threads x affinity x blocktime
    args=(--workload conv2d --param shape=alexnet:conv3 --param batch=8 --hw-subset none) ;;
  alexnet) # AlexNet training step at batch 2: threads x {unbound, compact} x blocktime
    args=(--workload alexnet --param batch=2 --affinity default --affinity granularity=fine,compact
          --hw-subset none) ;;
  convtun) # AlexNet conv4 at batch 1, the kernel tunables that change the speed: algo (1 batch-
           # parallel, 2 parallel GEMM, 3 packed) x ptile x kc x threads x {unbound, compact}: 109.
           # At batch 1 the default (algo 0 = auto: 2) is ~25% off the best (algo 3, 2 threads);
           # the worst settings are ~4x off. (--min-time 0.05: a ~4 ms iteration, a small file)
    args=(--workload conv2d --param shape=alexnet:conv4 --param batch=1 --param algo=1,2,3
          --param ptile=0,32,512 --param kc=0,64,512 --threads 1,2
          --affinity default --affinity granularity=fine,compact --blocktime 200 --hw-subset none
          --min-time 0.05 --max-samples 30) ;;
  convtun2) # AlexNet conv2 (5x5, 2 groups) at batch 1, the same tunables as convtun: algo x ptile x
           # threads x {unbound, compact}; a second landscape where the default is not the best
    args=(--workload conv2d --param shape=alexnet:conv2 --param batch=1 --param algo=1,2,3
          --param ptile=0,32,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  convtun3) # AlexNet conv5 (3x3, 2 groups, 384 -> 256 channels) at batch 1: algo x ptile x threads x
           # {unbound, compact}, 37 configurations; a third landscape of the kernel tunables
    args=(--workload conv2d --param shape=alexnet:conv5 --param batch=1 --param algo=1,2,3
          --param ptile=0,32,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  convtun4) # AlexNet conv3 (3x3, 256 -> 384 channels, no groups) at batch 1: the tunables of convtun3
    args=(--workload conv2d --param shape=alexnet:conv3 --param batch=1 --param algo=1,2,3
          --param ptile=0,32,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  # ---- new landscapes (prepared 2026-12-01, to be recorded on a quiet machine with PASSES=7) ----
  convtun5) # new: AlexNet conv1 (11x11 stride 4, 3 -> 64 channels, 224x224) at batch 1: algo x ptile x
           # threads x {unbound, compact}, 37 configurations; a ~5 ms iteration (pass ~15 s, 7 passes ~2 min)
    args=(--workload conv2d --param shape=alexnet:conv1 --param batch=1 --param algo=1,2,3
          --param ptile=0,32,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  convtun6) # new: AlexNet conv4 at batch 1 again, 7 passes, with the GEMM depth kc as well: algo x kc x
           # threads x {unbound, compact} (ptile auto), 37 configurations; convtun's landscape (the default
           # ~1.3x off the best, the worst ~4x) at a size that records in ~3 minutes
    args=(--workload conv2d --param shape=alexnet:conv4 --param batch=1 --param algo=1,2,3
          --param kc=0,64,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  gemmtun) # new: a 96^3 gemm (too small for 2 threads, like gemm64) with good and bad GEMM depths:
           # kc {8, 32, 512 = the default} x threads x {unbound, compact} x blocktime {0, 200}: 25
           # configurations (24 distinct: kc=512 is the default); a ~25 us iteration (pass ~5 s, 7 passes
           # ~1 min). kc = 8 packs panels 8 deep (one run under load: 1.4x slower at 1 thread); at 2
           # threads the default was 5x off the best in the smoke pass
    args=(--workload gemm --param m=96 --param n=96 --param k=96 --param kc=8,32,512 --threads 1,2
          --affinity default --affinity granularity=fine,compact --blocktime 0,200 --hw-subset none
          --min-time 0.02) ;;
  convtun7) # new: AlexNet conv5 at batch 1 (convtun3's layer) with the GEMM depth kc instead of ptile:
           # algo x kc x threads x {unbound, compact}, 37 configurations (pass ~15 s, 7 passes ~2 min)
    args=(--workload conv2d --param shape=alexnet:conv5 --param batch=1 --param algo=1,2,3
          --param kc=0,64,512 --threads 1,2 --affinity default --affinity granularity=fine,compact
          --blocktime 200 --hw-subset none --min-time 0.05 --max-samples 30) ;;
  *) echo "record.sh: unknown recording '$w' (gemm, gemm64, conv2d, alexnet, convtun, convtun2, convtun3, convtun4, convtun5, convtun6, gemmtun, convtun7)" >&2
     exit 2 ;;
  esac
  [ -z "${MIN_TIME:-}" ] || args+=(--min-time "$MIN_TIME")
  mkdir -p "$out"
  rm -f "$out/$w.sqlite" "$out/$w.sqlite-wal" "$out/$w.sqlite-shm" "$out/$w.sql"
  t0=$(date +%s)
  for p in $(seq 1 "$passes"); do
    echo "record.sh: $w pass $p of $passes" >&2
    "$tune" "${common[@]}" "${args[@]}" --seed "$p" --db "$out/$w.sqlite" --json > /dev/null
  done
  # fold the WAL into the file so that the dump below is of one self-contained file
  echo "record.sh: $w: $passes passes in $(( $(date +%s) - t0 )) s" >&2
  sqlite3 "$out/$w.sqlite" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE; VACUUM;" > /dev/null
  # disturbed passes: per pass, the geometric mean over configurations of run / the fastest run of
  # that configuration; a pass slowed by other processes as a whole stands out (a quiet pass is
  # within a few % of 1)
  sqlite3 -separator '|' "$out/$w.sqlite" "SELECT config_json, sweep_id, median_ms FROM trial
      WHERE role = 'search' AND status = 'ok' AND round = 0 ORDER BY sweep_id" |
    awk -F'|' -v w="$w" '{ c[NR] = $1; p[NR] = $2; v[NR] = $3; if (!($1 in m) || $3 < m[$1]) m[$1] = $3 }
      END { for (i = 1; i <= NR; i++) { s[p[i]] += log(v[i] / m[c[i]]); k[p[i]]++ }
            for (q in s) { g = exp(s[q] / k[q]); printf "record.sh: %s pass (sweep) %s: runs %.3fx the fastest run of their configuration%s\n", w, q, g, (g > 1.10 ? " (DISTURBED)" : "") } }' >&2
  # the recording as text (what is committed), then without its binary form
  bash "$here/dump.sh" "$out/$w.sqlite" "$out/$w.sql"
  rm -f "$out/$w.sqlite"
  echo "record.sh: $w: wrote $out/$w.sql" >&2
done
