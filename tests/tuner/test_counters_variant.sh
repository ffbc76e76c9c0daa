#!/bin/bash
# SPDX-License-Identifier: MIT
# One counting variant, checked end to end through `tune run --json` (a trial's counters as stored):
#   no-component   PAPI without its perf_event component (hidden here: its sysctl is masked in a
#                  private mount namespace): every event unavailable with the component's reason,
#                  and the live counter tests skip rather than fail;
#   user-domain    a component whose default domain is user only, where a kernel-side event reads
#                  0 by construction (seen through PAPI itself): bkm never stores that 0;
#   kernel-domain  the kernel domain permitted (root, or perf_event_paranoid <= 1): kernel-side
#                  events counted there, within granularity of the OS's own figures;
#   unprivileged   a user without privileges under perf_event_paranoid >= 2 (root drops to nobody):
#                  kernel-side events unavailable naming the sysctl, task-clock still counted.
# Each variant says which one it found; it skips (77) only when its precondition is absent.
set -u
variant=${1:?usage: test_counters_variant.sh no-component|user-domain|kernel-domain|unprivileged}
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}"
: "${BKM_PAPI_PROBE:?BKM_PAPI_PROBE must point at bkm_papi_domain_probe}"
: "${BKM_TEST_COUNTERS:?BKM_TEST_COUNTERS must point at test_counters}"
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
skip() { echo "SKIP ($variant): $*"; exit 77; }
fail() { echo "FAIL ($variant): $*"; exit 1; }
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unreadable)

# tune run of a short GEMM with thousands of switches (blocktime 0: threads sleep between
# regions), its JSON in $tmp/r.json; "$@" is a prefix (a namespace, setpriv) and extra options
# go in $TUNE_EXTRA.
run_tune() {
  "$@" "$BKM_TUNE" run --workload gemm --param m=64 --param n=64 --param k=64 --threads 2 --blocktime 0 \
    --min-time 0.3 ${TUNE_EXTRA:-} --json > "$tmp/r.json" 2> "$tmp/r.err" ||
    fail "tune run: exit $?: $(tail -3 "$tmp/r.err")"
}

# The checks on $tmp/r.json, by variant; every variant also checks the invariant: no kernel-side
# event is presented as a value unless counted with the kernel domain and within granularity of
# the OS's figure.
check() {
  python3 - "$tmp/r.json" "$1" "$paranoid" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); what = sys.argv[2]; paranoid = sys.argv[3]
c = d["counters"]; tot = d["noise"]["totals"]; threads = len(d["noise"]["threads"])
vals, un, dis, dom, chk = c["values"], c["unavailable"], c["disagree"], c["domains"], c["os_checked"]
kernel_side = ("perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS", "perf::PAGE-FAULTS")
os_fig = {"perf::CONTEXT-SWITCHES": tot["voluntary_switches"] + tot["involuntary_switches"],
          "perf::CPU-MIGRATIONS": tot["migrations"], "perf::PAGE-FAULTS": tot["minor_faults"] + tot["major_faults"]}
def gran(a, b): return 4 * threads + max(a, b) // 20
print("kernel_domain: %s; values %s; unavailable %s; disagree %s" % (c["kernel_domain"], vals,
      {k: v[:70] for k, v in un.items() if k.startswith("perf")}, list(dis)))
assert d["status"] == "ok", d["status"]
for e in (k for k in kernel_side if k in vals or k in un or k in dis):
    if e in vals:   # the invariant: a presented value is a kernel-domain count that the OS confirms
        assert "kernel" in dom[e], "%s presented as a value in the %s domain" % (e, dom.get(e))
        assert e in chk and chk[e]["os"] == os_fig[e], (e, chk.get(e), os_fig[e])
        assert abs(vals[e] - os_fig[e]) <= gran(vals[e], os_fig[e]), (e, vals[e], os_fig[e])
    assert (e in vals) + (e in un) + (e in dis) == 1, "%s in exactly one state" % e
if what == "no-component":
    assert not vals and not dis, "nothing counted without a component"
    for e, why in un.items():
        if e.startswith("perf::"):
            assert "perf_event component is disabled" in why, (e, why)
elif what == "kernel-domain":
    assert c["kernel_domain"] == "permitted", c["kernel_domain"]
    assert os_fig["perf::CONTEXT-SWITCHES"] >= 100, "blocktime 0 gives many switches: %d" % os_fig["perf::CONTEXT-SWITCHES"]
    for e in kernel_side:
        assert e in vals, "%s counted in the kernel domain (%s)" % (e, un.get(e) or dis.get(e))
        assert dom[e] == "user+kernel", dom[e]
    assert vals["perf::CONTEXT-SWITCHES"] > 0
    print("context switches: PAPI %d, OS %d (granularity %d)" % (vals["perf::CONTEXT-SWITCHES"],
          os_fig["perf::CONTEXT-SWITCHES"], gran(vals["perf::CONTEXT-SWITCHES"], os_fig["perf::CONTEXT-SWITCHES"])))
elif what == "unprivileged":
    assert c["kernel_domain"].startswith("not permitted"), c["kernel_domain"]
    for e in kernel_side:
        assert e in un and ("perf_event_paranoid = %s" % paranoid) in un[e], (e, un.get(e))
    assert "perf::TASK-CLOCK" in vals or "perf::TASK-CLOCK" in dis, "task-clock needs no kernel domain"
