#!/bin/bash
# The flight recorder ([trace] mode = flight): the ring buffer overwrites
# its oldest events and nothing is written until stackmapctl snapshot; a
# snapshot writes one segment that verifies, holds the latest events (the
# markers written just before the request) and counts the overwritten ones
# as lost; the next snapshot holds only newer events; a stop writes nothing
# more. A capture larger than segment_size is still one segment, after
# which no segment stays open; max_segments keeps that many snapshots.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd python3
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
private_load "$tmp"
inst=$(new_instance_name)
# Created here, so the daemon adopts it and leaves it (and its counters) behind.
mkdir "$TRACEFS/instances/$inst"
marker=$TRACEFS/instances/$inst/trace_marker
CTL_SOCKET=$tmp/control

# conf BUFFER_SIZE: a flight recorder of the load below.
conf() {
	write_config "$tmp/stackmapd.conf" <<-EOF
	[trace]
	instance = $inst
	mode = flight
	events = kmem:kmem_cache_alloc sched:sched_switch sched:sched_wakeup
	stacktrace = kmem:kmem_cache_alloc
	filter.kmem:kmem_cache_alloc = COMM == "$LOAD_COMM"
	filter.sched:sched_switch = COMM == "$LOAD_COMM"
	filter.sched:sched_wakeup = COMM == "$LOAD_COMM"
	buffer_size = $1
	[archive]
	directory = $tmp/archive
	segment_size = 1M
	max_size = 0
	keep_free = 0
	max_segments = 2
	frame_encoding = ${2:-columns}
	[control]
	socket = $tmp/control
	EOF
}

# Load in short bursts: it fills the small buffer many times over.
load_bursts 0.1 -j 1 -n 100

last_marker() { read_count "$tmp/last"; }
# markers SEGMENT: the marker numbers in a segment, sorted.
markers() {
	"$STACKMAPCTL" report --markers --events "$1" > "$tmp/report.txt" 2> "$tmp/report.err" ||
		{ cat "$tmp/report.err"; fail "report of '$1' failed"; }
	sed -n 's/.* smtest-flight \([0-9][0-9]*\)$/\1/p' "$tmp/report.txt" | sort -n
}
# overruns: the kernel's count of overwritten events on every CPU.
overruns() {
	cat "$TRACEFS/instances/$inst"/per_cpu/cpu*/stats | awk -F': ' '/^overrun/ { s += $2 } END { print s + 0 }'
}
# every_cpu_wrapped: each CPU's buffer has overwritten events (its oldest, marker 1's, are gone).
every_cpu_wrapped() {
	local f
	for f in "$TRACEFS/instances/$inst"/per_cpu/cpu*/stats; do
		[ "$(awk -F': ' '/^overrun/ { print $2 }' "$f")" -gt 0 ] || return 1
	done
}

shopt -s nullglob
# 2 MiB per CPU: the load wraps it in 1 to 3 s, and it holds the last second
# or more, so that the markers written just before a request are still there
# when a slow (sanitized, busy) request arrives.
conf 2M
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log" 'flight recorder on [0-9]+ CPUs'

# Numbered markers; $tmp/last holds the number of the last one written.
# (A write fails while the buffer is being resized: that one is retried.)
(
	i=1
	while :; do
		echo "smtest-flight $i" 2>/dev/null > "$marker" || continue
		echo "$i" > "$tmp/last"
		i=$((i + 1))
		sleep 0.01
	done
) &
writer=$!
at_exit "kill $writer"

