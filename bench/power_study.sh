#!/bin/bash
# SPDX-License-Identifier: MIT
# The power of the claim rule: how often does `tune` claim a win of known size, and what does
# deciding cost? Not a CTest test (it takes hours at its default counts); run it on a quiet
# machine. The effect is made exact: the user's-program path (`tune ... -- PROG`) sweeps
# tests/tuner/programs/omp_prog.c built without OpenMP, in mode `ratio`: the setting
# OMP_NUM_THREADS=1 (the only candidate, --threads 1) does the arithmetic of MS ms per region and
# every other setting (the default) RATIO times as much, so the candidate is faster by exactly
# RATIO in work; each region prints its time and --metric takes it, so process start-up is not in
# the figure. For each condition (quiet; under a toggling background load: 1 or 2 spinning
# shells, on 0.2-1.2 s, off 0.2-1.2 s) and each design (sequential: blocks of R up to M
# processes per side; fixed: one look at R, the rule before the sequential design):
#   - SWEEPS fresh sweeps per effect (default 1.02 1.05 1.10), each with its own seed: how many
#     claimed the candidate, found it not better, or left it undecided, and the confirmation
#     processes they took (mean, and per side at the end);
#   - AA fresh `--aa` runs (the default against one copy of itself): false claims and processes.
# usage: bench/power_study.sh [--tune PATH] [--sweeps N] [--aa N] [--effects "1.02 1.05 1.10"]
#          [--conditions "quiet load"] [--designs "sequential fixed"] [--regions K] [--ms MS]
#          [--replicates R] [--replicates-max M] [--keep]
# Prints one line per sweep and, at the end, the table (markdown) with the command, the host and
# the revision; the databases and JSON are kept in a temporary folder (named) with --keep.
set -u
tune=build/tune n_sweeps=100 n_aa=100 effects="1.02 1.05 1.10" conditions="quiet load" designs="sequential fixed"
regions=5 ms=20 replicates=6 replicates_max=24 keep=0
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --tune) tune=$2; shift 2 ;;
    --sweeps) n_sweeps=$2; shift 2 ;;
    --aa) n_aa=$2; shift 2 ;;
    --effects) effects=$2; shift 2 ;;
    --conditions) conditions=$2; shift 2 ;;
    --designs) designs=$2; shift 2 ;;
    --regions) regions=$2; shift 2 ;;
    --ms) ms=$2; shift 2 ;;
    --replicates) replicates=$2; shift 2 ;;
    --replicates-max) replicates_max=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "power_study.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
num() { [[ $2 =~ ^[0-9]+$ ]] || { echo "power_study.sh: $1 '$2' is not a whole number" >&2; exit 2; }; }
num --sweeps "$n_sweeps"; num --aa "$n_aa"; num --regions "$regions"; num --replicates "$replicates"
num --replicates-max "$replicates_max"
[[ $ms =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "power_study.sh: --ms '$ms' is not a number" >&2; exit 2; }
for e in $effects; do
  [[ $e =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v e="$e" 'BEGIN { exit !(e > 1) }' ||
    { echo "power_study.sh: effect '$e' is not a ratio above 1" >&2; exit 2; }
done
for c in $conditions; do
  case $c in quiet|load) ;; *) echo "power_study.sh: condition '$c' is not quiet or load" >&2; exit 2 ;; esac
done
for d in $designs; do
  case $d in sequential|fixed) ;; *) echo "power_study.sh: design '$d' is not sequential or fixed" >&2; exit 2 ;; esac
done
[ "$replicates_max" -ge "$replicates" ] ||
  { echo "power_study.sh: --replicates-max $replicates_max is below --replicates $replicates" >&2; exit 2; }
