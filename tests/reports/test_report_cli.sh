#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune report` from a database the real tools made (make_db.sh): one self-contained file with
# every section, the hostile label shown as text, the crashed trial with its error, per-layer
# times, counters marked unavailable, the gate's history; bad input refused with nothing written.
set -u
here=$(cd "$(dirname "$0")" && pwd)
T=${BKM_TUNE:?BKM_TUNE must point at tune}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the database of the report_db fixture (make_db.sh, run once for both report tests)
src=${BKM_REPORT_DB:?BKM_REPORT_DB must name the database made by make_db.sh}
[ -s "$src" ] || fail "the fixture database $src is missing (the report_db_setup test failed?)"
cp "$src" "$tmp/r.sqlite" || fail "cannot copy $src"
cd "$tmp"
"$T" report --db r.sqlite > out.txt 2> err.txt || fail "report: exit $? ($(cat err.txt))"
f=reports/index.html
[ -s "$f" ] || fail "the default output $f was not written"
for s in host summary heatmap blocktime scaling boxplots noise layers counters binding failed history; do
  grep -q "data-bkm-section=\"$s\"" "$f" || fail "section $s missing"
done
# self-contained: no script, no external reference of any kind
grep -qi '<script' "$f" && fail "the page holds a <script> element: $(grep -io '.\{40\}<script.\{40\}' "$f" | head -2)"
grep -Eqi '(src|href)="(https?:)?//' "$f" && fail "the page references something external"
grep -Eqi '<link|@import|url\(' "$f" && fail "the page loads a stylesheet or font"
# the label, escaped, in the sweeps table
grep -q '&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;x&#39;' "$f" ||
  fail "the label is not shown escaped"
# the crashed trial with its exit and error
grep -A3 'data-bkm-section="failed"' "$f" | grep -q 'crashed' || fail "the failed-trials section has no crashed trial"
grep -q 'signal 11' "$f" || fail "the crash's exit info is missing"
# per-layer times of the conv3d network, counters marked unavailable or with values, the gate run
grep -q '<td>conv3d_1</td>' "$f" || fail "no per-layer row for conv3d_1"
grep -Eq 'class="na">unavailable: |PAPI_' "$f" || fail "no counter shown"
grep -A6 'data-bkm-section="history"' "$f" | grep -q 'baseline' || fail "the gate run is not in the history"
grep -q 'threads \\ affinity' "$f" || fail "no heatmap table"
grep -q 'class="curve"' "$f" || fail "no scaling curve"
grep -q 'class="box' "$f" || fail "no box plot"
grep -q 'beats the default beyond the noise\|the default stands\|not better by more than\|undecided at the budget' "$f" || fail "no evidence (a decision of the confirmation) in the summary"
# the noise evidence: every sweep's row with its disturbed count, the most disturbed trials with
# each value under its source, the gate's disturbed count in the history
sed -n '/data-bkm-section="noise"/,/<\/section>/p' "$f" > noise.html
grep -q 'No trial stored noise evidence' noise.html && fail "the noise section says no evidence: $(cat noise.html)"
[ "$(grep -c '^<tr><td>[0-9]*</td><td>.*</td><td>[0-9]*</td><td class="\(ok\|bad\)">[0-9]*</td>' noise.html)" -ge 2 ] ||
  fail "the noise section lacks a row per sweep: $(cat noise.html)"
grep -q 'proc-schedstat' noise.html && grep -q '<td class="\(ok\|bad\)">\(yes\|no\)</td>' noise.html ||
  fail "the noise section lacks the most disturbed trials: $(cat noise.html)"
sed -n '/data-bkm-section="history"/,/<\/section>/p' "$f" | grep -q 'disturbed [0-9]* of 3' ||
  fail "the history lacks the gate's disturbed count"
# an older database (no noise columns, as before schema 4): the section is there with its sentence
cp r.sqlite old.sqlite
sqlite3 old.sqlite 'ALTER TABLE trial DROP COLUMN noise_json; ALTER TABLE trial DROP COLUMN noise_share;
  ALTER TABLE trial DROP COLUMN disturbed;' 2> err.txt || fail "cannot drop the noise columns: $(cat err.txt)"
"$T" report --db old.sqlite -o old.html --peak none 2> err.txt || fail "report of an older database: $(cat err.txt)"
sed -n '/data-bkm-section="noise"/,/<\/section>/p' old.html | grep -q 'No trial stored noise evidence' ||
  fail "the older database's noise section lacks its sentence"
# the selection: one sweep; a workload
"$T" report --db r.sqlite --sweep 1 -o one.html --peak none 2> err.txt || fail "--sweep 1: $(cat err.txt)"
grep -q 'conv3d_1' one.html && fail "--sweep 1 shows the conv3d sweep"
"$T" report --db r.sqlite --node auto --workload conv3d -o c3.html --peak none 2> err.txt || fail "--workload: $(cat err.txt)"
grep -q '<td>conv3d_1</td>' c3.html || fail "--workload conv3d lost its layers"
# bad input: exit 2 naming the value, nothing written
"$T" report --db r.sqlite --sweep 999 -o none.html > /dev/null 2> err.txt
[ $? -eq 2 ] || fail "--sweep 999: expected exit 2"
grep -q 'sweep 999' err.txt || fail "--sweep 999: the message does not name it: $(cat err.txt)"
[ -e none.html ] && fail "--sweep 999 wrote a file"
mkdir adir
"$T" report --db r.sqlite -o adir > /dev/null 2> err.txt
[ $? -eq 2 ] || fail "-o a directory: expected exit 2"
"$T" report --db nosuch.sqlite -o x.html > /dev/null 2> err.txt
[ $? -eq 3 ] || fail "a missing database: expected exit 3"
[ -e x.html ] && fail "a missing database wrote a file"
"$T" report --db r.sqlite --peak sometimes > /dev/null 2> err.txt
[ $? -eq 2 ] || fail "--peak sometimes: expected exit 2"
ls reports/*.tmp.* > /dev/null 2>&1 && fail "a temporary file was left behind"
echo "ok"
