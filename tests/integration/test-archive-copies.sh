#!/bin/bash
# Archives as users copy them: two recordings (two daemon runs, each
# numbering its segments from 00000001) copied into one directory read as
# two recordings told apart by their META ids, one after the other, not
# interleaved by file name; the daemon's clock markers are left out of
# report and top unless asked for; a wall-clock window selects the recording it
# covers (the trace.dat export of a window of the second one works); and
# `info DIR` sums up each recording from the segments' indexes without
# reading their pages (bytes read, counted with strace, are a small part
# of the archive).
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_cmd strace
for b in "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || fail "$b is not built"
done
[ -d "$TRACEFS/events/kmem/kmem_cache_alloc" ] || skip "this kernel has no kmem_cache_alloc"

tmp=$(mktmp)
inst=$(new_instance_name)
# record NAME: a daemon run into $tmp/NAME with two segments of load
record() {
	write_config "$tmp/$1.conf" <<EOT
[trace]
instance = $inst
events = kmem:kmem_cache_alloc
stacktrace = all
buffer_size = 4M

[archive]
directory = $tmp/$1
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOT
	start_daemon "$tmp/$1.conf" "$tmp/$1.log"
	for i in 1 2; do
		"$SMLOAD" -q -j 1 -n 4000 || fail "smload failed"
		"$STACKMAPCTL" --socket "$tmp/control" rotate > /dev/null || fail "rotate failed"
	done
	stop_daemon || fail "daemon exited with an error: $(tail "$tmp/$1.log")"
}
record a
# whole seconds, and recordings are told from a window with a second's margin:
# more than two seconds between a window's start and either recording
sleep 2.2
between=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 2.2
record b
mkdir "$tmp/both"
cp -p "$tmp"/a/*.smseg "$tmp"/b/*.smseg "$tmp/both/"
[ "$(ls "$tmp/both" | grep -c '^00000001-')" = 2 ] || fail "the copies do not both start at 00000001"
"$STACKMAPCTL" info --json -v "$tmp/a" | sed -n 2p > "$tmp/a.json"
"$STACKMAPCTL" info --json -v "$tmp/b" | sed -n 2p > "$tmp/b.json"
rec_a=$(json_value "$tmp/a.json" 'r["meta"]["recording_id"]')
rec_b=$(json_value "$tmp/b.json" 'r["meta"]["recording_id"]')
[ -n "$rec_a" ] && [ "$rec_a" != "$rec_b" ] || fail "recording ids '$rec_a' '$rec_b'"

# report: one recording after the other
"$STACKMAPCTL" report --events "$tmp/both" > "$tmp/report.txt" || fail "report failed"
grep '^# host ' "$tmp/report.txt" | sed 's/.* recording //' > "$tmp/heads"
printf '%s\n%s\n' "$rec_a" "$rec_b" | cmp -s - "$tmp/heads" ||
	fail "recordings read as: $(cat "$tmp/heads")"
n_both=$(grep -c ': kmem_cache_alloc:' "$tmp/report.txt")
n_a=$("$STACKMAPCTL" report --events "$tmp/a" | grep -c ': kmem_cache_alloc:')
n_b=$("$STACKMAPCTL" report --events "$tmp/b" | grep -c ': kmem_cache_alloc:')
[ "$n_both" = $((n_a + n_b)) ] || fail "report of both: $n_both events, of each: $n_a + $n_b"

# the daemon's clock markers are left out unless asked for
"$STACKMAPCTL" report --events "$tmp/a" | grep -q 'stackmapd: clock' &&
	fail "report shows the daemon's clock markers"
"$STACKMAPCTL" report --events --markers "$tmp/a" | grep -q ': print: .*stackmapd: clock [0-9]' ||
	fail "report --markers lacks the daemon's clock markers"
"$STACKMAPCTL" top --sort comm "$tmp/a" | grep -q '^# print:' && fail "top counts the clock markers"

# a window after the first recording selects the second one
"$STACKMAPCTL" export --format trace.dat -o "$tmp/b.dat" --since "$between" "$tmp/both" \
	2> "$tmp/export.err" || fail "export of the second recording's window: $(cat "$tmp/export.err")"
"$STACKMAPCTL" top --json --since "$between" "$tmp/both" > "$tmp/top.json" || fail "top failed"
n_win=$(json_value "$tmp/top.json" 'r["events"][0]["total"]')
[ "$n_win" = "$n_b" ] || fail "a window of the second recording counts $n_win events, it has $n_b"

# info: a summary per recording, from the indexes
"$STACKMAPCTL" info "$tmp/both" > "$tmp/info.txt" || fail "info failed: $(cat "$tmp/info.txt")"
[ "$(grep -c '^host .* recording ' "$tmp/info.txt")" = 2 ] || fail "info: $(cat "$tmp/info.txt")"
grep -q "recording $rec_a" "$tmp/info.txt" && grep -q "recording $rec_b" "$tmp/info.txt" ||
	fail "info names other recordings: $(cat "$tmp/info.txt")"
"$STACKMAPCTL" info --json "$tmp/both" > "$tmp/info.json" || fail "info --json failed"
"$STACKMAPCTL" info --json -v "$tmp/both" | tail -n +2 > "$tmp/segs.json"
python3 - "$tmp/info.json" "$tmp/segs.json" <<'EOT' || fail "info's summary does not add up"
import json, sys
summary = json.load(open(sys.argv[1]))
segs = [json.loads(l) for l in open(sys.argv[2])]
recs = summary['recordings']
assert len(recs) == 2, recs
for r in recs:
    mine = [s for s in segs if s['meta']['recording_id'] == r['recording_id']]
    assert r['segments'] == len(mine), (r, len(mine))
    assert r['events'] == sum(s['events'] for s in mine), r
    assert r['lost_events'] == sum(s['lost_events'] for s in mine), r
    assert r['first_usec'] == min(int(s['meta']['opened_usec']) for s in mine), r
    assert r['events'] > 0
EOT
# ... without reading the pages: the bytes read from the archive's files (strace
# -y names each descriptor's file; a sanitizer's own reads of /proc do not
# count) are a small part of it
# (LeakSanitizer cannot run under ptrace: a sanitized build counts without it)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -y -e trace=read,pread64 -o "$tmp/strace.log" "$STACKMAPCTL" info "$tmp/both" > /dev/null ||
	fail "info under strace failed"
size=$(cat "$tmp"/both/* | wc -c)
read_bytes=$(grep -E '(^| )(read|pread64)\([0-9]+<'"$tmp/both/" "$tmp/strace.log" |
	sed -n 's/.*= \([0-9][0-9]*\)$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
[ "$read_bytes" -gt 0 ] || fail "strace saw no read of the archive: $(head -n 3 "$tmp/strace.log")"
note "info read $read_bytes of $size bytes"
[ "$read_bytes" -lt $((size / 10)) ] || fail "info read $read_bytes of $size bytes"
exit 0
