#!/bin/bash
# An instance that exists at start: someone else's (an event enabled, a
# filter set) is refused with a one-line error, exit status 1, and left
# exactly as it was; one left by a run of ours that was killed (and then
# changed: an event enabled) is taken over completely: recorded afresh,
# no event of unknown format in the report, removed at stop with the
# record of it.
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

inst=$TRACEFS/instances/$FINST
inst_state() {
	cat "$inst/set_event" "$inst/events/kmem/kmem_cache_alloc/filter" \
		"$inst/events/kmem/kmem_cache_alloc/trigger" "$inst/tracing_on" "$inst/trace_options"
}

# someone else's instance
mkdir "$inst" || fail "cannot create $inst"
echo 1 > "$inst/events/sched/sched_wakeup/enable"
echo 'bytes_req > 100' > "$inst/events/kmem/kmem_cache_alloc/filter"
before=$(tracefs_state; inst_state)
fault_conf "$ftmp/c.conf" "$ftmp/archive"
rc=0
timeout 30 "$STACKMAPD" -c "$ftmp/c.conf" > "$ftmp/refused.log" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$ftmp/refused.log"; fail "foreign instance: exit status $rc, want 1"; }
grep -q "already exists with settings that stackmapd did not make" "$ftmp/refused.log" ||
	{ cat "$ftmp/refused.log"; fail "foreign instance: no clear error"; }
after=$(tracefs_state; inst_state)
[ "$before" = "$after" ] || fail "foreign instance changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
remove_instance "$FINST"

# a leftover of ours: killed, then an event enabled in it behind its back
start_recording "$ftmp/c.conf" "$ftmp/d1.log"
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
[ -d "$inst" ] || fail "the killed daemon's instance is gone already"
[ -f "$ftmp/control.instance" ] || fail "no record of the instance next to the socket"
echo 1 > "$inst/events/sched/sched_wakeup/enable"
rm -f "$ftmp/control"
fault_conf "$ftmp/c2.conf" "$ftmp/archive2"
start_recording "$ftmp/c2.conf" "$ftmp/d2.log"
grep -q "taking it over" "$ftmp/d2.log" || { cat "$ftmp/d2.log"; fail "the leftover was not taken over"; }
"$FLOAD" -j 1 -n 2000 -q
sleep 0.5
stop_daemon_ok "$ftmp/d2.log"
[ -d "$inst" ] && fail "the instance taken over is left at stop"
[ -e "$ftmp/control.instance" ] && fail "the record of the instance is left at stop"
segs=("$ftmp"/archive2/*.smseg)
[ ${#segs[@]} -ge 1 ] || fail "no segment"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$ftmp/report" 2> "$ftmp/report.err" || { cat "$ftmp/report.err"; fail "report failed"; }
grep -q 'UNKNOWN EVENT' "$ftmp/report" && fail "events of unknown format in the report"
grep -q 'kmem_cache_alloc' "$ftmp/report" || fail "nothing recorded after the take-over"
exit 0
