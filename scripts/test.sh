#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite on a fresh Debian 12 machine: installs what is missing, builds twice
# (release, and ASan+UBSan), runs every CTest test in both (not the perf-labelled benchmarks,
# which assert nothing: run them with bench/ or `ctest -L perf`). Exit status is ctest's.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export BKM_SETUP_TEST_PKGS=1
jobs=$(nproc)

"$top/scripts/setup.sh" "$top/build"
(cd "$top/build" && ctest --output-on-failure -j"$jobs" --timeout 900 -LE 'perf|fresh')

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (the perf-labelled
# benchmarks are left out: they time things, they test nothing a sanitizer could see).
"$top/scripts/setup.sh" "$top/build-asan" -DBKM_SANITIZE=ON
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs" --timeout 900 -LE 'perf|nosan|fresh')
