#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on this host, on a fresh Debian 12 machine: installs what is missing, builds,
# then sweeps the AlexNet training step's runtime settings on this node (a real sweep, under
# 5 minutes on 2 cores: thread count x KMP_AFFINITY x KMP_BLOCKTIME x OMP_PLACES/PROC_BIND,
# deduplicated by the planner), stores every trial in results/bkm.sqlite, prints the best-known
# setting against the default, and finally shows how the same job is planned for a Cori KNL node.
#   scripts/main.sh [extra tune options...]     e.g. --fresh, --json, --param batch=32
# Exit status: the sweep's (0 done, 4 partial: some trials failed, the rest stored), after the
# best-known setting and the KNL plan have been printed; any other failure stops at once.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" "$top/build"
tune="$top/build/tune"

sweep_rc=0
"$tune" --node auto --workload alexnet --param batch=16 --min-time 0.5 "$@" || sweep_rc=$?
case $sweep_rc in
  0) ;;
  4) echo "main: the sweep ended partial (exit 4: some trials failed, the rest are stored;" \
          "'$tune export --format csv' lists them); the answer from what was stored follows" >&2 ;;
  *) echo "main: the sweep failed (exit $sweep_rc)" >&2; exit "$sweep_rc" ;;
esac
"$tune" best --node auto --workload alexnet
echo
# The main job for Cori KNL, planned here (this host is not a KNL node: nothing is run or recorded);
# the plan fits a screen (drops and merges counted by cause; --verbose lists every one).
"$tune" --node knl --workload alexnet --param batch=16
exit "$sweep_rc"
