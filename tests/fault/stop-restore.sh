#!/bin/bash
# Stop restores tracefs: the daemon records from the top-level instance (as
# the shipped configuration does) and, after a clean SIGTERM, every global
# setting is as before, tracing_on included (1 before, 1 after).
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

orig_on=$(cat "$TRACEFS/tracing_on")
at_exit "echo $orig_on > '$TRACEFS/tracing_on'"
echo 1 > "$TRACEFS/tracing_on"
before=$(tracefs_state)
FINST=
fault_conf "$ftmp/c.conf" "$ftmp/archive" trace.instance= trace.stackmap=off
start_recording "$ftmp/c.conf" "$ftmp/d.log"
"$FLOAD" -j 1 -n 1000 -q
stop_daemon_ok "$ftmp/d.log"
after=$(tracefs_state)
on=$(cat "$TRACEFS/tracing_on")
[ "$on" = 1 ] || fail "tracing_on is $on after the stop, was 1"
[ "$before" = "$after" ] || fail "tracefs changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
exit 0
