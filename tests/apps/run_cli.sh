#!/bin/bash
# SPDX-License-Identifier: MIT
# `tune run`: one trial in a fresh worker. The JSON has the required fields and is consistent;
# the parent's OpenMP variables do not leak into the worker; bad input exits 2 naming the value;
# a worker that crashes, hangs or is bound wrongly gets its status (fault injection).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
T=${BKM_TUNE:?BKM_TUNE not set}
TH=${BKM_TUNE_TESTHOOKS:?BKM_TUNE_TESTHOOKS not set}   # the test build: --inject (faults)
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
npu=$(getconf _NPROCESSORS_ONLN)
short=(--min-time 0.05 --max-samples 20)

# jq-like check: python3 expression over the document d; prints the value, fails when falsy.
jcheck() { # file expr what
    python3 - "$1" "$2" <<'PY' || fail "$3: $(head -c 600 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
sys.exit(0 if ok else 1)
PY
}

"$T" run --help >"$tmp/help" || fail "--help exit $?"
for opt in --workload --backend --threads --affinity --blocktime --param --warmup --iters --data-seed \
           --min-time --max-samples --max-time --counters --trial-timeout --json; do
    grep -q -- "$opt" "$tmp/help" || fail "--help does not document $opt"
done
grep -q "example" "$tmp/help" || fail "--help has no example"
"$T" worker --help | grep -q "INTERNAL" || fail "tune worker --help does not say it is internal"

# --- the issue's example, with the required fields ---------------------------------------
threads=2; [ "$npu" -lt 2 ] && threads=1
"$T" run --workload gemm --param m=256 --param n=256 --param k=256 --threads $threads "${short[@]}" \
    --json >"$tmp/gemm.json" 2>"$tmp/gemm.err" || fail "gemm run exit $?: $(cat "$tmp/gemm.err")"
for k in workload backend params threads samples_ms median_ms min_ms gflops flops_per_iter binding check counters; do
    jcheck "$tmp/gemm.json" "'$k' in d" "field $k missing"
done
jcheck "$tmp/gemm.json" "d['status'] == 'ok' and d['workload'] == 'gemm' and d['threads'] == $threads" "status/workload/threads"
jcheck "$tmp/gemm.json" "d['params']['m'] == 256 and d['params']['k'] == 256" "params"
jcheck "$tmp/gemm.json" "d['backend'] in ('native', 'onednn')" "backend"
jcheck "$tmp/gemm.json" "len(d['samples_ms']) >= 5 and all(x > 0 for x in d['samples_ms'])" "samples_ms"
jcheck "$tmp/gemm.json" "min(d['samples_ms']) == d['min_ms'] and d['min_ms'] <= d['median_ms'] <= max(d['samples_ms'])" "min/median consistent with samples"
jcheck "$tmp/gemm.json" "sorted(d['samples_ms'])[(len(d['samples_ms'])-1)//2] <= d['median_ms'] <= sorted(d['samples_ms'])[len(d['samples_ms'])//2]" "median of samples"
jcheck "$tmp/gemm.json" "d['flops_per_iter'] == 2*256**3" "flops_per_iter = 2mnk"
jcheck "$tmp/gemm.json" "abs(d['gflops'] - d['flops_per_iter'] / (d['median_ms'] * 1e6)) <= 1e-6 * d['gflops']" "gflops from the median"
jcheck "$tmp/gemm.json" "isinstance(d['check']['checksum'], float) or isinstance(d['check']['checksum'], int)" "check.checksum"
jcheck "$tmp/gemm.json" "d['binding']['ok'] is True and len(d['binding']['threads']) == $threads" "binding verified"
jcheck "$tmp/gemm.json" "d['ci95_ms'][0] <= d['median_ms'] <= d['ci95_ms'][1] and d['mad_ms'] >= 0" "CI and MAD"
jcheck "$tmp/gemm.json" "len(d['warmup_ms']) >= 1" "warm-up recorded"
jcheck "$tmp/gemm.json" "'values' in d['counters'] and 'unavailable' in d['counters']" "counters split into values/unavailable"
jcheck "$tmp/gemm.json" "all(isinstance(v, str) and v for v in d['counters']['unavailable'].values())" "unavailable counters carry a reason"

