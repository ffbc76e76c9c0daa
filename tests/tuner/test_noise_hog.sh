#!/bin/bash
# SPDX-License-Identifier: MIT
# Noise evidence end to end (issue 16): a trial run while a CPU hog shares its CPU is marked
# disturbed, the same trial without the hog is not; every OS value is present in `tune run
# --json` (test_noise_sweep checks a sweep, export and tune best).
#
# The trial and the hog (a shell busy loop started here) are pinned to ONE CPU, the last this
# test may use: the trial with KMP_AFFINITY=explicit (1 thread), the hog with taskset. Where this
# test may use real-time scheduling (`chrt -r 1`: root, or CAP_SYS_NICE), both run SCHED_RR at
# the same priority: outside load (other jobs' builds, whatever their cgroup or nice value) cannot
# delay them, and the hog shares the CPU with the trial round-robin (100 ms slices). The hog runs
# under `timeout 20`, so even a test killed with SIGKILL leaves no real-time busy loop behind.
# Without real-time scheduling both run as ordinary tasks: on a machine shared with other jobs
# the "quiet" run may then wait on the run queue itself; it is retried a few times, and when it
# is never quiet the test skips (77) with the shares it saw.
. "$(dirname "$0")/sweep_common.sh"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
command -v taskset > /dev/null || { echo "SKIP: taskset (util-linux) is not installed"; exit 77; }
[ -r /proc/self/schedstat ] || { echo "SKIP: /proc/self/schedstat is missing (kernel without CONFIG_SCHED_INFO)"; exit 77; }
cd "$tmp"
cpu=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
# With one hog on its CPU the trial's thread waits about half of the time (round-robin or CFS
# share the CPU evenly). Real-time: the default threshold (0.10); ordinary scheduling: 0.3, since
# outside load alone makes a thread wait tens of percent on a busy machine.
rt=()
mode="ordinary (CFS) scheduling"
share=0.3
if command -v chrt > /dev/null && chrt -r 1 true 2> /dev/null; then
  rt=(chrt -r 1)
  mode="SCHED_RR priority 1 (trial and hog)"
  share=0.1
fi
trial=(run --workload gemm --param m=64 --param n=64 --param k=64 --threads 1
       --affinity "granularity=fine,explicit,proclist=[$cpu]" --min-time 0.4 --counters none
       --disturbed-share "$share" --json)
hog=
trap '[ -n "$hog" ] && kill "$hog" 2> /dev/null; rm -rf "$tmp"' EXIT

# check_run FILE: ok, every OS value present, prints "disturbed share involuntary_switches"
check_run() {
  python3 - "$1" "$share" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
n = d["noise"]
def walk(x, path):
    if isinstance(x, dict):
        assert "unavailable" not in x, (path, x.get("unavailable"))
        for k, v in x.items():
            walk(v, path + "." + k)
walk(n, "noise")
assert n["disturbed"] in (True, False) and n["threshold"] == float(sys.argv[2]), n
(t,) = n["threads"]
for src in ("rusage", "proc-schedstat", "proc-sched"):
    assert src in t, (src, t)
assert t["rusage"]["cpu_s"] > 0 and t["wall_s"] > 0.3, t
assert "proc-stat" in n["process"] and "rusage" in n["process"]
print(str(n["disturbed"]).lower(), n["share"], n["totals"]["involuntary_switches"])
PY
}

quiet=
seen=
for i in 1 2 3 4 5; do
  "${rt[@]}" "$BKM_TUNE" "${trial[@]}" > quiet.json 2> quiet.err || fail "quiet run: exit $?: $(tail -3 quiet.err)"
  r=$(check_run quiet.json) || fail "quiet run: noise evidence incomplete"
  seen="$seen ${r#* }"
  set -- $r
  if [ "$1" = false ]; then quiet=$r; break; fi
  sleep 1
done
if [ -z "$quiet" ]; then
  echo "SKIP: the machine was never quiet on cpu$cpu ($mode): the trial alone waited or was stolen from" \
       "more than $share of its timed region in 5 runs (share, involuntary switches:$seen)"
  exit 77
fi
set -- $quiet
q_share=$2 q_inv=$3

# timeout forwards the kill below to the loop; by itself it ends the loop after 20 s
"${rt[@]}" timeout 20 taskset -c "$cpu" bash -c 'while :; do :; done' &
hog=$!
sleep 0.3
"${rt[@]}" "$BKM_TUNE" "${trial[@]}" > hog.json 2> hog.err || fail "hog run: exit $?: $(tail -3 hog.err)"
kill "$hog"
wait "$hog" 2> /dev/null
hog=
r=$(check_run hog.json) || fail "hog run: noise evidence incomplete"
set -- $r
[ "$1" = true ] || fail "a trial sharing cpu$cpu with a busy loop is not marked disturbed: share $2 (quiet: $q_share)"
python3 -c "import sys; h, q = map(float, sys.argv[1:]); assert h > q + 0.2, (h, q)" "$2" "$q_share" ||
  fail "hog share $2 not clearly above the quiet share $q_share"
echo "$mode on cpu$cpu, threshold $share; quiet: share $q_share, $q_inv involuntary switches; with the hog: share $2, $3 involuntary switches"

echo PASS
