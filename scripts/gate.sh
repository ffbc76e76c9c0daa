#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The performance gate of CI: this build against the merge-base's build, A/B in the same job.
#
# Why A/B and not a stored baseline: CI machines differ from run to run (Intel or AMD, 2 shared
# vCPUs, neighbours compiling), so a timing recorded on another day, or another machine, says
# little about this one now. Here both builds run on this machine, now: `tune regress --against`
# starts the reference build's worker processes and this build's in a drift-cancelling order
# (rounds in pairs, a seeded shuffle of the two builds then its reverse, per workload), so load,
# frequency and drift fall on both sides alike; a workload fails the gate only when BOTH the
# Mann-Whitney test on one value per process (its fastest sample) is significant after Holm's
# correction over the workloads (family-wise alpha 0.01: when the builds do not differ, a false
# alarm has at most 1% chance per run, whatever the load, as long as it does not single out one
# side, which the order prevents) AND this build is more than 10% slower (Hodges-Lehmann ratio).
#
# Cheap: the merge-base's `tune` only is built (its other targets are not), and the default suite
# (four single-threaded workloads with sub-millisecond iterations, 8 processes a side) measures
# in well under a minute.
# Robust: no merge-base (no git, a shallow clone, HEAD is the base), no change to the measured code
# since it, a base that does not build, or a base whose workers cannot run the suite: the gate says
# so and passes; only a measured regression fails it (exit 1).
# Environment: BKM_GATE_BASE=<rev> picks the reference (default: merge-base of HEAD and main or
# origin/main; on main itself, HEAD's first parent); BKM_GATE=0 skips the gate.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
say() { echo "gate: $*"; }
[ "${BKM_GATE:-1}" = 0 ] && { say "skipped (BKM_GATE=0)"; exit 0; }
[ -x "$build/tune" ] || { say "skipped: $build/tune is not built (run scripts/test.sh first)"; exit 0; }
cd "$top"
if ! git rev-parse --verify -q HEAD > /dev/null 2>&1; then
  say "skipped: $top is not a git checkout, so there is no merge-base to compare with"
  exit 0
fi
head=$(git rev-parse HEAD)
base=${BKM_GATE_BASE:-}
if [ -z "$base" ]; then
  for ref in main origin/main; do
    if git rev-parse --verify -q "$ref" > /dev/null; then
      base=$(git merge-base HEAD "$ref" 2> /dev/null) && break
    fi
  done
  if [ -z "$base" ] || [ "$base" = "$head" ]; then
    base=$(git rev-parse --verify -q "HEAD^1" 2> /dev/null) || base=
  fi
fi
if [ -z "$base" ] || ! git cat-file -e "$base^{commit}" 2> /dev/null; then
  say "skipped: no merge-base found (shallow clone or no main branch); set BKM_GATE_BASE=<rev>"
  exit 0
fi
short=$(git rev-parse --short "$base")
measured=(kernels workloads tuner common affinity apps CMakeLists.txt cmake)
if git diff --quiet "$base" -- "${measured[@]}" 2> /dev/null; then
  say "passed without measuring: nothing under ${measured[*]} changed since $short"
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bkm-gate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
if ! git archive --format=tar "$base" | tar -x -C "$tmp" 2> "$tmp/archive.log"; then
  say "skipped: cannot extract $short ($(tail -n 1 "$tmp/archive.log"))"
  exit 0
fi
jobs=$(nproc)
if ! { cmake -S "$tmp" -B "$tmp/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF &&
       cmake --build "$tmp/build" -j"$jobs" --target tune; } > "$tmp/build.log" 2>&1; then
  say "skipped: the merge-base $short does not build here; last lines of its build:"
  tail -n 5 "$tmp/build.log" | sed 's/^/gate:   /'
  exit 0
fi
say "built the merge-base $short in $(( $(date +%s) - t0 )) s; measuring it against this build ($(git rev-parse --short HEAD))"
"$build/tune" regress --against "$tmp/build/tune" --junit "$build/regress-junit.xml" --db "$tmp/gate.sqlite"
rc=$?
case $rc in
  0) say "passed: no workload is slower than the merge-base $short beyond the noise and 10% ($(( $(date +%s) - t0 )) s)"
     exit 0 ;;
  1) say "FAILED: a workload is slower than with the merge-base $short (table above; JUnit: $build/regress-junit.xml)"
     exit 1 ;;
  *) say "skipped: the merge-base's workers could not run the suite (tune regress exit $rc: see above)"
     exit 0 ;;
esac
