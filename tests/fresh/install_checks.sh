#!/bin/bash
# SPDX-License-Identifier: MIT
# Inside a fresh Debian 12 (tests/fresh/install.sh): bkm installed under PREFIX, used as a user of
# an HPC centre would, through Lmod: `module use PREFIX/share/modulefiles; module load bkm`, then
# tune version (installed under PREFIX, one OpenMP runtime), tune --help, a gemm trial, a KNL
# batch script that runs PREFIX's tune, and `man tune`. Needs lmod and man-db installed.
#   install_checks.sh PREFIX
# no set -u: Lmod's shell functions read variables that may be unset
P=${1:?usage: install_checks.sh PREFIX}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1

for f in /etc/profile.d/lmod.sh /usr/share/lmod/lmod/init/bash; do
  type module > /dev/null 2>&1 && break
  [ -f "$f" ] && . "$f" > /dev/null 2>&1
done
type module > /dev/null 2>&1 || { echo "FAIL: no Lmod (the module command) after installing lmod" >&2; exit 1; }
module use "$P/share/modulefiles" || fail "module use $P/share/modulefiles"
module load bkm || fail "module load bkm"
module list 2>&1
[ "$(command -v tune)" = "$P/bin/tune" ] || fail "tune on PATH is '$(command -v tune)', not $P/bin/tune"
[ "${BKM_HOME:-}" = "$P" ] || fail "BKM_HOME is '${BKM_HOME:-}', not $P"

tune version | tee version.out || fail "tune version: exit $?"
grep -qxF "executable $P/bin/tune (installed under $P)" version.out || fail "tune version does not say installed under $P"
grep -q "^openmp runtimes mapped: [^ ]*libomp[^ ]*$" version.out || fail "tune version: not exactly one runtime, libomp"
tune --help > help.out || fail "tune --help: exit $?"
grep -q "^  sweep " help.out || fail "tune --help lists no commands"
tune run --workload gemm --param m=64 --param n=64 --param k=64 --threads 1 --min-time 0.05 > run.out 2>&1 ||
  fail "tune run --workload gemm: $(tail -3 run.out)"
grep -q "^status *ok" run.out || fail "tune run: $(head -3 run.out)"
tune sbatch --node knl --workload gemm --default -o knl.sbatch > /dev/null || fail "tune sbatch: exit $?"
grep -qxF "TUNE=\${BKM_TUNE:-'$P/bin/tune'}" knl.sbatch || fail "the script runs $(grep TUNE= knl.sbatch)"
grep -q "^# Runs $P/bin/tune (bkm .* installed under $P)" knl.sbatch || fail "the script's header: $(sed -n 2,3p knl.sbatch)"

[ "$(man -w tune)" = "$P/share/man/man1/tune.1" ] || fail "man -w tune: '$(man -w tune 2>&1)'"
man tune > man.out 2> man.err
head -n 12 man.out
grep -q "COMMAND REFERENCE" man.out || fail "man tune shows no page: $(cat man.err)"
grep -q "tune sbatch" man.out || fail "man tune has no tune sbatch section"

[ "$fails" = 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "install checks: ok under $P"
