#!/bin/bash
# tracefs is put back after a crash: the daemon records from the top-level
# instance (as the shipped configuration does) and is killed with SIGKILL,
# so nothing of its own is undone. The tracefs state from before its first
# change is saved next to its control socket; the next run adopts it, and
# at its clean stop every global setting is as before the first run,
# tracing_on included, and the saved file is gone.
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

orig_on=$(cat "$TRACEFS/tracing_on")
at_exit "echo $orig_on > '$TRACEFS/tracing_on'"
echo 1 > "$TRACEFS/tracing_on"
# a top-level buffer still at its boot size ("7 (expanded: 1408)") grows
# when anything first traces there, and no write brings that state back:
# then its size (the third line of tracefs_state) is left out
expanded=$(grep -c expanded "$TRACEFS/buffer_size_kb")
[ "$expanded" = 0 ] || note "the top-level buffer was never used: its size is not compared"
state() { if [ "$expanded" = 0 ]; then tracefs_state; else tracefs_state | sed 3d; fi; }
before=$(state)
FINST=
fault_conf "$ftmp/c.conf" "$ftmp/archive" trace.instance= trace.stackmap=off trace.clock=mono
saved=$ftmp/control.tracefs
start_recording "$ftmp/c.conf" "$ftmp/d1.log" "first run: "
"$FLOAD" -j 1 -n 1000 -q
[ -s "$saved" ] || fail "no saved tracefs state in $saved while recording"
head -n 1 "$saved" | grep -qx 'stackmapd-tracefs-state 1' || fail "$saved: not a saved state: $(head -n 1 "$saved")"
# should the second run fail, the test puts back what the file says itself
cp "$saved" "$ftmp/saved.copy"
put_back() {
	[ "$(state)" = "$before" ] && return 0
	tail -n +3 "$ftmp/saved.copy" | tac | while IFS=$'\t' read -r how path value; do
		if [ "$how" = set ]; then
			printf '%b' "$value" > "$TRACEFS/$path"
		else
			printf '%b' "$value" >> "$TRACEFS/$path"
		fi
	done 2>/dev/null
}
at_exit put_back
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
crashed=$(state)
[ "$crashed" != "$before" ] || fail "the first run changed nothing in tracefs: the test proves nothing"
[ -s "$saved" ] || fail "the saved state did not survive kill -9"

start_recording "$ftmp/c.conf" "$ftmp/d2.log" "second run: "
grep -q "found the tracefs state saved by a run of stackmapd that did not stop cleanly" "$ftmp/d2.log" ||
	{ cat "$ftmp/d2.log"; fail "the second run did not take the saved state"; }
"$FLOAD" -j 1 -n 1000 -q
stop_daemon_ok "$ftmp/d2.log" "second run"
after=$(state)
on=$(cat "$TRACEFS/tracing_on")
[ "$on" = 1 ] || fail "tracing_on is $on after the stop, was 1"
[ "$before" = "$after" ] || fail "tracefs not put back: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
[ ! -e "$saved" ] || fail "the saved state is left after a clean stop"
exit 0