# --- text output ---------------------------------------------------------------------------
"$T" run --workload gemm --param m=64 --param n=64 --param k=64 "${short[@]}" >"$tmp/text" || fail "text run exit $?"
grep -q "^status      ok" "$tmp/text" || fail "text: no status line: $(head -3 "$tmp/text")"
grep -q "GFLOP/s" "$tmp/text" || fail "text: no GFLOP/s"
grep -q "check       checksum" "$tmp/text" || fail "text: no check value"
grep -q "thread 0" "$tmp/text" || fail "text: no verified binding per thread"
grep -q "avg time" "$tmp/text" && fail "text: the conv3d seed's line on a gemm run"
# conv3d text mode carries the seed's own line (berkely.py): the mean of the timed samples, which the
# JSON of the same settings does not (it has samples_ms)
"$T" run --workload conv3d --param shape=mb2ic3id7ih6iw5oc4kd3 "${short[@]}" >"$tmp/c3.text" || fail "conv3d text exit $?"
grep -Eq "^avg time [0-9]+\.[0-9]{4} millisecond$" "$tmp/c3.text" || fail "conv3d text: no 'avg time X millisecond' line"
"$T" run --workload conv3d --param shape=mb2ic3id7ih6iw5oc4kd3 "${short[@]}" --json >"$tmp/c3.json" || fail "conv3d json exit $?"
grep -q "avg time" "$tmp/c3.json" && fail "conv3d JSON carries the text line"
jcheck "$tmp/c3.json" "d['status'] == 'ok' and len(d['samples_ms']) >= 1" "conv3d JSON"

# --- environment cleaning and the trial's own settings -------------------------------------
KMP_AFFINITY=bogus,garbage OMP_PLACES=nonsense GOMP_CPU_AFFINITY=999 OMP_NUM_THREADS=7 \
    "$T" run --workload gemm --param m=64 --param n=64 --param k=64 "${short[@]}" --json >"$tmp/env.json" \
    || fail "a parent KMP_AFFINITY/OMP_PLACES leaked into the worker (exit $?)"
jcheck "$tmp/env.json" "d['env'] == {} and d['threads'] == 1 and len(d['binding']['threads']) == 1" "parent OpenMP env leaked"
if [ "$npu" -ge 2 ]; then
    "$T" run --workload gemm --param m=64 --param n=64 --param k=64 --threads 2 --affinity granularity=fine,compact \
        --blocktime 0 "${short[@]}" --json >"$tmp/aff.json" || fail "compact run exit $?"
    jcheck "$tmp/aff.json" "d['env'] == {'KMP_AFFINITY': 'granularity=fine,compact', 'KMP_BLOCKTIME': '0'}" "trial env"
    jcheck "$tmp/aff.json" "d['binding']['ok'] and d['binding']['bound'] and d['binding']['threads'][0]['actual'] != d['binding']['threads'][1]['actual']" "compact binds threads apart"
fi

# --- counters ------------------------------------------------------------------------------
"$T" run --workload gemm --param m=64 --param n=64 --param k=64 "${short[@]}" --counters none --json >"$tmp/c0.json" || fail "--counters none exit $?"
jcheck "$tmp/c0.json" "d['counters']['values'] == {} and d['counters']['unavailable'] == {}" "--counters none"
"$T" run --workload gemm --param m=64 --param n=64 --param k=64 "${short[@]}" --counters perf::TASK-CLOCK,NO_SUCH_EVENT \
    --json >"$tmp/c1.json" || fail "--counters list exit $?"
jcheck "$tmp/c1.json" "'NO_SUCH_EVENT' in d['counters']['unavailable']" "unknown event listed as unavailable"
jcheck "$tmp/c1.json" "'perf::TASK-CLOCK' in d['counters']['unavailable'] or d['counters']['values']['perf::TASK-CLOCK'] > 0" "task-clock counted"

