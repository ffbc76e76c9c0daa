#!/bin/bash
# SPDX-License-Identifier: MIT
# How often does `tune` claim a win that is not there, and does it still find one that is?
# Measures, on this host, with the real sweep code (not a test in CTest: it takes minutes):
#   1. A/A, quiet: N_AA `tune sweep --aa` runs (half gemm, half conv2d, small shapes, short
#      min-time): each confirms the default against CONFIRM_TOP copies of itself (Holm over
#      them), blocks of REPLICATES processes per arm up to REPLICATES_MAX. Target: no claim.
#   2. A/A under a toggling background load: the same, while a bounded shell loop starts and
#      stops busy processes (1 or 2 spinning shells, on for 0.2-1.2 s, off for 0.2-1.2 s).
#      Target: no claim.
#   3. A real difference: N_REAL fresh sweeps of gemm 16^3 at 1 vs 2 threads, unbound (the
#      default is 2 threads, nothing set; the candidate 1 thread, KMP_AFFINITY=none), each with
#      its own seed (so its own measurement order). Target: the 1-thread setting claimed in
#      >= 90% of them.
# usage: bench/aa_rate.sh [--tune PATH] [--aa N] [--real N] [--min-time S] [--replicates R]
#                         [--replicates-max M] [--confirm-top K] [--skip-load]
# --replicates-max M: the sequential confirmation's most processes per side (default: tune's,
# 24; M = R: one look, the fixed round). Prints one line per run and the rates; the databases are
# kept in a temporary folder (named). The power of the claim rule against effects of known size
# is measured by bench/power_study.sh.
set -u
tune=build/tune n_aa=20 n_real=10 min_time=0.05 replicates=6 replicates_max="" confirm_top=3 with_load=1
while [ $# -gt 0 ]; do
  case $1 in
    --tune) tune=$2; shift 2 ;;
    --aa) n_aa=$2; shift 2 ;;
    --real) n_real=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --replicates) replicates=$2; shift 2 ;;
    --replicates-max) replicates_max=$2; shift 2 ;;
    --confirm-top) confirm_top=$2; shift 2 ;;
    --skip-load) with_load=0; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "aa_rate.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$tune" ] || { echo "aa_rate.sh: no tune executable at '$tune' (build first, or --tune PATH)" >&2; exit 2; }
tune=$(readlink -f "$tune")
work=$(mktemp -d /tmp/bkm-aa-rate.XXXXXX)
. "$(dirname "$0")/toggle_load.sh"
trap 'stop_load' EXIT
trap 'stop_load; exit 130' INT TERM

gemm=(--workload gemm --param m=64 --param n=64 --param k=64)
conv=(--workload conv2d --param shape=alexnet:conv4 --param batch=1)
common=(--min-time "$min_time" --min-samples 5 --max-samples 50 --replicates "$replicates" --fresh --counters none)
[ -n "$replicates_max" ] && common+=(--replicates-max "$replicates_max")

# run_aa LABEL N: N A/A runs alternating gemm and conv2d; one line per run, the number of claims
# in $work/LABEL.claims
run_aa() {
  local label=$1 n=$2 claims=0 rc wl
  for i in $(seq 1 "$n"); do
    if [ $((i % 2)) -eq 1 ]; then wl=("${gemm[@]}"); else wl=("${conv[@]}"); fi
    "$tune" "${wl[@]}" "${common[@]}" --aa --confirm-top "$confirm_top" --seed "$i" \
      --db "$work/$label.sqlite" --json > "$work/$label.$i.json" 2> "$work/$label.$i.err"
    rc=$?
    case $rc in
      0) ;;
      1) claims=$((claims + 1)) ;;
      *) echo "  $label $i: tune exited $rc: $(tail -2 "$work/$label.$i.err")" >&2 ;;
    esac
    python3 - "$work/$label.$i.json" "$label" "$i" "${wl[1]}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ev = s["evidence"] or {}
tests = ["%.3fx p=%.2g level=%.2g %s" % (c["ratio"], c["p"], c["nominal_level"], c["decision"])
         for c in ev.get("candidates", []) if c["tested"]]
print("  %s %2s %-7s claim=%-5s %3d processes, default %.4g ms [%.4g, %.4g]  %s" % (sys.argv[2], sys.argv[3],
      sys.argv[4], str(s["claim"]).lower(), s["confirm_processes"], s["default"]["median_ms"],
      *s["default"]["median_ci95_order_stat"], "; ".join(tests)))
PY
  done
  echo "$claims" > "$work/$label.claims"
}

echo "# bkm A/A and real-difference rates, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$(dirname "$0")" describe --always --dirty 2> /dev/null || echo unknown)"
"$tune" topo | head -n 3 | sed 's/^/# /'
echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# per arm blocks of $replicates processes, at most ${replicates_max:-24 (the default)}, A/A against $confirm_top copies (Holm), min-time $min_time s; databases in $work"

echo "A/A quiet ($n_aa runs):"
run_aa aa-quiet "$n_aa"
aa_quiet=$(cat "$work/aa-quiet.claims")
aa_load="-"
if [ "$with_load" -eq 1 ]; then
  echo "A/A with a toggling background load ($n_aa runs):"
  start_load 3600
  run_aa aa-load "$n_aa"
  aa_load=$(cat "$work/aa-load.claims")
  stop_load
fi

echo "Real difference: gemm 16^3, 1 vs 2 threads unbound ($n_real sweeps):"
real=0
for i in $(seq 1 "$n_real"); do
  "$tune" --workload gemm --param m=16 --param n=16 --param k=16 --threads 1,2 --affinity none --blocktime 200 \
    "${common[@]}" --seed "$i" --db "$work/real.sqlite" --json > "$work/real.$i.json" 2> "$work/real.$i.err"
  rc=$?
  [ $rc -eq 0 ] || echo "  real $i: tune exited $rc: $(tail -2 "$work/real.$i.err")"
  line=$(python3 - "$work/real.$i.json" "$i" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["evidence"]["candidates"][0]
one = s["claim"] and s["best"]["config"]["threads"] == 1
print("%d  real %2s claim=%-5s 1 thread vs default: %.3fx repeated interval [%.3f, %.3f] p=%.2g %s, %d processes; "
      "default %.4g ms, 1 thread %.4g ms" % (one, sys.argv[2], str(s["claim"]).lower(), c["ratio"],
      *[x if x is not None else float("inf") for x in c["ratio_rci"]], c["p"], c["decision"], s["confirm_processes"],
      s["default"]["median_ms"], c["median_ms"]))
PY
)
  echo "${line#* }"
  real=$((real + ${line%% *}))
done

echo
echo "A/A quiet:        $aa_quiet false claims in $n_aa runs   (target 0)"
[ "$with_load" -eq 1 ] && echo "A/A toggling load: $aa_load false claims in $n_aa runs   (target 0)"
echo "real difference:  $real of $n_real sweeps claim the 1-thread setting   (target >= $(( (9 * n_real + 9) / 10 )))"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
