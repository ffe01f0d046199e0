#!/bin/bash
# stackmapctl snapshot while the daemon records under load: each snapshot
# returns a finished segment that verifies, and the archive up to and
# including it holds every event written before the request (numbered
# markers); recording goes on meanwhile, and in the end the archive holds
# every event the kernel wrote, each once, with nothing lost.
. "$top_srcdir/tests/lib.sh"
need_tracefs
[ -x "$STACKMAPD" ] || skip "stackmapd is not built ($STACKMAPD)"
[ -x "$STACKMAPCTL" ] || skip "stackmapctl is not built ($STACKMAPCTL)"

tmp=$(mktmp)
# The load runs under a name of its own: other tests' loads are not recorded.
load_comm=smload$$
cp "$SMLOAD" "$tmp/$load_comm" || fail "cannot copy $SMLOAD"
SMLOAD=$tmp/$load_comm
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
filter.kmem:kmem_cache_alloc = COMM == "$load_comm"
filter.sched:sched_switch = COMM == "$load_comm"
filter.sched:sched_wakeup = COMM == "$load_comm"
buffer_size = 4M

[archive]
directory = $tmp/archive
segment_size = 1M
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF
ctl() { "$STACKMAPCTL" --socket "$tmp/control" "$@"; }

start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
wait_for_log "$tmp/daemon.log" 'recording [0-9]+ CPUs' 20 || { cat "$tmp/daemon.log"; fail "daemon did not start"; }

# Load in short bursts: busy recording, without starving the machine.
(while :; do "$SMLOAD" -j 1 -n 500 -q; sleep 0.05; done) &
load=$!
at_exit "kill $load"

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

# (while the writer runs: the file is empty only for a moment)
last_marker() {
	local n= i
	for ((i = 0; i < 1000 && ${#n} == 0; i++)); do n=$(cat "$tmp/last" 2>/dev/null); done
	[ -n "$n" ] || fail "no marker count in $tmp/last"
	echo "$n"
}

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
	"$STACKMAPCTL" verify "$seg" > "$tmp/verify.out" 2>&1 ||
		{ cat "$tmp/verify.out"; fail "round $round: '$seg' does not verify"; }
	kill -0 "$DAEMON_PID" || fail "round $round: the daemon died"
	echo "$n $seg" >> "$tmp/snaps"
	note "round $round: marker $n written before $(basename "$seg") (${SECONDS}s)"
done

total=$(last_marker) || exit 1
kill "$writer"
wait "$writer" 2>/dev/null
kill "$load"
wait "$load" 2>/dev/null
stop_daemon || { cat "$tmp/daemon.log"; fail "daemon exited with status $?"; }

# What the kernel says it wrote and we read: nothing dropped, nothing left.
read_events=0
for s in "$TRACEFS/instances/$inst"/per_cpu/cpu*/stats; do
	e=$(awk -F': ' '/^entries/{print $2}' "$s")
	o=$(awk -F': ' '/^overrun/{print $2}' "$s")
	dr=$(awk -F': ' '/^dropped events/{print $2}' "$s")
	r=$(awk -F': ' '/^read events/{print $2}' "$s")
	[ "$e" = 0 ] || fail "$s: $e events left unread in the buffer"
	[ "$o" = 0 ] && [ "$dr" = 0 ] || fail "$s: kernel lost events (overrun $o, dropped $dr)"
	read_events=$((read_events + r))
done

segs=("$tmp"/archive/*.smseg)
parts=("$tmp"/archive/*.part)
[ ${#parts[@]} = 0 ] || fail "unfinished segments left: ${parts[*]}"
"$STACKMAPCTL" verify "${segs[@]}" > "$tmp/verify.out" 2>&1 || { cat "$tmp/verify.out"; fail "verify failed"; }

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
"$STACKMAPCTL" report "${segs[@]}" > "$tmp/report.txt" 2> "$tmp/report.err" ||
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
grep -E '^<[0-3]>' "$tmp/daemon.log" && fail "errors in the daemon log"
note "${#segs[@]} segments, $read_events events, markers 1..$total each once"
exit 0
