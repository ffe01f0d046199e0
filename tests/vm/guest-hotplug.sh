#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-hotplug.sh, run by run-in-vm in the work directory:
# CPU 1 is offline when stackmapd starts, comes online while it records,
# goes offline and comes back; a load runs after each step. The log and
# the archive are kept on the guest's own /tmp until the end, then copied
# into the work directory.
#   guest-hotplug.sh CONF SOCKET
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
CONF=$1
SOCK=$2
CPU1=/sys/devices/system/cpu/cpu1/online
G=/tmp/hotplug-guest
LOG=$G/stackmapd.log
mkdir -p $G

echo 0 > $CPU1 || { echo "cannot take CPU 1 offline"; exit 1; }
"$W/stackmapd" -c "$CONF" > $LOG 2>&1 &
pid=$!
wait_recording $LOG $pid 30
"$W/smload" -q -j 1 -t 1
echo 1 > $CPU1
i=0
while ! grep -q 'CPU 1 came online: recording it' $LOG; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "CPU 1 was not picked up"; break; }
	sleep 0.1
done
"$W/smload" -q -j 2 -t 2
echo 0 > $CPU1
sleep 1.5
echo 1 > $CPU1
sleep 1.5
date -u +%Y-%m-%dT%H:%M:%S.%6NZ > "$W/back-online"
"$W/smload" -q -j 2 -t 2
"$W/stackmapctl" --socket "$SOCK" status --json > "$W/status.json"
kill -TERM $pid
wait $pid
rc=$?
cp $LOG "$W/stackmapd.log" && cp -r $G/archive "$W/archive" && sync ||
	{ echo "cannot copy the log and the archive to the work directory"; exit 1; }
echo "stackmapd exit status $rc"
