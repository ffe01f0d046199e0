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

# status_field KEY: the first numeric value of "KEY" in `status --json`.
status_field() {
	ctl status --json 2>/dev/null | grep -o "\"$1\": *[0-9.]*" | head -n 1 | sed 's/.*: *//'
}

# check_finished WHAT FILE...: every file is a complete, intact segment.
check_finished() {
	local what=$1
	shift
	[ $# = 0 ] && return 0
	"$STACKMAPCTL" verify "$@" > "$ftmp/verify.out" 2>&1 ||
		{ grep -v ': ok,' "$ftmp/verify.out"; fail "$what: a finished segment does not verify"; }
}

# check_part WHAT FILE: an unfinished segment reads up to its last complete
# record (verify says unfinished or damaged at some offset, never
# unreadable), and report neither crashes nor hangs on it.
check_part() {
	local what=$1 p=$2 st rc=0
	st=$("$STACKMAPCTL" verify --json "$p" 2>/dev/null | grep -o '"status":"[a-z]*"')
	case $st in
	*unfinished* | *damaged* | *'"ok"'*) ;;
	*) fail "$what: unfinished segment '$p' is unreadable: $st" ;;
	esac
	timeout 60 "$STACKMAPCTL" report "$p" > /dev/null 2>&1 || rc=$?
	[ $rc -le 1 ] || fail "$what: report of unfinished '$p' exited $rc"
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
