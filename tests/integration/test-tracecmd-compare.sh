#!/bin/bash
# Cross-check against a real peer: stackmapd and `trace-cmd record` record
# the same events with kernel stacks at the same time, each on its own
# instance, under the same load. Per CPU both instances see the same hits
# in the same order, so both decodings must show the same event types and
# fields, the same sequence of events (where both recorded: the edges and
# what either lost aside) and, for every event, the same stack. Run once
# with stacks from the stacktrace option (stacktrace = all, trace-cmd -T)
# and once with stacktrace triggers (a list, trace-cmd -R stacktrace).
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd trace-cmd
need_cmd python3
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
need_events kmem:kmem_cache_alloc sched:sched_switch
COMPARE="$top_srcdir/tests/integration/compare-tracecmd.py"

tmp=$(mktmp)
before=$(tracefs_state)

is_on() { [ "$(cat "$1/tracing_on" 2>/dev/null)" = 1 ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }

# compare MODE: record with both, decode both, compare.
compare() {
	local mode=$1 dir="$tmp/$1" stacktrace tc_stacks
	local dinst tinst tc_pid rc self lost
	mkdir -p "$dir"
	dinst=$(new_instance_name)
	tinst=$(new_instance_name)
	if [ "$mode" = option ]; then
		stacktrace=all
		tc_stacks=(-e kmem:kmem_cache_alloc -e sched:sched_switch -T)
	else
		stacktrace="kmem:kmem_cache_alloc sched:sched_switch"
		tc_stacks=(-e kmem:kmem_cache_alloc -R stacktrace -e sched:sched_switch -R stacktrace)
	fi
	write_config "$dir/stackmapd.conf" <<-EOF
	[trace]
	instance = $dinst
	events = kmem:kmem_cache_alloc sched:sched_switch
	stacktrace = $stacktrace
	buffer_size = 16M

	[archive]
	directory = $dir/archive
	max_size = 0
	keep_free = 0

	[control]
	socket = $dir/control
	EOF

	start_daemon "$dir/stackmapd.conf" "$dir/daemon.log"
	# the daemon's own tasks, which it leaves out of its instance
	self=$(tr '\n' ' ' < "$TRACEFS/instances/$dinst/set_event_notrace_pid")

	# trace-cmd 3.1.6 here: -d and --no-filter, or it stops at files this
	# kernel refuses; the buffer size after -B applies to that instance.
	trace-cmd record -d --no-filter -B "$tinst" -b 16384 "${tc_stacks[@]}" \
		-o "$dir/trace.dat" > "$dir/trace-cmd.log" 2>&1 &
	tc_pid=$!
	at_exit "kill -9 $tc_pid"
	wait_until 20 is_on "$TRACEFS/instances/$tinst" ||
		{ cat "$dir/trace-cmd.log"; fail "$mode: trace-cmd did not start"; }
	sleep 0.5	# its readers start with tracing on

	"$SMLOAD" -j 2 -t 2 -q || fail "$mode: smload failed"
	sleep 0.3

	kill -INT "$tc_pid"
	wait_until 20 gone "$tc_pid" || fail "$mode: trace-cmd does not stop"
	rc=0
	wait "$tc_pid" || rc=$?
	# (3.1.6 exits 1 after writing a complete file; the report below tells)
	[ $rc -le 1 ] || { cat "$dir/trace-cmd.log"; fail "$mode: trace-cmd exited $rc"; }
	stop_daemon_ok "$dir/daemon.log" "$mode"
	no_log_errors "$dir/daemon.log" "$mode"

	# trace-cmd may leave its instance behind (it stops at a file it cannot open)
	remove_instance "$tinst"
	remove_instance "$dinst"
	[ -d "$TRACEFS/instances/$tinst" ] && fail "$mode: cannot remove trace-cmd's instance"
	[ -d "$TRACEFS/instances/$dinst" ] && fail "$mode: the daemon's instance is still there"

	local segs parts
	list_segments "$dir/archive"
	[ ${#segs[@]} -ge 1 ] || fail "$mode: no segment written"
	"$STACKMAPCTL" report --markers "${segs[@]}" > "$dir/sm.txt" 2> "$dir/sm.err" ||
		{ cat "$dir/sm.err"; fail "$mode: stackmapctl report failed"; }
	# events with the kernel's print formats (-N), stacks with symbols (plugins)
	trace-cmd report -N -i "$dir/trace.dat" > "$dir/tc-events.txt" 2> "$dir/tc.err" &&
		trace-cmd report -i "$dir/trace.dat" > "$dir/tc-stacks.txt" 2>> "$dir/tc.err" ||
		{ cat "$dir/tc.err" "$dir/trace-cmd.log"; fail "$mode: trace-cmd report failed"; }
	if ! grep -q ': kernel_stack: ' "$dir/tc-stacks.txt"; then
		# trace-cmd copies saved_cmdlines twice (size, then content); when a
		# new task is named in between, it writes a file it cannot read back
		if grep -q "error in size of file '.*saved_cmdlines'" "$dir/trace-cmd.log"; then
			note "$mode: trace-cmd's file is damaged (saved_cmdlines changed while it copied it)"
			return 2
		fi
		cat "$dir/tc.err" "$dir/trace-cmd.log"
		fail "$mode: trace-cmd recorded no stacks"
	fi
	# the events the kernel says stackmapd lost, per CPU, as CPU:N,...
	lost=$("$STACKMAPCTL" info --json "${segs[@]}" | python3 -c '
import json, sys
lost = {}
for line in sys.stdin:
	if line.strip():
		for c in json.loads(line)["cpus"]:
			lost[c["cpu"]] = lost.get(c["cpu"], 0) + c["lost_events"]
print(",".join(f"{c}:{n}" for c, n in sorted(lost.items())))') || fail "$mode: info --json failed"

	note "$mode: stackmapd $(grep -c '' "$dir/sm.txt") report lines, lost $lost;" \
		"trace-cmd $(grep -c '' "$dir/tc-stacks.txt") report lines"
	python3 "$COMPARE" --sm "$dir/sm.txt" --tc-events "$dir/tc-events.txt" \
		--tc-stacks "$dir/tc-stacks.txt" --sm-lost "$lost" --self-pids "$self" \
		> "$dir/compare.out" 2>&1
	rc=$?
	sed "s/^/# $mode: /" "$dir/compare.out"
	[ $rc = 0 ] || fail "$mode: stackmapd and trace-cmd decode differently"
}

for mode in ${TRACECMD_COMPARE_MODES:-option trigger}; do
	for try in 1 2 3; do
		rc=0
		compare "$mode" || rc=$?
		[ $rc = 2 ] || break
		[ $try -lt 3 ] || fail "$mode: trace-cmd wrote no usable file in $try tries"
		rm -rf "${tmp:?}/$mode"
	done
done

after=$(tracefs_state)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after"); fail "tracefs state changed"; }
note "ok"
exit 0
