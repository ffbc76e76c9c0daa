#!/bin/bash
# SPDX-License-Identifier: MIT
# Where PAPI's perf_event component works, a trial stores both its PAPI software events and the
# OS noise evidence, and the two agree on context switches (issue 16): PAPI's
# perf::CONTEXT-SWITCHES summed over the team against getrusage(RUSAGE_THREAD)'s voluntary +
# involuntary switches summed over the same threads. PAPI's counting brackets the OS snapshots
# (started before, stopped after), so PAPI may see a few more: the snapshots' own parallel regions
# and reads (granularity: a few switches per thread). Skips (77) naming PAPI's reason where the
# event is unavailable (VMs without a PMU, perf_event_paranoid, no libpfm4 PMU).
set -u
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# blocktime 0: threads sleep between regions, so there are voluntary switches to count
"$BKM_TUNE" run --workload gemm --param m=64 --param n=64 --param k=64 --threads 2 --blocktime 0 --min-time 0.3 \
  --counters perf::CONTEXT-SWITCHES --json > "$tmp/r.json" 2> "$tmp/r.err" ||
  { echo "FAIL: tune run: exit $?: $(tail -3 "$tmp/r.err")"; exit 1; }
python3 - "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, n = d["counters"], d["noise"]
if "perf::CONTEXT-SWITCHES" not in c["values"]:
    print("SKIP: PAPI's perf::CONTEXT-SWITCHES is unavailable here (%s); the OS evidence alone is stored "
          "(test_noise_sweep and test_noise_hog check it)" % c["unavailable"].get("perf::CONTEXT-SWITCHES", "not listed"))
    sys.exit(77)
papi = c["values"]["perf::CONTEXT-SWITCHES"]
tot = n["totals"]
os_sw = tot["voluntary_switches"] + tot["involuntary_switches"]
threads = len(n["threads"])
slack = 4 * threads + 0.05 * max(papi, os_sw)
print("context switches: PAPI %d, rusage %d (voluntary %d + involuntary %d), %d threads, slack %.0f"
      % (papi, os_sw, tot["voluntary_switches"], tot["involuntary_switches"], threads, slack))
assert abs(papi - os_sw) <= slack, "PAPI and the OS disagree beyond the granularity"
assert c["threads_counted"] == threads
PY
