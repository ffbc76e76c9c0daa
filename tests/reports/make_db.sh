#!/bin/bash
# SPDX-License-Identifier: MIT
# The database the report tests render, made by the real tools in ~10 s: a gemm 32^3 sweep
# (threads x affinity x blocktime, confirmation round: best-known setting with evidence, box
# plots, counters, binding) labelled with hostile HTML, one trial of it crashed on purpose
# (tune_testhooks --inject), a one-configuration conv3d network sweep with per-layer times, and
# one gate run (tune regress on gemm only). Usage: make_db.sh [DB [TMPDIR]] (default DB:
# $BKM_REPORT_DB, the report_db fixture of CTest; TMPDIR: DB's folder)
set -u
db=${1:-${BKM_REPORT_DB:?give DB or set BKM_REPORT_DB}}
tmp=${2:-$(dirname "$db")}
mkdir -p "$tmp"
rm -f "$db" "$db-wal" "$db-shm"
T=${BKM_TUNE:?BKM_TUNE must point at tune}
TH=${BKM_TUNE_TESTHOOKS:?BKM_TUNE_TESTHOOKS must point at tune_testhooks}
label='<script>alert(1)</script> & "quotes" '"'"'x'"'"
# (under -DBKM_SANITIZE=ON, ASan must let the SIGSEGV kill the worker, as in test_sweep_faults)
ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" "$TH" --node auto --workload gemm --param m=32 --param n=32 --param k=32 --min-time 0.01 --confirm-top 2 \
  --label "$label" --db "$db" --inject segv@3 > "$tmp/sweep1.out" 2>&1
rc=$?
[ $rc -eq 4 ] || { echo "make_db: gemm sweep exit $rc (expected 4: one crash)"; cat "$tmp/sweep1.out"; exit 1; }
"$T" --node auto --workload conv3d --param batch=1 --param layers=1 --threads 2 --affinity default --blocktime 200 \
  --hw-subset none --confirm-top 0 --min-samples 2 --min-time 0 --db "$db" > "$tmp/sweep2.out" 2>&1 ||
  { echo "make_db: conv3d sweep failed"; cat "$tmp/sweep2.out"; exit 1; }
"$T" regress --record -o "$tmp/base.json" --workloads gemm --processes 3 > "$tmp/rec.out" 2>&1 ||
  { echo "make_db: regress --record failed"; cat "$tmp/rec.out"; exit 1; }
"$T" regress --baseline "$tmp/base.json" --db "$db" > "$tmp/chk.out" 2>&1 ||
  { echo "make_db: regress --baseline failed"; cat "$tmp/chk.out"; exit 1; }
exit 0
