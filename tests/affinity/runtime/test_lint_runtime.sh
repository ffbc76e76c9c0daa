#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `tune lint` names the OpenMP runtime of the program on each srun line and flags the variables it
# ignores: the seed's Haswell and KNL scripts with `python benchmark.py` replaced by a program built
# with gcc (libgomp: the KMP_* lines do nothing) and, as the control, with clang (libomp: they act)
# and with bkm's libgomp -> libomp link; an interpreter (cannot tell statically; --probe starts it);
# wrappers and srun options before the program; the script's own LD_LIBRARY_PATH; and what lint
# never does: run anything without --probe, or anything but the program with it.
#   test_lint_runtime.sh FIXTURES   (FIXTURES: build_fixtures.sh's output folder)
set -euo pipefail
fix=$1
tune=${BKM_TUNE:?}
data=${BKM_SOURCE_DIR:?}/tests/slurm/data
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-lint-rt.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect RC CMD...: run, check the exit code, keep stdout/stderr in out/err
  local want=$1 rc
  shift
  set +e
  "$@" >out 2>err
  rc=$?
  set -e
  [ "$rc" = "$want" ] || { cat out err >&2; fail "'$*': exit $rc, expected $want"; }
}
has() { grep -qF -- "$1" out || { cat out >&2; fail "${2:-output} lacks: $1"; }; }
hasnt() { ! grep -qF -- "$1" out || { cat out >&2; fail "${2:-output} has: $1"; }; }

mkdir jobs
cp "$fix/prog/omp_gcc" jobs/app
cp "$fix/prog/omp_clang" jobs/app_clang
cp "$fix/prog/gomp_rt" jobs/app_bkm
cp "$fix/prog/omp_ctypes.py" jobs/omp_ctypes.py
for node in haswell knl; do
  for prog in app app_clang app_bkm; do
    sed "s#python benchmark.py#./$prog#" "$data/seed_$node.sbatch" >"jobs/${node}_$prog.sbatch"
  done
  sed "s#python benchmark.py#python3 omp_ctypes.py wait#" "$data/seed_$node.sbatch" >"jobs/${node}_py.sbatch"
done

# --- the done-when case: gcc's program loads libgomp; the seed's KMP_* lines are ignored
gomp="./app loads libgomp.so.1 (GNU OpenMP)"
place="its placement variables are OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY"
expect 1 "$tune" lint jobs/haswell_app.sbatch
has "jobs/haswell_app.sbatch:15: note: ./app loads libgomp.so.1 (GNU OpenMP: app -> libgomp.so.1)"
has "jobs/haswell_app.sbatch:12: error: KMP_AFFINITY is ignored: $gomp; $place"
has "jobs/haswell_app.sbatch:13: error: KMP_BLOCKTIM is read by no OpenMP runtime"   # the seed's typo, as before
has "the placement is not explained: the program loads GNU libgomp only"
expect 1 "$tune" lint jobs/knl_app.sbatch
has "jobs/knl_app.sbatch:11: error: KMP_AFFINITY is ignored: $gomp; $place"
wait="its wait variables are OMP_WAIT_POLICY/GOMP_SPINCOUNT"
has "jobs/knl_app.sbatch:12: error: KMP_BLOCKTIME is ignored: $gomp; $wait"
hasnt "OMP_NUM_THREADS is ignored"
has "2 error(s)"
expect 1 "$tune" lint jobs/knl_app.sbatch --json
python3 - <<'EOF' || fail "lint --json: programs and ignored-variable findings"
import json
j = json.load(open("out"))
p = j["programs"]
assert len(p) == 1 and p[0]["line"] == 14 and p[0]["program"] == "./app" and p[0]["kind"] == "libgomp", p
rt = p[0]["static"]["runtimes"]
assert [r["soname"] for r in rt] == ["libgomp.so.1"] and rt[0]["chain"] == ["app", "libgomp.so.1"], rt
ign = [(f["line"], f["severity"]) for f in j["findings"] if f["code"] == "ignored-variable"]
assert ign == [(11, "error"), (12, "error")], ign
assert j["placement"] is None and p[0]["probe"] is None
EOF

