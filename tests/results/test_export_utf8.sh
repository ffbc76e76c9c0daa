#!/bin/bash
# SPDX-License-Identifier: MIT
# What bkm writes is valid UTF-8 whatever bytes it stored: a worker whose stderr is not UTF-8
# fails its trial (the database also gets a host name that is not UTF-8); `tune export` JSON and
# CSV decode strictly, the bad bytes shown as U+FFFD.
# A worker's NaN / infinite sample is a failed trial with a message, stored like any other.
set -u
: "${BKM_TUNE:?}" "${BKM_TRIAL_FIXTURE:?}" "${BKM_FAKE_WORKER:?}"
tmp=$(mktemp -d /tmp/bkm-utf8-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to decode the output strictly"; exit 77; }
"$BKM_TRIAL_FIXTURE" "$BKM_FAKE_WORKER" t.sqlite badbytes "$(printf 'nid\xff\xc0\xaf01')" || fail "fixture badbytes"
"$BKM_TRIAL_FIXTURE" "$BKM_FAKE_WORKER" t.sqlite inf "nid00002" || fail "fixture inf"
"$BKM_TUNE" export --db t.sqlite --format json > out.json 2> err.txt || fail "export json: $(cat err.txt)"
python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' < out.json ||
    fail "export json is not strict UTF-8 JSON: $(od -c out.json | head)"
python3 - out.json <<'PY' || fail "export json content"
import json, sys
rows = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert len(rows) == 2, rows
bad, inf = rows
assert bad["status"] == "failed", bad
assert "\ufffd" in bad["error"] and "fake_worker: bytes" in bad["error"], bad["error"]
assert inf["status"] == "failed" and inf["n_samples"] == 0, inf
assert "non-finite sample 2 in samples_ms (inf)" in inf["error"], inf["error"]
PY
"$BKM_TUNE" export --db t.sqlite --format csv > out.csv 2> err.txt || fail "export csv: $(cat err.txt)"
python3 -c 'import csv,io,sys; rows=list(csv.DictReader(io.StringIO(sys.stdin.buffer.read().decode("utf-8"), newline=""))); assert rows[0]["status"] == "failed" and "\ufffd" in rows[0]["error"], rows' < out.csv ||
    fail "export csv is not strict UTF-8: $(od -c out.csv | head)"
echo "ok"
