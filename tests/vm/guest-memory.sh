#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-memory.sh, run by run-in-vm in the work directory
# (which holds stackmapd, stackmapctl and smload) on a kernel that records
# the slab allocator from boot. An oracle stackmapd records the allocations
# with full stacks from a secondary instance; the stackmapd under test
# adopts the boot's capture (top-level instance, stack map). A workload
# holds N pipes for HOLD seconds; once they are open, the daemon is asked
# to reset the stack map, so the hold spans two generations.
#   guest-memory.sh CONF ORACLE_CONF N HOLD
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
CONF=$1
ORACLE=$2
N=$3
HOLD=$4

cp /proc/kallsyms "$W/kallsyms"
"$W/stackmapd" -c "$ORACLE" > "$W/oracle.log" 2>&1 &
opid=$!
wait_recording "$W/oracle.log" $opid 60
"$W/stackmapd" -d -c "$CONF" > "$W/stackmapd.log" 2>&1 &
pid=$!
wait_recording "$W/stackmapd.log" $pid 60
sock=$(sed -n 's/^socket = //p' "$CONF")

"$W/smload" -H "$N" -t "$HOLD" > "$W/workload" 2>&1 &
lpid=$!
i=0
while ! grep -q '^smload: opened' "$W/workload"; do
	kill -0 $lpid 2>/dev/null || break
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "the workload did not open its pipes"; break; }
	sleep 0.05
done
echo "pipes open at uptime $(cut -d' ' -f1 /proc/uptime); reset requested"
"$W/stackmapctl" --socket "$sock" reset
echo "reset done at $(date +%s%N)"
wait $lpid
echo "workload exit status $?"
sleep 0.3
kill -TERM $pid
wait $pid
echo "stackmapd exit status $?"
kill -TERM $opid
wait $opid
echo "oracle: stackmapd exit status $?"
cat /sys/kernel/tracing/stack_map_stat 2>/dev/null
