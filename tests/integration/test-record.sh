#!/bin/bash
# Record kmem and sched events with kernel stacks on our own instance under
# load, with rotations, and prove the archive holds exactly what the kernel
# says it wrote: every event once, per-CPU timestamps monotonic across
# segment boundaries, every marker the kernel took found, stacks symbolized.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
before=$(tracefs_state)
inst=$(new_instance_name)
# Created here, so the daemon adopts it and leaves it (and its counters) behind.
mkdir "$TRACEFS/instances/$inst"

write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc kmem:kfree sched:sched_switch sched:sched_wakeup
stacktrace = kmem:kmem_cache_alloc sched:sched_switch
buffer_size = 2M

[archive]
directory = $tmp/archive
segment_size = 1M
segment_age = 1s
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"

"$SMLOAD" -j 1 -t 4 -q &
load=$!
# A marker the kernel refuses (EBADF: the buffer is full and does not
# overwrite, so it is dropped and counted as lost) was never written.
refused=()
for i in $(seq 1 200); do
	echo "smtest-marker $i" 2>/dev/null > "$TRACEFS/instances/$inst/trace_marker" ||
		refused+=("$i")
	sleep 0.01
done
wait $load
stop_daemon_ok "$tmp/daemon.log"

# What the kernel says it wrote and we read: nothing left behind.
drained "$inst" "$tmp/daemon.log"
read_events=$KERNEL_READ
kernel_lost=$KERNEL_LOST
note "kernel: $read_events events read from the instance, $kernel_lost lost"
# Losses are a matter of capacity (bench/run compares with a minimal splice
# reader); here they must only be accounted for, exactly.
[ "$kernel_lost" = 0 ] || note "the kernel dropped $kernel_lost events: the machine is overloaded"

list_segments "$tmp/archive"
[ ${#parts[@]} = 0 ] || fail "unfinished segments left: ${parts[*]}"
[ ${#segs[@]} -ge 3 ] || fail "expected rotations, got ${#segs[@]} segment(s)"
note "${#segs[@]} segments, $(du -cb "${segs[@]}" | tail -1 | cut -f1) bytes"

verify_ok "the archive" "${segs[@]}"

# Task names: the whole copy in each head, only the changed lines at each end.
python3 "$top_srcdir/tests/integration/check-task-files.py" "${segs[@]}" > "$tmp/task-files" ||
	fail "task files: $(tail -n 1 "$tmp/task-files")"
note "task files: $(tail -n 1 "$tmp/task-files")"

"$STACKMAPCTL" report --markers "${segs[@]}" > "$tmp/report.txt" 2> "$tmp/report.err" ||
	{ cat "$tmp/report.err"; fail "report failed"; }

# Event lines: "COMM-PID [CPU] TS: EVENT: ..."; stack frames are "=> ..." lines.
awk '
/^ *=>/ { next }
/^CPU:[0-9]+ \[/ { lost++; next }
match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/) {
	f = substr($0, RSTART + 1, RLENGTH - 2)
	split(f, p, /\] +/)
	cpu = p[1] + 0; ts = p[2] + 0
	n++
	if ((cpu in last) && ts < last[cpu]) { back++; if (back < 5) print "not monotonic on CPU " cpu ": " last[cpu] " then " ts > "/dev/stderr" }
	last[cpu] = ts
}
END { printf "%d %d %d\n", n, back + 0, lost + 0 }' "$tmp/report.txt" > "$tmp/counts"
read -r n back lost < "$tmp/counts"
note "report: $n events, $back timestamp regressions, $lost loss notes"
[ "$back" = 0 ] || fail "per-CPU timestamps go backwards"
[ "$kernel_lost" != 0 ] || [ "$lost" = 0 ] || fail "report shows lost events the kernel did not count"
[ "$n" = "$read_events" ] || fail "report has $n events, the kernel wrote $read_events"

# The archive accounts for every loss the kernel counted.
info_lost=$("$STACKMAPCTL" info "${segs[@]}" | awk '/^events:/ { sub(/.*lost /, ""); s += $1 } END { print s + 0 }')
note "info: $info_lost lost events"
[ "$info_lost" = "$kernel_lost" ] || fail "archive says $info_lost lost, the kernel counted $kernel_lost"

[ ${#refused[@]} = 0 ] || [ "$kernel_lost" != 0 ] ||
	fail "the kernel refused markers ${refused[*]} but counted no loss"
[ ${#refused[@]} = 0 ] || note "markers the kernel refused (buffer full): ${refused[*]}"
for i in $(seq 1 200); do
	[[ " ${refused[*]} " = *" $i "* ]] && continue
	grep -q "smtest-marker $i\$" "$tmp/report.txt" || fail "marker $i missing"
done
for ev in kmem_cache_alloc kfree sched_switch sched_wakeup; do
	grep -q ": $ev: " "$tmp/report.txt" || fail "no $ev event in the report"
done
# stacks are printed with symbols
grep -Eq '^ *=> [a-z_][a-z0-9_.]*\+0x' "$tmp/report.txt" || grep -Eq '^ *=> [a-z_][a-z0-9_.]*' "$tmp/report.txt" ||
	fail "no symbolized stack frames in the report"
grep -q '=> .*kmem_cache_alloc' "$tmp/report.txt" || fail "kmem_cache_alloc stacks do not name the allocator"

# The daemon left tracefs as it found it (our instance aside).
remove_instance "$inst"
after=$(tracefs_state)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after"); fail "tracefs state changed"; }
no_log_errors "$tmp/daemon.log"
note "ok"
exit 0