# --- seeds: --data-seed is the workload's data seed; --seed, its former spelling here, still works
# with a one-line note (elsewhere --seed seeds bkm's own random choices) --------------------------
"$T" run --workload gemm --data-seed 7 --dry-run >"$tmp/ds.json" 2>"$tmp/ds.err" || fail "--data-seed exit $?"
jcheck "$tmp/ds.json" "d['seed'] == '7'" "--data-seed is not the trial spec's seed"
[ -s "$tmp/ds.err" ] && fail "--data-seed printed: $(cat "$tmp/ds.err")"
"$T" run --workload gemm --seed 7 --dry-run >"$tmp/s.json" 2>"$tmp/s.err" || fail "--seed exit $?"
cmp -s "$tmp/ds.json" "$tmp/s.json" || fail "--seed 7 is not --data-seed 7: $(cat "$tmp/s.json")"
[ "$(wc -l < "$tmp/s.err")" -eq 1 ] && grep -q "note: --seed is deprecated, use --data-seed" "$tmp/s.err" ||
    fail "--seed without its one-line note: $(cat "$tmp/s.err")"
"$T" run --help | grep -q -- "(--seed, its former name, still works)" || fail "--help does not name --seed's new name"

# --- bad input: exit 2, naming the value ---------------------------------------------------
bad() { # expected-substring args...
    local want=$1; shift
    "$T" run "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    [ $rc = 2 ] || fail "tune run $* exit $rc, want 2"
    grep -q -- "$want" "$tmp/err" || fail "tune run $*: message does not name '$want': $(cat "$tmp/err")"
}
bad "zz" --workload gemm --param zz=3
bad "abc" --workload gemm --param m=abc
# the kernel's own rules, checked before any worker starts (as the sweep's space checks them)
if grep -qw avx2 /proc/cpuinfo; then
    bad "isa=avx2: parameter mc=56 is not a multiple of 6" --workload gemm --param isa=avx2 --param mc=56 --dry-run
    "$T" run --workload gemm --param isa=avx2 --param mc=12 --dry-run > /dev/null 2> "$tmp/err" ||
        fail "tune run isa=avx2 mc=12 (a multiple of avx2's 6 rows) refused: $(cat "$tmp/err")"
fi
[ "$npu" -lt 2 ] || bad "nt_jc=3 does not divide nt=2" --workload gemm --threads 2 --param nt_jc=3 --dry-run
bad "nosuch" --workload nosuch
bad "threads $((npu + 1))" --workload gemm --threads $((npu + 1))
bad "sideways" --workload gemm --affinity granularity=fine,sideways
bad "quantum" --workload gemm --backend quantum
bad "--iters" --workload gemm --iters 0
bad "--frobnicate" --workload gemm --frobnicate 1
bad "--workload" --threads 1
# the shipped tune cannot be told to crash: --inject exists only in the test build, its help does
# not know of it, the fault code is not in its binary (the failure it would inject is a string
# only the test build holds), and its worker refuses a trial spec that names a fault
for c in run sweep; do
    "$T" $c --help | grep -qi inject && fail "tune $c --help mentions inject"
    "$TH" $c --help | grep -q -- "--inject" || fail "tune_testhooks $c --help lacks --inject"
done
grep -qa "injected failure" "$T" && fail "the shipped tune holds the worker's fault code"
grep -qa "injected failure" "$TH" || fail "tune_testhooks lacks the fault code (the check above is blind)"
spec='{"workload":"gemm","threads":1,"params":{"m":"16","n":"16","k":"16"},"inject":"segv"}'
OMP_NUM_THREADS=1 "$T" worker --spec "$spec" > "$tmp/w.out" 2> "$tmp/w.err"
rc=$?
[ $rc != 0 ] && grep -q "exists only in the test build" "$tmp/w.err" "$tmp/w.out" ||
    fail "the shipped worker ran a spec naming a fault: exit $rc: $(cat "$tmp/w.err")"
