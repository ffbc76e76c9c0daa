#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Lmod module of an installed (then moved) prefix, with this system's Lmod: `module use
# PREFIX/share/modulefiles; module load bkm` puts the installed tune first on PATH (tune version
# says it is installed under PREFIX), its man page on MANPATH (man -w finds it, and the system's
# pages are still found), BKM_HOME = PREFIX; `module unload bkm` takes them away again; the file
# copied out of the prefix without its `home` set stops with a message naming the problem.
# Skipped (77) without Lmod; scripts/setup.sh installs it with the test packages, and
# test_fresh_install loads the module on a fresh Debian 12.
set -u
. "$(dirname "$0")/lib.sh"
lmod_init=
for f in /etc/profile.d/lmod.sh /usr/share/lmod/lmod/init/bash; do
  [ -f "$f" ] && { lmod_init=$f; break; }
done
[ -n "$lmod_init" ] || skip "Lmod is not installed (apt-get install lmod)"

P=$tmp/prefix
install_moved "$P"
mods=$P/$(dirname "$BKM_INSTALL_MODULEDIR")
mkdir -p "$tmp/home" "$tmp/elsewhere/bkm"
cp "$P/$BKM_INSTALL_MODULEDIR/$BKM_VERSION.lua" "$tmp/elsewhere/bkm/"

# lmod_run CMDS: CMDS in a clean login-like bash with Lmod set up (no MANPATH, a private HOME)
lmod_run() {
  env -i HOME="$tmp/home" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 \
    bash -c ". '$lmod_init' >/dev/null 2>&1; $1"
}
out=$(lmod_run "module use '$mods' && module load bkm && echo \"path=\$(command -v tune)\" && echo \"home=\$BKM_HOME\" &&
  echo \"manpath=\$MANPATH\" && tune version && echo \"man=\$(man -w tune)\" && echo \"manls=\$(man -w ls 2>/dev/null)\" &&
  module unload bkm && echo \"after=\$(command -v tune || echo none) home=\${BKM_HOME:-unset}\"" 2>&1)
echo "$out"
grep -qxF "path=$P/$BKM_INSTALL_BINDIR/tune" <<<"$out" || fail "module load bkm: tune on PATH is not $P/$BKM_INSTALL_BINDIR/tune"
grep -qxF "home=$P" <<<"$out" || fail "module load bkm: BKM_HOME is not $P"
grep -qxF "executable $P/$BKM_INSTALL_BINDIR/tune (installed under $P)" <<<"$out" || fail "tune version from the module"
grep -qxF "man=$P/$BKM_INSTALL_MANDIR/man1/tune.1" <<<"$out" || fail "man -w tune does not find the module's page"
if [ -e /usr/share/man/man1/ls.1.gz ] || [ -e /usr/share/man/man1/ls.1 ]; then
  grep -q "^manls=/usr/share/man/man1/ls.1" <<<"$out" || fail "with the module loaded man no longer finds the system's pages"
fi
grep -qxF "after=none home=unset" <<<"$out" || fail "module unload bkm left tune or BKM_HOME behind"

out=$(lmod_run "module use '$tmp/elsewhere' && module load bkm" 2>&1 | tr -s ' \n' '  ')   # Lmod wraps it
grep -qF "is not in PREFIX/$BKM_INSTALL_MODULEDIR: set \`home\` in it" <<<"$out" ||
  fail "the module copied out of its prefix: $out"

finish "module use/load/unload of a moved prefix"
