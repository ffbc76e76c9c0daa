#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune export`, `tune merge`, `tune best`: output parsed back, exit codes, --db/BKM_DB precedence,
# foreign and corrupt files refused by name with exit 3 and left untouched.
set -u
: "${BKM_TUNE:?}" "${BKM_FIXTURE:?}"
tmp=$(mktemp -d /tmp/bkm-cli-results-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC command...: run, keep stdout in $tmp/out and stderr in $tmp/err
    local want=$1; shift
    "$@" >"$tmp/stdout" 2>"$tmp/stderr"; local rc=$?
    [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(cat "$tmp/stderr")"
}
command -v python3 >/dev/null || { echo "python3 is needed to parse CSV/JSON back"; exit 77; }
command -v sqlite3 >/dev/null ||
    { echo "the sqlite3 command-line tool is needed to load a recording (apt-get install sqlite3)"; exit 77; }

"$BKM_FIXTURE" a.sqlite knl gemm 8 best || fail "fixture a"
"$BKM_FIXTURE" b.sqlite haswell alexnet 5 || fail "fixture b"

# --help teaches and exits 0; bad usage exits 2 naming the value
for c in export merge best; do
    expect_rc 0 "$BKM_TUNE" "$c" --help
    grep -q "example" "$tmp/stdout" || fail "$c --help has no example"
done
expect_rc 2 "$BKM_TUNE" export --db a.sqlite
expect_rc 2 "$BKM_TUNE" export --db a.sqlite --format xml
grep -q "xml" "$tmp/stderr" || fail "bad format not named"
expect_rc 2 "$BKM_TUNE" export --db a.sqlite --format csv --sweep abc
grep -q "abc" "$tmp/stderr" || fail "bad sweep id not named"
expect_rc 2 "$BKM_TUNE" best --node knl
expect_rc 2 "$BKM_TUNE" best --node knl --workload gemm --frobnicate
expect_rc 2 "$BKM_TUNE" merge only-out.sqlite
[ ! -e only-out.sqlite ] || fail "merge with no input created OUT"

# export JSON: every trial, parsed back
expect_rc 0 "$BKM_TUNE" export --db a.sqlite --format json
python3 - "$tmp/stdout" <<'PY' || fail "export json"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 8, len(rows)
for i, r in enumerate(rows):
    assert {"id", "status", "config", "median_ms", "ci95", "n_samples"} <= set(r), r
    assert r["status"] in ("ok", "crashed", "timeout", "failed", "binding-mismatch")
    assert r["config"]["threads"] == i + 1 and r["config"]["affinity"] == "compact"
    assert r["status"] == ("crashed" if i % 4 == 3 else "ok")
    assert abs(r["median_ms"] - (20.02 - i)) < 1e-9 and r["n_samples"] == 5
PY
# export CSV, with BKM_DB instead of --db, and --db winning over BKM_DB
BKM_DB=a.sqlite expect_rc 0 "$BKM_TUNE" export --format csv
python3 - "$tmp/stdout" <<'PY' || fail "export csv"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 8, len(rows)
assert json.loads(rows[2]["config"]) == {"affinity": "compact", "threads": 3}
assert rows[3]["status"] == "crashed" and rows[3]["error"] == "killed by SIGSEGV"
PY
BKM_DB=b.sqlite expect_rc 0 "$BKM_TUNE" export --db a.sqlite --format json --node knl --workload gemm
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 8" "$tmp/stdout" || fail "--db over BKM_DB"
# default path results/bkm.sqlite in the current directory
expect_rc 3 "$BKM_TUNE" export --format csv
grep -q "results/bkm.sqlite" "$tmp/stderr" || fail "missing default database not named"
[ ! -e results ] || fail "export created the default database"

# best
expect_rc 0 "$BKM_TUNE" best --db a.sqlite --node knl --workload gemm --json
python3 - "$tmp/stdout" <<'PY' || fail "best json"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["config"] == {"affinity": "compact", "threads": 2}
assert b["median_ms"] == 19.0 and b["median_ci95_order_stat"] == [18.9, 19.1]
assert abs(b["speedup_vs_default"] - 20 / 19) < 1e-12 and b["significant"] is True
PY
expect_rc 0 "$BKM_TUNE" best --db a.sqlite --node knl --workload gemm
grep -q "significant" "$tmp/stdout" || fail "best text"
expect_rc 1 "$BKM_TUNE" best --db a.sqlite --node knl --workload lstm
grep -q "lstm" "$tmp/stderr" || fail "missing best not named"

# merge: both inputs, then again (idempotent)
expect_rc 0 "$BKM_TUNE" merge out/all.sqlite a.sqlite b.sqlite
grep -q "a.sqlite: 1 new sweeps.* 8 new trials" "$tmp/stdout" || fail "merge output: $(cat "$tmp/stdout")"
expect_rc 0 "$BKM_TUNE" merge out/all.sqlite a.sqlite b.sqlite
grep -q "a.sqlite: 0 new sweeps (1 already in out/all.sqlite), 0 new trials (8 already there)" "$tmp/stdout" \
    || fail "merge not idempotent: $(cat "$tmp/stdout")"
expect_rc 0 "$BKM_TUNE" export --db out/all.sqlite --format json
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 13" "$tmp/stdout" || fail "merged count"
expect_rc 0 "$BKM_TUNE" best --db out/all.sqlite --node knl --workload gemm --json

# foreign and damaged inputs: refused by name, exit 3, nothing written
printf 'hello, not a database\n' > notes.txt
python3 -c "import sqlite3; c = sqlite3.connect('foreign.sqlite'); c.execute('create table t(x)'); c.commit()"
cp a.sqlite garbled.sqlite
size=$(stat -c %s garbled.sqlite)
head -c 8192 /dev/zero | tr '\0' 'Z' | dd of=garbled.sqlite bs=1 seek=$((size / 2)) conv=notrunc status=none
for bad in notes.txt foreign.sqlite garbled.sqlite; do
    sum=$(sha256sum "$bad")
    expect_rc 3 "$BKM_TUNE" merge fresh.sqlite a.sqlite "$bad"
    grep -q "$bad" "$tmp/stderr" || fail "merge did not name $bad: $(cat "$tmp/stderr")"
    [ ! -e fresh.sqlite ] || fail "merge created OUT although $bad was refused"
    before=$(sha256sum out/all.sqlite)
    expect_rc 3 "$BKM_TUNE" merge out/all.sqlite "$bad"
    [ "$before" = "$(sha256sum out/all.sqlite)" ] || fail "OUT changed although $bad was refused"
    expect_rc 3 "$BKM_TUNE" export --db "$bad" --format csv
    grep -q "$bad" "$tmp/stderr" || fail "export did not name $bad"
    expect_rc 3 "$BKM_TUNE" best --db "$bad" --node knl --workload gemm
    [ "$sum" = "$(sha256sum "$bad")" ] || fail "$bad was modified"
    [ ! -e "$bad-wal" ] && [ ! -e "$bad-shm" ] || fail "$bad got -wal/-shm files"
done
# a foreign OUT is refused too, and left untouched
sum=$(sha256sum foreign.sqlite)
expect_rc 3 "$BKM_TUNE" merge foreign.sqlite a.sqlite
[ "$sum" = "$(sha256sum foreign.sqlite)" ] || fail "foreign OUT modified"
# --- databases as users keep them ---------------------------------------------------------
# best, export and replay open read-only: on a read-only file in a read-only folder nothing is
# migrated, switched to WAL or created. Tests run as root, where the permission bits stop no
# write: the proof is that no -wal/-shm appears and every file is byte-identical afterwards.
mkdir ro
cp a.sqlite ro/a.sqlite
sqlite3 -bail ro/rec.sqlite < "$BKM_SOURCE_DIR/tests/tuner/data/gemm64.sql" || fail "the recording gemm64.sql does not load"
chmod a-w ro/a.sqlite ro/rec.sqlite ro
sums=$(sha256sum ro/*)
expect_rc 0 "$BKM_TUNE" best --db ro/a.sqlite --node knl --workload gemm --json
expect_rc 0 "$BKM_TUNE" export --db ro/a.sqlite --format json
expect_rc 0 "$BKM_TUNE" export --db ro/a.sqlite --format csv
expect_rc 0 "$BKM_TUNE" replay --db ro/rec.sqlite --seeds 2
[ "$sums" = "$(sha256sum ro/*)" ] || fail "a read-only command modified a database"
[ "$(ls ro | sort | tr '\n' ' ')" = "a.sqlite rec.sqlite " ] || fail "read-only commands created: $(ls ro)"
chmod u+w ro

# a sweep killed before it closed its database: the trials are in the -wal; reading them and
# merging the file changes neither the database nor its -wal
"$BKM_FIXTURE" crashed.sqlite knl conv2d 6 crash || fail "fixture crashed"
[ -s crashed.sqlite-wal ] || fail "the crashed fixture left no -wal"
sums=$(sha256sum crashed.sqlite crashed.sqlite-wal)
expect_rc 0 "$BKM_TUNE" export --db crashed.sqlite --format json
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 6" "$tmp/stdout" || fail "export of the -wal's trials"
expect_rc 0 "$BKM_TUNE" merge m.sqlite crashed.sqlite
grep -q "crashed.sqlite: 1 new sweeps.* 6 new trials" "$tmp/stdout" || fail "merge of a -wal: $(cat "$tmp/stdout")"
[ "$sums" = "$(sha256sum crashed.sqlite crashed.sqlite-wal)" ] || fail "merge modified its input or the input's -wal"

# merge recognises its output under another spelling: exit 2 naming both, nothing written
mkdir x
ln -s a.sqlite link.sqlite
ln a.sqlite hard.sqlite
sum=$(sha256sum a.sqlite)
for other in ./x/../a.sqlite link.sqlite hard.sqlite "$tmp/a.sqlite"; do
    expect_rc 2 "$BKM_TUNE" merge a.sqlite b.sqlite "$other"
    grep -q "'$other' is the output 'a.sqlite'" "$tmp/stderr" || fail "merge a.sqlite $other: $(cat "$tmp/stderr")"
    expect_rc 2 "$BKM_TUNE" merge "$other" a.sqlite
done
[ "$sum" = "$(sha256sum a.sqlite)" ] && [ ! -e a.sqlite-wal ] || fail "a refused merge modified a.sqlite"
echo "ok"