# --- the controls: clang's program and bkm's libgomp.so.1 -> libomp link read KMP_*
for prog in app_clang app_bkm; do
  expect 0 "$tune" lint "jobs/knl_$prog.sbatch"
  has "./$prog loads "
  has "(LLVM OpenMP"
  hasnt "ignored-variable"
  has "placement of rank 0 on knl"
done
expect 1 "$tune" lint jobs/haswell_app_clang.sbatch   # only the seed's typo
hasnt "ignored-variable"

# --- an interpreter: cannot tell statically; --probe starts it and sees libgomp
expect 0 "$tune" lint jobs/knl_py.sbatch
has "an interpreter"
has "cannot be told"
has "tune lint --probe"
hasnt "ignored-variable"
expect 1 "$tune" lint jobs/knl_py.sbatch --probe --probe-timeout 2
has "note: started under --probe, python3 mapped "
has "libgomp.so.1.0.0 (GNU OpenMP)"
has "jobs/knl_py.sbatch:11: error: KMP_AFFINITY is ignored: python3 loads libgomp.so.1 (GNU OpenMP)"
has "jobs/knl_py.sbatch:12: error: KMP_BLOCKTIME is ignored"

# --- srun options with values, wrappers, the script's LD_LIBRARY_PATH, an absent program
cat >jobs/forms.sbatch <<EOF
#!/bin/bash
#SBATCH -C knl
export OMP_NUM_THREADS=4
export KMP_AFFINITY=compact
srun -n 1 -c 4 --cpu-bind=cores --mem 4G -J name -u numactl --interleave=all env OMP_DISPLAY_ENV=false ./app
srun -n 1 -c 4 --cpu-bind=cores taskset -c 0-3 ./app_clang
srun -n 1 -c 4 --cpu-bind=cores ./nosuch
srun -n 1 -c 4 --cpu-bind=cores \$EXE
EOF
expect 1 "$tune" lint jobs/forms.sbatch
has "forms.sbatch:5: note: ./app loads libgomp.so.1"
has "forms.sbatch:4: error: KMP_AFFINITY is ignored: ./app loads libgomp.so.1"
has "forms.sbatch:6: note: ./app_clang loads libomp.so.5"
has "forms.sbatch:7: note: srun runs './nosuch'"
has "forms.sbatch:8: note: srun runs '\$EXE', which depends on the shell"
has "placement of rank 0"   # not every program is libgomp-only: the libomp explanation stands
cp "$fix/ld/exe_runpath" jobs/exe_runpath
cat >jobs/llp.sbatch <<EOF
#!/bin/bash
export KMP_AFFINITY=compact
export LD_LIBRARY_PATH=$fix/ld/dirB
srun -n 1 ./exe_runpath
EOF
expect 0 "$tune" lint jobs/llp.sbatch   # libdep.so from dirB through LD_LIBRARY_PATH: libomp
has "./exe_runpath loads libomp.so.5"
sed -i '/LD_LIBRARY_PATH/d' jobs/llp.sbatch
expect 1 "$tune" lint jobs/llp.sbatch   # through its RUNPATH: dirA's, built by gcc: libgomp
has "./exe_runpath loads libgomp.so.1 (GNU OpenMP: exe_runpath -> libdep.so -> libgomp.so.1)"

# --- lint runs nothing without --probe, and nothing but the program with it
cat >jobs/safe.sbatch <<EOF
#!/bin/bash
export KMP_AFFINITY=compact
srun -n 1 ./app wait; touch $w/PWNED1
srun -n 1 \$(touch $w/PWNED2) ./app
srun -n 1 ./app "\$(touch $w/PWNED3)"
EOF
expect 1 "$tune" lint jobs/safe.sbatch
expect 1 "$tune" lint jobs/safe.sbatch --probe --probe-timeout 0.5
has "safe.sbatch:3: note: started under --probe, ./app mapped"
has "safe.sbatch:5: note: ./app is not started: its command line depends on the shell"
for f in PWNED1 PWNED2 PWNED3; do [ ! -e "$w/$f" ] || fail "lint ran $f"; done

# --- bad option values
expect 2 "$tune" lint jobs/knl_app.sbatch --probe-timeout 0
expect 2 "$tune" lint jobs/knl_app.sbatch --probe-timeout soon
echo "ok"
