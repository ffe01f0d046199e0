# Shell helpers for the integration, system and VM tests: skipping, temp
# dirs and instances cleaned up at exit, waiting with a deadline, starting
# and stopping the daemon, segments, JSON replies, the load, and the
# tracefs state a test must leave as it found it.
# Source it:  . "$top_srcdir/tests/lib.sh"  (tests/vm/ add tests/vm/lib-vm.sh)
#
# Policy: a test that cannot run where it should fails loudly in CI
# (CI=true) and skips (exit 77, with the reason) elsewhere. Tests that touch
# tracefs work in their own instance, restore what they change (also on
# failure: cleanup runs from an EXIT trap) and never leave tracing running.

set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${STACKMAPD:=$top_builddir/stackmapd}"
: "${STACKMAPCTL:=$top_builddir/stackmapctl}"
: "${SMLOAD:=$top_builddir/tests/workload/smload}"
TRACEFS=${TRACEFS:-/sys/kernel/tracing}
TEST_NAME=$(basename "$0" .sh)

# What the programs need at run time beyond the run-systemd container's own
# package list (stackmapctl's pprof export: libprotobuf-c and zlib; the
# segment uploader: curl), comma-separated for run-systemd --packages.
SYSTEMD_RUNTIME_PACKAGES=libprotobuf-c1,zlib1g,curl

# Whether a program is built with AddressSanitizer: its RSS then counts the
# sanitizer's quarantine of freed memory and shadow memory, so RSS growth
# says nothing about leaks there (LeakSanitizer checks those at exit).
sanitized() { ldd "$1" 2>/dev/null | grep -q libasan; }

