#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ranks x threads as a tuner dimension (issue 12, "The tuner"), with fmnist-sgd under MPICH's
# mpiexec on this host (2 cores; the MLP on a 20-step run keeps each trial about a second):
#  - a sweep over --ranks 1,2 --threads 1: every MPI trial runs under mpiexec -n P -bind-to core:1;
#    a 2-rank trial stores one sample per rank, each rank's CPUs (disjoint) and median step time,
#    the median and the max over ranks; the sweep ends with a best-known setting stored, and
#    `tune sbatch` turns it into srun -n <its ranks> ... tune train;
#  - a rank that kills itself (test build: --inject killrank1@2): the trial is stored as crashed
#    within seconds, the sweep goes on with the next trial and exits 4 (partial);
#  - ranks that share CPUs (an mpiexec wrapper that binds nothing): binding-mismatch;
#  - with SLURM_JOB_ID set, srun starts the trials (-n P --cpus-per-task=T --cpu-bind=cores);
#  - bad input: --ranks beyond the cores, --ranks for another workload, --affinity with fmnist-sgd.
set -u
: "${BKM_TUNE:?}" "${BKM_TUNE_TESTHOOKS:?}"
if ! command -v mpiexec > /dev/null; then
  echo "SKIP: mpiexec not found (apt-get install mpich)"
  exit 77
fi
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: $data not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
cores=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$cores" -lt 2 ]; then
  echo "SKIP: 2 CPUs needed for 2 ranks on cores of their own (this process may use $cores)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done; exit 1; }
short=(--param model=mlp --param train_limit=2560 --param test_limit=200 --strategy grid)

# 1. --ranks 1,2 --threads 1: search, confirmation, best-known setting; per-rank results stored
timeout -k 5 150 "$BKM_TUNE" sweep --workload fmnist-sgd --ranks 1,2 --threads 1 "${short[@]}" --confirm-top 1 \
  --db "$tmp/a.sqlite" > "$tmp/a.out" 2> "$tmp/a.err"
rc=$?
[ $rc = 0 ] || fail "sweep --ranks 1,2 exited $rc"
python3 - "$tmp/a.sqlite" << 'PY' || fail "stored results of the ranks sweep"
import json, sqlite3, statistics, sys
def cpu_set(text):
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT id, status, config_json, median_ms, binding_json, role FROM trial").fetchall()
assert rows and all(r[1] == "ok" for r in rows), [(r[0], r[1]) for r in rows]
two = [r for r in rows if json.loads(r[2])["params"].get("ranks") == "2"]
one = [r for r in rows if "ranks" not in json.loads(r[2])["params"]]
assert two and one, "both 1- and 2-rank trials ran"
for tid, _, cfg, median, bind, role in two:
    b = json.loads(bind)
    ranks = b["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1], ranks
    cpus = [cpu_set(r["cpus"]) for r in ranks]
    assert cpus[0] and cpus[1] and not (cpus[0] & cpus[1]) and not b["ranks_share_cpus"], ranks
    per = [r["step_median_ms"] for r in ranks]
    assert all(p > 0 for p in per), per
    assert abs(b["median_ms"] - statistics.median(per)) <= 1e-9 * b["median_ms"], (b, per)
    assert abs(b["max_ms"] - max(per)) <= 1e-12 * max(per), (b, per)
    assert abs(median - b["median_ms"]) <= 1e-9 * median, (median, b)
    samples = [s for (s,) in db.execute("SELECT ms FROM sample WHERE trial_id = ? ORDER BY idx", (tid,))]
    assert len(samples) == 2 and all(abs(s - p) <= 1e-9 * p for s, p in zip(samples, per)), (samples, per)
for r in one:
    assert len(json.loads(r[4])["ranks"]) == 1
best = db.execute("SELECT config_json, median_ms FROM best WHERE workload = 'fmnist-sgd'").fetchall()
assert len(best) == 1 and best[0][1] > 0, best
print(f"ok: {len(rows)} trials ({len(two)} with 2 ranks, per-rank results stored); best-known: {best[0][0]}")
PY
grep -q "best-known:" "$tmp/a.out" || fail "no best-known line: $(cat "$tmp/a.out")"
# the batch script of the best-known setting: its ranks become srun's, every rank runs tune train
"$BKM_TUNE" sbatch --node auto --workload fmnist-sgd --db "$tmp/a.sqlite" -o "$tmp/a.sbatch" > /dev/null 2> "$tmp/s.err" ||
  fail "tune sbatch of the best-known setting"
n=$(python3 -c 'import json, sqlite3, sys; print(json.loads(sqlite3.connect(sys.argv[1]).execute("SELECT config_json FROM best").fetchone()[0])["params"].get("ranks", "1"))' "$tmp/a.sqlite")
grep -q "^srun -n $n --ntasks-per-node=$n -c $((cores / n)) --cpu-bind=cores --mpi=pmi2" "$tmp/a.sbatch" ||
  fail "sbatch srun line for $n rank(s): $(grep srun "$tmp/a.sbatch")"
grep -q '"$TUNE" train --workload fmnist-sgd --threads "$OMP_NUM_THREADS" --param model=mlp' "$tmp/a.sbatch" ||
  fail "sbatch tune line: $(tail -1 "$tmp/a.sbatch")"
grep -q "ranks=" "$tmp/a.sbatch" && fail "ranks passed as a training parameter: $(tail -1 "$tmp/a.sbatch")"
echo "ok: tune sbatch runs the best-known setting as $n rank(s) of tune train"

# 2. a rank that dies: crashed, recorded, the sweep goes on
start=$(date +%s)
timeout -k 5 90 "$BKM_TUNE_TESTHOOKS" sweep --workload fmnist-sgd --ranks 2 --threads 1 "${short[@]}" --confirm-top 0 \
  --inject killrank1@2 --db "$tmp/b.sqlite" > "$tmp/b.out" 2> "$tmp/b.err"
rc=$?
[ $rc = 4 ] || fail "sweep with a killed rank exited $rc, not 4 (partial)"
python3 - "$tmp/b.sqlite" << 'PY' || fail "the crashed trial"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT status, config_json, error, exit_info FROM trial ORDER BY id").fetchall()
crashed = [r for r in rows if r[0] == "crashed"]
assert len(crashed) == 1, rows
assert json.loads(crashed[0][1])["params"]["ranks"] == "2", crashed
assert "SIGKILL" in crashed[0][2] and "SIGKILL" in crashed[0][3], crashed
assert sum(r[0] == "ok" for r in rows) >= 1, rows
print("ok: killed rank recorded as", crashed[0][2])
PY
[ $(( $(date +%s) - start )) -lt 60 ] || fail "the sweep with a killed rank took more than 60 s"

# 3. ranks that share CPUs: an mpiexec on PATH that binds nothing (-bind-to none) makes the
#    2-rank trial a binding mismatch naming every rank's CPUs
mkdir "$tmp/bin"
real=$(command -v mpiexec)
cat > "$tmp/bin/mpiexec" << SH
#!/usr/bin/env bash
args=()
for a in "\$@"; do case "\$a" in core:*) args+=(none) ;; *) args+=("\$a") ;; esac; done
exec "$real" "\${args[@]}"
SH
chmod +x "$tmp/bin/mpiexec"
PATH="$tmp/bin:$PATH" timeout -k 5 90 "$BKM_TUNE" sweep --workload fmnist-sgd --ranks 2 --threads 1 "${short[@]}" \
  --confirm-top 0 --db "$tmp/d.sqlite" > "$tmp/d.out" 2> "$tmp/d.err"
