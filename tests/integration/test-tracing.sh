#!/bin/bash
# daemon/tracing.c against the live tracefs, through tests/integration/tracing-probe:
# the instance is configured as asked while the daemon runs and everything is put back
# afterwards (created instance removed, adopted instance left as found), also when the
# config is refused; after SIGKILL the test's own cleanup leaves nothing behind.
. "$top_srcdir/tests/lib.sh"

need_tracefs
PROBE=${TRACING_PROBE:-$top_builddir/tests/integration/tracing-probe}
need_built "$PROBE"
need_events sched:sched_switch sched:sched_wakeup kmem:kmalloc

tmp=$(mktmp)
before=$(tracefs_state)

# start_held NAME [ARGS]: run the probe with --hold until it has set everything up.
start_held() {
	local name=$1
	shift
	PROBE_OUT=$tmp/$name.out
	mkfifo "$tmp/$name.fifo"
	"$PROBE" --hold "$@" "$name" <"$tmp/$name.fifo" >"$PROBE_OUT" 2>&1 &
	PROBE_PID=$!
	at_exit "kill -9 $PROBE_PID"
	exec 3>"$tmp/$name.fifo"
	if ! wait_for_log "$PROBE_OUT" '^ready$' 30; then
		cat "$PROBE_OUT" >&2
		fail "tracing-probe did not finish its setup"
	fi
}

# finish_held: let the probe restore and exit; fails on its exit status or warnings.
finish_held() {
	local rc=0
	exec 3>&-
	wait "$PROBE_PID" || rc=$?
	[ $rc = 0 ] || { cat "$PROBE_OUT" >&2; fail "tracing-probe exited with $rc"; }
	if grep -E 'cannot|continuing' "$PROBE_OUT" >&2; then
		fail "tracing-probe could not restore everything"
	fi
}

enabled() { case $(cat "$1/events/$2/enable") in 1*) return 0 ;; *) return 1 ;; esac; }
has_stack_trigger() { grep -q '^stacktrace' "$1/events/$2/trigger"; }
value() { cat "$1/$2"; }

