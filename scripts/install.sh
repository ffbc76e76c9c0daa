#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install bkm into a prefix, as an HPC centre installs a tool (docs/install.md): installs the
# missing Debian packages and builds (scripts/setup.sh), then `cmake --install` into PREFIX
# (tune, its team shim and runtime folder, the man page tune(1), the Lmod module, the
# documentation), and says how to use it.
#   scripts/install.sh PREFIX [extra cmake args...]      e.g. scripts/install.sh /opt/bkm/0.1.0
# Environment: BKM_BUILD_DIR (default: build/ of this checkout).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ -n "$1" ] || { echo "usage: scripts/install.sh PREFIX [extra cmake args...]" >&2; exit 2; }
prefix=$1
shift
case $prefix in
  /*) ;;
  *) prefix=$PWD/$prefix ;;
esac
build=${BKM_BUILD_DIR:-$top/build}
"$top/scripts/setup.sh" "$build" "$@"
cmake --install "$build" --prefix "$prefix" >/dev/null
cached() { sed -n "s/^$1:PATH=//p" "$build/CMakeCache.txt"; }
echo "install: bkm installed under $prefix: $prefix/$(cached CMAKE_INSTALL_BINDIR)/tune, man tune"
echo "install: module use $prefix/$(cached CMAKE_INSTALL_DATAROOTDIR)/modulefiles; module load bkm"
