#!/bin/bash
# Events the kernel could not keep because the daemon fell behind are
# counted, exactly: a load runs while the daemon starts, and then the
# daemon is stopped (SIGSTOP) while a load fills a small buffer, so the
# kernel must drop events, also before the readers first run; the archive
# then holds every event the kernel says was read and counts as lost what
# the kernel says it dropped. (A recording drops new
# events when the buffer is full, which no page records: the count comes
# from the kernel's per-CPU stats, per segment. Where a page does say how
# many events were lost before it, report prints it: tests/unit/test-decode.c.)
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

# The entries of a report (events and stacks): lines with "[CPU] TIME:".
count_report_entries() {
	awk '/^ *=>/ { next } /\[[0-9]+\] +[0-9]+\.[0-9]+:/ { n++ } END { print n + 0 }'
}

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir "$TRACEFS/instances/$inst"
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = all
buffer_size = 64K

[archive]
directory = $tmp/archive
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF
# A load runs while the daemon starts: the buffer fills and drops events
# while the daemon sets tracing up, which its first segment counts too.
"$SMLOAD" -j 2 -t 1 -q &
load=$!
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
wait "$load"
kill -STOP "$DAEMON_PID"
"$SMLOAD" -j 1 -t 1 -q
kill -CONT "$DAEMON_PID"
"$SMLOAD" -j 1 -t 1 -q
stop_daemon_ok "$tmp/daemon.log"

drained "$inst" "$tmp/daemon.log"
note "kernel read $KERNEL_READ events, lost $KERNEL_LOST"
[ "$KERNEL_LOST" -gt 0 ] || fail "the kernel lost nothing: the test forced no loss"
# the log says what was lost and what keeps it
grep -E "finished segment .*, [1-9][0-9]* lost, .*a larger \[trace\] buffer_size keeps them" "$tmp/daemon.log" >/dev/null ||
	fail "the daemon did not log the loss with what keeps it: $(grep 'finished segment' "$tmp/daemon.log")"
list_segments "$tmp/archive"
verify_ok "the archive" "${segs[@]}"
"$STACKMAPCTL" info --json "${segs[@]}" > "$tmp/info.json"
read -r info unknown < <(python3 -c '
import json, sys
lost = unknown = 0
for line in open(sys.argv[1]):
    if line.strip():
        d = json.loads(line)
        lost += int(d.get("lost_events", 0))
        unknown += int(d.get("lost_unknown_pages", 0))
print(lost, unknown)' "$tmp/info.json")
note "archive: $info lost, $unknown pages with losses of unknown count"
# The count comes from the kernel's per-CPU statistics, which know every
# dropped event whatever the pages say: exact, also when a page flags a loss
# it cannot count (that flag alone would let an archive that counts nothing pass).
[ "$info" = "$KERNEL_LOST" ] || fail "archive says $info lost ($unknown pages with losses of unknown count), the kernel $KERNEL_LOST"
n=$("$STACKMAPCTL" report --markers "${segs[@]}" 2>/dev/null | count_report_entries)
[ "$n" = "$KERNEL_READ" ] || fail "the archive holds $n entries, the kernel says $KERNEL_READ were read"
exit 0
