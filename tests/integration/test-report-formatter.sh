#!/bin/bash
# The compiled event formats (lib/decode/event-format.c) print what libtraceevent
# prints: stackmapd records a mix of event types for a few seconds, some
# with stacks, plus trace_marker writes; `stackmapctl report` must print the
# very same bytes with its compiled formats and with libtraceevent alone
# (STACKMAPCTL_FORMAT=libtraceevent), and the common types must compile.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
need_events kmem:kmem_cache_alloc sched:sched_switch

tmp=$(mktmp)
before=$(tracefs_state)
inst=$(new_instance_name)

events=
for e in kmem:kmem_cache_alloc kmem:kmem_cache_free kmem:kmalloc kmem:kfree \
	sched:sched_switch sched:sched_wakeup sched:sched_waking sched:sched_process_fork \
	sched:sched_process_exec sched:sched_process_exit sched:sched_stat_runtime \
	irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry irq:softirq_exit \
	timer:hrtimer_start timer:hrtimer_expire_entry timer:hrtimer_cancel timer:timer_start \
	timer:timer_expire_entry raw_syscalls:sys_enter raw_syscalls:sys_exit; do
	# one event a line: continuation lines start with white space
	[ -d "$TRACEFS/events/${e/://}" ] && events+=$'\n\t'"$e"
done

write_config "$tmp/stackmapd.conf" <<EOC
[trace]
instance = $inst
events = $events
stacktrace = kmem:kmem_cache_alloc sched:sched_switch
buffer_size = 16M

[archive]
directory = $tmp/archive
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOC

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
for i in $(seq 1 50); do
	echo "formatter marker $i %d %s \\n" > "$TRACEFS/instances/$inst/trace_marker"
done
"$SMLOAD" -j 2 -t 1 -q || fail "smload failed"
stop_daemon_ok "$tmp/daemon.log"
no_log_errors "$tmp/daemon.log"
remove_instance "$inst"
[ -d "$TRACEFS/instances/$inst" ] && fail "the daemon's instance is still there"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after the run"

list_segments "$tmp/archive"
[ ${#segs[@]} -ge 1 ] || fail "no segment written"
STACKMAPCTL_FORMAT=stats "$STACKMAPCTL" report "${segs[@]}" > "$tmp/compiled.txt" \
	2> "$tmp/compiled.err" || { cat "$tmp/compiled.err"; fail "report exited $?"; }
STACKMAPCTL_FORMAT=libtraceevent "$STACKMAPCTL" report "${segs[@]}" > "$tmp/lib.txt" \
	2> "$tmp/lib.err" || { cat "$tmp/lib.err"; fail "report (libtraceevent) exited $?"; }

if ! cmp -s "$tmp/lib.txt" "$tmp/compiled.txt"; then
	diff "$tmp/lib.txt" "$tmp/compiled.txt" | head -20 >&2
	fail "compiled formats print differently from libtraceevent"
fi
stats=$(grep '^event formats: ' "$tmp/compiled.err") || fail "no format counts"
note "$(grep -c '' "$tmp/compiled.txt") lines alike; $stats"
for e in kmem_cache_alloc sched_switch tracing_mark_write; do
	grep -q " $e: " "$tmp/compiled.txt" || fail "no $e events recorded"
done
# every type that occurred compiled: nothing left to libtraceevent
[[ $stats == *" 0 left to libtraceevent; "* ]] || fail "event types left to libtraceevent: $stats"
exit 0
