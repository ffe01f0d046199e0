#!/bin/bash
# kill -9 the daemon at random moments while it records, repeatedly: every
# finished segment verifies, the unfinished one reads up to its last
# complete record, and the next start recovers it (finished, flagged
# truncated, with a note) instead of leaving debris; the events the kernel
# buffer still held are drained by the next start.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

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

background "$SMLOAD" -j 2 -t 60 -q

rounds=${CRASH_ROUNDS:-8}
left=()
for round in $(seq 1 "$rounds"); do
	start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.$round.log"
	# the previous round's unfinished segments were recovered at this start
	for p in "${left[@]}"; do
		[ ! -e "$p" ] || fail "round $round: '$p' was not recovered at start"
		[ -e "${p%.part}" ] || note "round $round: '$p' had nothing valid and was removed"
	done
	sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	list_segments "$tmp/archive"
	# one unfinished segment, or two when the kill hit a rotation (the next
	# one is opened before the previous one is finished)
	[ ${#parts[@]} -ge 1 ] && [ ${#parts[@]} -le 2 ] ||
		fail "round $round: expected one or two unfinished segments, found ${#parts[@]}"
	if [ ${#segs[@]} -gt 0 ]; then
		verify_ok "round $round: a finished segment" "${segs[@]}"
	fi
	# the unfinished ones: readable up to their last complete record (or
	# complete, when the kill came between its trailer and its rename); at
	# worst what was being written when the kill came is cut short: a
	# record, or the prologue of a segment just created (then it is empty)
	for p in "${parts[@]}"; do
		"$STACKMAPCTL" verify "$p" > "$tmp/part.out" 2>&1
		grep -Eq ": (ok, |unfinished \(no trailer\), |offset [0-9]+: truncated (record header|record payload|footer)[:( ].* before it are intact\$)" \
			"$tmp/part.out" ||
			{ [ "$(stat -c %s "$p")" -lt 16 ] && grep -q ': offset 0: not a segment' "$tmp/part.out"; } ||
			{ cat "$tmp/part.out"; fail "round $round: unfinished segment unreadable"; }
		"$STACKMAPCTL" report "$p" > /dev/null 2>&1
		[ $? -le 1 ] || fail "round $round: report of an unfinished segment crashed"
	done
	left=("${parts[@]}")
	note "round $round: ${#segs[@]} finished segments, $(tail -n 1 "$tmp/part.out")"
done

# A last clean start and stop recovers the last one too.
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.final.log"
stop_daemon_ok "$tmp/daemon.final.log" "final stop"
list_segments "$tmp/archive"
[ ${#parts[@]} = 0 ] || fail "unfinished segments left after a clean stop"
verify_ok "the final archive" "${segs[@]}"
truncated=$("$STACKMAPCTL" info "${segs[@]}" 2>/dev/null | grep -ci 'truncated')
[ "$truncated" -ge "$rounds" ] || fail "expected $rounds recovered (truncated) segments, info shows $truncated"
rc=0
"$STACKMAPCTL" report --markers "${segs[@]}" > "$tmp/report.txt" 2> "$tmp/report.err" || rc=$?
# recovered segments are reported as cut short; anything else is a failure
if [ $rc != 0 ]; then
	grep -v 'recovered after a crash' "$tmp/report.err" | grep . && fail "report of the whole archive failed"
	[ $rc = 1 ] || fail "report exited with $rc"
fi
note "$(wc -l < "$tmp/report.txt") report lines from ${#segs[@]} segments, $truncated recovered"
exit 0
