# SPDX-License-Identifier: MIT
# A real Slurm on localhost for the tests (sourced; docs/slurm.md, "Tests"): a private
# munged, slurmctld and one slurmd per node ("nid00001", ..., the host's real CPUs or a declared
# shape, features of the caller's choice) under one private folder, on free ports, with SLURM_CONF
# exported. Skips (exit 77, with
# the reason) when the packages are missing, the tests do not run as root, or the daemons do not
# come up. On exit it cancels the jobs, shuts Slurm down and stops only the processes it started
# (by their pid files, and any left with its marker in /proc/PID/environ); it never kills by name.
#
#   . tests/slurm/slurm_local.sh
#   slurm_local_start "knl,quad,cache"     # sets BKM_SLURM_DIR, SLURM_CONF
#   slurm_local_wait_job ID 120            # until the job ends; prints its state
#   BKM_SLURM_QOS=regular,debug            # (before start) refuse every other QOS at submission, as a
#                                          # site enforcing QOS does (a job_submit.lua: without
#                                          # slurmdbd, Slurm itself accepts and ignores any -q)
#   BKM_SLURM_MAXTIME=02:00:00             # (before start) the partition's MaxTime (EnforcePartLimits=ALL
#                                          # refuses longer jobs at submission; default INFINITE)
#   BKM_SLURM_PARTITION=batch              # (before start) the partition's name (default debug)
#   BKM_SLURM_NODES=2                      # (before start) that many nodes, nid00001..nid0000N (default 1)
#   BKM_SLURM_SHAPE=2:64:2                 # (before start) declare every node as SOCKETS:CORES:THREADS
#                                          # (a Perlmutter CPU node: 256 CPUs) instead of the host's real
#                                          # CPUs; Slurm trusts it (config_overrides) and binds nothing
#                                          # (task/none: srun warns that it cannot bind), so the ranks
#                                          # run on the host's real CPUs
#   (the EXIT trap stops everything)

slurm_local_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

