#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-flight-stackmap.sh, run by run-in-vm in the work
# directory: the flight recorder with the stack map holds a load in its
# buffer; then a reset is requested, then a snapshot, then it stops.
#   guest-flight.sh CONF SOCKET
set -u
W=$PWD
CONF=$1
SOCK=$2

cp /proc/kallsyms "$W/kallsyms"
"$W/stackmapd" -d -c "$CONF" > "$W/stackmapd.log" 2>&1 &
pid=$!
i=0
while ! grep -q '^<6>flight recorder on' "$W/stackmapd.log" 2>/dev/null; do
	kill -0 $pid 2>/dev/null || { echo "stackmapd exited early:"; cat "$W/stackmapd.log"; exit 1; }
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "stackmapd did not start:"; cat "$W/stackmapd.log"; exit 1; }
	sleep 0.1
done
"$W/smload" -q -j 2 -t 2
# only what the buffer held before the reset can be in the snapshot
"$W/stackmapctl" --socket "$SOCK" reset > "$W/reset.out" 2>&1
echo "reset exit status $?"
"$W/stackmapctl" --socket "$SOCK" snapshot > "$W/snapshot.out" 2>&1
echo "snapshot exit status $?"
kill -TERM $pid
wait $pid
echo "stackmapd exit status $?"
