#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-crash-buffer.sh, run at every boot of one
# `run-in-vm --reboots 1` (RUN_IN_VM_BOOT=1, 2) from the work directory.
# Boot 1 records with CONF (crash buffer on), runs a kmem load, writes a
# last marker into the crash buffer (its wall-clock time in last-marker.txt)
# and ends as END says: "panic" (sysrq c), "reset" (reboot(2) at once,
# as reboot -f calls it: no clean stop) or "clean" (stackmapd stopped with
# TERM, then the same reboot).
# Boot 2 starts stackmapd, which saves the previous boot's crash buffer,
# and stops it; with CRASH_TASKS=N in the environment it first runs N
# tasks traced at the top level, so that saved_cmdlines names pids of
# this boot.
#   guest-crash.sh CONF END SECONDS [pinned]
# "pinned" runs one load per CPU, bound to it, so that every CPU's buffer
# wraps.
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
CONF=$1
END=$2
SECS=$3
PIN=${4:-}
I=/sys/kernel/tracing/instances/stackmapd_crash

if [ "$RUN_IN_VM_BOOT" = 1 ]; then
	cat /proc/sys/kernel/random/boot_id > "$W/boot1.id"
	"$W/stackmapd" -d -c "$CONF" > "$W/stackmapd1.log" 2>&1 &
	pid=$!
	wait_recording "$W/stackmapd1.log" $pid 60
	if [ "$PIN" = pinned ]; then
		# one load pinned to each CPU: left to the scheduler, both ping-pong
		# pairs can sit on one CPU for seconds, and the other CPU keeps its markers
		loads=
		for cpu in $(seq 0 $(($(nproc) - 1))); do
			taskset -c "$cpu" "$W/smload" -q -j 1 -t "$SECS" &
			loads="$loads $!"
		done
		wait $loads
	else
		"$W/smload" -q -j 2 -t "$SECS"
	fi
	if [ "$END" = clean ]; then
		kill -TERM $pid
		wait $pid
		echo "boot 1: stackmapd exit status $?"
	fi
	if [ "$END" != panic ]; then
		# reboot(2) at once, as reboot -f calls it (systemctl refuses in the
		# guest's chroot), from a python3 started before the marker
		rm -f /tmp/go /tmp/ready
		mkfifo /tmp/go
		python3 -c 'import ctypes
open("/tmp/ready", "w").close()
open("/tmp/go").read()
ctypes.CDLL(None).reboot(0x01234567)' &
		while [ ! -e /tmp/ready ]; do sleep 0.05; done
	fi
	# the last words: wall clock just before, then the marker (a shell builtin, no
	# fork; writes to the share reach the host at once, sync is for the rest)
	id=$(cat "$W/boot1.id")
	sync
	date +%s.%N > "$W/last-marker.txt"
	echo "crash-test-last-marker $id" > $I/trace_marker
	case "$END" in
	panic) echo c > /proc/sysrq-trigger ;;
	*) echo go > /tmp/go ;;
	esac
	sleep 10
	echo "boot 1 did not end"
	exit 1
fi

cat /proc/sys/kernel/random/boot_id > "$W/boot2.id"
if [ -n "${CRASH_TASKS:-}" ]; then
	# tasks of this boot in saved_cmdlines, with pids boot 1's tasks had
	echo 1 > /sys/kernel/tracing/events/sched/sched_process_exec/enable
	for i in $(seq 1 "$CRASH_TASKS"); do /bin/true; done
	echo 0 > /sys/kernel/tracing/events/sched/sched_process_exec/enable
fi
"$W/stackmapd" --check -c "$CONF" > "$W/check.out" 2>&1
"$W/stackmapd" -d -c "$CONF" > "$W/stackmapd2.log" 2>&1 &
pid=$!
wait_recording "$W/stackmapd2.log" $pid 60
"$W/stackmapctl" status -c "$CONF" > "$W/status.out" 2>&1
"$W/stackmapctl" list -c "$CONF" > "$W/list.out" 2>&1
sleep 0.5
kill -TERM $pid
wait $pid
echo "boot 2: stackmapd exit status $?"