rc=$?
[ $rc = 4 ] || fail "sweep with unbound ranks exited $rc, not 4"
python3 - "$tmp/d.sqlite" << 'PY' || fail "the binding mismatch"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT status, config_json, error, binding_json FROM trial ORDER BY id").fetchall()
bad = [r for r in rows if r[0] == "binding-mismatch"]
assert len(bad) == 1 and json.loads(bad[0][1])["params"]["ranks"] == "2", rows
assert "share CPUs" in bad[0][2] and "rank 1" in bad[0][2], bad
assert json.loads(bad[0][3])["ranks_share_cpus"] is True, bad
print("ok: shared CPUs refused:", bad[0][2])
PY

# 4. inside a Slurm allocation (SLURM_JOB_ID set) the trials start with srun: a stand-in srun on
#    PATH records its arguments and runs the ranks with hydra, bound as srun's --cpu-bind=cores would
mkdir "$tmp/sbin"
cat > "$tmp/sbin/srun" << SH
#!/usr/bin/env bash
echo "\$*" | cut -c1-200 >> "$tmp/srun.args"
n=1 c=1 args=()
while [ \$# -gt 0 ]; do
  case "\$1" in -n) n=\$2; shift 2 ;; --cpus-per-task=*) c=\${1#*=}; shift ;; --cpu-bind=*|--export=*|--mpi=*) shift ;;
                *) args+=("\$1"); shift ;; esac
done
exec "$real" -n "\$n" -bind-to core:"\$c" "\${args[@]}"
SH
chmod +x "$tmp/sbin/srun"
SLURM_JOB_ID=4242 PATH="$tmp/sbin:$PATH" timeout -k 5 90 "$BKM_TUNE" sweep --workload fmnist-sgd --ranks 2 --threads 1 \
  "${short[@]}" --confirm-top 0 --db "$tmp/e.sqlite" > "$tmp/e.out" 2> "$tmp/e.err"
rc=$?
[ $rc = 0 ] || fail "sweep under SLURM_JOB_ID exited $rc"
grep -q -- "^-n 2 --cpus-per-task=1 --cpu-bind=cores --export=ALL --mpi=pmi2 .*tune worker --spec" "$tmp/srun.args" ||
  fail "srun arguments: $(cat "$tmp/srun.args")"
grep -q -- "^-n 1 --cpus-per-task=2 --cpu-bind=cores" "$tmp/srun.args" || fail "the default's srun: $(cat "$tmp/srun.args")"
echo "ok: srun inside an allocation: $(head -c 60 "$tmp/srun.args")..."

# 5. bad input: exit 2 naming the value, nothing written
for bad in "--ranks $((cores + 1))" "--ranks 0" "--affinity compact"; do
  # shellcheck disable=SC2086
  "$BKM_TUNE" sweep --workload fmnist-sgd $bad --db "$tmp/c.sqlite" > /dev/null 2> "$tmp/c.err"
  rc=$?
  [ $rc = 2 ] || fail "$bad: exit $rc, not 2"
  grep -q -- "${bad%% *}\|${bad##* }" "$tmp/c.err" || fail "$bad: message does not name it: $(cat "$tmp/c.err")"
done
"$BKM_TUNE" sweep --workload gemm --ranks 2 --db "$tmp/c.sqlite" > /dev/null 2> "$tmp/c.err"
[ $? = 2 ] && grep -q "ranks" "$tmp/c.err" || fail "--ranks with gemm: $(cat "$tmp/c.err")"
[ ! -e "$tmp/c.sqlite" ] || fail "bad input wrote the database"
echo "ok: bad --ranks / --affinity refused"
