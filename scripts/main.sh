#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on this host, on a fresh Debian 12 machine: installs what is missing, builds,
# then sweeps the AlexNet training step's runtime settings on this node (a real sweep, under
# 5 minutes on 2 cores: thread count x KMP_AFFINITY x KMP_BLOCKTIME x OMP_PLACES/PROC_BIND,
# deduplicated by the planner), stores every trial in results/bkm.sqlite, prints the best-known
# setting against the default, and finally shows how the same job is planned for a Cori KNL node.
#   scripts/main.sh [extra tune options...]     e.g. --fresh, --json, --param batch=32
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" "$top/build"
tune="$top/build/tune"

"$tune" --node auto --workload alexnet --param batch=16 --min-time 0.5 "$@"
"$tune" best --node auto --workload alexnet
echo
# The main job for Cori KNL, planned here (this host is not a KNL node: nothing is run or recorded).
"$tune" --node knl --workload alexnet --param batch=16 2>&1 | awk 'NR <= 3 { print } { tail[NR % 4] = $0 }
  END { print "  ..."; for (i = NR - 3; i <= NR; i++) if (i > 3) print tail[i % 4] }'
