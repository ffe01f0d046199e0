#!/bin/bash
# The soak run behind scripts/soak (argument: minutes; SOAK_MINUTES in make check).
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

minutes=${1:-${SOAK_MINUTES:-2}}
# The load makes 150 000 to 300 000 events a second: 1 MiB per CPU is 25 ms
# of it, less than the scheduling stalls of a shared VM, and with the
# kernel's 4 KiB sub-buffers (kernels that cannot change them) runs lost
# events that way; 4 MiB is about 100 ms. A reader that falls behind the
# load, or blocks for longer, still loses.
fault_conf "$ftmp/c.conf" "$ftmp/archive" archive.segment_size=1M archive.max_segments=4 \
	stackmap.snapshot_interval=1s service.status_interval=10s trace.buffer_size=4M
start_recording "$ftmp/c.conf" "$ftmp/d.log"
start_load 1
lost() { ctl status --json 2>/dev/null | grep -o '"lost_events": *[0-9]*' | awk -F: '{ n += $2 } END { print n + 0 }'; }
end=$((SECONDS + minutes * 60))
rss_base= fd_base= lost_mid=
samples=0 fd_prev2=999999 fd_prev1=999999
sanitized "$STACKMAPD" && note "sanitizer build: RSS growth not checked (ASan's quarantine); leaks are LeakSanitizer's"
while [ $SECONDS -lt $end ]; do
	sleep 10
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died: $(tail -n 5 "$ftmp/d.log")"
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
	fds=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
	l=$(lost)
	samples=$((samples + 1))
	echo "# $SECONDS s: rss ${rss} kB, $fds fds, lost $l, $(status_field dedup_stacks) stacks"
	if [ "$samples" = 3 ]; then rss_base=$rss; fd_base=$fds; fi
	[ -z "$lost_mid" ] && [ $SECONDS -ge $((end - minutes * 30)) ] && lost_mid=$l
	if [ -n "$rss_base" ]; then
		sanitized "$STACKMAPD" ||
			[ "$rss" -le $((rss_base * 12 / 10 + 1024)) ] || fail "RSS grew from $rss_base to $rss kB"
		# A sample can land in a rotation or a hook (one or two fds more for a
		# moment): a leak is a count that stays up, three samples in a row.
		fd_min=$(printf '%s\n' "$fds" "$fd_prev1" "$fd_prev2" | sort -n | head -n 1)
		[ "$fd_min" -le "$fd_base" ] || fail "fds grew from $fd_base to $fd_min (three samples in a row)"
	fi
	fd_prev2=$fd_prev1 fd_prev1=$fds
done
# a steady load loses nothing once running; a sanitizer build reads several
# times slower than the product, so there a loss is only reported
if [ -n "$lost_mid" ] && [ "$(lost)" != "$lost_mid" ]; then
	sanitized "$STACKMAPD" && note "lost events grew in the second half: $lost_mid -> $(lost)" ||
		fail "lost events grew in the second half: $lost_mid -> $(lost)"
fi
stop_daemon || fail "stop exited $?"
segs=("$ftmp"/archive/*.smseg)
check_finished soak "${segs[@]}"
exit 0
