#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package (docs/install.md): installs the missing Debian packages and builds
# (scripts/setup.sh), then `cpack -G DEB` writes bkm_VERSION_ARCH.deb into OUT_DIR, with Depends
# derived by dpkg-shlibdeps from the libraries tune links. Install it with
#   apt-get install ./bkm_VERSION_ARCH.deb
#   scripts/package.sh [OUT_DIR]      (default: the build folder)
# Environment: BKM_BUILD_DIR (default: build/ of this checkout).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BKM_BUILD_DIR:-$top/build}
out=${1:-$build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$top/scripts/setup.sh" "$build"
(cd "$out" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls "$out"/bkm_*.deb