# Cleanups are kept in a file, not a variable: mktmp and new_instance_name
# run in the subshell of a command substitution (d=$(mktmp)), where a
# variable set by at_exit would be lost together with the cleanup.
_cleanup_list=$(mktemp /tmp/smtest-cleanups.XXXXXX) || exit 99
# Register a command (one line) to run at exit (last registered runs first).
at_exit() { printf '%s\n' "$*" >>"$_cleanup_list"; }
_run_cleanups() {
	local i
	local -a cmds=()
	mapfile -t cmds <"$_cleanup_list"
	for ((i = ${#cmds[@]} - 1; i >= 0; i--)); do
		eval "${cmds[$i]}" >/dev/null 2>&1 || true
	done
	rm -f "$_cleanup_list"
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $TEST_NAME: $*" >&2; exit 1; }
note() { echo "# $*"; }

# skip REASON: exit 77 outside CI, fail in CI.
skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $TEST_NAME: cannot run in CI: $*" >&2
		exit 1
	fi
	echo "SKIP: $TEST_NAME: $*" >&2
	exit 77
}

need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }

need_tracefs() {
	need_root
	if ! mountpoint -q "$TRACEFS" 2>/dev/null; then
		mount -t tracefs nodev "$TRACEFS" 2>/dev/null || skip "tracefs not mounted at $TRACEFS and cannot mount it"
	fi
	[ -w "$TRACEFS/instances" ] || skip "$TRACEFS/instances is not writable"
	sweep_stale_instances
}

# Remove the instances of tests that are gone: a test killed with SIGKILL
# (or with the machine's session) cannot run its cleanup, and its instance
# goes on tracing, with its events enabled, into every later test's kernel
# (a second tracer on an event changes the stacks perf sees). The name
# new_instance_name gives holds the test's pid; one whose process is alive
# and older than the instance is left alone, so tests running side by side
# do not remove each other's (pids are reused: a process started after the
# instance was made is not the test that made it).
sweep_stale_instances() {
	local d n pid started made
	for d in "$TRACEFS"/instances/smtest_*_*_*; do
		[ -d "$d" ] || continue
		n=${d##*/}
		pid=${n%_*}
		pid=${pid##*_}
		[[ $pid =~ ^[0-9]+$ ]] || continue
		if [ -d "/proc/$pid" ]; then
			started=$(process_start_time "$pid") || continue
			made=$(stat -c %Y "$d" 2>/dev/null) || continue
			[ "$started" -gt $((made + 1)) ] || continue
		fi
		echo "# removing instance $n, left by a test that is gone (pid $pid)" >&2
		remove_instance "$n"
	done
}

need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "needs $1"; }

# A temp dir removed at exit.
mktmp() {
	local d
	d=$(mktemp -d "/tmp/smtest-$TEST_NAME.XXXXXX")
	at_exit "rm -rf '$d'"
	echo "$d"
}

# A random instance name; the instance is removed at exit (after stopping its events).
new_instance_name() {
	local n="smtest_${TEST_NAME//-/_}_$$_$RANDOM"
	at_exit "remove_instance $n"
	echo "$n"
}

remove_instance() {
	local d="$TRACEFS/instances/$1"
	[ -d "$d" ] || return 0
	echo 0 > "$d/tracing_on" 2>/dev/null
	echo > "$d/set_event" 2>/dev/null
	for t in "$d"/events/*/*/trigger; do
		# tracefs files report size 0: read them to see what is set
		[ -f "$t" ] || continue
		while read -r line; do
			case "$line" in \#*|"") continue ;; esac
			echo "!${line%%[ :]*}" > "$t" 2>/dev/null
		done < "$t"
	done
	rmdir "$d" 2>/dev/null
}

# process_start_time PID: when the process started, in seconds since the
# epoch (btime is rounded and drifts from the wall clock: the boot's date is
# taken from the uptime now).
process_start_time() {
	local stat up
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }	# the fields after the command name, from the state on
	read -r up _ < /proc/uptime
	# starttime is field 22 of the line, the 20th after the command name
	awk -v now="$EPOCHREALTIME" -v up="$up" -v hz="$(getconf CLK_TCK)" \
		'{ printf "%d\n", now - up + $20 / hz }' <<<"$stat"
}

# Write a config file: write_config FILE <<EOF ... EOF
write_config() { cat > "$1"; }

# wait_until SECONDS COMMAND...: run COMMAND every 0.1 s until it succeeds,
# at most SECONDS (wall clock); returns 1 if it never did.
wait_until() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	while :; do
		"$@" && return 0
		((${EPOCHREALTIME/./} < end)) || return 1
		sleep 0.1
	done
}

# Wait until FILE contains PATTERN (grep -E), at most SECONDS (default 20).
wait_for_log() { wait_until "${3:-20}" _log_has "$1" "$2"; }
_log_has() { grep -Eq "$2" "$1" 2>/dev/null; }

# need_built PROGRAM...: the programs under test exist (make check builds them).
need_built() {
	local b
	for b; do
		[ -x "$b" ] || fail "$b is not built"
	done
}

# need_events SYSTEM:EVENT...: skip on a kernel without one of these events.
need_events() {
	local e
	for e; do
		[ -d "$TRACEFS/events/${e/://}" ] || skip "this kernel has no $e event"
	done
}

# start_daemon CONFIG LOG [READY]: start stackmapd in the background (sets
# DAEMON_PID; killed at exit) and wait until LOG matches READY (grep -E;
# default: recording on all CPUs, '' to not wait). Fails, showing the log,
# if the daemon exits first or READY does not come within 20 s.
start_daemon() {
	local ready=${3-'recording [0-9]+ CPUs'}
	"$STACKMAPD" -c "$1" >"$2" 2>&1 &
	DAEMON_PID=$!
	# wait for it: its open trace_pipe_raw files keep the instance busy
	at_exit "kill -9 $DAEMON_PID; wait $DAEMON_PID"
	[ -n "$ready" ] || return 0
	wait_until 20 _daemon_ready "$2" "$ready" && grep -Eq "$ready" "$2" && return 0
	cat "$2" >&2
	fail "stackmapd did not start (no '$ready' in $2)"
}
_daemon_ready() { _log_has "$1" "$2" || ! kill -0 "$DAEMON_PID" 2>/dev/null; }

stop_daemon() {
	kill -TERM "$DAEMON_PID" 2>/dev/null
	local rc=0
	wait "$DAEMON_PID" || rc=$?
	return $rc
}

# stop_daemon_ok LOG [WHAT]: stop the daemon; fails (showing LOG) unless it exits 0.
stop_daemon_ok() {
	local rc=0
	stop_daemon || rc=$?
	[ $rc = 0 ] && return 0
	cat "$1" >&2
	fail "${2:+$2: }stackmapd exited with status $rc"
}

# no_log_errors LOG [WHAT]: the daemon logged nothing at LOG_ERR or worse.
no_log_errors() {
	if grep -E '^<[0-3]>' "$1" >&2; then
		fail "${2:+$2: }errors in the daemon log"
	fi
	return 0
}

# ctl ARGS...: stackmapctl, on the socket $CTL_SOCKET when that is set.
ctl() { "$STACKMAPCTL" ${CTL_SOCKET:+--socket "$CTL_SOCKET"} "$@"; }

# verify_ok WHAT FILE...: stackmapctl verify FILE...; fails, showing its output, unless all verify.
verify_ok() {
	local what=$1 out
	shift
	out=$("$STACKMAPCTL" verify "$@" 2>&1) || { printf '%s\n' "$out" >&2; fail "$what does not verify"; }
}

# list_segments DIR: sets segs (finished segments) and parts (unfinished ones), sorted.
list_segments() {
	local had
	had=$(shopt -p nullglob)
	shopt -s nullglob
	segs=("$1"/*.smseg)
	parts=("$1"/*.part)
	eval "$had"
}

# json FILE EXPR: true if the Python expression EXPR holds for the JSON in FILE (as r).
json() {
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$1" "$2"
}

# json_value FILE EXPR: print the value of EXPR over the JSON in FILE (as r).
json_value() {
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# background COMMAND...: run COMMAND in the background until exit; sets BG_PID.
background() {
	"$@" &
	BG_PID=$!
	at_exit "kill $BG_PID"
}

# private_load DIR: the load (SMLOAD) runs under a name of this test's own,
# LOAD_COMM, so that filters on COMM record it and not other tests' loads.
private_load() {
	LOAD_COMM=smload$$
	cp "$SMLOAD" "$1/$LOAD_COMM" || fail "cannot copy $SMLOAD"
	SMLOAD=$1/$LOAD_COMM
}

# load_bursts PAUSE SMLOAD-ARGS...: the load in short bursts with PAUSE
# seconds between them, in the background until exit (sets BG_PID).
load_bursts() { background _load_bursts "$@"; }
_load_bursts() {
	local pause=$1
	shift
	while :; do
		"$SMLOAD" "$@" -q
		sleep "$pause"
	done
}

# read_count FILE: the number in FILE, which a writer in the background
# rewrites all the time (so that it is empty only for a moment).
read_count() {
	local n= i
	for ((i = 0; i < 1000 && ${#n} == 0; i++)); do n=$(cat "$1" 2>/dev/null); done
	[ -n "$n" ] || fail "no count in $1"
	echo "$n"
}

# drained INSTANCE [DAEMON_LOG]: every CPU buffer of INSTANCE was read to its
# end (fails otherwise); sets KERNEL_READ (events read from it) and
# KERNEL_LOST (overrun and dropped events), as the kernel counts them, or as
# the daemon of DAEMON_LOG logged them before it emptied the buffer.
drained() {
	local s e o dr r line
	KERNEL_READ=0
	KERNEL_LOST=0
	for s in "$TRACEFS/instances/$1"/per_cpu/cpu*/stats; do
		e=$(awk -F': ' '/^entries/{print $2}' "$s")
		o=$(awk -F': ' '/^overrun/{print $2}' "$s")
		dr=$(awk -F': ' '/^dropped events/{print $2}' "$s")
		r=$(awk -F': ' '/^read events/{print $2}' "$s")
		[ "$e" = 0 ] || fail "$s: ${e:-no} events left unread in the buffer"
		KERNEL_LOST=$((KERNEL_LOST + o + dr))
		KERNEL_READ=$((KERNEL_READ + r))
	done
	# The daemon empties a buffer before it puts its size back (the kernel's
	# page counts), which zeroes these: it logs them first, the stop's
	# (the largest) count.
	[ $# -ge 2 ] || return 0
	while IFS= read -r line; do
		[[ $line =~ the\ kernel\ had\ read\ ([0-9]+)\ events\ and\ lost\ ([0-9]+)\;\ ([0-9]+)\ unread ]] ||
			continue
		[ "${BASH_REMATCH[3]}" = 0 ] ||
			fail "the daemon emptied ${BASH_REMATCH[3]} unread events at its stop: $line"
		if [ "${BASH_REMATCH[1]}" -gt "$KERNEL_READ" ]; then
			KERNEL_READ=${BASH_REMATCH[1]}
			KERNEL_LOST=${BASH_REMATCH[2]}
		fi
	done < <(grep -a "emptied the ring buffer '[^']*/instances/$1[/']" "$2")
}

# tracefs_state: global tracing state, to prove a test left it as it found
# it: the top level's tracer, switches, clock, options, events and
# triggers, and the instances. Instances of others (tests, benchmarks, the
# people on this machine), which come and go while the state is read, are
# left out: those of other tests and tools (sm*_), and any that exists
# before or after it is read; not this test's own (new_instance_name),
# which must be gone when it compares.
# The buffer's size is compared in ring-buffer pages: the kernel reports
# the size first asked for ("1408", or "7 (expanded: 1408)" before the
# buffer is first used: its size once tracing starts, which any tracing
# does), and after a resize what the pages hold (1410 for the same 354
# pages), so a size put back exactly reads differently.
buffer_pages() {
	local kb sub
	kb=$(cat "$TRACEFS/buffer_size_kb") || return 0
	kb=${kb##*expanded: }
	kb=${kb%)}
	sub=$(cat "$TRACEFS/buffer_subbuf_size_kb" 2>/dev/null || echo 4)
	# a page's data: the sub-buffer less its 16-byte header
	awk -v kb="$kb" -v sb="$sub" 'BEGIN {
		if (kb !~ /^[0-9]+$/) { print "buffer_size_kb " kb; exit }
		d = sb * 1024 - 16; printf "buffer pages %d\n", int((kb * 1024 + d - 1) / d) }'
}

tracefs_state() {
	local others s own="smtest_${TEST_NAME//-/_}_$$_"
	others=$(ls "$TRACEFS/instances")
	s=$({
		cat "$TRACEFS/current_tracer" "$TRACEFS/tracing_on"
		buffer_pages
		cat "$TRACEFS/trace_clock" "$TRACEFS/trace_options" "$TRACEFS/set_event"
		ls "$TRACEFS/instances" | grep -Ev '^sm[a-z]*_' || true
		ls "$TRACEFS/instances" | grep "^$own" || true
		# a trigger file lists its triggers, else only comments
		grep -l '^[^#]' "$TRACEFS"/events/*/*/trigger || true
	} 2>/dev/null)
	others+=$'\n'$(ls "$TRACEFS/instances")
	grep -vxF -f <(grep -v "^$own" <<<"$others"; echo smtest_none) <<<"$s" || true
}
