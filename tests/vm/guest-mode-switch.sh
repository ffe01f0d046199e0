#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-mode-switch.sh: a daemon in stack-map mode killed
# (SIGKILL) under a kmem load, which goes on filling the ring buffer; then
# a daemon recording full stacks on the same buffer, which keeps what the
# buffer holds, under a short load, stopped with SIGTERM.
#   guest-mode-switch.sh
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD

cp /proc/kallsyms "$W/kallsyms"
"$W/stackmapd" -d -c "$W/map.conf" > "$W/map.log" 2>&1 &
pid=$!
wait_recording "$W/map.log" $pid 60
"$W/smload" -q -j 2 -t 3 &
load=$!
sleep 1.5
kill -KILL $pid
wait $pid
wait $load
echo "stack map: killed, options/stackmap $(cat /sys/kernel/tracing/options/stackmap)"

"$W/stackmapd" -d -c "$W/full.conf" > "$W/full.log" 2>&1 &
pid=$!
wait_recording "$W/full.log" $pid 60
"$W/smload" -q -j 2 -t 1
sleep 0.5
kill -TERM $pid
wait $pid
echo "full: stackmapd exit status $?"
