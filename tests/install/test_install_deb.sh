#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cpack -G DEB` of this build into a temporary folder, then the package as dpkg sees it:
#   - Package bkm, Version VERSION, Architecture this machine's;
#   - Depends names the Debian package of every shared library tune and the team shim link
#     (found here with ldd and dpkg -S: oneDNN, PAPI, hwloc, MPICH, LLVM libomp, SQLite, ...);
#   - its files: the layout of docs/install.md under /usr, nothing else (no tune_testhooks);
#   - its tune, unpacked with dpkg-deb -x anywhere, finds its files there and maps one OpenMP
#     runtime, and tune.1 renders.
# Installing the package with apt on a fresh Debian 12 is test_fresh_install (label fresh).
set -u
. "$(dirname "$0")/lib.sh"
: "${BKM_CPACK:?}" "${BKM_LIBOMP_REAL:?}"
for t in dpkg-deb dpkg-shlibdeps dpkg ldd file; do
  command -v "$t" > /dev/null || skip "$t is not installed (CPack's DEB generator needs it: apt-get install dpkg-dev file)"
done

(cd "$tmp" && "$BKM_CPACK" -G DEB --config "$BKM_BUILD_DIR/CPackConfig.cmake" -B "$tmp/pkg") > "$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; finish ""; }
deb=$tmp/pkg/bkm_${BKM_VERSION}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || { ls "$tmp/pkg" >&2; fail "no $deb"; finish ""; }

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = bkm ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$BKM_VERSION" ] || fail "Version: $(field Version), want $BKM_VERSION"
depends=$(field Depends)
echo "Depends: $depends"
# the package of every library the two ELF files need (DT_NEEDED), as this system resolves them
for f in "$BKM_BUILD_DIR/tune" "$BKM_BUILD_DIR/libbkm_team.so"; do
  ldd "$f" > "$tmp/ldd" || { fail "ldd $f"; continue; }
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$lib" '$1 == l && $3 ~ /^\// { print $3 }' "$tmp/ldd")
    [ -n "$path" ] || case $lib in ld-linux*) path=$(awk -v l="$lib" 'index($1, l) { print $1 }' "$tmp/ldd") ;; esac
    [ -n "$path" ] || { fail "ldd $f: $lib not found"; continue; }
    pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || { fail "no Debian package owns $path ($lib)"; continue; }
    case ", $depends," in
      *", $pkg "* | *", $pkg,"*) echo "$(basename "$f"): $lib -> $pkg" ;;
      *) fail "Depends lacks $pkg (the package of $lib, needed by $(basename "$f"))" ;;
    esac
  done
done
# libgomp.so.1 is the link to libomp in BUILD/rt (the one runtime): never a dependency of its own
case "$depends" in *libgomp1*) fail "Depends names libgomp1: $depends" ;; esac

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./||' | grep -v '/$' > "$tmp/files"
expected=("usr/$BKM_INSTALL_BINDIR/tune" "usr/$BKM_INSTALL_PKGLIBDIR/libbkm_team.so" "usr/$BKM_INSTALL_RT_DIR/libgomp.so.1"
          "usr/$BKM_INSTALL_MANDIR/man1/tune.1" "usr/$BKM_INSTALL_MODULEDIR/$BKM_VERSION.lua" "usr/$BKM_INSTALL_DOCDIR"/README.md)
for d in "$BKM_SOURCE_DIR"/docs/*.md; do
  expected+=("usr/$BKM_INSTALL_DOCDIR/docs/$(basename "$d")")
done
for e in "${expected[@]}"; do
  grep -qxF "$e" "$tmp/files" || fail "not in the package: $e"
done
while IFS= read -r f; do
  ok=0
  for e in "${expected[@]}"; do [ "$f" = "$e" ] && ok=1; done
  [ $ok = 1 ] || fail "in the package but not in the layout: $f"
done < "$tmp/files"

dpkg-deb -x "$deb" "$tmp/root" || fail "dpkg-deb -x"
T=$tmp/root/usr/$BKM_INSTALL_BINDIR/tune
(cd "$tmp" && "${clean_env[@]}" "$T" version) > "$tmp/version.out" 2>&1 || fail "the packaged tune version: $(cat "$tmp/version.out")"
grep -qxF "executable $T (installed under $tmp/root/usr)" "$tmp/version.out" || fail "packaged tune: $(cat "$tmp/version.out")"
grep -qxF "openmp runtimes mapped: $BKM_LIBOMP_REAL" "$tmp/version.out" || fail "packaged tune: $(cat "$tmp/version.out")"
if command -v groff > /dev/null; then
  groff -man -Tutf8 -P-cbu "$tmp/root/usr/$BKM_INSTALL_MANDIR/man1/tune.1" 2> /dev/null | grep -q "COMMAND REFERENCE" ||
    fail "the packaged tune.1 does not render"
fi

finish "$(basename "$deb"): Depends covers every linked library, the layout, the packaged tune runs"
