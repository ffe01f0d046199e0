# Shell helpers for integration and system tests. Source it:  . "$top_srcdir/tests/lib.sh"
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

# Write a config file: write_config FILE <<EOF ... EOF
write_config() { cat > "$1"; }

# Start the daemon in the background: start_daemon CONFIG LOG; sets DAEMON_PID.
start_daemon() {
	"$STACKMAPD" -c "$1" >"$2" 2>&1 &
	DAEMON_PID=$!
	# wait for it: its open trace_pipe_raw files keep the instance busy
	at_exit "kill -9 $DAEMON_PID; wait $DAEMON_PID"
}

# Wait until FILE contains PATTERN (grep -E), at most SECONDS.
wait_for_log() {
	local file=$1 pat=$2 t=${3:-20} i
	for ((i = 0; i < t * 10; i++)); do
		grep -Eq "$pat" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

stop_daemon() {
	kill -TERM "$DAEMON_PID" 2>/dev/null
	local rc=0
	wait "$DAEMON_PID" || rc=$?
	return $rc
}

# Snapshot of global tracing state, to prove a test left it as it found it.
tracefs_state() {
	{
		cat "$TRACEFS/current_tracer" "$TRACEFS/tracing_on" "$TRACEFS/buffer_size_kb" \
			"$TRACEFS/trace_clock" "$TRACEFS/trace_options" "$TRACEFS/set_event"
		# instances of other tests and benchmarks running at the same time come and go
		ls "$TRACEFS/instances" | grep -Ev '^sm(test|bench)_' || true
		ls "$TRACEFS/instances" | grep -E "^smtest_${TEST_NAME//-/_}_$$_" || true
		grep -l . "$TRACEFS"/events/*/*/trigger 2>/dev/null | grep -v ':#' || true
	} 2>/dev/null
}
