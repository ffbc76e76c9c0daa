#!/bin/bash
# SPDX-License-Identifier: MIT
# A results database on a file system shared between hosts: a sweep (any writer) is refused with
# exit 3 and advice, one `tune merge` by hand warns; FUSE/9p/virtiofs only warn; reading is
# always allowed.
# statfs(2) is faked by an LD_PRELOADed test double (BKM_STATFS_SHIM), so no NFS mount is needed.
set -u
: "${BKM_TUNE:?}" "${BKM_FIXTURE:?}" "${BKM_STATFS_SHIM:?}"
tmp=$(mktemp -d /tmp/bkm-netfs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
on_fs() { # on_fs F_TYPE RC command...: run with statfs faked; stdout/stderr in $tmp/stdout, $tmp/stderr
    local fs=$1 want=$2; shift 2
    BKM_TEST_FSTYPE=$fs LD_PRELOAD=$BKM_STATFS_SHIM "$@" >"$tmp/stdout" 2>"$tmp/stderr"; local rc=$?
    [ "$rc" -eq "$want" ] || fail "'$*' on f_type $fs exited $rc, expected $want; stderr: $(cat "$tmp/stderr")"
}
"$BKM_FIXTURE" a.sqlite knl gemm 4 best || fail "fixture"
sum=$(sha256sum a.sqlite)
for fs in 0x6969:nfs 0x0BD00BD0:lustre 0x47504653:gpfs 0xFE534D42:smb2 0x19830326:beegfs; do
    # a sweep (and any writer) is refused before anything is created, saying what to do
    on_fs "${fs%%:*}" 3 "$BKM_TUNE" --workload gemm --param m=16 --param n=16 --param k=16 --threads 1 \
        --affinity default --db sweep.sqlite
    for word in "${fs#*:}" "network file system" "TMPDIR" "tune merge" "sweep.sqlite"; do
        grep -q "$word" "$tmp/stderr" || fail "refusal on ${fs#*:} does not say '$word': $(cat "$tmp/stderr")"
    done
    [ ! -e sweep.sqlite ] || fail "the sweep created sweep.sqlite on ${fs#*:}"
    on_fs "${fs%%:*}" 3 "$BKM_FIXTURE" new.sqlite knl gemm 1
    [ ! -e new.sqlite ] || fail "a writer created new.sqlite on ${fs#*:}"
    # one merge by hand may write there, with a warning
    on_fs "${fs%%:*}" 0 "$BKM_TUNE" merge "out-${fs#*:}.sqlite" a.sqlite
    grep -q "warning: .*${fs#*:}.*several hosts" "$tmp/stderr" || fail "merge on ${fs#*:}: $(cat "$tmp/stderr")"
    # reading is fine: read-only opens write nothing
    on_fs "${fs%%:*}" 0 "$BKM_TUNE" export --db a.sqlite --format csv
    on_fs "${fs%%:*}" 0 "$BKM_TUNE" best --db a.sqlite --node knl --workload gemm
    [ ! -s "$tmp/stderr" ] || fail "a read-only open on ${fs#*:} warned: $(cat "$tmp/stderr")"
done
for fs in 0x65735546:fuse 0x01021997:9p 0x6A656A63:virtiofs; do
    on_fs "${fs%%:*}" 0 "$BKM_TUNE" merge "out-${fs#*:}.sqlite" a.sqlite
    grep -q "warning: .*${fs#*:}.*TMPDIR" "$tmp/stderr" || fail "no warning on ${fs#*:}: $(cat "$tmp/stderr")"
done
on_fs 0xEF53 0 "$BKM_TUNE" merge out-ext4.sqlite a.sqlite
[ ! -s "$tmp/stderr" ] || fail "a warning on ext4: $(cat "$tmp/stderr")"
[ "$sum" = "$(sha256sum a.sqlite)" ] || fail "a.sqlite changed"
echo "ok"
