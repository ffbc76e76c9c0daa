#!/bin/bash
# SPDX-License-Identifier: MIT
# The report opened in a real headless Chromium (Debian's `chromium`, installed by
# scripts/setup.sh with BKM_SETUP_TEST_PKGS=1): browser_check.py says what is checked.
set -u
here=$(cd "$(dirname "$0")" && pwd)
T=${BKM_TUNE:?BKM_TUNE must point at tune}
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium, or scripts/setup.sh with BKM_SETUP_TEST_PKGS=1)"
  exit 77
fi
command -v python3 > /dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=${BKM_REPORT_DB:?BKM_REPORT_DB must name the database made by make_db.sh}
[ -s "$src" ] || { echo "FAIL: the fixture database $src is missing (the report_db_setup test failed?)"; exit 1; }
cp "$src" "$tmp/r.sqlite" || exit 1
"$T" report --db "$tmp/r.sqlite" -o "$tmp/report.html" 2> "$tmp/err.txt" ||
  { echo "FAIL: tune report: $(cat "$tmp/err.txt")"; exit 1; }
exec python3 "$here/browser_check.py" "$chromium" "$tmp/report.html" "$tmp"