# What the probe may change in an instance, to compare before and after.
instance_state() {
	local d=$1 e
	for e in sched/sched_switch sched/sched_wakeup kmem/kmalloc; do
		echo "$e: $(cat "$d/events/$e/enable") $(cat "$d/events/$e/filter")"
		grep -v '^#' "$d/events/$e/trigger"
	done
	grep . "$d"/options/* "$d/tracing_on" "$d/buffer_size_kb" "$d/trace_clock"
}

check_output() {
	local out=$1 name=$2 key
	grep -qx "instance_dir: $TRACEFS/instances/$name" "$out" || fail "instance_dir: $(grep instance_dir "$out")"
	grep -qx "clock: mono" "$out" || fail "clock: $(grep '^clock' "$out")"
	grep -qE '^page_size: [1-9][0-9]*$' "$out" || fail "page size: $(grep page_size "$out")"
	grep -qE '^event_id: sched:sched_switch [1-9][0-9]*$' "$out" || fail "no id for sched_switch"
	grep -qE '^event_id: ftrace:kernel_stack [1-9][0-9]*$' "$out" || fail "no id for kernel_stack"
	grep -qx 'event_id: no:such_event -2' "$out" || fail "a missing event is not -ENOENT"
	grep -qx 'has_data: 1' "$out" || fail "no data after writing a marker"
	grep -qE '^cpu_stats: 0 entries=[0-9]+ ' "$out" || fail "no CPU stats"
	for key in header_page header_event events/sched/sched_switch/format \
		events/sched/sched_wakeup/format events/kmem/kmalloc/format \
		events/ftrace/kernel_stack/format events/ftrace/print/format saved_cmdlines; do
		grep -qE "^file: $key [1-9][0-9]*$" "$out" || fail "file $key not collected"
	done
	grep -qx 'task_files: 2' "$out" || grep -qx 'task_files: 1' "$out" || fail "task files"
}

note "a created instance with stacktrace triggers"
name=$(new_instance_name)
d=$TRACEFS/instances/$name
start_held "$name"
[ -d "$d" ] || fail "instance $name does not exist during the run"
for e in sched/sched_switch sched/sched_wakeup kmem/kmalloc; do
	enabled "$d" $e || fail "$e is not enabled: $(cat "$d/events/$e/enable")"
done
[ "$(value "$d" events/sched/sched_switch/filter)" = 'prev_pid >= 0' ] || fail "sched_switch filter"
grep -qx 'stacktrace:unlimited if prev_pid >= 0' "$d/events/sched/sched_switch/trigger" ||
	fail "sched_switch trigger: $(cat "$d/events/sched/sched_switch/trigger")"
grep -qx 'stacktrace:unlimited' "$d/events/kmem/kmalloc/trigger" ||
	fail "kmalloc trigger: $(cat "$d/events/kmem/kmalloc/trigger")"
! has_stack_trigger "$d" sched/sched_wakeup || fail "sched_wakeup has a stacktrace trigger"
[ "$(value "$d" tracing_on)" = 1 ] || fail "tracing_on is not 1"
[ "$(value "$d" options/overwrite)" = 0 ] || fail "overwrite is on while streaming"
[ ! -e "$d/options/record-tgid" ] || [ "$(value "$d" options/record-tgid)" = 1 ] || fail "record-tgid"
[ ! -e "$d/options/stacktrace" ] || [ "$(value "$d" options/stacktrace)" = 0 ] ||
	fail "options/stacktrace is on for a subset of events"
size=$(value "$d" buffer_size_kb)
[ "$size" -ge 2048 ] && [ "$size" -lt 2100 ] || fail "buffer_size_kb is $size, not ~2048"
grep -q '\[mono\]' "$d/trace_clock" || fail "trace_clock: $(cat "$d/trace_clock")"
check_output "$PROBE_OUT" "$name"
finish_held
[ ! -d "$d" ] || fail "instance $name is left behind"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after the run"

note "stacktrace = all in an instance"
name=$(new_instance_name)
d=$TRACEFS/instances/$name
start_held "$name" --stacktrace-all
if [ -e "$d/options/stacktrace" ]; then
	[ "$(value "$d" options/stacktrace)" = 1 ] || fail "options/stacktrace is not on"
	for e in sched/sched_switch sched/sched_wakeup kmem/kmalloc; do
		! has_stack_trigger "$d" $e || fail "$e has a trigger besides options/stacktrace"
	done
else
	for e in sched/sched_switch sched/sched_wakeup kmem/kmalloc; do
		has_stack_trigger "$d" $e || fail "$e has no stacktrace trigger"
	done
fi
finish_held
[ ! -d "$d" ] || fail "instance $name is left behind"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after the stacktrace-all run"

note "filters: refused before anything changes, or by the kernel and undone, or accepted"
# Each line: FILTER@WHAT, WHAT empty (accepted), "kernel" (passes our check, refused by the
# kernel) or the checker's message (a trailing '*' matches the rest of the line).
while IFS='@' read -r filter what; do
	name=$(new_instance_name)
	rc=0
	"$PROBE" --wakeup-filter "$filter" "$name" >"$tmp/filter.out" 2>&1 || rc=$?
	if [ -z "$what" ]; then
		[ $rc = 0 ] || { cat "$tmp/filter.out" >&2; fail "filter '$filter': exit $rc"; }
	elif [ "$what" = kernel ]; then
		# Passes our check, refused by the kernel halfway through the setup.
		[ $rc = 1 ] || { cat "$tmp/filter.out" >&2; fail "filter '$filter': exit $rc, not 1"; }
		grep -qx 'tracing-probe: cannot set up the events: Invalid argument' "$tmp/filter.out" ||
			fail "filter '$filter': $(cat "$tmp/filter.out")"
		! grep -q 'continuing' "$tmp/filter.out" || fail "filter '$filter': incomplete undo"
	else
		[ $rc = 2 ] || { cat "$tmp/filter.out" >&2; fail "filter '$filter': exit $rc, not 2"; }
		expect="invalid: defaults: trace.filter.sched:sched_wakeup: ${what%\*}"
		if [ "${what%\*}" != "$what" ]; then
			[[ $(grep '^invalid: ' "$tmp/filter.out") == "$expect"* ]] ||
				fail "filter '$filter': $(cat "$tmp/filter.out")"
		else
			grep -qxF "$expect" "$tmp/filter.out" ||
				fail "filter '$filter': $(cat "$tmp/filter.out")"
		fi
	fi
	[ ! -d "$TRACEFS/instances/$name" ] || fail "instance $name is left behind (filter '$filter')"
done <<'EOF'
pid > 1 && (comm == "bash" || comm ~ "kworker*")@
common_pid != 0 || !(prio < 100)@
target_cpu & 1@
pid > 99999999999999999999@kernel
comm == bash@expected a number or a quoted string at 'bash'
cpu == 0 && COMM != "x"@
no_such_field == 1@'no_such_field' is not a field of sched:sched_wakeup (fields: *
pid == 1 && pidx != 2@'pidx' is not a field of sched:sched_wakeup (fields: *
pid == 1)@unexpected ')' after a complete condition (join conditions with && or ||)
(pid == 1@missing ')'
comm == "bash@unterminated string "bash
pid@expression ends after 'pid' where an operator was expected
EOF
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after the filter runs"

note "refused: a clock this kernel does not have, stackmap = on without a stack map"
name=$(new_instance_name)
rc=0
"$PROBE" --clock no_such_clock "$name" >"$tmp/clock.out" 2>&1 || rc=$?
[ $rc = 2 ] || { cat "$tmp/clock.out" >&2; fail "bad clock: exit $rc, not 2"; }
grep -q "^invalid: defaults: trace.clock: 'no_such_clock' is not a trace clock of this kernel (available: .*local" "$tmp/clock.out" ||
	fail "bad clock: $(cat "$tmp/clock.out")"
[ ! -d "$TRACEFS/instances/$name" ] || fail "instance $name is left behind after a bad clock"
name=$(new_instance_name)
rc=0
"$PROBE" --stackmap on "$name" >"$tmp/stackmap.out" 2>&1 || rc=$?
[ $rc = 2 ] || { cat "$tmp/stackmap.out" >&2; fail "stackmap = on in an instance: exit $rc, not 2"; }
if [ -e "$TRACEFS/stack_map" ]; then
	grep -qx "invalid: defaults: trace.stackmap: stackmap = on but instance '$name' has no options/stackmap (the kernel has a stack map for the top-level instance only)" \
		"$tmp/stackmap.out" || fail "stackmap = on: $(cat "$tmp/stackmap.out")"
else
	grep -qx "invalid: defaults: trace.stackmap: stackmap = on but this kernel has no stackmap (no stack_map in $TRACEFS)" \
		"$tmp/stackmap.out" || fail "stackmap = on: $(cat "$tmp/stackmap.out")"
fi
[ ! -d "$TRACEFS/instances/$name" ] || fail "instance $name is left behind after stackmap = on"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after refused configs"

note "an existing instance with an event enabled by someone else is refused, unchanged"
name=$(new_instance_name)
d=$TRACEFS/instances/$name
mkdir "$d" || fail "cannot create instance $name"
echo 1 >"$d/events/sched/sched_switch/enable"
foreign=$(instance_state "$d")
rc=0
"$PROBE" "$name" >"$tmp/foreign.out" 2>&1 || rc=$?
[ $rc = 2 ] || { cat "$tmp/foreign.out" >&2; fail "foreign instance: exit $rc, not 2"; }
grep -qx "invalid: tracing instance '$name' already exists with settings that stackmapd did not make (events/sched/sched_switch/enable): remove it or configure another instance" \
	"$tmp/foreign.out" || fail "foreign instance: $(cat "$tmp/foreign.out")"
[ -d "$d" ] || fail "the foreign instance was removed"
[ "$(instance_state "$d")" = "$foreign" ] || fail "the foreign instance was changed"
remove_instance "$name"

note "an adopted instance keeps what it had"
name=$(new_instance_name)
d=$TRACEFS/instances/$name
mkdir "$d" || fail "cannot create instance $name"
echo 0 >"$d/tracing_on"
echo 1000 >"$d/buffer_size_kb"
[ ! -e "$d/options/stacktrace" ] || echo 1 >"$d/options/stacktrace"
adopted=$(instance_state "$d")
start_held "$name"
enabled "$d" sched/sched_wakeup || fail "sched_wakeup is not enabled in the adopted instance"
[ "$(value "$d" tracing_on)" = 1 ] || fail "tracing_on is not 1 in the adopted instance"
[ ! -e "$d/options/stacktrace" ] || [ "$(value "$d" options/stacktrace)" = 0 ] ||
	fail "options/stacktrace stays on for a subset of events"
finish_held
[ -d "$d" ] || fail "the adopted instance was removed"
! enabled "$d" sched/sched_wakeup || fail "sched_wakeup stays enabled in the adopted instance"
echo "$adopted" >"$tmp/adopted.before"
instance_state "$d" >"$tmp/adopted.after"
cmp -s "$tmp/adopted.before" "$tmp/adopted.after" ||
	fail "adopted instance differs: $(diff "$tmp/adopted.before" "$tmp/adopted.after")"
remove_instance "$name"
[ ! -d "$d" ] || fail "cannot remove the adopted instance"

note "killed in the middle: the test's cleanup leaves nothing"
name=$(new_instance_name)
d=$TRACEFS/instances/$name
start_held "$name"
kill -9 "$PROBE_PID"
wait "$PROBE_PID" 2>/dev/null
exec 3>&-
[ -d "$d" ] || fail "instance $name vanished with the killed probe"
remove_instance "$name"
[ ! -d "$d" ] || fail "remove_instance left $name behind"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after a killed run"

note "ok"
