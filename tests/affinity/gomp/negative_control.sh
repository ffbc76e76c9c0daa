#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Negative control of the libgomp differential harness: the same harness, on the same cases (one
# per rule of the model: gomp_diff --rules), is fed deliberately wrong planners; each must be
# caught (exit 1, mismatches counted), while the right planner matches every case.
#   negative_control.sh GOMP_DIFF --shim SO --probe EXE
set -u
diff_exe=$1
shift
summary() { grep -E "cases compared with the real libgomp" "$1" | tail -1; }

out=$(mktemp "${TMPDIR:-/tmp}/bkm-gomp-neg-XXXXXX") || exit 3
trap 'rm -f "$out"' EXIT
"$diff_exe" run "$@" --rules >"$out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
    cat "$out"
    exit 77
fi
echo "right planner: $(summary "$out")"
if [ $rc -ne 0 ]; then
    echo "FAIL: the right planner does not match on the control cases (exit $rc)"
    head -40 "$out"
    exit 1
fi

fails=0
for mode in close-restarts spread-even ll-caches-per-cache no-pin no-messages; do
    "$diff_exe" run "$@" --rules --perturb "$mode" >"$out" 2>&1
    rc=$?
    line=$(summary "$out")
    n=$(sed -n 's/.*matched, \([0-9]*\) mismatched.*/\1/p' <<<"$line")
    echo "$mode: exit $rc: $line"
    if [ $rc -ne 1 ] || [ -z "$n" ] || [ "$n" -lt 1 ]; then
        echo "FAIL: the harness did not catch the wrong planner '$mode'"
        fails=$((fails + 1))
    else
        grep -m1 -A2 '^MISMATCH' "$out" | sed 's/^/    /'
    fi
done
[ $fails -eq 0 ]
