#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a temporary prefix, the installed tree moved to another path (the
# original removed), then run from an empty folder with no variable naming the build:
#   - the layout of docs/install.md, exactly: tune, the team shim, the runtime link, the man page,
#     the module file, the documentation; nothing else (no tune_testhooks, no test or benchmark
#     program), and the installed tune has no --inject (tune_testhooks has, as the control);
#   - no path into the source or build tree: in tune's DT_RPATH (DT_RPATH, not DT_RUNPATH, with
#     $ORIGIN/../LIBDIR/bkm/rt first), in any installed file outside debug sections, or in what
#     the dynamic loader searches and opens (LD_DEBUG=libs); no DT_RPATH entry of the installed or
#     the build tree's tune is relative to the current folder (an empty entry reads as ".");
#   - tune version (the binary's own view: installed under the prefix, its shim, one runtime),
#     tune run --workload gemm (a real trial in the installed worker), tune run -- PROGRAM (an
#     OpenMP program gets the installed team shim preloaded), tune sbatch (the script
#     runs the installed tune by its path and says so; the build tree's tune says it is one);
#   - one OpenMP runtime, by the checks of test_single_runtime on the installed binary: under
#     KMP_AFFINITY=granularity=fine,compact and under OMP_PLACES=threads OMP_PROC_BIND=close the
#     probe maps libomp only, no other thread, the team bound as planned; the oneDNN backend's
#     trial verified; and the negative control: the same tree without its rt folder maps GNU
#     libgomp too (the checks see it, and tune version exits 3).
set -u
. "$(dirname "$0")/lib.sh"
: "${BKM_TUNE:?}" "${BKM_TUNE_TESTHOOKS:?}" "${BKM_LIBOMP_REAL:?}"

P=$tmp/prefix
install_moved "$P"
T=$P/$BKM_INSTALL_BINDIR/tune
run=$tmp/run
mkdir -p "$run"
cd "$run" || exit 1

# --- the layout, exactly --------------------------------------------------------------------
expected=("$BKM_INSTALL_BINDIR/tune" "$BKM_INSTALL_PKGLIBDIR/libbkm_team.so" "$BKM_INSTALL_RT_DIR/libgomp.so.1"
          "$BKM_INSTALL_MANDIR/man1/tune.1" "$BKM_INSTALL_MODULEDIR/$BKM_VERSION.lua" "$BKM_INSTALL_DOCDIR"/README.md)
