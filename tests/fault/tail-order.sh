#!/bin/bash
# The end of a segment on a disk with a little room left: what resolves the
# segment's stacks (stack tables, the kallsyms subset) is written first; a
# record that does not fit does not stop the ones after it; and when the
# tables or symbols are missing, the segment says so (INDEX flag
# TABLES_MISSING, a NOTE naming what is missing), so that `info` never
# reports it as complete or with 0 unresolved stacks. The archive is on
# tests/fault/eiofs.py, switched at the stop to refuse writes of more than
# 1 KiB (ENOSPC): the symbols and task names do not fit, the small STATS,
# NOTE and INDEX do.
. "$top_srcdir/tests/lib.sh"
need_tracefs
pyfuse=/usr/bin/python3
"$pyfuse" -c 'import fusepy' 2> /dev/null || skip "needs python3-fusepy"
[ -c /dev/fuse ] || skip "needs /dev/fuse"
. "$top_srcdir/tests/fault/lib-fault.sh"

back=$ftmp/back mnt=$ftmp/mnt switch=$ftmp/switch
mkdir "$back" "$mnt"
"$pyfuse" "$top_srcdir/tests/fault/eiofs.py" "$back" "$mnt" "$switch" > "$ftmp/eiofs.log" 2>&1 &
at_exit "kill $!"
at_exit "umount -l '$mnt'"
mounted() { mountpoint -q "$mnt"; }
wait_until 20 mounted || { cat "$ftmp/eiofs.log"; skip "cannot mount a FUSE file system"; }
fault_conf "$ftmp/c.conf" "$mnt/archive" archive.segment_size=64M stackmap.snapshot_interval=500ms \
	trace.stacktrace="kmem:kmem_cache_alloc sched:sched_switch"
log=$ftmp/d.log
start_recording "$ftmp/c.conf" "$log"
# one burst of stacks, flushed into the segment (every 500 ms), then quiet
part_bytes() { find "$back/archive" -name '*.part' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
b0=$(part_bytes)
"$FLOAD" -j 1 -n 3000 -q
grown() { [ "$(part_bytes)" -gt $((b0 + 4096)) ]; }
wait_until 10 grown || fail "the burst did not reach the segment"
sleep 1
echo max_write=1024 > "$switch"
stop_daemon || { cat "$log"; fail "stop exited $?"; }
rm -f "$switch"
segs=("$back/archive"/*.smseg)
parts=("$back/archive"/*.smseg.part)
[ ${#parts[@]} = 0 ] || fail "the last segment was left unfinished"
last=${segs[-1]}
check_finished "the last segment" "$last"
"$STACKMAPCTL" info --json "$last" > "$ftmp/info.json" 2> "$ftmp/info.err" ||
	fail "info failed: $(cat "$ftmp/info.err")"
grep -aq 'could not all be written.*missing kallsyms' "$last" ||
	fail "the last segment has no NOTE saying its symbols are missing (did they fit? $(grep -a -o 'could not all be written[^;]*' "$last"))"
json "$ftmp/info.json" 'r["tables_missing"]' ||
	fail "the index of a segment without its symbols does not say so (TABLES_MISSING): $(cat "$ftmp/info.json")"
json "$ftmp/info.json" 'r["unresolved"] is None' ||
	fail "info gives an unresolved count for a segment without its tables"
"$STACKMAPCTL" info "$last" | grep -q '^unresolved: *unknown' ||
	fail "info's text does not say the unresolved count is unknown: $("$STACKMAPCTL" info "$last" | grep unresolved)"
# the small records after the failed ones were still written
grep -aq 'read_events=' "$last" || fail "the STATS after the failed records are missing"
note "last segment ($(json_value "$ftmp/info.json" '"truncated" if r["truncated"] else "finished"')): $(grep -a -o 'could not all be written[^;]*' "$last" | tr -d '\0')"
exit 0
