#!/bin/bash
# stackmapctl memory against ground truth on the real tracefs: stackmapd
# records the slab allocator as the shipped configuration does (allocations
# with stacks, frees without) in an instance of its own, while a workload
# holds N pipes for a second and closes them. The peak must come while the
# pipes were held, its first stack must be the pipes' allocation path with
# at least N objects, and they must be freed by the end; the SVG must mark
# the curve's highest point with the peak's bytes (check-memory.py), also
# where headless Chromium draws them (check-memory-browser.py;
# MEMORY_SCREENSHOT=FILE.png keeps its screenshot). An
# archive without frees, and a filter that matches no allocation, are errors;
# an archive whose kernel buffers dropped events claims no pair certain.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_cmd chromium
need_cmd chromedriver
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
	skip "needs Debian's python3-selenium"
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD" "$MKSEG"
need_events kmem:kmalloc kmem:kmem_cache_alloc kmem:kfree kmem:kmem_cache_free
CHECK="$top_srcdir/tests/integration/check-memory.py"
N=2000

tmp=$(mktmp)
inst=$(new_instance_name)
before=$(tracefs_state)

# the shipped events, with a named instance (full stacks) and a private archive
sed -n '/^events = /p; /^stacktrace = /p' "$top_srcdir/conf/stackmapd.conf" > "$tmp/events"
[ "$(wc -l < "$tmp/events")" = 2 ] || fail "no events and stacktrace lines in the shipped config"
write_config "$tmp/memory.conf" <<EOF
[trace]
instance = $inst
$(cat "$tmp/events")
buffer_size = 8M

[archive]
directory = $tmp/archive

[control]
socket = $tmp/ctl.sock
EOF
start_daemon "$tmp/memory.conf" "$tmp/daemon.log"
"$SMLOAD" -H "$N" -t 1 > "$tmp/workload" || fail "the workload failed"
stop_daemon_ok "$tmp/daemon.log"
no_log_errors "$tmp/daemon.log"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after the recording"

# only the workload's allocations count: the machine runs other things
"$STACKMAPCTL" memory --comm smload --json --limit 100 --svg "$tmp/curve.svg" "$tmp/archive" \
	> "$tmp/memory.json" 2> "$tmp/memory.err" || fail "memory failed: $(cat "$tmp/memory.err")"
python3 "$CHECK" "$tmp/memory.json" "$tmp/curve.svg" "$tmp/workload" "$N" ||
	fail "memory does not match the workload"
/usr/bin/python3 "$top_srcdir/tests/integration/check-memory-browser.py" "$tmp/curve.svg" \
	"$tmp/memory.json" "${MEMORY_SCREENSHOT:-$tmp/curve.png}" ||
	fail "the curve as Chromium draws it does not mark the peak of the data"

# the text: the same peak, the pipes' path on top of its tree; a flame graph of it
"$STACKMAPCTL" memory --comm smload --width 0 --flamegraph "$tmp/peak.svg" "$tmp/archive" \
	> "$tmp/memory.txt" 2> "$tmp/memory.err" || fail "memory (text) failed: $(cat "$tmp/memory.err")"
bytes=$(json_value "$tmp/memory.json" 'r["peak"]["bytes"]')
grep -q '^# peak: ' "$tmp/memory.txt" || fail "no peak in the text: $(head -5 "$tmp/memory.txt")"
grep -A3 '^# peak by allocating function' "$tmp/memory.txt" | grep -q 'alloc_pipe_info' ||
	fail "the pipes' path is not on top of the peak's tree: $(grep -A5 '^# peak by' "$tmp/memory.txt")"
grep -q "bytes live at the peak" "$tmp/peak.svg" && grep -q 'alloc_pipe_info' "$tmp/peak.svg" ||
	fail "the flame graph lacks the pipes' path"
note "peak of $bytes bytes found; the flame graph has the pipes' path"

# a filter that matches no allocation is a usage mistake
rc=0
"$STACKMAPCTL" memory --comm no-such-task "$tmp/archive" > /dev/null 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "none of the .* allocations read is of task no-such-task" "$tmp/err" ||
	fail "--comm that matches nothing: exit $rc, $(cat "$tmp/err")"

# a window without events says so, as the other commands do, and prints no tables
rc=0
"$STACKMAPCTL" memory --since 999999 "$tmp/archive" > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" = 0 ] && grep -q "no events matched" "$tmp/err" && [ ! -s "$tmp/out" ] ||
	fail "an empty window: exit $rc, $(cat "$tmp/err" "$tmp/out")"

# events the kernel dropped (a buffer of 8 KiB under a churn): no pair is claimed certain
inst=$(new_instance_name)
sed -e "s/^instance = .*/instance = $inst/" -e 's/^buffer_size = .*/buffer_size = 8K/' \
	-e "s|^directory = .*|directory = $tmp/lossy|" -e "s|^socket = .*|socket = $tmp/lossy.sock|" \
	"$tmp/memory.conf" > "$tmp/lossy.conf"
start_daemon "$tmp/lossy.conf" "$tmp/lossy.log"
"$SMLOAD" -q -j 2 -t 0.5 || fail "the churn failed"
stop_daemon_ok "$tmp/lossy.log"
"$STACKMAPCTL" info --json "$tmp/lossy" | head -1 > "$tmp/lossy-info.json" || fail "info failed"
lost=$(json_value "$tmp/lossy-info.json" 'r["recordings"][0]["lost_events"]')
"$STACKMAPCTL" memory --json "$tmp/lossy" > "$tmp/lossy.json" || fail "memory of the lossy archive failed"
if [ "$lost" -gt 0 ]; then
	json "$tmp/lossy.json" 'r["gaps"]["losses"] > 0 and r["end"]["uncertain_bytes"] > 0' ||
		fail "$lost events lost, but memory says: $(json_value "$tmp/lossy.json" 'r["gaps"]')"
	note "$lost events lost: $(json_value "$tmp/lossy.json" 'r["end"]["uncertain_bytes"]') bytes live at the end are uncertain"
else
	note "8 KiB buffers lost no event here; the losses are not checked"
fi

# an archive without frees cannot be paired: the error names what to record
mkdir -p "$tmp/nofrees"
"$MKSEG" -n "$(new_instance_name)" -b 1024 -o "$tmp/nofrees" -k kmem:kmalloc \
	-- "$SMLOAD" -q -j 1 -t 0.1 > /dev/null || fail "mkseg failed"
rc=0
"$STACKMAPCTL" memory "$tmp/nofrees" > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" != 0 ] && grep -q "record kmem:kfree and kmem:kmem_cache_free" "$tmp/err" ||
	fail "an archive without frees: exit $rc, $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "an archive without frees printed tables"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs at the end"
exit 0