slurm_local_stop() {
  local d=${BKM_SLURM_DIR:-} p f
  [ -n "$d" ] && [ -d "$d" ] || return 0
  if [ -f "$d/slurm.conf" ]; then
    SLURM_CONF=$d/slurm.conf timeout 5 scancel --full -u root >/dev/null 2>&1 || true
    SLURM_CONF=$d/slurm.conf timeout 5 scontrol shutdown >/dev/null 2>&1 || true
  fi
  for f in "$d"/run/*.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f" 2>/dev/null) || continue
    [ -n "$p" ] && slurm_local_ours "$p" && kill "$p" 2>/dev/null || true
  done
  # job steps (slurmstepd) and anything else started with the marker
  for p in $(slurm_local_marked); do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    [ -z "$(slurm_local_marked)" ] && break
    sleep 0.1
  done
  for p in $(slurm_local_marked); do kill -9 "$p" 2>/dev/null || true; done
  if [ "${SLURM_LOCAL_KEEP:-0}" != 1 ]; then rm -rf "$d"; fi
}

# 0 when pid $1 runs (not a zombie) with our marker in its environment
slurm_local_ours() {
  local st
  st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] || return 1
  { tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null | grep -qx "SLURM_LOCAL_DAEMON_OF=$BKM_SLURM_DIR"
}

slurm_local_marked() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    slurm_local_ours "$p" && echo "$p"
  done
}

slurm_local_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# slurm_local_start FEATURES: the cluster up with its nodes idle, or exit 77 saying why.
slurm_local_start() {
  local features=${1:-knl,quad,cache} host d ctld_port slurmd_port cpus mem i n_nodes shape task nodes_conf
  local sockets cores threads port ports names
  for c in slurmctld slurmd munged mungekey sbatch scontrol sinfo srun python3; do
    command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] ||
      slurm_local_skip "'$c' is not installed (Debian: slurmctld slurmd slurm-client munge; scripts/setup.sh with BKM_SETUP_TEST_PKGS=1 installs them)"
  done
  export PATH="$PATH:/usr/sbin"
  [ "$(id -u)" = 0 ] || slurm_local_skip "a private slurmctld/slurmd needs root (the tests run as uid $(id -u))"
  host=$(hostname -s)
  d=$(mktemp -d "${TMPDIR:-/tmp}/bkm-slurm.XXXXXX")
  export BKM_SLURM_DIR=$d
  trap slurm_local_stop EXIT
  chmod 711 "$d"
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log" "$d/run"
  chmod 711 "$d/munge"
  n_nodes=${BKM_SLURM_NODES:-1}
  shape=${BKM_SLURM_SHAPE:-}
  case $n_nodes in [1-9]) ;; *) slurm_local_skip "BKM_SLURM_NODES='$n_nodes' is not 1..9" ;; esac
  ctld_port=$(slurm_local_free_port)
  ports=""
  for i in $(seq "$n_nodes"); do
    port=$(slurm_local_free_port)
    while [ "$port" = "$ctld_port" ] || case " $ports " in *" $port "*) true ;; *) false ;; esac; do
      port=$(slurm_local_free_port)
    done
    ports="$ports $port"
  done
  slurmd_port=${ports# }
  slurmd_port=${slurmd_port%% *}
  cpus=$(nproc)
  sockets=1 cores=$cpus threads=1 task=task/affinity
  if [ -n "$shape" ]; then
    [[ "$shape" =~ ^[1-9][0-9]*:[1-9][0-9]*:[1-9][0-9]*$ ]] ||
      slurm_local_skip "BKM_SLURM_SHAPE='$shape' is not SOCKETS:CORES:THREADS"
    IFS=: read -r sockets cores threads <<<"$shape"
    cpus=$((sockets * cores * threads))
    task=task/none   # task/affinity cannot lay tasks out over CPUs the host lacks
  fi
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  nodes_conf="" names=""
  i=0
  for port in $ports; do
    i=$((i + 1))
    nodes_conf+="NodeName=nid0000$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$cpus Boards=1 SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem Features=$features State=UNKNOWN"$'\n'
    names+="${names:+,}nid0000$i"
  done
  export BKM_SLURM_NODE_NAMES=$names
  mungekey --create --keyfile="$d/munge/munge.key" >/dev/null 2>&1 || slurm_local_skip "mungekey --create failed"
  chmod 400 "$d/munge/munge.key"
  cat >"$d/slurm.conf" <<EOF
ClusterName=bkmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=$task
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
MinJobAge=3600
SchedulerParameters=sched_interval=1
ReturnToService=2
$([ -n "${BKM_SLURM_QOS:-}" ] && echo JobSubmitPlugins=lua)
${nodes_conf}PartitionName=${BKM_SLURM_PARTITION:-debug} Nodes=ALL Default=YES MaxTime=${BKM_SLURM_MAXTIME:-INFINITE} State=UP OverSubscribe=EXCLUSIVE
EOF
  if [ -n "${BKM_SLURM_QOS:-}" ]; then
    # job_submit/lua reads job_submit.lua beside slurm.conf; --test-only goes through it too
    cat >"$d/job_submit.lua" <<EOF
local allowed = {}
for q in string.gmatch("$BKM_SLURM_QOS", "[^,]+") do allowed[q] = true end
function slurm_job_submit(job_desc, part_list, submit_uid)
  local q = job_desc.qos
  if q ~= nil and not allowed[q] then
    slurm.log_user("invalid qos '%s' (allowed: $BKM_SLURM_QOS)", q)
    return slurm.ERROR
  end
  return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
return slurm.SUCCESS
EOF
  fi
  export SLURM_CONF=$d/slurm.conf
  env SLURM_LOCAL_DAEMON_OF="$d" munged --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
    --pid-file="$d/run/munged.pid" --log-file="$d/log/munged.log" --seed-file="$d/munge/seed" \
    --origin=127.0.0.1 >/dev/null 2>&1 || slurm_local_skip "munged did not start: $(tail -3 "$d/log/munged.log" 2>/dev/null)"
  env SLURM_LOCAL_DAEMON_OF="$d" slurmctld -f "$SLURM_CONF" -c >/dev/null 2>&1 ||
    slurm_local_skip "slurmctld did not start: $(tail -3 "$d/log/slurmctld.log" 2>/dev/null)"
  for i in $(seq 300); do
    scontrol ping 2>/dev/null | grep -q UP && break
    sleep 0.1
  done
  scontrol ping 2>/dev/null | grep -q UP ||
    slurm_local_skip "slurmctld is not up after 30 s: $(tail -3 "$d/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
  for i in $(seq "$n_nodes"); do
    env SLURM_LOCAL_DAEMON_OF="$d" slurmd -f "$SLURM_CONF" -N "nid0000$i" >/dev/null 2>&1 ||
      slurm_local_skip "slurmd did not start: $(tail -3 "$d/log/slurmd-nid0000$i.log" 2>/dev/null)"
  done
  for i in $(seq 300); do
    [ "$(sinfo -h -N -o %T 2>/dev/null | grep -c '^idle')" = "$n_nodes" ] && break
    sleep 0.1
  done
  [ "$(sinfo -h -N -o %T 2>/dev/null | grep -c '^idle')" = "$n_nodes" ] ||
    slurm_local_skip "the $n_nodes node(s) are not idle after 30 s ($(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ')): $(tail -3 "$d/log/slurmd-nid00001.log" 2>/dev/null | tr '\n' ' ')"
  echo "slurm_local: cluster up in $d (slurmctld port $ctld_port, slurmd port(s)$ports, $n_nodes node(s) of $cpus CPUs${shape:+ declared $shape}, features $features)" >&2
}

# slurm_local_features FEATURES: change the nodes' features live
slurm_local_features() {
  scontrol update NodeName="$BKM_SLURM_NODE_NAMES" AvailableFeatures="$1" ActiveFeatures="$1"
}

# slurm_local_wait_job ID TIMEOUT_S: poll until the job is finished; prints its JobState
slurm_local_wait_job() {
  local id=$1 t=${2:-120} st i
  for i in $(seq $((t * 5))); do
    st=$(scontrol show job -o "$id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case $st in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
        echo "$st"
        return 0
        ;;
    esac
    sleep 0.2
  done
  echo "TIMEOUT_WAITING($st)"
  return 1
}
