#!/bin/bash
# kill -9 the daemon at random moments while it records under load, with
# small segments, frequent snapshots, retention (max_segments) and rotate
# and snapshot requests coming in, so that kills also land inside a
# rotation, a snapshot or a deletion. After each kill: every finished
# segment verifies, each unfinished one reads up to its last complete
# record; the next start recovers them (nothing but finished segments in
# the directory after a clean stop). tests/integration/test-crash.sh
# checks the recovered content in detail; this one is about many moments.
#
#   KILL_ROUNDS=N (default 10; tests/fault/campaign runs 100)
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

rounds=${KILL_ROUNDS:-10}
arch=$ftmp/archive
fault_conf "$ftmp/c.conf" "$arch" stackmap.snapshot_interval=200ms archive.max_segments=8 \
	archive.segment_size=1M
start_load 2

# rotate and snapshot requests at random moments, all along
(while :; do
	sleep "0.$((RANDOM % 5))"
	case $((RANDOM % 2)) in 0) ctl rotate ;; 1) ctl snapshot ;; esac > /dev/null 2>&1
done) &
at_exit "kill $!"

left=()
declare -A left_events=()
recovered=0 recovered_events=0
for round in $(seq 1 "$rounds"); do
	start_recording "$ftmp/c.conf" "$ftmp/d.$round.log" "round $round: "
	for p in "${left[@]}"; do
		check_recovered "round $round" "$p" "${left_events[$p]}" "$ftmp/d.$round.log"
		recovered=$((recovered + 1)) recovered_events=$((recovered_events + left_events[$p]))
	done
	sleep "$((RANDOM % 2)).$((RANDOM % 10))$((RANDOM % 10))"
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	[ "$(grep -c '^<[0-2]>' "$ftmp/d.$round.log")" = 0 ] ||
		{ cat "$ftmp/d.$round.log"; fail "round $round: errors logged before the kill"; }
	segs=("$arch"/*.smseg)
	parts=("$arch"/*.smseg.part)
	check_finished "round $round" "${segs[@]}"
	[ ${#parts[@]} -le 2 ] || fail "round $round: ${#parts[@]} unfinished segments"
	left_events=()
	for p in "${parts[@]}"; do
		check_part "round $round" "$p" kill
		left_events[$p]=$(part_events "$p")
		[ -n "${left_events[$p]}" ] || fail "round $round: cannot count the events of '$p'"
	done
	left=("${parts[@]}")
	note "round $round: ${#segs[@]} finished, ${#parts[@]} unfinished"
done

start_recording "$ftmp/c.conf" "$ftmp/d.final.log" "final: "
for p in "${left[@]}"; do
	check_recovered final "$p" "${left_events[$p]}" "$ftmp/d.final.log"
	recovered=$((recovered + 1)) recovered_events=$((recovered_events + left_events[$p]))
done
stop_daemon || { cat "$ftmp/d.final.log"; fail "final stop exited $?"; }
check_only_segments final "$arch"
segs=("$arch"/*.smseg)
check_finished final "${segs[@]}"
note "$rounds kills, ${#segs[@]} segments left, all verify; $recovered unfinished segments" \
	"recovered with all their $recovered_events events (${RECOVERED_CHECKED:-0} counted before retention)"
exit 0
