#!/bin/bash
# Retention under load with small segments: max_size, then max_segments
# (also lowered by a reload), then keep_free on a small tmpfs. Watching the
# archive directory all along: it never exceeds a limit by more than one
# segment, the oldest segments go first (what is left is always the newest
# run of sequence numbers), the segment being written is never deleted, and
# in the end every remaining segment verifies. Segments are finished only
# because they are full, so none may be finished short (spuriously).
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd find
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

MB=$((1024 * 1024))
SEGMENT_SIZE=$MB
tmp=$(mktmp)
private_load "$tmp"
inst=$(new_instance_name)
CTL_SOCKET=$tmp/control

# conf DIR MAX_SIZE MAX_SEGMENTS KEEP_FREE: a config recording the load below into DIR.
conf() {
	write_config "$tmp/stackmapd.conf" <<-EOF
	[trace]
	instance = $inst
	events = kmem:kmem_cache_alloc sched:sched_switch sched:sched_wakeup
	stacktrace = kmem:kmem_cache_alloc
	filter.kmem:kmem_cache_alloc = COMM == "$LOAD_COMM"
	filter.sched:sched_switch = COMM == "$LOAD_COMM"
	filter.sched:sched_wakeup = COMM == "$LOAD_COMM"
	buffer_size = 2M
	[archive]
	directory = $1
	segment_size = $SEGMENT_SIZE
	segment_age = 0
	max_size = $2
	max_segments = $3
	keep_free = $4
	[control]
	socket = $tmp/control
	EOF
}

# Load in short bursts: plenty of data, without starving the machine.
load_bursts 0.05 -j 1 -n 2000

# sample DIR: the directory's segments right now: fin (sequence numbers of
# finished segments, sorted), nparts, total (bytes of all segments); big
# becomes the size of the largest segment seen so far.
big=0
sample() {
	local name size
	fin=()
	nparts=0
	total=0
	while read -r name size; do
		case "$name" in
		*.smseg) fin+=($((10#${name%%-*}))) ;;
		*.smseg.part) nparts=$((nparts + 1)) ;;
		*) continue ;;
		esac
		total=$((total + size))
		((size > big)) && big=$size
	done < <(find "$1" -maxdepth 1 -type f -printf '%f %s\n' 2>/dev/null | sort)
}

