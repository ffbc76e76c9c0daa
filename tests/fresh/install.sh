#!/bin/bash
# SPDX-License-Identifier: MIT
# The install paths of docs/install.md on freshly debootstrapped Debian 12 machines
# (fresh-run.sh), in two steps:
#   1. a clean clone: scripts/install.sh /opt/bkm (the build packages, the build, cmake
#      --install), then Debian's lmod and man-db and tests/fresh/install_checks.sh /opt/bkm
#      (module use/load, tune version, a trial, a batch script, man tune), the tests labelled
#      install (test_install_module with this Lmod), then scripts/package.sh;
#   2. another fresh machine that gets only that .deb (a throw-away git repository holding it and
#      the checks, since fresh-run.sh starts from a clone): `apt-get install ./bkm_*.deb` pulls
#      its Depends from the mirror, `tune --help` runs, then lmod, man-db and the same checks
#      with PREFIX /usr.
# Prints how long each step took. FRESH (fresh-run.sh's work folder) is passed on.
set -u
src=${BKM_SOURCE_DIR:?BKM_SOURCE_DIR not set}
tool=${BKM_FRESH_TOOL:-$src/../shared/tools/fresh-run.sh}
[ "${BKM_FRESH:-0}" = 1 ] || { echo "skip: set BKM_FRESH=1 to run (about 15 minutes, root, debootstrap)"; exit 77; }
[ -x "$tool" ] || [ -f "$tool" ] || { echo "skip: $tool not found (the shared tools are beside the project)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: fresh-run.sh needs root (chroot, mounts)"; exit 77; }
fresh=${FRESH:-${TMPDIR:-/tmp}/fresh}
logs=${TMPDIR:-/tmp}
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-fresh-install.XXXXXX")
trap 'rm -rf "$w"' EXIT
apt_quiet='{ export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq --no-install-recommends lmod man-db >/dev/null; }'

step() { # step NAME PROJECT CMD: run CMD in a fresh machine with a clone of PROJECT; 0 when it passed
  local name=$1 project=$2 cmd=$3 t0 r
  t0=$(date +%s)
  (cd "$project" && FRESH=$fresh PROJECT="$project" bash "$tool" "$cmd") > "$logs/bkm-fresh-$name.log" 2>&1
  r=$?
  echo "fresh Debian 12: $name exit $r in $(($(date +%s) - t0)) s (log: $logs/bkm-fresh-$name.log)"
  tail -n 8 "$logs/bkm-fresh-$name.log"
  return $r
}

step install-prefix "$src" "scripts/install.sh /opt/bkm && $apt_quiet && bash tests/fresh/install_checks.sh /opt/bkm && \
  (cd build && ctest -L install --output-on-failure) && scripts/package.sh /src/deb" || exit 1
# fresh-run.sh leaves the last machine's root in FRESH/root until its next call
deb=$(ls "$fresh"/root/src/deb/bkm_*.deb 2> /dev/null | head -1)
[ -n "$deb" ] || { echo "FAIL: scripts/package.sh left no bkm_*.deb in $fresh/root/src/deb"; exit 1; }
mkdir "$w/repo" && cp "$deb" "$src/tests/fresh/install_checks.sh" "$w/repo/" &&
  git -C "$w/repo" init -q && git -C "$w/repo" add . &&
  git -C "$w/repo" -c user.name=bkm -c user.email=bkm@localhost commit -q -m "the package under test" ||
  { echo "FAIL: a repository for $deb"; exit 1; }
step install-deb "$w/repo" "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && \
  apt-get install -y -qq ./$(basename "$deb") >/dev/null && tune --help | head -3 && $apt_quiet && \
  bash install_checks.sh /usr" || exit 1
echo "fresh install: ok (prefix /opt/bkm, then $(basename "$deb") with apt on a machine without the build)"
