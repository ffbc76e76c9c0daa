#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set up bkm on a fresh Debian 12 machine: install the Debian packages that are missing
# (as root; otherwise it says which are missing), configure and build.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Environment: BKM_SETUP_TEST_PKGS=1 also installs what the tests need (Slurm, munge, Chromium,
# PyTorch, Lmod).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$top/build"}
shift || true

pkgs=(build-essential cmake pkg-config clang libomp-dev libclang-rt-14-dev libdnnl-dev libpapi-dev papi-tools
      libhwloc-dev hwloc mpich libmpich-dev libsqlite3-dev sqlite3 check dataset-fashion-mnist zlib1g-dev python3
      file)   # file: cpack -G DEB (scripts/package.sh) reads the ELF files with it
if [ "${BKM_SETUP_TEST_PKGS:-0}" = 1 ]; then
  # tests/slurm: a real Slurm on localhost; tests/reports: headless Chromium; tests/program and
  # tests/tuner: Debian's PyTorch, a real program that loads GNU libgomp
  pkgs+=(slurmctld slurmd slurm-client munge chromium python3-torch)
  pkgs+=(lmod man-db)   # tests/install: the module loaded by Lmod, man tune
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages (run as root to install): ${missing[*]}" >&2
    exit 3
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
