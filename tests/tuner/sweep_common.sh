# SPDX-License-Identifier: MIT
# Shared by the sweep scenario scripts (sourced): a temporary folder, a tiny gemm sweep, and
# helpers that read the database with the sqlite3 CLI.
set -u
: "${BKM_TUNE:?BKM_TUNE must point at the tune executable}"
if ! command -v sqlite3 > /dev/null; then
  echo "SKIP: the sqlite3 command-line tool is not installed (apt-get install sqlite3)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; exit 1; }
# A tiny gemm sweep on this host: threads 1,2 x {default, compact} x blocktime {default, 0, 1, infinite}.
tiny=(--workload gemm --param m=64 --param n=64 --param k=64 --threads 1,2 --affinity default
      --affinity granularity=fine,compact --blocktime 0,1,200,infinite --strategy grid
      --min-time 0.02 --min-samples 5 --max-samples 10 --confirm-top 1)
q() { [ -s "$1" ] && sqlite3 -readonly -batch -noheader "$1" "$2"; }
space_size() { "$BKM_TUNE" "$@" --dry-run --json | grep -c '"threads":'; }
# wait_trials DB N: wait (up to 30 s) until DB holds at least N trials
wait_trials() {
  local n
  for _ in $(seq 1 600); do
    n=$(q "$1" "SELECT count(*) FROM trial" 2> /dev/null || echo 0)
    [ "${n:-0}" -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
