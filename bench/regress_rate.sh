#!/bin/bash
# SPDX-License-Identifier: MIT
# How often `tune regress` reports a regression: RUNS A/A checks against a baseline recorded
# here (want: never), and RUNS checks of two real slowdowns against it (want: at least 9 of 10):
# --threads 1 against the baseline's every-PU threads, and --param kc=4 (a bad GEMM blocking for
# every workload's GEMM). The three kinds alternate in every round, so the machine's load falls
# on all of them alike. Prints one line per check and a summary; the baseline, the outputs and the
# JUnit files stay in OUT.
# Usage: bench/regress_rate.sh [BUILD_DIR] [OUT]   (RUNS=10; ~25 checks an hour on a busy 2-core VM)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tune=${1:-$top/build}/tune
out=${2:-$(mktemp -d /tmp/bkm-regress-rate.XXXXXX)}
runs=${RUNS:-10}
mkdir -p "$out"
echo "# $(date -u +%FT%TZ) $($tune version | head -2 | tr '\n' ' ') $($tune topo | head -3 | tr '\n' ' ')"
echo "# out: $out"
t0=$(date +%s)
"$tune" regress --record -o "$out/base.json" --db "$out/gate.sqlite" 2> "$out/record.err" ||
  { echo "record failed: $(cat "$out/record.err")"; exit 1; }
echo "# baseline recorded in $(( $(date +%s) - t0 )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A hits=([aa]=0 [threads1]=0 [kc4]=0)
for i in $(seq 1 "$runs"); do
  for kind in aa threads1 kc4; do
    case $kind in
      aa) extra=() ;;
      threads1) extra=(--threads 1) ;;
      kc4) extra=(--param kc=4) ;;
    esac
    t=$(date +%s)
    "$tune" regress --baseline "$out/base.json" --seed "$i" --junit "$out/$kind-$i.xml" --db "$out/gate.sqlite" \
      "${extra[@]}" > "$out/$kind-$i.out" 2> "$out/$kind-$i.err"
    rc=$?
    [ $rc -eq 1 ] && hits[$kind]=$(( ${hits[$kind]} + 1 ))
    printf '%-9s run %2d: exit %d, %3d s, load %s | %s\n' "$kind" "$i" "$rc" "$(( $(date +%s) - t ))" \
      "$(cut -d' ' -f1 /proc/loadavg)" \
      "$(awk '/^(gemm|conv2d|conv3d|lstm|alexnet) /{printf "%s %s %s; ", $1, $5 == "" ? "" : $7, ($0 ~ /REGRESSION/) ? "REG" : "ok"}' "$out/$kind-$i.out")"
  done
done
echo "# regressions reported: A/A ${hits[aa]}/$runs (want 0), --threads 1 ${hits[threads1]}/$runs (want >= 9)," \
     "--param kc=4 ${hits[kc4]}/$runs (want >= 9); $(( $(date +%s) - t0 )) s in all"
