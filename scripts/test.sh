#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite on a fresh Debian 12 machine: installs what is missing, builds twice
# (release, and ASan+UBSan), runs every CTest test in both (not the perf-labelled benchmarks,
# which assert nothing: run them with bench/ or `ctest -L perf`). Exit status is ctest's.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export BKM_SETUP_TEST_PKGS=1
jobs=$(nproc)

# libomp 14 maps /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid> at start-up: a zero-length one left by
# a process killed while registering kills the next process with that pid (SIGBUS before main),
# whichever test it is. Remove those of processes that are gone, as the tuner's runner does
# before each worker (bkm_tune_clear_stale_kmp).
clear_stale_kmp() {
  local f pid
  for f in /dev/shm/__KMP_REGISTERED_LIB_*; do
    [ -f "$f" ] && [ ! -s "$f" ] || continue
    pid=${f#/dev/shm/__KMP_REGISTERED_LIB_}; pid=${pid%%_*}
    case $pid in ''|*[!0-9]*) continue ;; esac
    [ -d "/proc/$pid" ] || rm -f "$f"
  done
}

"$top/scripts/setup.sh" "$top/build"
clear_stale_kmp
(cd "$top/build" && ctest --output-on-failure -j"$jobs" --timeout 900 -LE 'perf|fresh')

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (the perf-labelled
# benchmarks are left out: they time things, they test nothing a sanitizer could see).
"$top/scripts/setup.sh" "$top/build-asan" -DBKM_SANITIZE=ON
clear_stale_kmp
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs" --timeout 900 -LE 'perf|nosan|fresh')