bad "unknown option '--inject'" --workload gemm --inject segv
T=$TH bad "segfault" --workload gemm --inject segfault

# --- faults (test build's --inject): status recorded, never a crash of tune -------------------
fault() { # inject want-exit want-status extra-args...
    local inj=$1 want_rc=$2 want=$3; shift 3
    "$TH" run --workload gemm --param m=64 --param n=64 --param k=64 "${short[@]}" --inject "$inj" "$@" --json \
        >"$tmp/f.json" 2>"$tmp/f.err"; local rc=$?
    [ $rc = "$want_rc" ] || fail "--inject $inj exit $rc, want $want_rc: $(cat "$tmp/f.err")"
    jcheck "$tmp/f.json" "d['status'] == '$want'" "--inject $inj status"
}
# Under AddressSanitizer the SIGSEGV must stay a signal (ASan would turn it into exit 1).
ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" fault segv 3 crashed
jcheck "$tmp/f.json" "d['signal'] == 'SIGSEGV'" "crash names the signal"
fault abort 3 crashed
start=$(date +%s)
fault hang 3 timeout --trial-timeout 2
[ $(( $(date +%s) - start )) -lt 20 ] || fail "the hung worker was not killed at the trial timeout"
fault fail 3 failed
jcheck "$tmp/f.json" "'injected failure' in d['stderr_tail'] and d['exit_code'] != 0" "failed keeps the stderr tail"
fault badjson 3 failed
fault mismatch 1 binding-mismatch
jcheck "$tmp/f.json" "d['binding']['ok'] is False and d['binding']['difference']" "mismatch JSON has the difference"
# --- --compare: both engines step for step in one worker ------------------------------------
"$T" run --workload alexnet --backend native --compare onednn --param batch=2 --param layers=1 --threads $threads \
    --warmup 1 --min-samples 3 --max-samples 3 --min-time 0 --counters none --json >"$tmp/cmp.json" 2>"$tmp/cmp.err" \
    || fail "--compare run exit $?: $(cat "$tmp/cmp.err")"
jcheck "$tmp/cmp.json" "d['compare']['backend'] == 'onednn' and d['compare']['pairs'] == 3" "compare backend and pairs"
jcheck "$tmp/cmp.json" "len(d['compare']['samples_ms']) == 3 and all(x > 0 for x in d['compare']['samples_ms'] + d['compare']['compare_samples_ms'])" "compare samples"
jcheck "$tmp/cmp.json" "abs(d['compare']['ratio'] - d['compare']['compare_median_ms'] / d['compare']['median_ms']) <= 1e-9 * d['compare']['ratio']" "compare ratio from the medians"
jcheck "$tmp/cmp.json" "sorted(d['compare']['compare_samples_ms'])[1] == d['compare']['compare_median_ms']" "compare median of its samples"
jcheck "$tmp/cmp.json" "('conv1', 'fwd') in set((l['layer'], l['direction']) for l in d['compare']['compare_layers']) <= set((l['layer'], l['direction']) for l in d['layers'])" "compare per-layer table: the trial's layers (oneDNN lists no dropout rows)"
jcheck "$tmp/cmp.json" "d['backend'] == 'native'" "the trial's backend stays native"
"$T" run --workload gemm --param m=64 --param n=64 --param k=64 --backend native --compare onednn "${short[@]}" \
    --counters none >"$tmp/cmp.txt" || fail "--compare text exit $?"
grep -q "^compare     onednn median .* interleaved pairs: ratio" "$tmp/cmp.txt" || fail "--compare: no text line: $(cat "$tmp/cmp.txt")"
for bad in "--compare onednn" "--backend native --compare native" "--backend native --compare bogus"; do
    # shellcheck disable=SC2086
    "$T" run --workload gemm $bad "${short[@]}" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 2 ] || fail "run $bad: exit $rc, want 2: $(cat "$tmp/err")"
    grep -q "compare\|bogus" "$tmp/err" || fail "run $bad: the message does not name the value: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && fail "run $bad wrote to stdout"
done
echo "ok"
