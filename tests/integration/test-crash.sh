#!/bin/bash
# kill -9 the daemon at random moments while it records, repeatedly: every
# finished segment verifies, the unfinished one reads up to its last
# complete record, and the next start recovers it (finished, flagged
# truncated, with a note) instead of leaving debris; the events the kernel
# buffer still held are drained by the next start.
. "$top_srcdir/tests/lib.sh"
need_tracefs

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir "$TRACEFS/instances/$inst"
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = all

[archive]
directory = $tmp/archive
segment_size = 1M
frame_size = 64K
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF

"$SMLOAD" -j 2 -t 60 -q &
load=$!
at_exit "kill $load"

rounds=${CRASH_ROUNDS:-8}
for round in $(seq 1 "$rounds"); do
	start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.$round.log"
	wait_for_log "$tmp/daemon.$round.log" 'recording [0-9]+ CPUs' 20 ||
		{ cat "$tmp/daemon.$round.log"; fail "round $round: daemon did not start"; }
	# the previous round's unfinished segment was recovered at this start
	shopt -s nullglob
	parts=("$tmp"/archive/*.part)
	[ ${#parts[@]} -le 1 ] || fail "round $round: ${#parts[@]} unfinished segments after start"
	sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	segs=("$tmp"/archive/*.smseg)
	parts=("$tmp"/archive/*.part)
	[ ${#parts[@]} = 1 ] || fail "round $round: expected one unfinished segment, found ${#parts[@]}"
	"$STACKMAPCTL" verify "${segs[@]}" > "$tmp/verify.out" 2>&1 ||
		{ cat "$tmp/verify.out"; fail "round $round: a finished segment does not verify"; }
	# the unfinished one: readable up to its last complete record
	"$STACKMAPCTL" verify "${parts[0]}" > "$tmp/part.out" 2>&1
	grep -Eiq 'intact|unfinished' "$tmp/part.out" || { cat "$tmp/part.out"; fail "round $round: unfinished segment unreadable"; }
	"$STACKMAPCTL" report "${parts[0]}" > /dev/null 2>&1
	note "round $round: ${#segs[@]} finished segments, $(tail -n 1 "$tmp/part.out")"
done

# A last clean start and stop recovers the last one too.
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.final.log"
wait_for_log "$tmp/daemon.final.log" 'recording [0-9]+ CPUs' 20 || fail "final start failed"
stop_daemon || fail "final stop failed"
parts=("$tmp"/archive/*.part)
[ ${#parts[@]} = 0 ] || fail "unfinished segments left after a clean stop"
segs=("$tmp"/archive/*.smseg)
"$STACKMAPCTL" verify "${segs[@]}" > "$tmp/verify.out" 2>&1 || { cat "$tmp/verify.out"; fail "final verify failed"; }
truncated=$("$STACKMAPCTL" info "${segs[@]}" 2>/dev/null | grep -ci 'truncated')
[ "$truncated" -ge "$rounds" ] || fail "expected $rounds recovered (truncated) segments, info shows $truncated"
"$STACKMAPCTL" report "${segs[@]}" > "$tmp/report.txt" 2>/dev/null || fail "report of the whole archive failed"
note "$(wc -l < "$tmp/report.txt") report lines from ${#segs[@]} segments, $truncated recovered"
exit 0
