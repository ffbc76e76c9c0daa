#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Negative control of the libgomp differential harness: on the cases of the rule table (one per
# rule of the model: gomp_diff --rules), every libgomp run is compared with the right planner and
# with deliberately wrong ones (a short place list restarting, spread without subpartitions,
# ll_caches without the 12.2 bug, no constructor pin, no messages). The right planner must match
# every case and the harness must catch each wrong planner on at least one (gomp_diff --perturb
# all exits 1 otherwise).
#   negative_control.sh GOMP_DIFF --shim SO --probe EXE
set -u
diff_exe=$1
shift
out=$(mktemp "${TMPDIR:-/tmp}/bkm-gomp-neg-XXXXXX") || exit 3
trap 'rm -f "$out"' EXIT
"$diff_exe" run "$@" --rules --perturb all >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 77 ] && exit 77
n=$(grep -c "^negative control: the wrong planner '.*' was caught on [1-9]" "$out")
if [ $rc -ne 0 ] || [ "$n" -ne 5 ]; then
    echo "FAIL: exit $rc, $n of the 5 wrong planners caught"
    exit 1
fi
