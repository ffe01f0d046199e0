#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-buffer-resize.sh, run by run-in-vm in the work
# directory: recordings one after the other on one boot, the ring buffer
# never cleared between them by anyone but the daemon. Each CASE is
# NAME:STACKMAP:BUFFER_SIZE:SUBBUF_SIZE:END; END is "stop" (a load, then
# TERM) or "pause" (the daemon stopped with SIGSTOP for 0.5 s under the
# load, so that its buffer overruns, then TERM).
#   guest-resize.sh CASE...
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD

for c in "$@"; do
	IFS=: read -r name stackmap size subbuf end <<CASE
$c
CASE
	cat > "$W/$name.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = $stackmap
buffer_size = $size
subbuf_size = $subbuf
[archive]
directory = $W/archive-$name
sync = no
keep_free = 0
[control]
socket = /run/smtest-resize.sock
CONF
	"$W/stackmapd" -d -c "$W/$name.conf" > "$W/stackmapd-$name.log" 2>&1 &
	pid=$!
	wait_recording "$W/stackmapd-$name.log" $pid 60
	"$W/smload" -q -j 2 -t 1.5 &
	load=$!
	if [ "$end" = pause ]; then
		sleep 0.3
		kill -STOP $pid
		sleep 0.5
		kill -CONT $pid
	fi
	wait $load
	kill -TERM $pid
	wait $pid
	echo "$name: stackmapd exit status $?"
	echo "$name: buffer_size_kb $(cat /sys/kernel/tracing/buffer_size_kb)," \
		"sub-buffer $(cat /sys/kernel/tracing/buffer_subbuf_size_kb) KiB after the stop"
done
