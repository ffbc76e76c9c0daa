#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune regress` with the MPI training workload (named only: --workloads fmnist-sgd): each
# process is an MPI job of 1 rank under MPICH's mpiexec (the MLP on a 10-step training run), its
# value the rank's median step time over the calibration's; a baseline recorded and checked
# (3 processes a side: an A/A check can never be a regression at alpha 0.01). Label mpi.
set -u
T=${BKM_TUNE:?BKM_TUNE must point at tune}
if ! command -v mpiexec > /dev/null; then
  echo "SKIP: mpiexec not found (apt-get install mpich)"
  exit 77
fi
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
unset SLURM_JOB_ID  # mpiexec on this host, not srun
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"
timeout -k 5 120 "$T" regress --record -o mpi.json --workloads fmnist-sgd --processes 3 > rec.out 2> rec.err ||
  fail "record: exit $? ($(cat rec.err))"
python3 - mpi.json <<'PY' || fail "the baseline lacks its content: $(cat mpi.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "bkm-regress-baseline", d.get("format")
assert [w["workload"] for w in d["workloads"]] == ["fmnist-sgd"], d["workloads"]
w = d["workloads"][0]
s = w["spec"]
assert s["ranks"] == 1 and s["threads"] == 1, s
params = {p["key"]: p["value"] for p in s["params"]} if isinstance(s["params"], list) else s["params"]
assert params["model"] == "mlp" and params["train_limit"] == "1280", params
assert len(w["values"]) == 3 and all(v > 0 for v in w["values"]), w
for v, a, b in zip(w["values"], w["workload_ms"], w["calibration_ms"]):
    assert a > 0 and b > 0 and abs(v - a / b) <= 1e-9 * v, (v, a, b)
PY
timeout -k 5 120 "$T" regress --baseline mpi.json --workloads fmnist-sgd --json --db g.sqlite > aa.out 2> aa.err
rc=$?
[ $rc -eq 0 ] || fail "A/A: exit $rc, expected 0: $(cat aa.out aa.err)"
python3 -c "
import json; d = json.load(open('aa.out'))
assert d['verdict'] == 'pass', d
r = d['results'][0]
assert r['workload'] == 'fmnist-sgd' and r['n'] == 3 and r['ratio'] > 0 and 'model=mlp' in r['params'], r
" || fail "A/A: the JSON: $(cat aa.out)"
echo ok
