#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tune sbatch, tune lint and the main job's --sbatch / --slurm-array without a Slurm: a script from
# a real (tiny) sweep's best-known setting with its provenance, exit 2 when none is stored, exit 3
# when sbatch is missing (naming the package), bad values named before anything is written, the
# linter on the seed's two scripts, unreadable scripts exit 2.
set -euo pipefail
tune=${1:-$BKM_TUNE}
data=$(cd "$(dirname "$0")" && pwd)/data
w=$(mktemp -d "${TMPDIR:-/tmp}/bkm-cli-slurm.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect RC CMD...: run, check the exit code, keep stdout/stderr in out/err
  local want=$1 rc
  shift
  set +e
  "$@" >out 2>err
  rc=$?
  set -e
  [ "$rc" = "$want" ] || { cat out err >&2; fail "'$*': exit $rc, expected $want"; }
}

# --- nothing stored: exit 2 naming node and workload
expect 2 "$tune" sbatch --node knl --workload alexnet --db none.sqlite
grep -q "node 'knl', workload 'alexnet'" err || fail "exit 2 message does not name both: $(cat err)"
[ ! -e none.sqlite ] || fail "a database was created"

# --- a best-known setting from a real sweep on this host (tiny)
"$tune" --node auto --workload gemm --param m=16 --param n=16 --param k=16 --threads 1 --affinity default \
  --affinity compact --min-time 0.005 --min-samples 3 --max-samples 5 --confirm-top 1 --counters none \
  --db b.sqlite >/dev/null 2>&1 || fail "the tiny sweep"
