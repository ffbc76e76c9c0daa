#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The seed's KNL script running a PyTorch training step on Debian's python3-torch: statically an
# interpreter (cannot tell); `tune lint --probe` starts it, sees that torch maps GNU libgomp, and
# flags the seed's KMP_AFFINITY and KMP_BLOCKTIME as ignored. Skipped (77) without python3-torch.
set -euo pipefail
tune=${BKM_TUNE:?}
data=${BKM_SOURCE_DIR:?}/tests/slurm/data
py=/usr/bin/python3
if ! [ -e /usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: Debian's python3-torch is not installed (apt-get install python3-torch)"
  exit 77
fi
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-lint-torch.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >step.py <<'PY'
# one training step of a small CNN, then wait (the probe reads the maps while it runs)
import time
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                          torch.nn.Linear(8 * 26 * 26, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
loss = torch.nn.functional.cross_entropy(net(x), y)
loss.backward()
opt.step()
time.sleep(60)
PY
sed "s#python benchmark.py#$py step.py#" "$data/seed_knl.sbatch" >knl.sbatch
set +e
"$tune" lint knl.sbatch >out 2>err
rc=$?
set -e
[ "$rc" = 0 ] || { cat out err; fail "static lint: exit $rc, expected 0"; }
grep -qF "is an interpreter" out || fail "python3 not reported as an interpreter: $(cat out)"
set +e
"$tune" lint knl.sbatch --probe --probe-timeout 20 >out 2>err
rc=$?
set -e
[ "$rc" = 1 ] || { cat out err; fail "--probe: exit $rc, expected 1"; }
grep -qF "(GNU OpenMP)" out || fail "the probe did not see libgomp: $(cat out)"
grep -qF "knl.sbatch:11: error: KMP_AFFINITY is ignored: $py loads libgomp.so.1" out || fail "KMP_AFFINITY: $(cat out)"
grep -qF "knl.sbatch:12: error: KMP_BLOCKTIME is ignored" out || fail "KMP_BLOCKTIME: $(cat out)"
echo "ok"
