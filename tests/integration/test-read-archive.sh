#!/bin/bash
# Reading an archive as a user does: a directory (or the configured archive)
# reads as its segments named one by one; every segment carries CLOCK pairs;
# a wall-clock window that spans a rotation prints exactly the events of the
# full report whose dates lie in it, from both segments; a trace-clock window
# and the --cpu/--pid/--comm/--event filters print exactly the matching
# events of the full report with their stacks; and the trace.dat export of
# that window prints, in `trace-cmd report`, the same events, fields and
# stack frames as `stackmapctl report`.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_cmd trace-cmd
for b in "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || fail "$b is not built"
done
[ -d "$TRACEFS/events/kmem/kmem_cache_alloc" ] || skip "this kernel has no kmem_cache_alloc"
CHECK="$top_srcdir/tests/integration/check-window.py"
COMPARE="$top_srcdir/tests/integration/compare-export.py"

tmp=$(mktmp)
inst=$(new_instance_name)
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = all
buffer_size = 8M

[stackmap]
snapshot_interval = 1s

[archive]
directory = $tmp/archive
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
wait_for_log "$tmp/daemon.log" 'recording [0-9]+ CPUs' 20 ||
	{ cat "$tmp/daemon.log"; fail "daemon did not start"; }
# three segments with load in each, so that one lies wholly between two others
for i in 1 2 3; do
	"$SMLOAD" -q -j 1 -n 3000 || fail "smload failed"
	sleep 0.2
	"$STACKMAPCTL" --socket "$tmp/control" rotate > /dev/null || fail "rotate failed"
done
stop_daemon || fail "daemon exited with an error: $(tail "$tmp/daemon.log")"
segs=("$tmp/archive"/*.smseg)
[ ${#segs[@]} -ge 3 ] || fail "only ${#segs[@]} segments: $(cat "$tmp/daemon.log")"
export TZ=UTC

# every segment pairs its clock with the wall clock
for s in "${segs[@]}"; do
	"$STACKMAPCTL" info "$s" | grep -q 'records:.* CLOCK [1-9]' || fail "$s has no CLOCK record"
done

# a directory, the configured archive and the files named one by one read the same
"$STACKMAPCTL" report --wall "${segs[@]}" > "$tmp/files.txt" || fail "report of the files failed"
"$STACKMAPCTL" report --wall "$tmp/archive" > "$tmp/full.txt" || fail "report of the directory failed"
cmp -s "$tmp/files.txt" "$tmp/full.txt" || fail "the directory reads differently from its files"
"$STACKMAPCTL" report --wall -c "$tmp/stackmapd.conf" > "$tmp/conf.txt" ||
	fail "report of the configured archive failed"
cmp -s "$tmp/conf.txt" "$tmp/full.txt" || fail "the configured archive reads differently"
"$STACKMAPCTL" report "$tmp/archive" > "$tmp/full-trace.txt" || fail "report failed"

# a wall-clock window of one second around the start of the second segment
second=$("$STACKMAPCTL" report --wall --events "${segs[1]}" |
	sed -n 's/.*\] \([0-9-]* [0-9:.]*\): .*/\1/p' | head -1)
[ -n "$second" ] || fail "no dated event in ${segs[1]}"
read -r since until < <(python3 -c '
import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%d %H:%M:%S.%f")
d = datetime.timedelta(seconds=0.5)
print((t - d).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), (t + d).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))' "$second")
"$STACKMAPCTL" report --wall --since "$since" --until "$until" "$tmp/archive" > "$tmp/wall.txt" ||
	fail "report of the wall-clock window failed"
python3 "$CHECK" --wall --since "$since" --until "$until" --split "$second" \
	"$tmp/full.txt" "$tmp/wall.txt" || fail "the wall-clock window is wrong"

# a trace-clock window and the filters
# (its middle third)
read -r lo hi < <(sed -n 's/.*\] *\([0-9]*\.[0-9]*\): .*/\1/p' "$tmp/full-trace.txt" |
	awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.6f %.6f\n", a + (b - a) / 3, a + 2 * (b - a) / 3 }')
"$STACKMAPCTL" report --since "$lo" --until "$hi" --cpu 1 --event sched_switch "$tmp/archive" \
	> "$tmp/trace.txt" || fail "report of the trace-clock window failed"
python3 "$CHECK" --since "$lo" --until "$hi" --cpu 1 --event sched_switch \
	"$tmp/full-trace.txt" "$tmp/trace.txt" || fail "the trace-clock window is wrong"
pid=$(sed -n 's/^ *smload-\([0-9]*\) .*/\1/p' "$tmp/full-trace.txt" | head -1)
[ -n "$pid" ] || fail "no smload event"
"$STACKMAPCTL" report --pid "$pid" "$tmp/archive" > "$tmp/pid.txt" || fail "report --pid failed"
python3 "$CHECK" --pid "$pid" "$tmp/full-trace.txt" "$tmp/pid.txt" || fail "--pid is wrong"
"$STACKMAPCTL" report --comm smload --event kmem:kmem_cache_alloc "$tmp/archive" > "$tmp/comm.txt" ||
	fail "report --comm failed"
python3 "$CHECK" --comm smload --event kmem_cache_alloc "$tmp/full-trace.txt" "$tmp/comm.txt" ||
	fail "--comm is wrong"
# the other commands take the same options
"$STACKMAPCTL" top --since "$since" --until "$until" --comm smload "$tmp/archive" > "$tmp/top.txt" ||
	fail "top with a window failed"
n_top=$(awk '/^# kmem_cache_alloc:/ { print $3 }' "$tmp/top.txt")
n_rep=$("$STACKMAPCTL" report --events --since "$since" --until "$until" --comm smload \
	--event kmem_cache_alloc "$tmp/archive" | wc -l)
[ -n "$n_top" ] && [ "$n_top" = "$n_rep" ] || fail "top counts '$n_top' kmem_cache_alloc, report $n_rep"

# trace.dat of the window: trace-cmd prints what stackmapctl prints
"$STACKMAPCTL" export --format trace.dat -o "$tmp/window.dat" --since "$since" --until "$until" \
	"$tmp/archive" || fail "export trace.dat failed"
"$STACKMAPCTL" report --since "$since" --until "$until" "$tmp/archive" > "$tmp/sm.txt" ||
	fail "report failed"
trace-cmd report -N -i "$tmp/window.dat" > "$tmp/tc-n.txt" 2> "$tmp/tc.err" ||
	fail "trace-cmd report -N failed: $(cat "$tmp/tc.err")"
trace-cmd report -i "$tmp/window.dat" > "$tmp/tc.txt" 2>> "$tmp/tc.err" ||
	fail "trace-cmd report failed: $(cat "$tmp/tc.err")"
python3 "$COMPARE" "$tmp/sm.txt" "$tmp/tc-n.txt" "$tmp/tc.txt" ||
	fail "trace-cmd reads the export differently"
exit 0