expect 0 "$tune" sbatch --node auto --workload gemm --db b.sqlite -o best.sbatch --account m1234 --qos debug
sweep=$("$tune" best --node auto --workload gemm --db b.sqlite --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sweep"])')
grep -q "^# Setting: the best-known setting of node auto, workload gemm, MEASURED" best.sbatch || fail "no provenance"
grep -q "sweep $sweep on host $(hostname)" best.sbatch || fail "provenance lacks the sweep $sweep and host"
grep -q "bkm revision " best.sbatch || fail "provenance lacks the revision"
grep -q "#   median .* ms, 95% interval \[" best.sbatch || fail "provenance lacks median and interval"
grep -q "speedup vs default" best.sbatch || fail "provenance lacks the speedup"
grep -q "^#SBATCH -A m1234$" best.sbatch || fail "no -A"
grep -q "^#SBATCH -q debug$" best.sbatch || fail "no -q"
grep -q "^srun -n 1 .*--cpu-bind=cores --mpi=pmi2" best.sbatch || fail "srun line"
grep -q -- "--param m=16" best.sbatch || fail "the workload's parameters are not in the run line"
[ -x best.sbatch ] || fail "the script is not executable"
bash -n best.sbatch || fail "the script is not valid shell"
# the generated script lints clean on this host's node
expect 0 "$tune" lint best.sbatch --node auto
# stored for auto, not for knl: exit 2
expect 2 "$tune" sbatch --node knl --workload gemm --db b.sqlite
grep -q "node 'knl', workload 'gemm'" err || fail "$(cat err)"

# --- the other origins
expect 0 "$tune" sbatch --node knl --workload alexnet --seed-bkm -o seed.sbatch
grep -q "PUBLISHED by the seed" seed.sbatch || fail "--seed-bkm not marked as published"
grep -q "^export KMP_AFFINITY='granularity=fine,compact,1,0'$" seed.sbatch || fail "seed KMP_AFFINITY"
grep -q "^export OMP_NUM_THREADS=68$" seed.sbatch || fail "seed threads"
grep -q "^#SBATCH -C knl,quad,cache$" seed.sbatch || fail "-C knl,quad,cache"
expect 0 "$tune" lint seed.sbatch
expect 0 "$tune" sbatch --node haswell --workload alexnet --default --ranks-per-node 12 -o def.sbatch
grep -q "NOT measured" def.sbatch || fail "--default not marked"
grep -q "^srun -n 12 --ntasks-per-node=12 -c 4 --cpu-bind=cores" def.sbatch || fail "haswell 12 ranks: -c 4"
expect 2 "$tune" sbatch --node auto --workload gemm --seed-bkm
expect 2 "$tune" sbatch --node knl --workload gemm --seed-bkm --default
expect 2 "$tune" sbatch --node knl --workload gemm --seed-bkm --time 1:2:3:4 -o t.sbatch
grep -q "1:2:3:4" err || fail "bad time not named"
[ ! -e t.sbatch ] || fail "a script was written for a bad value"
expect 2 "$tune" sbatch --node knl --workload gemm --seed-bkm --account 'm1;reboot'
expect 2 "$tune" sbatch --node knl --workload gemm --seed-bkm --ranks-per-node 8   # 68 threads in -c 32
expect 2 "$tune" sbatch --node nosuch --workload gemm --seed-bkm

# --- no sbatch on the machine: exit 3 with what to install
expect 3 env PATH=/nonexistent "$tune" sbatch --node knl --workload alexnet --seed-bkm -o s.sbatch --submit
grep -q "slurm-client" err || fail "no package named: $(cat err)"

# --- lint
expect 1 "$tune" lint "$data/seed_haswell.sbatch"
grep -q "seed_haswell.sbatch:13: error: KMP_BLOCKTIM .*KMP_BLOCKTIME" out || fail "KMP_BLOCKTIM not flagged: $(cat out)"
grep -q "^placement of rank 0 on haswell" out || fail "no placement explanation"
expect 0 "$tune" lint "$data/seed_knl.sbatch"
expect 1 "$tune" lint "$data/seed_haswell.sbatch" --json
python3 -c 'import json,sys; j=json.load(open("out")); assert j["errors"]==1 and j["findings"][0]["line"]==13, j' ||
  fail "lint --json"
expect 2 "$tune" lint nosuch.sbatch
grep -q "nosuch.sbatch" err || fail "unreadable script not named"
expect 2 "$tune" lint .
expect 2 "$tune" lint
expect 2 "$tune" lint "$data/seed_knl.sbatch" --node nosuch
printf 'a\0b' >nul.sh
expect 2 "$tune" lint nul.sh
# numbers Slurm refuses (or that wrap) are errors naming them, not skipped
printf '#!/bin/bash\n#SBATCH -N 99999999999\n#SBATCH -c -5\nsrun -n 2147483648 -c 0 ./a.out\n' >range.sbatch
expect 1 "$tune" lint range.sbatch --node knl
for v in "-N '99999999999'" "-c '-5'" "srun -n '2147483648'" "srun -c '0'"; do
  grep -qF -- "$v is not a whole number" out || fail "lint does not flag $v: $(cat out)"
done

# --- the main job's Slurm options (no submission)
expect 0 "$tune" --node knl --workload alexnet --sbatch knl-sweep.sbatch --db "$w/res.sqlite" --account m1
grep -q "^#SBATCH -C knl,quad,cache$" knl-sweep.sbatch || fail "sweep job: -C"
grep -q "sweep --node knl --workload alexnet --db \"\$LOCAL\"" knl-sweep.sbatch || fail "sweep job: the sweep line"
grep -q "merge \"\$DB\" \"\$LOCAL\"" knl-sweep.sbatch || fail "sweep job: no merge into the database"
grep -q "^DB='$w/res.sqlite'$" knl-sweep.sbatch || fail "sweep job: the database path"
bash -n knl-sweep.sbatch
[ ! -e res.sqlite ] || fail "writing the job created the database"
expect 0 "$tune" --node knl --workload alexnet --slurm-array 4 --sbatch arr.sbatch --db res.sqlite
[ -f arr-merge.sbatch ] || fail "no merge job script"
grep -q "^#SBATCH --array=0-3$" arr.sbatch || fail "--array=0-3"
grep -q -- "--strategy grid" arr.sbatch || fail "the shards do not run the grid"
bash -n arr.sbatch && bash -n arr-merge.sbatch
expect 2 "$tune" --node knl --workload alexnet --slurm-array 4 --strategy local --sbatch x.sbatch
expect 2 "$tune" --node knl --workload alexnet --submit
expect 2 "$tune" --node knl --workload alexnet --slurm-array 0
expect 2 "$tune" --node auto --workload gemm --shard 2/2 --strategy grid --db s.sqlite
expect 2 "$tune" --node auto --workload gemm --shard 1/2 --strategy halving --db s.sqlite   # not grid
[ ! -e s.sqlite ] || fail "a refused shard created its database"

# --- shards without Slurm: two shards of one group merge into the unsplit sweep's trials, once
sw=(--node auto --workload gemm --param m=16 --param n=16 --param k=16 --threads 1,2 --affinity default
  --affinity compact --min-time 0.005 --min-samples 3 --max-samples 5 --confirm-top 1 --counters none)
for i in 0 1; do
  "$tune" sweep "${sw[@]}" --shard $i/2 --shard-group g1 --db sh$i.sqlite >/dev/null 2>&1 || fail "shard $i"
done
"$tune" sweep "${sw[@]}" --strategy grid --db whole.sqlite >/dev/null 2>&1 || fail "unsplit sweep"
"$tune" merge m.sqlite sh0.sqlite sh1.sqlite >/dev/null 2>&1 || fail "merge of the shards"
for f in sh0 sh1 m whole; do "$tune" export --db $f.sqlite --format json >$f.json; done
python3 - <<'PY' || fail "shards vs unsplit"
import json
key = lambda t: json.dumps(t["config"], sort_keys=True)
ld = lambda f: json.load(open(f + ".json"))
s0, s1, m, u = ld("sh0"), ld("sh1"), ld("m"), ld("whole")
assert all(t["role"] == "search" for t in s0 + s1), "a shard ran a confirmation"
k0, k1 = {key(t) for t in s0}, {key(t) for t in s1}
assert k0 and k1 and not (k0 & k1), "the shards overlap or one is empty"
ms = [key(t) for t in m if t["role"] == "search"]
assert len(ms) == len(set(ms)) and sorted(ms) == sorted(key(t) for t in u if t["role"] == "search"), (ms, u)
assert len({t["sweep"] for t in m}) == 1, "the shards did not fold into one sweep"
PY
# the merged shards, resumed as the unsplit sweep: no search trial again, the confirmation runs
"$tune" sweep "${sw[@]}" --strategy grid --db m.sqlite >/dev/null 2>&1 || fail "confirmation on the merged shards"
"$tune" best --node auto --workload gemm --db m.sqlite >/dev/null || fail "no best-known setting after the merge"
"$tune" export --db m.sqlite --format json >m2.json
python3 -c '
import json; a=json.load(open("m.json")); b=json.load(open("m2.json"))
s=lambda x: sorted(json.dumps(t["config"], sort_keys=True) for t in x if t["role"]=="search")
assert s(a) == s(b), "the resumed sweep measured search trials again"
assert any(t["role"]=="confirm" for t in b) and len({t["sweep"] for t in b}) == 1' || fail "resume of the merged shards"
echo ok
