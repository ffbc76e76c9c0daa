#!/bin/bash
# SPDX-License-Identifier: MIT
# A results database bkm did not write is data: `tune merge` reads plain tables of bkm's schema
# only (an endless view is refused within seconds, a trigger or a foreign column too, a row the
# store would refuse is named by table, id and reason) and a refusal leaves OUT untouched and
# writable; `tune export` of a crafted database is valid JSON and CSV whose formula-like cells
# are quoted; `tune report` of one with a too-deep stored value works and names it. Outputs go
# through planted links without touching their targets, and -o at a link to stdout writes stdout.
set -u
: "${BKM_TUNE:?}" "${BKM_FIXTURE:?}"
command -v python3 >/dev/null || { echo "python3 is needed to craft the databases"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bkm-foreign-db.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$BKM_TUNE
expect() { # expect RC SECONDS CMD...: exits RC within SECONDS; stdout/stderr in out/err
    local want=$1 secs=$2 rc
    shift 2
    timeout "$secs" "$@" >out 2>err
    rc=$?
    [ "$rc" != 124 ] || fail "'$*' still running after $secs s"
    [ "$rc" = "$want" ] || { cat err >&2; fail "'$*': exit $rc, expected $want"; }
}
"$BKM_FIXTURE" base.sqlite knl gemm 4 best >/dev/null || fail "fixture"
craft() { # craft OUT PYTHON: a copy of base.sqlite changed by the statements (c: the connection)
    cp base.sqlite "$1"
    python3 - "$1" <<PY || fail "crafting $1"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA ignore_check_constraints = ON")   # as whoever crafts one can
$2
c.commit()
PY
}
writable() { # the destination is neither locked nor changed: a clean merge into it still works
    sum=$(md5sum <"$1")
    [ "$sum" = "$2" ] || fail "a refused merge changed $1"
    expect 0 10 "$T" merge "$1" clean.sqlite
}

# --- merge: an endless view, a trigger, a foreign column, rows the store would refuse -------------
cp base.sqlite clean.sqlite
expect 0 10 "$T" merge dest.sqlite base.sqlite
python3 -c 'import sqlite3; c = sqlite3.connect("clean.sqlite"); c.execute("UPDATE sweep SET uuid = ?", ("other",)); c.commit()'
craft view.sqlite '
c.execute("DROP TABLE best")
c.execute("CREATE VIEW best AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS id, "
          "char(107, 110, 108) AS node, char(103) AS workload, NULL AS sweep_id, char(123, 125) AS config_json, "
          "1.0 AS median_ms, NULL AS ci_lo_ms, NULL AS ci_hi_ms, NULL AS default_median_ms, NULL AS speedup, "
          "0 AS significant, NULL AS evidence_json, char(120) AS created_at FROM r")'
before=$(md5sum <dest.sqlite)
start=$(date +%s)
expect 3 20 "$T" merge dest.sqlite view.sqlite
[ $(( $(date +%s) - start )) -le 5 ] || fail "the endless view took more than 5 s to refuse"
grep -q "view 'best'" err || fail "the view is not named: $(cat err)"
writable dest.sqlite "$before"
craft trigger.sqlite 'c.execute("CREATE TRIGGER t AFTER INSERT ON host BEGIN DELETE FROM sweep; END")'
before=$(md5sum <dest.sqlite)
expect 3 10 "$T" merge dest.sqlite trigger.sqlite
grep -q "trigger 't'" err || fail "the trigger is not named: $(cat err)"
writable dest.sqlite "$before"
craft column.sqlite 'c.execute("ALTER TABLE trial ADD COLUMN payload TEXT")'
expect 3 10 "$T" merge dest.sqlite column.sqlite
grep -q "table trial is not bkm's" err || fail "the foreign column is not named: $(cat err)"
craft status.sqlite 'c.execute("UPDATE trial SET status = ? WHERE id = 2", ("evil",))'
expect 3 10 "$T" merge dest.sqlite status.sqlite
grep -q "table trial, id 2: trial status 'evil'" err || fail "the bad row is not named: $(cat err)"
craft key.sqlite 'c.execute("UPDATE trial SET config_key = ? WHERE id = 3", ("{}",))'
expect 3 10 "$T" merge dest.sqlite key.sqlite
grep -q "table trial, id 3: config_key" err || fail "the key mismatch is not named: $(cat err)"
craft blob.sqlite 'c.execute("UPDATE sweep SET label = ?", (b"\x00\xff",))'
expect 3 10 "$T" merge dest.sqlite blob.sqlite
grep -q "table sweep, id 1: label is blob, not TEXT" err || fail "the blob is not named: $(cat err)"
craft inf.sqlite 'c.execute("UPDATE sample SET ms = 1e999 WHERE idx = 0 AND trial_id = 1")'
expect 3 10 "$T" merge dest.sqlite inf.sqlite
grep -q "table sample, trial_id 1, idx 0: ms is not a finite number" err || fail "the infinite sample: $(cat err)"
craft best.sqlite 'c.execute("UPDATE best SET config_json = ?", ("{\"b\":1,\"a\":2}",))'
expect 3 10 "$T" merge dest.sqlite best.sqlite
grep -q "table best, id 1: config_json is not in canonical form" err || fail "the best row: $(cat err)"
writable dest.sqlite "$(md5sum <dest.sqlite)"

# --- export of a crafted database: valid JSON, safe CSV ------------------------------------------
craft evil.sqlite '
c.execute("UPDATE trial SET error = ?, impl = ? WHERE id = 1", ("=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)"))
c.execute("UPDATE trial SET error = ?, impl = ? WHERE id = 2", ("+1+2", "-3-4"))
c.execute("UPDATE trial SET error = ? WHERE id = 3", ("\tcmd",))
c.execute("UPDATE sweep SET node = ?", ("-2+3",))
c.execute("UPDATE trial SET config_json = ? WHERE id = 1", ("{\"a\":1},{\"injected\":true",))
c.execute("UPDATE trial SET noise_json = ? WHERE id = 2", ("[" * 200 + "]" * 200,))
c.execute("UPDATE trial SET noise_json = ? WHERE id = 3", ("{\"x\":" * 63 + "1" + "}" * 63,))'
expect 0 10 "$T" export --db evil.sqlite --format json -o evil.json
python3 - <<'PY' || fail "the JSON export of a crafted database"
import json
rows = json.load(open("evil.json"))
assert all(set(r) >= {"id", "config", "noise"} for r in rows), rows
by = {r["id"]: r for r in rows}
assert by[1]["config"] is None and any("config" in n for n in by[1]["notes"]), by[1]
assert not any("injected" in r for r in rows), "a stored text was spliced in"
assert by[2]["noise"] is None and any("noise" in n for n in by[2]["notes"]), by[2]
assert by[3]["noise"] is None and any("nests" in n for n in by[3]["notes"]), by[3]
assert "notes" not in by[4], by[4]
print("export json: %d rows, valid" % len(rows))
PY
expect 0 10 "$T" export --db evil.sqlite --format csv -o evil.csv
python3 - <<'PY' || fail "the CSV export of a crafted database"
import csv
rows = list(csv.DictReader(open("evil.csv", newline="")))
numeric = {"id", "round", "n_samples", "median_ms", "min_ms", "mad_ms", "ci_lo_ms", "ci_hi_ms", "gflops",
           "disturbed", "noise_share", "voluntary_switches", "involuntary_switches", "migrations", "steal_share"}
for r in rows:
    for k, v in r.items():
        if k not in numeric and v and v[0] in "=+-@\t\r":
            raise SystemExit("formula-like cell %s=%r" % (k, v))
by = {r["id"]: r for r in rows}
assert by["1"]["error"].startswith("'=HYPERLINK") and by["1"]["impl"] == "'@SUM(A1)", by["1"]
assert by["2"]["error"] == "'+1+2" and by["2"]["impl"] == "'-3-4" and by["1"]["node"] == "'-2+3", by["2"]
assert by["3"]["error"] == "'\tcmd", by["3"]
print("export csv: %d rows, formula cells quoted" % len(rows))
PY

# --- report of a database with a too-deep stored value: written, the value named -----------------
craft deep.sqlite 'c.execute("UPDATE trial SET binding_json = ? WHERE id = 2", ("{\"x\":" * 63 + "1" + "}" * 63,))'
expect 0 30 "$T" report --db deep.sqlite -o deep.html
grep -q "stored value(s) left out" deep.html || fail "the report does not name what it left out"
grep -q "binding of trial 2" deep.html || fail "the report does not name the too-deep binding"

# --- outputs: through planted links, to a link to stdout, '-' ------------------------------------
echo precious >victim
ln -s victim r.html
expect 0 30 "$T" report --db base.sqlite -o r.html
[ "$(cat victim)" = precious ] && [ ! -L r.html ] && grep -q "<html" r.html || fail "report -o through a planted link"
ln -s victim e.csv
expect 0 10 "$T" export --db base.sqlite --format csv -o e.csv
[ "$(cat victim)" = precious ] && [ ! -L e.csv ] || fail "export -o through a planted link"
# a link planted at a predictable temporary name (<path>.tmp.<pid>; exec keeps the pid): never followed
bash -c 'ln -s victim t.html.tmp.$$; exec "$0" report --db base.sqlite -o t.html' "$T" >/dev/null 2>&1 ||
    fail "report with a planted temporary link"
[ "$(cat victim)" = precious ] && [ ! -L t.html ] && grep -q '<html' t.html ||
    fail "a link at a predictable temporary name was written through"
ln -s /dev/stdout to-stdout
"$T" export --db base.sqlite --format csv -o to-stdout >via-link.csv 2>err || fail "-o at a link to stdout: $(cat err)"
[ -L to-stdout ] || fail "-o at a link to stdout replaced the link"
grep -q '^id,sweep' via-link.csv || fail "-o at a link to stdout: nothing reached stdout"
"$T" report --db base.sqlite -o to-stdout 2>err | grep -q "<html" || fail "report -o at a link to stdout (a pipe): $(cat err)"
[ -L to-stdout ] || fail "report -o at a link to stdout replaced the link"
"$T" report --db base.sqlite -o - 2>/dev/null | grep -q "</html>" || fail "report -o -"
expect 2 10 "$T" export --db base.sqlite --format csv -o .
echo "foreign databases: ok"
