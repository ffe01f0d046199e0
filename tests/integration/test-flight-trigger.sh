#!/bin/bash
# Flight recorder with a trigger: the exec of one program stops the buffer
# (the kernel's traceoff trigger with a filter), the daemon saves what led
# up to it as a segment noting the trigger, and recording resumes.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL"

tmp=$(mktmp)
before=$(tracefs_state)
inst=$(new_instance_name)
write_config "$tmp/stackmapd.conf" <<EOF2
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch sched:sched_process_exec
stacktrace = kmem:kmem_cache_alloc
mode = flight
flight_trigger = sched:sched_process_exec if filename ~ "*smtrigger*"
buffer_size = 256K

[archive]
directory = $tmp/archive

[control]
socket = $tmp/control
EOF2

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log" 'flight recorder on [0-9]+ CPUs'
grep -q '^traceoff:unlimited if filename ~ "\*smtrigger\*"' "$TRACEFS/instances/$inst/events/sched/sched_process_exec/trigger" ||
	fail "no traceoff trigger on the trigger event"

echo "smtest-before-trigger" > "$TRACEFS/instances/$inst/trace_marker"
cp /bin/true "$tmp/smtrigger"
"$tmp/smtrigger"		# the trigger: only this exec matches its filter
wait_for_log "$tmp/daemon.log" "flight trigger 'sched:sched_process_exec if .*' fired" 10 ||
	{ cat "$tmp/daemon.log"; fail "the trigger did not save the buffer"; }
wait_for_log "$tmp/daemon.log" 'finished segment' 10 || fail "no segment after the trigger"
# re-armed: tracing runs again
tracing_is_on() { [ "$(cat "$TRACEFS/instances/$inst/tracing_on")" = 1 ]; }
wait_until 10 tracing_is_on || fail "tracing did not resume after the trigger"
stop_daemon_ok "$tmp/daemon.log"

list_segments "$tmp/archive"
[ ${#segs[@]} -ge 1 ] || fail "no segment written"
verify_ok "the archive" "${segs[@]}"
"$STACKMAPCTL" info "${segs[0]}" | grep -q 'saved by the flight trigger sched:sched_process_exec if' ||
	fail "the first segment does not note its trigger"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$tmp/report.txt" 2>&1 || fail "report failed"
grep -q 'smtest-before-trigger' "$tmp/report.txt" || fail "the events before the trigger were not kept"
grep -q 'sched_process_exec:.*smtrigger' "$tmp/report.txt" || fail "the triggering event is not in the archive"
[ ${#segs[@]} = 1 ] || fail "expected one segment (one trigger), got ${#segs[@]}"

remove_instance "$inst"
after=$(tracefs_state)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after"); fail "tracefs state changed"; }
exit 0
