#!/bin/bash
# Flight recorder with a trigger: the exec of one program stops the buffer
# (the kernel's traceoff trigger with a filter), the daemon saves what led
# up to it as a segment noting the trigger, and recording resumes.
. "$top_srcdir/tests/lib.sh"
need_tracefs

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

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
wait_for_log "$tmp/daemon.log" 'flight recorder on [0-9]+ CPUs' 20 || { cat "$tmp/daemon.log"; fail "daemon did not start"; }
grep -q '^traceoff:unlimited if filename ~ "\*smtrigger\*"' "$TRACEFS/instances/$inst/events/sched/sched_process_exec/trigger" ||
	fail "no traceoff trigger on the trigger event"

echo "smtest-before-trigger" > "$TRACEFS/instances/$inst/trace_marker"
cp /bin/true "$tmp/smtrigger"
"$tmp/smtrigger"		# the trigger: only this exec matches its filter
wait_for_log "$tmp/daemon.log" "flight trigger 'sched:sched_process_exec if .*' fired" 10 ||
	{ cat "$tmp/daemon.log"; fail "the trigger did not save the buffer"; }
wait_for_log "$tmp/daemon.log" 'finished segment' 10 || fail "no segment after the trigger"
# re-armed: tracing runs again
for i in $(seq 20); do
	[ "$(cat "$TRACEFS/instances/$inst/tracing_on")" = 1 ] && break
	sleep 0.1
done
[ "$(cat "$TRACEFS/instances/$inst/tracing_on")" = 1 ] || fail "tracing did not resume after the trigger"
stop_daemon || { cat "$tmp/daemon.log"; fail "daemon exited with status $?"; }

shopt -s nullglob
segs=("$tmp"/archive/*.smseg)
[ ${#segs[@]} -ge 1 ] || fail "no segment written"
"$STACKMAPCTL" verify "${segs[@]}" > "$tmp/verify.out" 2>&1 || { cat "$tmp/verify.out"; fail "verify failed"; }
"$STACKMAPCTL" info "${segs[0]}" | grep -q 'saved by the flight trigger sched:sched_process_exec if' ||
	fail "the first segment does not note its trigger"
"$STACKMAPCTL" report "${segs[@]}" > "$tmp/report.txt" 2>&1 || fail "report failed"
grep -q 'smtest-before-trigger' "$tmp/report.txt" || fail "the events before the trigger were not kept"
grep -q 'sched_process_exec:.*smtrigger' "$tmp/report.txt" || fail "the triggering event is not in the archive"
[ ${#segs[@]} = 1 ] || fail "expected one segment (one trigger), got ${#segs[@]}"

remove_instance "$inst"
after=$(tracefs_state)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after"); fail "tracefs state changed"; }
exit 0
