# SPDX-License-Identifier: MIT
# Sourced by the install tests: the install layout (from CMake, tests/install/CMakeLists.txt), a
# failure counter, and an install of the build into a temporary prefix that is then moved, so
# that nothing can lean on the path it was installed to.
: "${BKM_BUILD_DIR:?}" "${BKM_SOURCE_DIR:?}" "${BKM_CMAKE:?}" "${BKM_VERSION:?}" "${BKM_INSTALL_BINDIR:?}"
: "${BKM_INSTALL_PKGLIBDIR:?}" "${BKM_INSTALL_RT_DIR:?}" "${BKM_INSTALL_MANDIR:?}" "${BKM_INSTALL_MODULEDIR:?}"
: "${BKM_INSTALL_DOCDIR:?}" "${BKM_RT_FROM_BINDIR:?}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bkm-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
skip() { echo "skip: $*"; exit 77; }
finish() {
  if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
  fi
  echo "ok: $*"
  exit 0
}

# install_moved DIR: cmake --install the build into DIR.staged, copy that tree to DIR, remove
# DIR.staged. Stops the test when the install fails.
install_moved() {
  "$BKM_CMAKE" --install "$BKM_BUILD_DIR" --prefix "$1.staged" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; echo "FAIL: cmake --install $BKM_BUILD_DIR --prefix $1.staged" >&2; exit 1; }
  cp -a "$1.staged" "$1" && rm -rf "$1.staged" || { echo "FAIL: moving the installed tree" >&2; exit 1; }
}

# A clean environment for the installed tune: no variable that names the build tree or a tune.
clean_env=(env -u BKM_TUNE -u BKM_TUNE_TESTHOOKS -u BKM_BUILD_DIR -u BKM_SOURCE_DIR -u LD_LIBRARY_PATH
           -u LD_PRELOAD -u KMP_AFFINITY -u OMP_PLACES -u OMP_PROC_BIND -u OMP_NUM_THREADS -u BKM_DB)
