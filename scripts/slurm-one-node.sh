#!/usr/bin/env bash
# A one-node Slurm on this machine, for the tests of ranks started by `srun`
# (tests/cli/slurm.rs, run by scripts/test-mpi.sh): its own munged, slurmctld and slurmd,
# every file of theirs in one private directory, none of the machine's own config touched.
#
#   scripts/slurm-one-node.sh start   installs slurm-wlm, munge and libpmix-dev where missing
#                                     (Debian, --no-install-recommends), writes slurm.conf and a
#                                     munge key into the directory, starts the three daemons and
#                                     waits (at most 60 s) until `sinfo` shows the node idle;
#                                     then prints `export SLURM_CONF=...` for the caller to eval
#   scripts/slurm-one-node.sh stop    kills exactly the daemons `start` started (by their
#                                     recorded process ids) and removes the directory
#
# The directory is $PARAES_SLURM_DIR, or target/slurm-one-node in this checkout. Ports are
# $PARAES_SLURM_PORT (slurmctld) and the next one (slurmd), 6817 and 6818 unless set.
# The node is this machine with its real CPU layout (`slurmd -C`); proctrack/linuxproc (no
# cgroups or systemd needed) and task/affinity (each task's CPUs are its affinity mask).
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${PARAES_SLURM_DIR:-$PWD/target/slurm-one-node}"
port="${PARAES_SLURM_PORT:-6817}"
conf="$dir/slurm.conf"
socket="$dir/munge/munge.socket"

say() { echo "slurm-one-node: $*" >&2; }

# Kills the process whose id is in the file $1 (if it still runs that program, $2), waits
# for it to end (at most 10 s, then SIGKILL).
kill_recorded() {
  local pidfile="$1" program="$2" pid
  [ -s "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "$program" ]; then
    return 0
  fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    [ -d "/proc/$pid" ] || return 0
    sleep 0.1
  done
  say "$program ($pid) did not stop on SIGTERM: SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  [ -d "$dir" ] || return 0
  kill_recorded "$dir/slurmd.pid" slurmd
  kill_recorded "$dir/slurmctld.pid" slurmctld
  kill_recorded "$dir/munge/munged.pid" munged
  rm -rf "$dir"
}

install_missing() {
  local need=()
  command -v slurmctld >/dev/null || need+=(slurmctld)
  command -v slurmd >/dev/null || need+=(slurmd)
  command -v srun >/dev/null || need+=(slurm-client)
  command -v munged >/dev/null || need+=(munge)
  # Slurm's PMIx plugin (srun --mpi=pmix, what Open MPI needs) loads libpmix at run time.
  compgen -G "/usr/lib/*/libpmix.so" >/dev/null || need+=(libpmix-dev)
  if [ ${#need[@]} -gt 0 ]; then
    say "installing slurm-wlm munge libpmix-dev (missing: ${need[*]})"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    # To standard error: `start`'s standard output is the shell code its callers eval (on a
    # fresh machine apt's "Selecting previously unselected package" was eval'd as a command).
    {
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge libpmix-dev
    } >&2
  fi
}

# Writes slurm.conf for this machine as one node and one partition.
write_config() {
  local host node
  host="$(hostname -s)"
  # `slurmd -C` prints the node's real layout: NodeName=host CPUs=... Boards=... Sockets...
  # RealMemory is left out: memory is not a consumable here, and a figure above what the
  # node reports at registration would drain it.
  node="$(slurmd -C | sed -n 's/^\(NodeName=.*\) RealMemory=[0-9]*\(.*\)$/\1\2/p')"
  [ -n "$node" ] || { say "slurmd -C printed no node line"; exit 1; }
  cat > "$conf" <<EOF
# A one-node Slurm written by scripts/slurm-one-node.sh; removed by its stop.
ClusterName=paraes-one-node
SlurmctldHost=$host
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
$node State=UNKNOWN
PartitionName=one Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  # Standard output carries only the shell code callers eval; whatever a step prints (apt,
  # munged, slurmctld) goes to standard error. No descriptor of the caller's pipe but standard
  # output is opened: a daemon that inherits one keeps `$(... start)` waiting for ever.
  start_steps >&2
  echo "export SLURM_CONF=$conf"
}

start_steps() {
  install_missing
  stop
  mkdir -p "$dir"/{munge,key,state,spool,log}
  # munged wants its socket's directory open to all (clients connect to it) and its key
  # readable by its user only.
  chmod 755 "$dir" "$dir/munge"
  chmod 700 "$dir/key"
  dd if=/dev/urandom of="$dir/key/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/key/munge.key"
  munged --socket="$socket" --key-file="$dir/key/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
    --log-file="$dir/log/munged.log"
  write_config
  export SLURM_CONF="$conf"
  # -c: a clean start, no state of an earlier controller.
  slurmctld -c || { say "slurmctld did not start:"; tail -20 "$dir/log/slurmctld.log" >&2; exit 1; }
  slurmd || { say "slurmd did not start:"; tail -20 "$dir/log/slurmd.log" >&2; exit 1; }
  local state=""
  for _ in $(seq 120); do
    state="$(sinfo -h -o '%T' 2>/dev/null || true)"
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    say "the node is not idle after 60 s (sinfo: '${state:-no answer}'); logs:"
    tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
    exit 1
  fi
  say "node $(hostname -s) idle; $(sinfo -h -o '%c CPUs') (SLURM_CONF=$conf)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