for d in "$BKM_SOURCE_DIR"/docs/*.md; do
  expected+=("$BKM_INSTALL_DOCDIR/docs/$(basename "$d")")
done
for f in "${expected[@]}"; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
while IFS= read -r f; do
  rel=${f#"$P"/}
  ok=0
  for e in "${expected[@]}"; do [ "$rel" = "$e" ] && ok=1; done
  [ $ok = 1 ] || fail "installed but not in the layout: $rel"
done < <(find "$P" ! -type d)
[ -L "$P/$BKM_INSTALL_RT_DIR/libgomp.so.1" ] && [ "$(readlink "$P/$BKM_INSTALL_RT_DIR/libgomp.so.1")" = "$BKM_LIBOMP_REAL" ] ||
  fail "$BKM_INSTALL_RT_DIR/libgomp.so.1 is not a link to $BKM_LIBOMP_REAL: $(ls -l "$P/$BKM_INSTALL_RT_DIR" 2>&1)"
opts() { "$1" run --help --json | python3 -c 'import json,sys; print(" ".join(o["name"] for o in json.load(sys.stdin)["options"]))'; }
case " $(opts "$BKM_TUNE_TESTHOOKS") " in *" inject "*) ;; *) fail "control: tune_testhooks run has no --inject" ;; esac
case " $(opts "$T") " in *" inject "*) fail "the installed tune has the test hooks (--inject)" ;; esac

# --- no path into the source or build tree ----------------------------------------------------
dyn=$(readelf -d "$T")
grep -q '(RUNPATH)' <<<"$dyn" && fail "tune has a DT_RUNPATH (it does not reach oneDNN's libgomp): $dyn"
rpath=$(sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p' <<<"$dyn")
[ "${rpath%%:*}" = "\$ORIGIN/$BKM_RT_FROM_BINDIR" ] || fail "tune's DT_RPATH is '$rpath', want \$ORIGIN/$BKM_RT_FROM_BINDIR first"
# no run path entry the loader would read relative to the current folder (an empty one is ".")
for f in "$T" "$BKM_TUNE" "$BKM_TUNE_TESTHOOKS"; do
  r=$(readelf -d "$f" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
  IFS=: read -r -a entries <<<"$r:"
  for e in "${entries[@]}"; do
    case $e in /* | \$ORIGIN/*) ;; *) fail "$f: DT_RPATH '$r' has the entry '$e' (relative to the current folder)" ;; esac
  done
done
for f in "$T" "$P/$BKM_INSTALL_PKGLIBDIR/libbkm_team.so"; do
  d=$(readelf -d "$f")
  grep -E '\((RPATH|RUNPATH)\)' <<<"$d" | grep -qF -e "$BKM_BUILD_DIR" -e "$BKM_SOURCE_DIR" &&
    fail "$(basename "$f") has a run path into the build: $(grep -E 'PATH' <<<"$d")"
done
# every installed file, ELF files without their debug sections: the source and build folders as
# whole path names, except in clang's OpenMP source locations (";FILE;FUNCTION;LINE;COLUMN;;",
# written beside -g debug information and read only in libomp's messages) and, in a sanitizer
# build (never shipped), the source file names (FILE, FILE:LINE:COLUMN) ASan and UBSan keep for
# their reports
paths_py='
import re, sys
sanitized = sys.argv[2] == "1"
dirs = [d.encode() for d in sys.argv[3:] if d]
data = open(sys.argv[1], "rb").read()
for d in dirs:
    for m in re.finditer(rb"(?<![\w.\-/])" + re.escape(d) + rb"(?=/|[\x00:;\s\x22\x27]|$)", data):
        if data[m.start() - 1:m.start()] == b";" and re.match(rb"/[^;\x00]*;[^;\x00]*;\d+;\d+;;", data[m.end():]):
            continue
        if sanitized and re.match(rb"/[\w./+-]*\.[ch](\x00|:\d+:\d+)", data[m.end():]):
            continue
        print(data[max(0, m.start() - 40):m.end() + 40].decode("ascii", "replace").replace("\x00", " "))
        sys.exit(1)
'
sanitized=0
grep -qa __asan_init "$T" && sanitized=1 && echo "note: a sanitizer build: the source file names of its reports are allowed"
while IFS= read -r f; do
  g=$f
  if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = "177ELF" ]; then
    objcopy --strip-debug "$f" "$tmp/nodebug" || { fail "objcopy $f"; continue; }
    g=$tmp/nodebug
  fi
  hit=$(python3 -c "$paths_py" "$g" "$sanitized" "$BKM_SOURCE_DIR" "$BKM_BUILD_DIR") ||
    fail "${f#"$P"/} holds a path into the build: $hit"
done < <(find "$P" -type f)
"${clean_env[@]}" LD_DEBUG=libs "$T" version > /dev/null 2> "$tmp/ld.log" || fail "LD_DEBUG=libs tune version: exit $?"
grep -qF -e "$BKM_BUILD_DIR" -e "$BKM_SOURCE_DIR" "$tmp/ld.log" &&
  fail "the loader searched the build tree: $(grep -F -e "$BKM_BUILD_DIR" -e "$BKM_SOURCE_DIR" "$tmp/ld.log" | head -2)"
# the loader tries libgomp.so.1 once, in the runtime folder, and takes it there
tried=$(grep -o 'trying file=.*libgomp\.so\.1$' "$tmp/ld.log" | sed 's/^trying file=//')
[ "$tried" = "$P/$BKM_INSTALL_BINDIR/$BKM_RT_FROM_BINDIR/libgomp.so.1" ] ||
  fail "the loader's libgomp.so.1: tried '$tried', want only $P/$BKM_INSTALL_BINDIR/$BKM_RT_FROM_BINDIR/libgomp.so.1"

# --- the installed tune, run from the prefix ---------------------------------------------------
"${clean_env[@]}" "$T" version > version.out 2> version.err || fail "tune version: exit $? $(cat version.err)"
grep -qxF "executable $T (installed under $P)" version.out || fail "tune version: $(cat version.out)"
grep -qxF "team shim $P/$BKM_INSTALL_PKGLIBDIR/libbkm_team.so" version.out || fail "tune version (shim): $(cat version.out)"
grep -qxF "openmp runtimes mapped: $BKM_LIBOMP_REAL" version.out || fail "tune version (runtime): $(cat version.out)"
"$BKM_TUNE" version > build-version.out || fail "build tree tune version"
grep -q "^executable $BKM_TUNE (a build tree, not installed)$" build-version.out ||
  fail "the build tree's tune claims: $(grep executable build-version.out)"
"${clean_env[@]}" "$T" --help > help.out || fail "tune --help: exit $?"
grep -q "^  version " help.out || fail "tune --help lists no commands"

"${clean_env[@]}" "$T" run --workload gemm --param m=64 --param n=64 --param k=64 --threads 1 --min-time 0.05 \
  > run.out 2> run.err || fail "tune run --workload gemm: exit $? $(tail -3 run.err)"
grep -q "^status *ok" run.out || fail "tune run: $(head -3 run.out)"

# a program bkm did not write gets the installed team shim preloaded (it names the OpenMP team)
if [ -n "${BKM_OMP_PROGRAM:-}" ] && [ -x "$BKM_OMP_PROGRAM" ]; then
  "${clean_env[@]}" "$T" run --threads 2 --json -- "$BKM_OMP_PROGRAM" 0.2 > prog.json 2> prog.err ||
    fail "tune run -- $BKM_OMP_PROGRAM: exit $? $(tail -3 prog.err)"
  grep -q "team shim" prog.err && fail "tune run -- PROGRAM: $(grep 'team shim' prog.err)"
  python3 -c '
import json, sys
d = json.load(open("prog.json")); shim = d["binding"]["team"]["shim"]
sys.exit(0 if d["status"] == "ok" and shim["started"] and shim["records"] > 0 else "program trial: %s, shim %s" % (d["status"], shim))' ||
    fail "the team shim did not run in the program"
else
  echo "note: no OpenMP test program (BKM_OMP_PROGRAM '${BKM_OMP_PROGRAM:-}'): the installed team shim is not run"
fi

"${clean_env[@]}" "$T" sbatch --node knl --workload gemm --default -o knl.sbatch > sbatch.out 2>&1 ||
  fail "tune sbatch: exit $? $(cat sbatch.out)"
grep -qxF "TUNE=\${BKM_TUNE:-'$T'}" knl.sbatch || fail "the script does not run $T: $(grep TUNE= knl.sbatch)"
grep -qxF "# Runs $T (bkm $BKM_VERSION installed under $P); BKM_TUNE=PATH in the job's environment runs another." \
  knl.sbatch || fail "the script's header does not say which tune: $(sed -n 2,4p knl.sbatch)"
bash -n knl.sbatch || fail "the script is not valid bash"
(unset BKM_TUNE; eval "$(grep '^TUNE=' knl.sbatch)"; "$TUNE" version > /dev/null) || fail "the script's \$TUNE does not run"
"$BKM_TUNE" sbatch --node knl --workload gemm --default -o build.sbatch > /dev/null 2>&1 || fail "build tree tune sbatch"
grep -qF "# Runs $BKM_TUNE (a build tree, not an installed bkm" build.sbatch ||
  fail "the build tree's script header: $(sed -n 2,3p build.sbatch)"

# --- one OpenMP runtime (test_single_runtime's checks, on the installed binary) ----------------
# probe_check NAME EXPECT TUNE ENV...: tune affinity probe --threads 2 under ENV; EXPECT one (libomp
# only, no foreign thread, two tasks, the team bound to PLANNED) or two (the control: libgomp too).
# as in test_single_runtime, libomp reads hwloc's topology (a VM's CPUID may order cores otherwise)
"$T" topo --cpuinfo > "$tmp/cpuinfo" || fail "tune topo --cpuinfo"
topo_env=(KMP_TOPOLOGY_METHOD=cpuinfo "KMP_CPUINFO_FILE=$tmp/cpuinfo")
planned=$("$T" affinity explain --threads 2 --json granularity=fine,compact |
          python3 -c 'import json,sys; print(";".join(",".join(map(str, t["cpus"])) for t in json.load(sys.stdin)["plan"]))')
cpus=$(nproc)
check_py='
import json, sys
name, want, planned, cpus, libomp = sys.argv[1:6]
p = json.load(sys.stdin)
team = [t["mask"] for t in p["team"]]
bad = []
if want == "one":
    if p["runtimes"] != [libomp] or not p["libomp"] or p["libgomp"]:
        bad.append("runtimes %s, want [%s]" % (p["runtimes"], libomp))
    if p["foreign"] or p["tasks"] != 2 or p["threads"] != 2:
        bad.append("%d threads, %d tasks, foreign %s" % (p["threads"], p["tasks"], p["foreign"]))
    if int(cpus) >= 2 and team != planned.split(";"):
        bad.append("team on %s, planned %s" % (team, planned))
else:
    if not p["libgomp"] or len(p["runtimes"]) != 2:
        bad.append("control: runtimes %s, the real libgomp not seen" % p["runtimes"])
    if int(cpus) >= 2 and team[0] != team[1]:
        print("note %s: threads on %s (libgomp, loaded behind oneDNN, did not pin the main thread here)" % (name, team))
for b in bad:
    print("FAIL %s: %s" % (name, b), file=sys.stderr)
sys.exit(1 if bad else 0)
'
probe_check() {
  local name=$1 want=$2 t=$3
  shift 3
  "${clean_env[@]}" "${topo_env[@]}" "$@" "$t" affinity probe --threads 2 --json > "$tmp/probe.json" 2> "$tmp/probe.err" ||
    { fail "$name: tune affinity probe: exit $? $(cat "$tmp/probe.err")"; return; }
  python3 -c "$check_py" "$name" "$want" "$planned" "$cpus" "$BKM_LIBOMP_REAL" < "$tmp/probe.json" ||
    fail "$name: $(cat "$tmp/probe.json")"
}
[ -n "$planned" ] || fail "tune affinity explain --threads 2 --json gave no plan"
[ "$cpus" -ge 2 ] || echo "note: $cpus CPU: the binding part of the runtime checks needs 2 and is left out"
probe_check "A KMP_AFFINITY" one "$T" KMP_AFFINITY=granularity=fine,compact OMP_NUM_THREADS=2
probe_check "B OMP_PLACES/OMP_PROC_BIND" one "$T" OMP_PLACES=threads OMP_PROC_BIND=close OMP_NUM_THREADS=2
"${clean_env[@]}" "$T" run --workload gemm --backend onednn --param m=64 --param n=64 --param k=64 --threads 2 \
  --affinity granularity=fine,compact --min-time 0.05 --json > onednn.json 2> onednn.err ||
  fail "tune run --backend onednn: exit $? $(tail -3 onednn.err)"
python3 -c '
import json, sys
d = json.load(open("onednn.json")); b = d.get("binding", {})
ok = d.get("status") == "ok" and b.get("ok") and b.get("runtimes") == sys.argv[1] and b.get("foreign_threads") == 0
sys.exit(0 if ok else "oneDNN trial: status %s, binding %s" % (d.get("status"), b))' "$BKM_LIBOMP_REAL" || fail "oneDNN trial"
# control: the same tree without the runtime folder its DT_RPATH names
cp -a "$P" "$tmp/nort" && rm -rf "$tmp/nort/$BKM_INSTALL_RT_DIR"
probe_check "C (control) without $BKM_INSTALL_RT_DIR" two "$tmp/nort/$BKM_INSTALL_BINDIR/tune" OMP_PLACES=threads \
  OMP_PROC_BIND=close OMP_NUM_THREADS=2
"${clean_env[@]}" "$tmp/nort/$BKM_INSTALL_BINDIR/tune" version > /dev/null 2>&1
[ $? = 3 ] || fail "control: tune version without $BKM_INSTALL_RT_DIR does not exit 3"

finish "installed under a moved prefix: layout, no build path, version, run, sbatch, one OpenMP runtime"
