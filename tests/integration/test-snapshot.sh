#!/bin/bash
# stackmapctl snapshot while the daemon records under load: each snapshot
# returns a finished segment that verifies, and the archive up to and
# including it holds every event written before the request (numbered
# markers); recording goes on meanwhile, and in the end the archive holds
# every event the kernel wrote, each once, with nothing lost.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
private_load "$tmp"
inst=$(new_instance_name)
# Created here, so the daemon adopts it and leaves it (and its counters) behind.
mkdir "$TRACEFS/instances/$inst"
marker=$TRACEFS/instances/$inst/trace_marker

write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch sched:sched_wakeup
stacktrace = kmem:kmem_cache_alloc
# the load of this test only: others' work on this machine is not recorded
filter.kmem:kmem_cache_alloc = COMM == "$LOAD_COMM"
filter.sched:sched_switch = COMM == "$LOAD_COMM"
filter.sched:sched_wakeup = COMM == "$LOAD_COMM"
buffer_size = 4M

[archive]
directory = $tmp/archive
segment_size = 1M
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF
CTL_SOCKET=$tmp/control

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"

# Load in short bursts: busy recording, without starving the machine.
load_bursts 0.05 -j 1 -n 500
load=$BG_PID

# Numbered markers, one after the other; $tmp/last holds the number of the
# last marker whose write has returned (so it is in the ring buffer).
(
	i=0
	while :; do
		i=$((i + 1))
		echo "smtest-snap $i" > "$marker" || exit 1
		echo "$i" > "$tmp/last"
	done
) &
writer=$!
at_exit "kill $writer"

last_marker() { read_count "$tmp/last"; }

newest() { local f=("$tmp"/archive/*.smseg); [ ${#f[@]} = 0 ] && echo 0 || basename "${f[-1]}"; }

shopt -s nullglob
rounds=${SNAPSHOT_ROUNDS:-10}
: > "$tmp/snaps"
for round in $(seq 1 "$rounds"); do
	sleep "$((RANDOM % 2)).$((RANDOM % 8 + 2))"
	before=$(newest)
	n=$(last_marker) || exit 1
	if ((round % 2)); then
		seg=$(ctl snapshot) || fail "round $round: snapshot exited with $?"
	else
		ctl snapshot --json > "$tmp/snap.json" || fail "round $round: snapshot --json exited with $?"
		seg=$(sed -n 's/.*"path": *"\([^"]*\)".*/\1/p' "$tmp/snap.json")
		[ -n "$seg" ] || fail "round $round: snapshot --json has no path: $(cat "$tmp/snap.json")"
	fi
	case "$seg" in "$tmp/archive/"*.smseg) ;; *) fail "round $round: snapshot path '$seg'" ;; esac
	[ -f "$seg" ] || fail "round $round: '$seg' does not exist"
	[[ "$(basename "$seg")" > "$before" ]] ||
		fail "round $round: '$seg' is not newer than '$before', finished before the request"
	verify_ok "round $round: '$seg'" "$seg"
	kill -0 "$DAEMON_PID" || fail "round $round: the daemon died"
	echo "$n $seg" >> "$tmp/snaps"
	note "round $round: marker $n written before $(basename "$seg") (${SECONDS}s)"
done

total=$(last_marker) || exit 1
kill "$writer"
wait "$writer" 2>/dev/null
kill "$load"
wait "$load" 2>/dev/null
stop_daemon_ok "$tmp/daemon.log"

# What the kernel says it wrote and we read: nothing dropped, nothing left.
drained "$inst" "$tmp/daemon.log"
[ "$KERNEL_LOST" = 0 ] || fail "the kernel lost $KERNEL_LOST events (overrun, dropped)"
read_events=$KERNEL_READ

list_segments "$tmp/archive"
[ ${#parts[@]} = 0 ] || fail "unfinished segments left: ${parts[*]}"
verify_ok "the archive" "${segs[@]}"

# Decoded after the recording (not to compete with it for the CPU): each
# snapshot and the segments before it hold every marker written before it
# was requested.
mkdir "$tmp/m"
for s in "${segs[@]}"; do
	"$STACKMAPCTL" report --events "$s" > "$tmp/one.txt" 2> "$tmp/one.err" ||
		{ cat "$tmp/one.err"; fail "report of '$s' failed"; }
	sed -n 's/.* smtest-snap \([0-9][0-9]*\)$/\1/p' "$tmp/one.txt" > "$tmp/m/$(basename "$s")"
done
while read -r n seg; do
	upto=()
	for s in "${segs[@]}"; do
		[[ "$(basename "$s")" > "$(basename "$seg")" ]] || upto+=("$tmp/m/$(basename "$s")")
	done
	sort -n -u "${upto[@]}" | awk -v n="$n" '$1 <= n { c++ } END { exit c == n ? 0 : 1 }' ||
		fail "markers 1..$n are not all in the ${#upto[@]} segments up to '$seg'"
done < "$tmp/snaps"
note "$(wc -l < "$tmp/snaps") snapshots each hold what was written before them"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$tmp/report.txt" 2> "$tmp/report.err" ||
	{ cat "$tmp/report.err"; fail "report of the archive failed"; }
grep -q '^CPU:[0-9]* \[' "$tmp/report.txt" && fail "the report shows lost events"
n=$(grep -v '^ *=>' "$tmp/report.txt" | grep -Ec '\[[0-9]+\] +[0-9]+\.[0-9]+:')
[ "$n" = "$read_events" ] || fail "the archive holds $n events, the kernel wrote $read_events"
# Every marker once, none missing (the writer may have written one more
# than it counted before it was stopped).
sed -n 's/.* smtest-snap \([0-9][0-9]*\)$/\1/p' "$tmp/report.txt" | sort -n | uniq -c |
	awk -v n="$total" '$1 != 1 { print "marker " $2 " appears " $1 " times"; bad = 1 }
		{ c++; max = $2 } END { if (c != max || max < n) { print c " distinct markers, the last " max ", expected 1.." n "+"; bad = 1 }
			exit bad }' > "$tmp/dups" || fail "$(head -5 "$tmp/dups")"
total=$(sed -n 's/.* smtest-snap \([0-9][0-9]*\)$/\1/p' "$tmp/report.txt" | wc -l)
no_log_errors "$tmp/daemon.log"
note "${#segs[@]} segments, $read_events events, markers 1..$total each once"
exit 0
