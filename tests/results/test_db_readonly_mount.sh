#!/bin/bash
# SPDX-License-Identifier: MIT
# best, export, replay and merge read databases in a folder where no file can be created: a tmpfs
# remounted read-only (as root; chmod does not stop root). Skipped (77) where mount is not allowed.
set -u
: "${BKM_TUNE:?}" "${BKM_FIXTURE:?}" "${BKM_SOURCE_DIR:?}"
tmp=$(mktemp -d /tmp/bkm-ro-mount-XXXXXX)
mnt=$tmp/mnt
mounted=0
cleanup() { [ $mounted -eq 0 ] || umount "$mnt"; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC command...: stdout in $tmp/stdout, stderr in $tmp/stderr
    local want=$1; shift
    "$@" >"$tmp/stdout" 2>"$tmp/stderr"; local rc=$?
    [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(cat "$tmp/stderr")"
}
[ "$(id -u)" -eq 0 ] || { echo "skipped: mounting a read-only tmpfs needs root"; exit 77; }
command -v sqlite3 >/dev/null ||
    { echo "skipped: the sqlite3 command-line tool is needed to load a recording (apt-get install sqlite3)"; exit 77; }
mkdir "$mnt"
if ! mount -t tmpfs -o size=16m bkm-ro-test "$mnt" 2>"$tmp/mount.err"; then
    echo "skipped: cannot mount a tmpfs here: $(cat "$tmp/mount.err")"
    exit 77
fi
mounted=1

"$BKM_FIXTURE" "$mnt/a.sqlite" knl gemm 8 best || fail "fixture a"
sqlite3 -bail "$mnt/rec.sqlite" < "$BKM_SOURCE_DIR/tests/tuner/data/gemm64.sql" || fail "the recording gemm64.sql does not load"
# killed sweeps: trials only in the -wal, with the -shm the writer left, and without one
"$BKM_FIXTURE" "$mnt/w.sqlite" knl conv2d 6 crash || fail "fixture w"
"$BKM_FIXTURE" "$tmp/n.sqlite" knl lstm 3 crash || fail "fixture n"
cp "$tmp/n.sqlite" "$tmp/n.sqlite-wal" "$mnt/"
[ -s "$mnt/w.sqlite-wal" ] && [ -e "$mnt/w.sqlite-shm" ] && [ -s "$mnt/n.sqlite-wal" ] || fail "fixtures: $(ls "$mnt")"
mount -o remount,ro "$mnt" || fail "cannot remount $mnt read-only"
touch "$mnt/probe" 2>/dev/null && fail "$mnt is still writable"
sums=$(cd "$mnt" && sha256sum *)

expect_rc 0 "$BKM_TUNE" best --db "$mnt/a.sqlite" --node knl --workload gemm --json
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['median_ms'] == 19.0" "$tmp/stdout" || fail "best"
expect_rc 0 "$BKM_TUNE" export --db "$mnt/a.sqlite" --format csv
[ "$(grep -c . "$tmp/stdout")" -eq 9 ] || fail "export csv: $(cat "$tmp/stdout")"
expect_rc 0 "$BKM_TUNE" replay --db "$mnt/rec.sqlite" --seeds 2
expect_rc 0 "$BKM_TUNE" export --db "$mnt/w.sqlite" --format json
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 6" "$tmp/stdout" || fail "export of a -wal"
expect_rc 0 "$BKM_TUNE" merge out.sqlite "$mnt/a.sqlite" "$mnt/w.sqlite"
grep -q "w.sqlite: 1 new sweeps.* 6 new trials" "$tmp/stdout" || fail "merge: $(cat "$tmp/stdout")"
# a -wal without its -shm cannot be read where SQLite cannot create the -shm: exit 3 saying what to do
expect_rc 3 "$BKM_TUNE" export --db "$mnt/n.sqlite" --format csv
grep -q -- "-wal.*no -shm.*copy" "$tmp/stderr" || fail "no advice for a -wal without -shm: $(cat "$tmp/stderr")"
[ "$sums" = "$(cd "$mnt" && sha256sum *)" ] || fail "a file on the read-only mount changed"
echo "ok"