# watch DIR NAME CHECK N: sample DIR until N more segments were finished;
# after each sample, the common checks and then CHECK (a command that fails
# with a message when a limit is exceeded).
watch() {
	local dir=$1 name=$2 check=$3 oldest=0 newest=0 start i cur try
	sample "$dir"
	start=0
	[ ${#fin[@]} = 0 ] || start=${fin[-1]}
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$tmp/daemon.$name.log"; fail "$name: the daemon died"; }
		# the segment being written, then the directory
		# (a busy machine can make a status request time out: ask again)
		for try in 1 2 3; do ctl status --json > "$tmp/status.json" 2> "$tmp/status.err" && break; done
		[ -s "$tmp/status.json" ] || fail "$name: status failed: $(cat "$tmp/status.err")"
		cur=$(sed -n 's/.*"segment": *{"path": *"\([^"]*\)".*/\1/p' "$tmp/status.json")
		sample "$dir"
		[ -n "$cur" ] || fail "$name: no segment being written: $(cat "$tmp/status.json")"
		[ -e "$cur" ] || [ -e "${cur%.part}" ] || fail "$name: the segment being written, $cur, was deleted"
		[ "$nparts" -ge 1 ] && [ "$nparts" -le 2 ] || fail "$name: $nparts unfinished segments"
		if [ ${#fin[@]} -gt 0 ]; then
			# the newest run: no gap, and what was deleted never comes back
			[ $((fin[-1] - fin[0] + 1)) = ${#fin[@]} ] || fail "$name: not the oldest deleted: ${fin[*]}"
			[ "${fin[0]}" -ge "$oldest" ] || fail "$name: segment ${fin[0]} came back (oldest was $oldest)"
			oldest=${fin[0]}
			newest=${fin[-1]}
		fi
		$check || exit 1
		[ "$newest" -ge $((start + $4)) ] && break
		sleep 0.1
	done
	[ "$newest" -ge $((start + $4)) ] || fail "$name: only $((newest - start)) segments finished in 2 minutes"
	note "$name: segments $oldest..$newest kept (largest $big bytes, ${SECONDS}s)"
}

# finish DIR NAME: stop the daemon; every segment left verifies, and all
# but the last (finished at stop) were finished full.
finish() {
	local dir=$1 name=$2 s n=0
	stop_daemon_ok "$tmp/daemon.$name.log" "$name"
	list_segments "$dir"
	[ ${#parts[@]} = 0 ] || fail "$name: unfinished segments left: ${parts[*]}"
	verify_ok "$name: a segment left by retention" "${segs[@]}"
	for s in "${segs[@]:0:${#segs[@]}-1}"; do
		[ "$(stat -c %s "$s")" -ge "$SEGMENT_SIZE" ] && n=$((n + 1)) ||
			fail "$name: $(basename "$s") was finished at $(stat -c %s "$s") bytes, before it was full ($("$STACKMAPCTL" info "$s" | grep '^events'))"
	done
	no_log_errors "$tmp/daemon.$name.log" "$name"
	note "$name: ${#segs[@]} segments verify, $n of them full"
}

shopt -s nullglob

# ---- max_size ----
MAX_SIZE=$((4 * MB))
conf "$tmp/a1" "$MAX_SIZE" 0 0
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.max_size.log"
# between finishing a segment and deleting the oldest, one segment more
check_size() {
	[ "$total" -le $((MAX_SIZE + big)) ] || fail "max_size: $total bytes in the archive, limit $MAX_SIZE + $big"
}
watch "$tmp/a1" max_size check_size 14
finish "$tmp/a1" max_size

# ---- max_segments, then lowered by a reload ----
MAX_SEGMENTS=4
conf "$tmp/a2" 0 "$MAX_SEGMENTS" 0
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.max_segments.log"
# the segment being written counts as one: at most MAX_SEGMENTS - 1
# finished ones, one more between finishing a segment and deleting the oldest
check_count() {
	[ ${#fin[@]} -le "$MAX_SEGMENTS" ] || fail "max_segments: ${#fin[@]} finished segments, limit $MAX_SEGMENTS"
}
watch "$tmp/a2" max_segments check_count 12
MAX_SEGMENTS=2
conf "$tmp/a2" 0 "$MAX_SEGMENTS" 0
ctl reload || fail "reload with max_segments = $MAX_SEGMENTS"
sample "$tmp/a2"
check_count
note "after the reload: ${#fin[@]} finished segment(s) left"
watch "$tmp/a2" max_segments=2 check_count 6
finish "$tmp/a2" max_segments
# with no segment being written any more, max_segments finished ones stay
[ ${#segs[@]} = "$MAX_SEGMENTS" ] || fail "max_segments: ${#segs[@]} segments left after the stop, limit $MAX_SEGMENTS"

# ---- keep_free, on a file system small enough to fill ----
mkdir "$tmp/small"
mount -t tmpfs -o size=16M,mode=0750 tmpfs "$tmp/small" || skip "cannot mount a tmpfs"
at_exit "umount -l '$tmp/small'"
KEEP_FREE=50
conf "$tmp/small" 0 0 "$KEEP_FREE"
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.keep_free.log"
check_free() {
	local avail bsize blocks
	read -r avail bsize blocks < <(stat -f -c '%a %S %b' "$tmp/small")
	[ $((avail * bsize + big)) -ge $((blocks * bsize / 100 * KEEP_FREE)) ] ||
		fail "keep_free: $((avail * bsize)) bytes free of $((blocks * bsize)), $KEEP_FREE% wanted (less one segment, $big)"
}
watch "$tmp/small" keep_free check_free 16
errors=$(ctl status --json | sed -n 's/.*"write_errors": *\([0-9]*\).*/\1/p')
[ "$errors" = 0 ] || fail "keep_free: $errors write errors"
finish "$tmp/small" keep_free
exit 0
