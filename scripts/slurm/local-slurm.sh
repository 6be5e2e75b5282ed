#!/usr/bin/env bash
# A private single-node Slurm on this machine, for trying the sbatch templates and for the `slurm`
# test: munged (as the munge user), slurmctld and slurmd (as root) on localhost, with their
# configuration, state and logs in one folder and their own ports, so that a Slurm already running on
# the machine is left alone. Process tracking by /proc (proctrack/linuxproc) and no task plugin
# (task/none): neither needs cgroups or systemd, so it runs in containers too. Needs root and the
# packages slurm-wlm and munge (scripts/install-deps.sh).
#
#   scripts/slurm/local-slurm.sh start [DIR]   start it (DIR default /var/tmp/sdc-slurm); prints the
#                                              line to export: SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/local-slurm.sh stop [DIR]    stop its daemons (and munged, when this script started it)
#
# Exit codes: 0 running (start) or stopped (stop), 1 a daemon did not start (its log is printed), 2 usage.
set -euo pipefail
command=${1:-}
dir=${2:-/var/tmp/sdc-slurm}
port=${SDC_SLURM_PORT:-16817}  # slurmctld's; slurmd's is the next

case "$command" in
  start | stop) ;;
  *) echo "usage: scripts/slurm/local-slurm.sh start|stop [DIR]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "local-slurm: needs root (slurmd runs jobs as their users)" >&2; exit 2; }
for tool in slurmctld slurmd munged sinfo scontrol; do
  command -v "$tool" >/dev/null || { echo "local-slurm: $tool is missing: run scripts/install-deps.sh" >&2; exit 2; }
done

stop_pid() {
  local file=$1
  [ -f "$file" ] || return 0
  local pid
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

if [ "$command" = stop ]; then
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  if [ -f "$dir/munged.started" ]; then
    stop_pid /run/munge/munged.pid
    rm -f "$dir/munged.started"
  fi
  echo "local-slurm: stopped ($dir)"
  exit 0
fi

mkdir -p "$dir/state" "$dir/spool"
chmod 755 "$dir"

# munge: a key (made once), then munged as the munge user unless one already answers.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 755 /run/munge
  install -d -o munge -g munge -m 700 /var/lib/munge /var/log/munge
  runuser -u munge -- munged
  touch "$dir/munged.started"
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || { echo "local-slurm: munged does not answer" >&2; exit 1; }
fi

host=$(hostname -s)
# slurmd -C prints this machine's node line (CPUs, sockets, cores, memory) as Slurm sees it.
node=$(slurmd -C | head -1)
cat > "$dir/slurm.conf" <<CONF
ClusterName=sdc-local
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
$node State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf

stop_pid "$dir/slurmd.pid"
stop_pid "$dir/slurmctld.pid"
slurmctld -c -f "$SLURM_CONF" || { cat "$dir/slurmctld.log" >&2; exit 1; }
slurmd -f "$SLURM_CONF" || { cat "$dir/slurmd.log" >&2; exit 1; }
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  echo "local-slurm: the node is '${state:-unknown}', not idle, after 20 s" >&2
  tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2
  exit 1
fi
echo "local-slurm: running ($node); export SLURM_CONF=$SLURM_CONF"
