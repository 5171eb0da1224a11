# A real one-node Slurm cluster on 127.0.0.1 for the tests of this folder: MUNGE, slurmctld and
# slurmd from Debian's packages, private ports, all state in a temporary directory $T that
# goes, with every daemon (by PID), when the test exits, pass or fail.
#
# Sourced by a test script, which calls `cluster_prepare` (exits 77, skipped, when not root or
# a program is missing; makes $T; starts munged), writes what it needs into $T, then calls
# `cluster_start`, whose slurm.conf takes ${SLURM_TASK_PLUGIN:-task/none},
# ${SLURM_NODE_CPUS:-1} and the lines of ${SLURM_EXTRA_CONF}, and which returns once sinfo
# answers (wait_for the state a test needs). Also gives fail, node_state, wait_for and $host.
# shellcheck shell=bash

# shellcheck source=tests/skip.sh
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
fail() { echo "FAIL: $*"; exit 1; }

cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  # munged and the daemons write their own pid files too: stop anything that outlived SIGTERM.
  for f in "$T"/munged.pid "$T"/slurmctld.pid "$T"/slurmd.pid; do
    [[ -s $f ]] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  if ((rc != 0 && rc != 77)); then
    for log in "$T"/*.log; do echo "== $log"; tail -n 40 "$log"; done
  fi
  rm -rf "$T"
  exit "$rc"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# node_state: "<state> <reason>" as sinfo prints it for our node.
node_state() { timeout 10 sinfo -N -h -n "$host" -o "%T %E" 2>/dev/null | head -n 1; }
# wait_for SECONDS REGEX WHAT: polls sinfo until the node's line matches.
wait_for() {
  local limit=$1 re=$2 what=$3 line=""
  for _ in $(seq "$limit"); do
    line=$(node_state)
    [[ $line =~ $re ]] && { echo "ok: $what: $line"; return 0; }
    sleep 1
  done
  fail "$what: after ${limit}s sinfo says '${line}'"
}

cluster_prepare() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (slurmd runs as root)"
  for p in munged slurmctld slurmd scontrol sinfo srun; do
    command -v "$p" >/dev/null || [[ -x /usr/sbin/$p ]] ||
      skip "$p is missing (scripts/setup installs slurmctld slurmd slurm-client munge)"
  done
  export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
  T=$(mktemp -d /tmp/gpuvet-slurm.XXXXXX)
  chmod 755 "$T"
  pids=()
  trap cleanup EXIT
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(free_port); done
  host=$(hostname -s)

  # MUNGE with its own key, socket, pid, log and seed files.
  dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
  chmod 400 "$T/munge.key"
  mkdir -m 755 "$T/munge"
  munged --force --socket="$T/munge/munge.socket" --key-file="$T/munge.key" \
    --pid-file="$T/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munged.seed" ||
    fail "munged did not start"
  for _ in $(seq 50); do [[ -s $T/munged.pid ]] && break; sleep 0.1; done
  [[ -s $T/munged.pid ]] || fail "munged wrote no pid file"
  pids+=("$(cat "$T/munged.pid")")
}

cluster_start() {
  mkdir -p "$T/state" "$T/spool"
  cat >"$T/slurm.conf" <<EOF
ClusterName=gpuvet-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=${SLURM_TASK_PLUGIN:-task/none}
SelectType=select/cons_tres
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
${SLURM_EXTRA_CONF:-}
NodeName=$host NodeAddr=127.0.0.1 CPUs=${SLURM_NODE_CPUS:-1} State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$T/slurm.conf
  slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out" 2>&1 &
  pids+=($!)
  slurmd -D -f "$T/slurm.conf" -N "$host" >"$T/slurmd.out" 2>&1 &
  pids+=($!)
  timeout 10 sinfo -V || fail "sinfo -V"
}