# ---- nothing is written until asked ----
wait_until 60 every_cpu_wrapped || fail "the load did not fill every CPU's buffer in 60 s"
sleep 1
files=("$tmp"/archive/*)
[ ${#files[@]} = 0 ] || fail "the flight recorder wrote without a request: ${files[*]}"
ctl status --json > "$tmp/status.json" || { cat "$tmp/daemon.log"; fail "status"; }
json "$tmp/status.json" 'r["mode"] == "flight" and r["segment"] is None and r["state"] == "recording"' ||
	fail "status in flight mode: $(cat "$tmp/status.json")"
[ "$(overruns)" -gt 0 ] || fail "the load did not fill the buffer (no overrun)"
note "nothing written in ${SECONDS} s; the kernel overwrote $(overruns) events"

# ---- a snapshot: the latest events, the overwritten ones counted as lost ----
n1=$(last_marker) || exit 1
over1=$(overruns)
seg1=$(ctl snapshot) || fail "snapshot exited with $?"
[ -f "$seg1" ] || fail "snapshot: '$seg1' does not exist"
files=("$tmp"/archive/*)
[ ${#files[@]} = 1 ] || fail "one snapshot wrote ${#files[@]} files: ${files[*]}"
verify_ok "'$seg1'" "$seg1"
markers "$seg1" > "$tmp/m1"
grep -qx "$n1" "$tmp/m1" || fail "marker $n1, written before the snapshot, is not in it (it has $(head -1 "$tmp/m1")..$(tail -1 "$tmp/m1"))"
first1=$(head -1 "$tmp/m1")
[ "$first1" -gt 1 ] || fail "the snapshot still holds marker 1: nothing was overwritten"
"$STACKMAPCTL" info --json "$seg1" > "$tmp/info1.json" || fail "info"
json "$tmp/info1.json" 'r["lost_events"] > 0 and r["events"] > 0' || fail "info: $(head -c 2000 "$tmp/info1.json")"
lost1=$(json_value "$tmp/info1.json" 'r["lost_events"]')
# what the kernel overwrote before the request, and at most what it had overwritten after it
over1b=$(overruns)
[ "$lost1" -ge "$over1" ] && [ "$lost1" -le "$over1b" ] ||
	fail "the segment counts $lost1 lost events, the kernel overwrote $over1..$over1b"
"$STACKMAPCTL" info "$seg1" | grep -q "lost $lost1" || fail "info does not show $lost1 lost events"
note "snapshot 1: markers $first1..$(tail -1 "$tmp/m1") ($(wc -l < "$tmp/m1") of them), $lost1 events lost (kernel: $over1b overwritten)"
ctl status --json > "$tmp/status.json" || fail "status"
json "$tmp/status.json" 'r["segment"] is None and r["archive"]["segments"] == 1' ||
	fail "status after a snapshot: $(cat "$tmp/status.json")"

# ---- a second snapshot: newer events only, none of the first again ----
sleep 1
n2=$(last_marker) || exit 1
seg2=$(ctl snapshot --json | sed -n 's/.*"path": *"\([^"]*\)".*/\1/p')
[ -f "$seg2" ] && [ "$seg2" != "$seg1" ] || fail "second snapshot: '$seg2'"
verify_ok "'$seg2'" "$seg2"
markers "$seg2" > "$tmp/m2"
grep -qx "$n2" "$tmp/m2" || fail "marker $n2, written before the second snapshot, is not in it"
twice=$(grep -Fx -f "$tmp/m1" "$tmp/m2" | head -5)
[ -z "$twice" ] || fail "markers in both snapshots: $twice"
[ "$(tail -1 "$tmp/m2")" -gt "$(tail -1 "$tmp/m1")" ] || fail "the second snapshot holds no newer marker"
"$STACKMAPCTL" info --json "$seg2" > "$tmp/info2.json" || fail "info"
# per CPU, the second segment starts after the first one ends
python3 - "$tmp/info1.json" "$tmp/info2.json" <<-'EOF' || fail "the two snapshots overlap in time"
	import json, sys
	a = {c["cpu"]: c for c in json.load(open(sys.argv[1]))["cpus"]}
	b = {c["cpu"]: c for c in json.load(open(sys.argv[2]))["cpus"]}
	bad = [cpu for cpu in b if cpu in a and a[cpu]["events"] and b[cpu]["events"]
	       and b[cpu]["first_ts"] <= a[cpu]["last_ts"]]
	print("overlapping CPUs:", bad) if bad else None
	sys.exit(1 if bad else 0)
	EOF
note "snapshot 2: markers $(head -1 "$tmp/m2")..$(tail -1 "$tmp/m2"), none from snapshot 1"

# ---- a stop writes nothing more ----
stop_daemon_ok "$tmp/daemon.log"
files=("$tmp"/archive/*)
[ ${#files[@]} = 2 ] || fail "after the stop: ${files[*]}, expected the two snapshots only"
no_log_errors "$tmp/daemon.log"
note "stopped: no segment written at the stop"

# ---- a capture larger than segment_size: one segment, none left open ----
# (stored as pages, which compress about 15:1, 40M of buffer make a segment
# of more than 1M; the column encoding would make it too small to tell)
rm -rf "$tmp/archive"
conf 32M pages
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.big.log" 'flight recorder on [0-9]+ CPUs'
fill() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(cat "$TRACEFS/instances/$inst"/per_cpu/cpu*/stats |
			awk -F': ' '/^bytes/ { s += $2 } END { print s + 0 }')" -gt $((40 << 20)) ] && return 0
		"$SMLOAD" -j 1 -n 1000 -q
	done
	fail "the buffers did not fill"
}
fill
seg=$(ctl snapshot) || fail "snapshot of 32M buffers exited with $?"
[ "$(stat -c %s "$seg")" -gt $((1 << 20)) ] || fail "the capture was only $(stat -c %s "$seg") bytes"
sleep 1
files=("$tmp"/archive/*)
[ ${#files[@]} = 1 ] || fail "one large snapshot left ${files[*]}"
ctl status --json > "$tmp/status.json" || fail "status"
json "$tmp/status.json" 'r["segment"] is None' || fail "a segment stays open after a large snapshot: $(cat "$tmp/status.json")"
fill
seg2=$(ctl snapshot) || fail "second snapshot of 32M buffers exited with $?"
# no segment is being written in flight mode: max_segments = 2 keeps two snapshots
fill
seg3=$(ctl snapshot) || fail "third snapshot of 32M buffers exited with $?"
stop_daemon_ok "$tmp/daemon.big.log"
files=("$tmp"/archive/*)
[ "${files[*]}" = "$seg2 $seg3" ] || fail "max_segments = 2 after three snapshots left ${files[*]}"
verify_ok "large snapshots" "${files[@]}"
no_log_errors "$tmp/daemon.big.log"
note "large captures: $(stat -c %s "${files[@]}" | tr '\n' ' ')bytes, one segment each"
exit 0
