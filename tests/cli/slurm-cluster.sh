# A single-node Slurm cluster for a test: sourced after lib.sh, then
# `slurm_start` (exits 77 with "skipped: slurm could not start (<reason>)"
# where it cannot). Installs Debian's slurm-wlm and munge if missing (as
# root), starts munged (shared by every test: one per machine, left
# running) and a slurmctld and slurmd of the test's own, on free ports,
# with their state under $TEST_TMP/slurm, so tests run side by side. The
# daemons are stopped when the test's shell exits. SLURM_CONF points the
# client commands (srun, squeue, scancel) and ailoop at it. Lines in
# $SLURM_EXTRA_CONF (e.g. another partition) go at the end of slurm.conf.

slurm_skip() {
	printf 'skipped: slurm could not start (%s)\n' "$*"
	[ -d "${SLURM_DIR:-}" ] && tail -n 5 "$SLURM_DIR"/*.log 2>/dev/null >&2
	exit 77
}

slurm_stop() {
	local f pid
	for f in "${SLURM_DIR:-/nonexistent}"/slurmd.pid "${SLURM_DIR:-/nonexistent}"/slurmctld.pid; do
		[ -s "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
	done
	return 0
}

# expect_queue_drained WHAT: squeue empties within 10 s. A job that was
# cancelled lists as completing for a moment after its srun has exited.
expect_queue_drained() {
	for _ in $(seq 100); do [ -z "$(squeue -h)" ] && break; sleep 0.1; done
	expect_eq "$(squeue -h | wc -l)" 0 "squeue is empty after $1"
}

# A TCP port nobody listens on, from 20000 up, past `after`.
slurm_free_port() {
	local p=$(( ${1:-20000} + 1 + RANDOM % 200 ))
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

slurm_install() {
	command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v srun >/dev/null && command -v munged >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || slurm_skip "slurm-wlm and munge are not installed and we are not root"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q slurm-wlm munge >/dev/null 2>&1; } ||
		slurm_skip "apt-get install slurm-wlm munge failed"
}

slurm_munge() {
	local sock=/run/munge/munge.socket.2
	munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
	[ "$(id -u)" -eq 0 ] || slurm_skip "munged is not running and we are not root"
	mkdir -p /run/munge /var/log/munge /var/lib/munge /etc/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge 2>/dev/null
	chmod 0755 /run/munge
	if [ ! -s /etc/munge/munge.key ]; then
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null
		chown munge:munge /etc/munge/munge.key
		chmod 0400 /etc/munge/munge.key
	fi
	# two tests may get here at once: one starts it
	(
		flock 9
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && exit 0
		rm -f "$sock" "$sock.lock"
		if id munge >/dev/null 2>&1; then
			runuser -u munge -- /usr/sbin/munged
		else
			/usr/sbin/munged --force
		fi
	) 9>/run/munge/.ailoop-start.lock >/dev/null 2>&1
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	slurm_skip "munged did not start"
}

slurm_start() {
	local host mem ctld_port d_port
	case "$(uname -s)" in Linux) ;; *) slurm_skip "not Linux" ;; esac
	slurm_install
	slurm_munge
	SLURM_DIR="$TEST_TMP/slurm-cluster"
	mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool"
	host=$(hostname -s)
	mem=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
	ctld_port=$(slurm_free_port 20000)
	d_port=$(slurm_free_port "$ctld_port")
	cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=ailoop-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=5
MinJobAge=5
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
${SLURM_EXTRA_CONF:-}
EOF
	export SLURM_CONF="$SLURM_DIR/slurm.conf"
	# this cluster stops with the test (lib.sh's clean-up still runs)
	trap 'if [ "$BASHPID" = "$test_shell" ]; then slurm_stop; rm -rf "$TEST_TMP"; fi' EXIT
	/usr/sbin/slurmctld -i -f "$SLURM_CONF" >"$SLURM_DIR/slurmctld.out" 2>&1 ||
		slurm_skip "slurmctld failed: $(tail -n 1 "$SLURM_DIR/slurmctld.out")"
	/usr/sbin/slurmd -f "$SLURM_CONF" >"$SLURM_DIR/slurmd.out" 2>&1 ||
		slurm_skip "slurmd failed: $(tail -n 1 "$SLURM_DIR/slurmd.out")"
	for _ in $(seq 150); do
		case "$(sinfo -h -n "$host" -o %t 2>/dev/null)" in
		idle*|mix*) return 0 ;;
		esac
		sleep 0.2
	done
	slurm_skip "node '$host' did not become idle: $(sinfo -h -o '%t %E' 2>&1 | head -n 1)"
}
