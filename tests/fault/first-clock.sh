#!/bin/bash
# The first segment's head names the configured trace clock: it is opened
# after the clock is applied, so that its timestamps are read in the clock
# they were taken with (a counter clock printed as seconds otherwise).
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

fault_conf "$ftmp/c.conf" "$ftmp/archive" trace.clock=mono
start_recording "$ftmp/c.conf" "$ftmp/d.log"
"$FLOAD" -j 1 -n 1000 -q
ctl rotate > /dev/null || fail "rotate failed"
"$FLOAD" -j 1 -n 1000 -q
stop_daemon_ok "$ftmp/d.log"
segs=("$ftmp"/archive/*.smseg)
[ ${#segs[@]} -ge 2 ] || fail "expected two segments, found ${#segs[@]}"
for s in "${segs[@]}"; do
	clock=$("$STACKMAPCTL" info "$s" | sed -n 's/^ *clock: *\([^ ]*\).*/\1/p')
	[ "$clock" = mono ] || fail "$(basename "$s") says clock '$clock', configured mono"
done
exit 0
