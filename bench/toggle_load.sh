# SPDX-License-Identifier: MIT
# Sourced by the rate benches (aa_rate.sh, power_study.sh): a bounded toggling background load.
#   start_load SECONDS   1 or 2 spinning shells, each phase on for 0.2-1.2 s (killed by `timeout`),
#                        then off for 0.2-1.2 s, until SECONDS have passed or stop_load
#   stop_load            end it (and wait for it); safe to call when none runs
# The caller traps EXIT/INT/TERM to stop_load.
load_pid=""

toggle_load() {
  local end=$((SECONDS + $1)) n on off
  while [ "$SECONDS" -lt "$end" ]; do
    n=$((1 + RANDOM % 2))
    on=$(printf '0.%d' $((2 + RANDOM % 8)))
    off=$(printf '0.%d' $((2 + RANDOM % 8)))
    for _ in $(seq "$n"); do timeout "$on" sh -c 'while :; do :; done' & done
    wait
    sleep "$off"
  done
}

start_load() {
  toggle_load "$1" &
  load_pid=$!
}

stop_load() {
  [ -n "$load_pid" ] || return 0
  kill "$load_pid" 2> /dev/null
  wait "$load_pid" 2> /dev/null
  load_pid=""
}
