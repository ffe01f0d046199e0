# Helpers shared by the fault tests (tests/fault/*.sh), on top of tests/lib.sh.
# Source after tests/lib.sh. Each test records a load of its own (a copy of
# smload under a name of its own, filtered by COMM) into an instance of its
# own, so that other tests running at the same time do not disturb it.

[ -x "$STACKMAPD" ] || skip "stackmapd is not built ($STACKMAPD)"
[ -x "$STACKMAPCTL" ] || skip "stackmapctl is not built ($STACKMAPCTL)"
shopt -s nullglob

ftmp=$(mktmp)
load_comm=smf$$
cp "$SMLOAD" "$ftmp/$load_comm" || fail "cannot copy $SMLOAD"
FLOAD=$ftmp/$load_comm
ctl() { "$STACKMAPCTL" --socket "$ftmp/control" "$@"; }

# fault_conf FILE DIR [EXTRA...]: a config recording the load into DIR; each
# EXTRA is "section.key=value" and overrides the defaults below.
fault_conf() {
	local file=$1 dir=$2 kv
	shift 2
	declare -A set=(
		[trace.instance]=$FINST
		[trace.events]="kmem:kmem_cache_alloc sched:sched_switch"
		[trace.stacktrace]=kmem:kmem_cache_alloc
		[trace.buffer_size]=1M
		[stackmap.snapshot_interval]=10s
		[archive.directory]=$dir
		[archive.segment_size]=1M
		[archive.segment_age]=0
		[archive.frame_size]=64K
		[archive.max_size]=0
		[archive.keep_free]=0
		[control.socket]=$ftmp/control
	)
	for kv in "$@"; do set[${kv%%=*}]=${kv#*=}; done
	{
		for s in trace stackmap archive control service; do
			echo "[$s]"
			for k in "${!set[@]}"; do
				[ "${k%%.*}" = "$s" ] && echo "${k#*.} = ${set[$k]}"
			done
			if [ $s = trace ]; then
				echo "filter.kmem:kmem_cache_alloc = COMM == \"$load_comm\""
				echo "filter.sched:sched_switch = prev_comm == \"$load_comm\""
			fi
		done
	} > "$file"
}

# Steady load in short bursts, in the background (FLOAD_PID), stopped at exit.
start_load() {
	(while :; do "$FLOAD" -j "${1:-1}" -n 3000 -q; sleep 0.02; done) &
	FLOAD_PID=$!
	at_exit "kill $FLOAD_PID"
}

# wait_until SECONDS COMMAND...: poll every 0.1 s until COMMAND succeeds.
wait_until() {
	local t=$1 i
	shift
	for ((i = 0; i < t * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# Start the daemon and wait until it records; fails with its log otherwise.
start_recording() {
	start_daemon "$1" "$2"
	wait_for_log "$2" 'recording [0-9]+ CPUs' 30 || { cat "$2"; fail "${3:-}daemon did not start"; }
}

# record_hooked ARCH DIR LOG [KEY=VALUE...]: the daemon records into ARCH
# (config $ftmp/c.conf, log LOG) with a hook that lists every segment it
# is handed in $ftmp/hooked, under load, until the segments seen under DIR
# (ARCH itself, or where a FUSE archive keeps its files) hold 100 kB.
# seg_bytes and written_more_than N then measure DIR.
record_hooked() {
	local arch=$1 log=$3
	SEG_DIR=$2
	shift 3
	printf '#!/bin/sh\necho "$1" >> "%s"\n' "$ftmp/hooked" > "$ftmp/hook"
	chmod 755 "$ftmp/hook"
	fault_conf "$ftmp/c.conf" "$arch" archive.hook="$ftmp/hook" "$@"
	start_recording "$ftmp/c.conf" "$log"
	start_load 1
	wait_until 30 written_more_than 100000 || fail "nothing written in 30 s"
}
seg_bytes() {
	find "$SEG_DIR" -name '*.smseg*' -printf '%s\n' 2> /dev/null | awk '{ n += $1 } END { print n + 0 }'
}
written_more_than() { [ "$(seg_bytes)" -gt "$1" ]; }

# status_field KEY: the first numeric value of "KEY" in `status --json`.
status_field() {
	ctl status --json 2>/dev/null | grep -o "\"$1\": *[0-9.]*" | head -n 1 | sed 's/.*: *//'
}

# write_dropped: the events dropped since start because writing failed
# (status write_outage.dropped_events: not the kernel's own losses).
write_dropped() {
	ctl status --json > "$ftmp/status-wd.json" 2> /dev/null &&
		json_value "$ftmp/status-wd.json" 'r["write_outage"]["dropped_events"]'
}

# stats_dropped FILE...: the write_dropped_events of every STATS record in
# the segments, added up (STATS payloads are stored uncompressed). At least
# the drops status counts: more when a loss record was repeated (written
# in part, then again), or left in a segment by an earlier run.
stats_dropped() {
	cat "$@" | grep -ao 'write_dropped_events=[0-9]*' | cut -d= -f2 | awk '{ n += $1 } END { print n + 0 }'
}

# index_lost FILE...: the lost events of the segments' indexes, added up
# (write drops included: they are added to the index of the segment that
# records them).
index_lost() {
	"$STACKMAPCTL" info --json "$@" 2> /dev/null | python3 -c '
import json, sys
n = 0
dec = json.JSONDecoder()
text = sys.stdin.read()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(text, i)
    for r in (o if isinstance(o, list) else [o]):
        n += r.get("lost_events", 0)
print(n)'
}

# check_finished WHAT FILE...: every file is a complete, intact segment.
check_finished() {
	local what=$1
	shift
	[ $# = 0 ] && return 0
	"$STACKMAPCTL" verify "$@" > "$ftmp/verify.out" 2>&1 ||
		{ grep -v ': ok,' "$ftmp/verify.out"; fail "$what: a finished segment does not verify"; }
}

# check_part WHAT FILE [KILL]: an unfinished segment reads up to its last
# complete record (verify says unfinished or damaged at some offset, never
# unreadable), and report neither crashes nor hangs on it. With KILL (the
# daemon was killed, the machine did not crash), only a record cut short
# at the end may be damaged: nothing else can go wrong in the file.
check_part() {
	local what=$1 p=$2 kill=${3:-} rc=0
	"$STACKMAPCTL" verify --json "$p" > "$ftmp/part.json" 2> /dev/null
	case $(json_value "$ftmp/part.json" 'r["status"]' 2> /dev/null) in
	unfinished | ok) ;;
	damaged)
		[ -z "$kill" ] || json "$ftmp/part.json" 'r.get("cut_short")' ||
			fail "$what: unfinished segment '$p' is damaged before its end after a kill: $(cat "$ftmp/part.json")"
		;;
	*) fail "$what: unfinished segment '$p' is unreadable: $(cat "$ftmp/part.json")" ;;
	esac
	timeout 60 "$STACKMAPCTL" report "$p" > /dev/null 2>&1 || rc=$?
	[ $rc -le 1 ] || fail "$what: report of unfinished '$p' exited $rc"
}

# part_events FILE: the events an unfinished segment holds (from its pages).
# info exits 1 for a file cut short (also an empty one) but still counts
# what precedes the cut.
part_events() {
	local rc=0
	"$STACKMAPCTL" info --json "$1" 2> /dev/null > "$ftmp/part-info.json" || rc=$?
	[ $rc -le 1 ] && json_value "$ftmp/part-info.json" 'r["events"]'
}

# check_recovered WHAT PART EVENTS LOG: the start that wrote LOG recovered
# PART (which held EVENTS events) as the finished segment of the same name,
# with all of them; a .part without any event may be removed instead. If
# retention has already deleted the recovered segment, LOG must name it.
check_recovered() {
	local what=$1 p=$2 n=$3 log=$4 final=${2%.part} got
	[ ! -e "$p" ] || fail "$what: '$p' was not recovered at start"
	if [ -f "$final" ]; then
		got=$(part_events "$final")
		[ "${got:-0}" -ge "$n" ] ||
			fail "$what: '${final##*/}' was recovered with ${got:-no} events, the .part held $n"
		RECOVERED_CHECKED=$((${RECOVERED_CHECKED:-0} + 1))
	elif grep -qF "recovered the unfinished segment '$p' as '$final'" "$log"; then
		: # recovered, and deleted since by retention
	else
		[ "$n" = 0 ] || fail "$what: '${p##*/}' held $n events and was removed, not recovered"
	fi
}

# check_only_segments WHAT DIR: nothing but finished segments in DIR.
check_only_segments() {
	local f others=()
	for f in "$2"/* "$2"/.[!.]*; do
		case $f in *.smseg) [ -f "$f" ] && continue ;; esac
		others+=("$(basename "$f")")
	done
	[ ${#others[@]} = 0 ] || fail "$1: left in the archive besides finished segments: ${others[*]}"
}

# The instance of this test, created by the daemon and removed at exit.
FINST=$(new_instance_name)