[ -x "$tune" ] || { echo "power_study.sh: no tune executable at '$tune' (build first, or --tune PATH)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "power_study.sh: python3 is needed" >&2; exit 3; }
command -v cc > /dev/null || { echo "power_study.sh: a C compiler (cc) is needed to build the program" >&2; exit 3; }
tune=$(readlink -f "$tune")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/bkm-power.XXXXXX)
. "$here/toggle_load.sh"
cleanup() { stop_load; [ "$keep" -eq 1 ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# the program, as a user builds it (no OpenMP: the pragmas are ignored, OMP_NUM_THREADS is data)
prog=$work/omp_prog_none
cc -O1 -Wno-unknown-pragmas -o "$prog" "$here/../tests/tuner/programs/omp_prog.c" -ldl ||
  { echo "power_study.sh: building the program failed" >&2; exit 3; }
[ "$(OMP_NUM_THREADS=1 "$prog" ratio 1 1 1.5 | grep -c 'avg time')" -eq 1 ] ||
  { echo "power_study.sh: the program does not run" >&2; exit 3; }

sweep=(--node auto --threads 1 --strategy grid --confirm-top 1 --replicates "$replicates" --fresh --counters none
       --metric 'avg time ([0-9.]+) millisecond')
results=$work/results.tsv
: > "$results"

# one_sweep CONDITION DESIGN KIND EFFECT SEED: one sweep (KIND real) or A/A run (KIND aa), its line
# in results.tsv: condition design kind effect seed decision claimed processes per_side
one_sweep() {
  local cond=$1 design=$2 kind=$3 effect=$4 seed=$5 rmax=$replicates_max extra=() json rc
  [ "$design" = fixed ] && rmax=$replicates
  [ "$kind" = aa ] && extra=(--aa)
  json=$work/$cond-$design-$kind-$effect-$seed.json
  "$tune" --workload "power-$kind-$effect" "${sweep[@]}" --replicates-max "$rmax" "${extra[@]}" --seed "$seed" \
    --db "$work/$cond-$design-$kind.sqlite" --json -- "$prog" ratio "$regions" "$ms" "$effect" > "$json" \
    2> "${json%.json}.err"
  rc=$?
  if [ $rc -gt 1 ]; then
    echo "  $cond $design $kind $effect seed $seed: tune exited $rc: $(tail -2 "${json%.json}.err")" >&2
    return 0
  fi
  python3 - "$json" "$cond" "$design" "$kind" "$effect" "$seed" "$results" <<'PY'
import json, sys
path, cond, design, kind, effect, seed, out = sys.argv[1:]
s = json.load(open(path))
ev = s["evidence"] or {}
c = (ev.get("candidates") or [{}])[0]
claimed = int(bool(s["claim"]))
line = [cond, design, kind, effect, seed, s["decision"] or "none", str(claimed), str(s["confirm_processes"]),
        str(s["processes_per_side"])]
open(out, "a").write("\t".join(line) + "\n")
print("  %-5s %-10s %-4s %s seed %3s: %-10s claimed=%d %3d processes (%2d per side), %.4fx p=%.2g level=%.2g" % (
    cond, design, kind, effect, seed, line[5], claimed, s["confirm_processes"], s["processes_per_side"],
    c.get("ratio") or float("nan"), c.get("p") or float("nan"), c.get("nominal_level") or float("nan")))
PY
}

echo "# bkm power study, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$here" describe --always --dirty 2> /dev/null || echo unknown)"
"$tune" topo | head -n 3 | sed 's/^/# /'
echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# program: omp_prog ratio $regions regions x $ms ms (the candidate's work), effects $effects; blocks of" \
     "$replicates up to $replicates_max processes per side (fixed: one look at $replicates); $n_sweeps sweeps per" \
     "effect, $n_aa A/A runs"
for cond in $conditions; do
  [ "$cond" = load ] && start_load 86400
  for design in $designs; do
    for effect in $effects; do
      for i in $(seq 1 "$n_sweeps"); do one_sweep "$cond" "$design" real "$effect" "$i"; done
    done
    for i in $(seq 1 "$n_aa"); do one_sweep "$cond" "$design" aa "${effects%% *}" "$i"; done
  done
  stop_load
done

echo
echo "# $cmdline"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
groups = collections.OrderedDict()
for cond, design, kind, effect, seed, decision, claimed, procs, side in rows:
    key = (cond, design, kind, effect if kind == "real" else "A/A")
    groups.setdefault(key, []).append((decision, int(claimed), int(procs), int(side)))
print("| condition | design | effect | sweeps | claimed | not better | undecided | confirmation processes, mean (max) | per side, mean |")
print("|---|---|---|---|---|---|---|---|---|")
for (cond, design, kind, effect), g in groups.items():
    n = len(g)
    claimed = sum(c for _, c, _, _ in g)
    nb = sum(d == "not-better" for d, _, _, _ in g)
    und = sum(d == "undecided" for d, _, _, _ in g)
    procs = [p for _, _, p, _ in g]
    side = [s for _, _, _, s in g]
    label = "A/A (false claims)" if kind == "aa" else effect
    print("| %s | %s | %s | %d | %d (%.0f%%) | %d | %d | %.1f (%d) | %.1f |" % (cond, design, label, n, claimed,
          100.0 * claimed / n, nb, und, sum(procs) / n, max(procs), sum(side) / n))
PY
[ "$keep" -eq 1 ] && echo "# databases and JSON kept in $work"
exit 0
