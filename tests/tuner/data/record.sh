#!/bin/bash
# SPDX-License-Identifier: MIT
# Records the exhaustive sweeps that tests/tuner/test_replay.sh replays (one database per
# workload, strategy grid = every configuration of the space, no confirmation round).
# Run on the machine whose data you want:  bash tests/tuner/data/record.sh [BUILD_DIR] [WHICH...]
# Each sweep takes 1-5 minutes on a 2-core VM.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tune=${1:-$here/../../../build}/tune
shift || true
which=${*:-gemm conv2d alexnet}
common=(--strategy grid --confirm-top 0 --fresh --min-time 0.1 --max-samples 50)
for w in $which; do
  case $w in
  gemm)    # 2 thread counts x {unbound, compact} x mc, kc, nc at {def/2, def, 2 def}: 108 configurations
    args=(--workload gemm --param m=512 --param n=512 --param k=512 --threads 1,2
          --affinity default --affinity granularity=fine,compact --blocktime 200 --tunables) ;;
  conv2d)  # AlexNet conv3 at batch 8, every direction: threads x affinity x blocktime
    args=(--workload conv2d --param shape=alexnet:conv3 --param batch=8 --hw-subset none) ;;
  alexnet) # AlexNet training step at batch 2: threads x {unbound, compact} x blocktime {default, 0}
    args=(--workload alexnet --param batch=2 --affinity default --affinity granularity=fine,compact
          --blocktime 200,0 --hw-subset none) ;;
  *) echo "record.sh: unknown workload '$w' (gemm, conv2d, alexnet)" >&2; exit 2 ;;
  esac
  rm -f "$here/$w.sqlite" "$here/$w.sqlite-wal" "$here/$w.sqlite-shm"
  "$tune" "${args[@]}" "${common[@]}" --db "$here/$w.sqlite" --json > "$here/$w.summary.json"
  # fold the WAL into the file so that the committed database is one self-contained file
  "$tune" export --db "$here/$w.sqlite" --format csv > /dev/null
done
