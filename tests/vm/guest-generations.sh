#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-generations.sh, run by run-in-vm in the work directory
# (which holds stackmapd and smload). An oracle stackmapd records the kmem
# events with full stacks from a secondary instance for the whole run; the
# stackmapd under test records the top-level instance with the stack map,
# once per reset mode given as arguments, resetting the map every few
# hundred milliseconds under load with bursts that fill its small buffer.
# MODE is lossless or strict, or external: the daemon makes no reset and
# this script resets the map (and switches the option off and on) itself.
#   guest-generations.sh SECONDS MODE...
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
T=/sys/kernel/tracing
SECS=$1
shift

cp /proc/kallsyms "$W/kallsyms"

# Every daemon uses the local clock: a kernel that finds the TSC unstable
# switches the top-level instance (only) to the global clock, and the
# archive's time stamps would no longer match the oracle's.
write_conf() {	# write_conf NAME INSTANCE STACKMAP STACKTRACE BUFFER MODE
	cat > "$W/$1.conf" <<CONF
[trace]
instance = $2
events = kmem:kmem_cache_alloc kmem:kmalloc
stacktrace = $4
stackmap = $3
buffer_size = $5
clock = local
[stackmap]
snapshot_interval = 100ms
reset_interval = ${RESET_INTERVAL:-250ms}
reset_fill = ${RESET_FILL:-90}
reset_drops = ${RESET_DROPS:-1000}
reset_mode = $6
reset_guard = ${RESET_GUARD:-1ms}
[archive]
directory = $W/arch-$1
segment_age = 30s
sync = no
[control]
socket = /run/smtest-$1.sock
CONF
}

# forge SOCKET: while the daemon runs, write the marker lines it would write
# around its next reset and snapshot, but without its secret key; they must
# be ignored (FORGE_MARKERS=1).
forge() {
	while :; do
		g=$("$W/stackmapctl" --socket "$1" status --json 2>/dev/null |
			grep -o '"generation": *[0-9]*' | grep -o '[0-9]*$')
		if [ -n "$g" ]; then
			echo "stackmapd: gen $g end" > "$T/trace_marker"
			echo "stackmapd: gen $((g + 1)) begin" > "$T/trace_marker"
			echo "stackmapd: snap 1" > "$T/trace_marker"
		fi
		sleep 0.05
	done
}

write_conf oracle oracle off "kmem:kmem_cache_alloc kmem:kmalloc" 8M lossless
"$W/stackmapd" -c "$W/oracle.conf" > "$W/oracle.log" 2>&1 &
opid=$!
wait_recording "$W/oracle.log" $opid

for mode in "$@"; do
	if [ "$mode" = external ]; then
		# the daemon never resets; this script does, behind its back
		RESET_INTERVAL=0 RESET_FILL=0 RESET_DROPS=0 write_conf "$mode" "" on all 128K lossless
	else
		write_conf "$mode" "" on all 128K "$mode"
	fi
	start=$(cat /proc/uptime)
	"$W/stackmapd" -d -c "$W/$mode.conf" > "$W/$mode.log" 2>&1 &
	pid=$!
	wait_recording "$W/$mode.log" $pid
	fpid=
	if [ "${FORGE_MARKERS:-0}" = 1 ]; then
		forge "/run/smtest-$mode.sock" &
		fpid=$!
	fi
	# steady load with bursts: more threads than CPUs for a moment fill
	# the small buffer with ids of a generation that is being reset
	# at least SECONDS, longer (up to 4 times) until MIN_RESETS resets were made
	n=0
	while [ $n -lt "$SECS" ] || { [ $n -lt $((4 * SECS)) ] &&
		[ "$(grep -ac 'generation [0-9]* begins' "$W/$mode.log")" -lt "${MIN_RESETS:-0}" ]; }; do
		"$W/smload" -q -j 2 -t 1.7 &
		lpid=$!
		sleep 1
		if [ "$mode" = external ]; then
			if [ $((n % 6)) = 4 ]; then
				# switching the option off and on counts as a reset too
				echo 0 > "$T/options/stackmap"; sleep 0.2; echo 1 > "$T/options/stackmap"
			else
				echo 0 > "$T/stack_map"
			fi
			externals=$((${externals:-0} + 1))
		fi
		"$W/smload" -q -j 6 -t 0.3
		wait $lpid
		n=$((n + 2))
	done
	if [ "$mode" = external ]; then
		# one more reset under load, and the stop as soon as the daemon
		# has found it: its generation has not begun when the last
		# segment ends, and the new map gains ids after it was found
		found=$(grep -ac 'reset by someone else' "$W/$mode.log")
		"$W/smload" -q -j 2 -t 1 &
		lpid=$!
		sleep 0.3
		echo 0 > "$T/stack_map"
		externals=$((externals + 1))
		i=0
		while [ "$(grep -ac 'reset by someone else' "$W/$mode.log")" -le "$found" ] &&
			[ $i -lt 20000 ]; do
			i=$((i + 1))
		done
	fi
	echo "$mode: load for $n s, until uptime $(cut -d' ' -f1 /proc/uptime)," \
		"$(grep -ac 'generation [0-9]* begins' "$W/$mode.log") resets${externals:+, $externals made behind its back}"
	[ -n "$fpid" ] && { kill $fpid; wait $fpid 2>/dev/null; }
	[ "$mode" = external ] || sleep 0.5
	kill -TERM $pid
	wait $pid
	status=$?
	if [ "$mode" = external ]; then wait $lpid; fi
	echo "$mode: stackmapd exit status $status (started at uptime ${start%% *})"
	cat "$T/stack_map" > "$W/$mode.stack_map"
	cat "$T/stack_map_stat" > "$W/$mode.stack_map_stat" 2>/dev/null
done

sleep 0.5
kill -TERM $opid
wait $opid
echo "oracle: stackmapd exit status $?"
