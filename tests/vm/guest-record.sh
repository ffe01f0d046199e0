#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of the VM tests that record once: run by run-in-vm in the work
# directory (which holds stackmapd and smload). Waits DELAY seconds, runs
# stackmapd with CONF, puts a kmem load on for SECONDS, stops it, and saves
# the guest's kallsyms and stack map next to it.
#   guest-record.sh CONF DELAY SECONDS
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
CONF=$1
DELAY=$2
SECS=$3

cp /proc/kallsyms "$W/kallsyms"
sleep "$DELAY"
echo "stackmapd starts at uptime $(cut -d' ' -f1 /proc/uptime)"
"$W/stackmapd" -d -c "$CONF" > "$W/stackmapd.log" 2>&1 &
pid=$!
wait_recording "$W/stackmapd.log" $pid 60
"$W/smload" -q -j 2 -t "$SECS"
sleep 0.5
kill -TERM $pid
wait $pid
echo "stackmapd exit status $?"
cat /sys/kernel/tracing/stack_map_stat 2>/dev/null
