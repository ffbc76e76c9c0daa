#!/bin/bash
# SPDX-License-Identifier: MIT
# Both README commands in a clean clone inside a fresh Debian 12 chroot (minbase + git +
# ca-certificates): scripts/main.sh (the main job) and scripts/test.sh (the suite, which includes
# this test's own label only when asked, so it does not recurse). Prints how long each took.
set -u
src=${BKM_SOURCE_DIR:?BKM_SOURCE_DIR not set}
tool=${BKM_FRESH_TOOL:-$src/../shared/tools/fresh-run.sh}
[ "${BKM_FRESH:-0}" = 1 ] || { echo "skip: set BKM_FRESH=1 to run (about 15 minutes, root, debootstrap)"; exit 77; }
[ -x "$tool" ] || [ -f "$tool" ] || { echo "skip: $tool not found (the shared tools are beside the project)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: fresh-run.sh needs root (chroot, mounts)"; exit 77; }
rc=0
for cmd in scripts/main.sh scripts/test.sh; do
    t0=$(date +%s)
    (cd "$src" && PROJECT="$src" bash "$tool" "env -u BKM_FRESH $cmd") >"${TMPDIR:-/tmp}/bkm-fresh-$(basename "$cmd").log" 2>&1
    r=$?
    t1=$(date +%s)
    echo "fresh Debian 12: $cmd exit $r in $((t1 - t0)) s (log: ${TMPDIR:-/tmp}/bkm-fresh-$(basename "$cmd").log)"
    tail -n 5 "${TMPDIR:-/tmp}/bkm-fresh-$(basename "$cmd").log"
    [ "$r" = 0 ] || rc=1
done
exit $rc
