#!/bin/bash
# SPDX-License-Identifier: MIT
# How often `tune regress` reports a regression, on this machine, now. Two baselines are recorded
# here: the default suite (1 thread) and the same with --threads 2. Then, in each of RUNS rounds,
# one check of each kind, alternating so the machine's load falls on every kind alike:
#   aa        the default baseline checked as it is                    (want: never a regression)
#   kc4       the default baseline with --param kc=4 (a bad GEMM blocking for every workload's GEMM)
#   threads1  the 2-thread baseline checked with --threads 1           (want: >= 9 of 10)
#   aa2       the 2-thread baseline checked as it is                   (want: never)
#   ab        A/B of this build against itself (--against, the CI gate's mode; want: never)
# Prints one line per check (per workload: ratio current/reference, REG when reported) and a
# summary. The baselines, outputs and JUnit files stay in OUT.
# Usage: bench/regress_rate.sh [BUILD_DIR] [OUT]   (RUNS=10, KINDS="aa kc4 threads1 aa2 ab";
#        ~30 s a check on a busy 2-core VM)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tune=${1:-$top/build}/tune
out=${2:-$(mktemp -d /tmp/bkm-regress-rate.XXXXXX)}
runs=${RUNS:-10}
kinds=${KINDS:-aa kc4 threads1 aa2 ab}
mkdir -p "$out"
echo "# $(date -u +%FT%TZ) $($tune version | head -2 | tr '\n' ' ') $($tune topo | head -3 | tr '\n' ' ')"
echo "# out: $out"
t0=$(date +%s)
for b in base:"" base2:"--threads 2"; do
  if [ -s "$out/${b%%:*}.json" ]; then  # OUT of an earlier run: its baselines are kept
    echo "# ${b%%:*}.json (${b#*:}) kept from an earlier run of $out"
    continue
  fi
  t=$(date +%s)
  # shellcheck disable=SC2086
  "$tune" regress --record -o "$out/${b%%:*}.json" ${b#*:} 2> "$out/${b%%:*}.err" ||
    { echo "record ${b%%:*} failed: $(cat "$out/${b%%:*}.err")"; exit 1; }
  echo "# ${b%%:*}.json (${b#*:}) recorded in $(( $(date +%s) - t )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
declare -A hits
for kind in $kinds; do hits[$kind]=0; done
for i in $(seq 1 "$runs"); do
  for kind in $kinds; do
    case $kind in
      aa) args=(--baseline "$out/base.json") ;;
      kc4) args=(--baseline "$out/base.json" --param kc=4) ;;
      threads1) args=(--baseline "$out/base2.json" --threads 1) ;;
      aa2) args=(--baseline "$out/base2.json") ;;
      ab) args=(--against "$tune") ;;
    esac
    t=$(date +%s)
    "$tune" regress "${args[@]}" --seed "$i" --junit "$out/$kind-$i.xml" --db "$out/gate.sqlite" \
      > "$out/$kind-$i.out" 2> "$out/$kind-$i.err"
    rc=$?
    [ $rc -eq 1 ] && hits[$kind]=$(( ${hits[$kind]} + 1 ))
    printf '%-9s run %2d: exit %d, %3d s, load %5s | %s\n' "$kind" "$i" "$rc" "$(( $(date +%s) - t ))" \
      "$(cut -d' ' -f1 /proc/loadavg)" \
      "$(awk '/^(gemm|conv2d|conv3d|lstm|alexnet) /{printf "%s %s %s; ", $1, $7, ($0 ~ /REGRESSION/) ? "REG" : "ok"}' "$out/$kind-$i.out")"
  done
done
line="# regressions reported in $runs runs:"
for kind in $kinds; do line="$line $kind ${hits[$kind]}/$runs;"; done
echo "$line $(( $(date +%s) - t0 )) s in all"
