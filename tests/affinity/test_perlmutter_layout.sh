#!/bin/bash
# SPDX-License-Identifier: MIT
# The perlmutter-cpu profile's core and L3 layout against hwloc's own test topology of a 2 x AMD
# EPYC 7763 machine (hwloc 2.x's source tree from 2.8 on: tests/hwloc/x86/AMD-19h-Zen3-2xEpyc-7763.output,
# an XML file: its x86 backend's view of a real machine's CPUID; the .xml of hwloc 3's tree is in
# hwloc 3's XML format, which hwloc 2.x does not read). That machine is configured
# differently from Perlmutter (SMT off: 128 PUs; one NUMA node per socket), so only what the two
# share is compared: 2 packages of 64 cores, 16 L3 caches of 32 MiB, each shared by the same 8
# cores (compared by each core's first PU, which both number as the core's index), L2 512 KiB
# and L1d 32 KiB per core. The NUMA nodes and the PU numbering are checked by test_topo.
# Needs BKM_HWLOC_EPYC7763_XML (the file) and an XML this hwloc reads; exits 77 without them.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
xml=${BKM_HWLOC_EPYC7763_XML:-}
if [ -z "$xml" ] || [ ! -f "$xml" ]; then
    echo "SKIP: hwloc's 2 x EPYC 7763 test topology is not available (set BKM_HWLOC_EPYC7763_XML to" \
        "tests/hwloc/x86/AMD-19h-Zen3-2xEpyc-7763.output of an hwloc 2.x source tree)"
    exit 77
fi
if grep -q '<topology version="[3-9]' "$xml"; then
    echo "SKIP: $xml is in hwloc 3's XML format, which tune's hwloc 2.x does not read (use the .output of" \
        "an hwloc 2.x source tree)"
    exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 3
trap 'rm -rf "$tmp"' EXIT
"$T" topo --xml "$xml" --json >"$tmp/hwloc.json" || fail "tune topo --xml $xml: exit $?"
"$T" topo --node perlmutter-cpu --json >"$tmp/pm.json" || fail "tune topo --node perlmutter-cpu: exit $?"
grep -q "EPYC 7763" "$tmp/hwloc.json" || fail "$xml is not the 2 x EPYC 7763 topology"
python3 - "$tmp/hwloc.json" "$tmp/pm.json" <<'PY' || fail "the layouts differ (above)"
import json, sys

def cpus(text):
    out = set()
    for part in text.split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out

def layout(path):
    t = json.load(open(path))
    first_pu = {c["core"]: min(c["pus"]) for c in t["cores_list"]}
    groups = []
    for g in t["llc_groups"]:
        s = cpus(g)
        groups.append(sorted(first_pu[c["core"]] for c in t["cores_list"] if s & set(c["pus"])))
    caches = {(c["level"], c["type"]): (c["size_bytes"], c["count"]) for c in t["caches"] if c["type"] != "i"}
    pkg = {}
    for c in t["cores_list"]:
        pkg.setdefault(c["pkg"], []).append(first_pu[c["core"]])
    return t, groups, caches, {k: sorted(v) for k, v in pkg.items()}

h, hg, hc, hp = layout(sys.argv[1])
p, pg, pc, pp = layout(sys.argv[2])
bad = []
if (h["packages"], h["cores"]) != (2, 128) or (p["packages"], p["cores"]) != (2, 128):
    bad.append("packages x cores: hwloc %d x %d, profile %d x %d" % (h["packages"], h["cores"], p["packages"], p["cores"]))
if hp != pp:
    bad.append("the cores of each package differ: hwloc %s, profile %s" % (hp, pp))
if len(hg) != 16 or hg != pg:
    bad.append("L3 groups: hwloc %d %s, profile %d %s" % (len(hg), hg, len(pg), pg))
if any(len(g) != 8 for g in pg):
    bad.append("an L3 group of the profile is not 8 cores: %s" % pg)
for lv in ((3, "u"), (2, "u"), (1, "d")):
    if hc.get(lv, (None,))[0] != pc.get(lv, (None,))[0]:
        bad.append("L%d size: hwloc %s, profile %s" % (lv[0], hc.get(lv), pc.get(lv)))
if hc.get((3, "u"), (0, 0))[1] != 16 or pc.get((3, "u"), (0, 0))[1] != 16:
    bad.append("L3 count: hwloc %s, profile %s" % (hc.get((3, "u")), pc.get((3, "u"))))
for b in bad:
    print("  " + b)
if not bad:
    print("hwloc's 2 x EPYC 7763: %d packages, %d cores, %d L3 groups of %s cores; profile: the same" %
          (h["packages"], h["cores"], len(hg), sorted({len(g) for g in hg})))
sys.exit(1 if bad else 0)
PY
echo "ok"