elif what == "user-domain-asked":
    e = "perf::CONTEXT-SWITCHES:u=1"
    assert e in un and "reads 0 by construction" in un[e], un
    assert not vals and not dis
    assert c["kernel_domain"] == "not asked for", c["kernel_domain"]
elif what == "user-domain":
    e = "perf::CONTEXT-SWITCHES"
    assert e in vals or (e in un and "perf_event_paranoid" in un[e]), (vals, un, dis)
    assert vals.get(e, 1) != 0, "a user-domain 0 stored as a measurement"
PY
}

probe() { "$@" "$BKM_PAPI_PROBE" > "$tmp/probe.json" 2>&1 || fail "papi probe: $(cat "$tmp/probe.json")"; }
probe_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$tmp/probe.json" "$1"; }

case $variant in
no-component)
  [ "$(id -u)" = 0 ] || skip "hiding PAPI's component needs a private mount namespace (root); uid $(id -u)"
  command -v unshare > /dev/null || skip "unshare (util-linux) is not installed"
  # A copy of /proc/sys/kernel without perf_event_paranoid: PAPI's perf_event component reads
  # that file to detect kernel support, and disables itself without it (the earlier guests'
  # state); the rest is kept for the libraries that read it (e.g. random/boot_id).
  mkdir -p "$tmp/kernel"
  (cd /proc/sys/kernel && find . -maxdepth 2 -type f -readable ! -name 'perf_event*' 2> /dev/null) |
    while read -r f; do mkdir -p "$tmp/kernel/$(dirname "$f")"; timeout 1 cat "/proc/sys/kernel/$f" > "$tmp/kernel/$f" 2> /dev/null; done
  hide=(unshare -m --propagation private bash -c 'mount --bind "$0" /proc/sys/kernel && exec "$@"' "$tmp/kernel")
  "${hide[@]}" true 2> "$tmp/ns.err" || skip "cannot mask a file in a private mount namespace here: $(cat "$tmp/ns.err")"
  probe "${hide[@]}"
  [ "$(probe_field component)" = None ] || fail "the component is still enabled under the mask: $(cat "$tmp/probe.json")"
  echo "variant: no PAPI component ($(probe_field error))"
  run_tune "${hide[@]}"
  check no-component || fail "counters without a component"
  "${hide[@]}" "$BKM_TEST_COUNTERS" live > "$tmp/live.out" 2>&1
  rc=$?
  [ $rc = 77 ] || fail "test_counters live without a component: exit $rc (77 expected): $(tail -3 "$tmp/live.out")"
  echo "test_counters live skips there: $(head -1 "$tmp/live.out")"
  ;;
user-domain)
  probe
  [ "$(probe_field component)" = perf_event ] || skip "PAPI has no perf_event component here ($(probe_field error))"
  [ "$(probe_field user_only)" = True ] || skip "PAPI's default domain here is not user only ($(probe_field default_domain))"
  papi=$(probe_field papi) os=$(probe_field rusage)
  [ "$papi" = 0 ] && [ "$os" -ge 10 ] ||
    skip "in PAPI's default (user) domain perf::CONTEXT-SWITCHES read $papi against the OS's $os: not this variant"
  echo "variant: user-domain component (PAPI's default domain counted $papi context switches, the OS $os)"
  TUNE_EXTRA="--counters perf::CONTEXT-SWITCHES:u=1" run_tune
  check user-domain-asked || fail "a kernel-side event asked for in the user domain only"
  run_tune
  check user-domain || fail "the default counters on a user-domain component"
  ;;
kernel-domain)
  probe
  [ "$(probe_field component)" = perf_event ] || skip "PAPI has no perf_event component here ($(probe_field error))"
  [ "$(id -u)" = 0 ] || { [ "$paranoid" != unreadable ] && [ "$paranoid" -le 1 ]; } ||
    skip "the kernel domain is not permitted here (uid $(id -u), perf_event_paranoid $paranoid)"
  echo "variant: kernel domain permitted (uid $(id -u), perf_event_paranoid $paranoid)"
  run_tune
  check kernel-domain || fail "kernel-domain counting"
  ;;
unprivileged)
  probe
  [ "$(probe_field component)" = perf_event ] || skip "PAPI has no perf_event component here ($(probe_field error))"
  [ "$paranoid" != unreadable ] && [ "$paranoid" -ge 2 ] ||
    skip "perf_event_paranoid is $paranoid: an unprivileged user may count the kernel domain here"
  [ "$(id -u)" = 0 ] || skip "dropping to nobody needs root (uid $(id -u))"
  command -v setpriv > /dev/null || skip "setpriv (util-linux) is not installed"
  id nobody > /dev/null 2>&1 || skip "there is no user nobody"
  drop=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --reset-env)
  chmod 755 "$tmp"
  (cd "$tmp" && "${drop[@]}" "$BKM_TUNE" version) > /dev/null 2>&1 ||
    skip "nobody cannot run $BKM_TUNE (a build tree it cannot read)"
  echo "variant: unprivileged (nobody, perf_event_paranoid $paranoid)"
  cd "$tmp" || fail "cd $tmp"
  run_tune "${drop[@]}"
  check unprivileged || fail "counters of an unprivileged user"
  "${drop[@]}" "$BKM_TEST_COUNTERS" live > "$tmp/live.out" 2>&1 ||
    fail "test_counters live as nobody: exit $?: $(grep -E 'Assert|variant' "$tmp/live.out" | head -3)"
  grep -m1 variant: "$tmp/live.out"
  ;;
*) echo "unknown variant '$variant'"; exit 2 ;;
esac
echo "PASS ($variant)"
