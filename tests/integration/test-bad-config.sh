#!/bin/bash
# A bad configuration stops stackmapd before it touches tracefs: for each
# config below, both "stackmapd --check -c FILE" and "stackmapd -c FILE" exit
# 78 with "FILE:LINE: KEY: ..." on stderr, and tracefs is as it was (every
# config names a fresh instance, so a daemon that started anyway would show).
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_built "$STACKMAPD"
need_events kmem:kmalloc sched:sched_switch

tmp=$(mktmp)
mkdir "$tmp/conf"

# Each case: the message stackmapd must print (@ stands for the file's path),
# then the config after its first two lines ("[trace]" and "instance = NAME").
cases=(
	"@:3: trace.bogus: unknown key"
	"bogus = 1"

	"@:3: [bogus]: unknown section"
	$'[bogus]\nx = 1'

	"@:3: trace.instance: duplicate key (first set on line 2)"
	"instance = other"

	"@:3: 'events kmem:kmalloc': expected 'key = value'"
	"events kmem:kmalloc"

	"@:4: line starts with white space"
	$'keep_tracing = yes\n  mode = flight'

	"@:3: trace.events: event 'kmem:no_such_event_smtest' does not exist"
	"events = kmem:no_such_event_smtest"

	"@:3: trace.events: no events"
	"events ="

	"@:4: trace.stacktrace: 'sched:sched_switch' is not in trace.events"
	$'events = kmem:kmalloc\nstacktrace = sched:sched_switch'

	"@:4: trace.filter.sched:sched_switch: 'sched:sched_switch' is not in trace.events"
	$'events = kmem:kmalloc\nfilter.sched:sched_switch = prev_pid == 1'

	"@:3: trace.filter.kmem:kmalloc: expression ends where a value was expected"
	"filter.kmem:kmalloc = bytes_req >"

	"@:3: trace.filter.kmem:kmalloc: 'no_such_field' is not a field of kmem:kmalloc"
	"filter.kmem:kmalloc = no_such_field == 1"

	"@:4: trace.filter.sched:sched_switch: '>' cannot compare the text field 'prev_comm'"
	$'events = sched:sched_switch\nfilter.sched:sched_switch = prev_comm > 1'

	"@:3: trace.clock: 'sundial' is not a trace clock of this kernel"
	"clock = sundial"

	"@:3: trace.stackmap: 'maybe' is not one of: auto, on, off"
	"stackmap = maybe"

	"@:3: trace.buffer_size: '2G' is out of range (4K..1G)"
	"buffer_size = 2G"

	"@: stackmap = on needs the top-level instance"
	"stackmap = on"

	"@:4: stackmap.reset_fill: '101' is out of range (0..100%)"
	$'[stackmap]\nreset_fill = 101'

	"@:4: stackmap.snapshot_interval: '10ms' is out of range (100ms..1d)"
	$'[stackmap]\nsnapshot_interval = 10ms'

	"@:4: archive.segment_size: '64Q' is not a size"
	$'[archive]\nsegment_size = 64Q'

	"@:4: archive.segment_age: '30' has no unit"
	$'[archive]\nsegment_age = 30'

	"@:4: archive.compression_level: '20' is out of range (1..19)"
	$'[archive]\ncompression_level = 20'

	"@:4: archive.directory: 'relative/dir' is not an absolute path"
	$'[archive]\ndirectory = relative/dir'

	"@:4: archive.sync: 'maybe' is not a boolean"
	$'[archive]\nsync = maybe'

	"@:4: archive.hook: 'gzip -9' must start with the absolute path of a program"
	$'[archive]\nhook = gzip -9'

	"@: archive.max_size = 100M must be at least twice archive.segment_size = 64M"
	$'[archive]\nsegment_size = 64M\nmax_size = 100M'

	"@:4: control.socket: 'control.sock' is not an absolute path"
	$'[control]\nsocket = control.sock'

	"@:4: control.group: group 'no_such_group_smtest' does not exist"
	$'[control]\ngroup = no_such_group_smtest'

	"@:4: service.status_interval: '0' is out of range (1s..1d)"
	$'[service]\nstatus_interval = 0'
)

# run_case N EXPECTED MODE FILE: one daemon run, checked.
run_case() {
	local n=$1 expected=$2 mode=$3 file=$4 rc=0 before after
	local -a args=(-c "$file")

	[ "$mode" = check ] && args=(--check -c "$file")
	before=$(tracefs_state)
	timeout -k 5 30 "$STACKMAPD" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	after=$(tracefs_state)
	local why=
	[ "$rc" = 78 ] || why="exit status $rc, not 78"
	grep -qF -- "$expected" "$tmp/err" || why="${why:+$why; }stderr lacks '$expected'"
	[ "$before" = "$after" ] || why="${why:+$why; }tracefs changed"
	if [ -n "$why" ]; then
		echo "--- case $n ($mode), config:" >&2
		cat "$file" >&2
		echo "--- stderr:" >&2
		cat "$tmp/err" >&2
		[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after") >&2
		fail "case $n ($mode): $why"
	fi
}

n=0
for ((i = 0; i < ${#cases[@]}; i += 2)); do
	n=$((n + 1))
	body=${cases[i + 1]}
	name=$(new_instance_name)
	file="$tmp/conf/case$n.conf"
	{
		printf '[trace]\ninstance = %s\n%s\n' "$name" "$body"
		# Where a daemon started by mistake would write: inside the temp dir.
		[[ $body == *directory* ]] || printf '[archive]\ndirectory = %s\n' "$tmp/archive$n"
		[[ $body == *socket* ]] || printf '[control]\nsocket = %s\n' "$tmp/control$n"
	} >"$file"
	expected=${cases[i]//@/$file}
	for mode in check run; do
		run_case "$n" "$expected" "$mode" "$file"
		[ ! -e "$TRACEFS/instances/$name" ] || fail "case $n ($mode): instance $name exists"
		[ ! -e "$tmp/archive$n" ] || fail "case $n ($mode): the archive directory was created"
	done
done
note "$n bad configs refused by --check and at start, tracefs untouched"

# The shipped config is valid here (a fresh instance keeps the check honest).
name=$(new_instance_name)
{
	sed 's/^#instance =$/instance = '"$name"'/' "$top_srcdir/conf/stackmapd.conf"
} >"$tmp/conf/shipped.conf"
grep -q "^instance = $name\$" "$tmp/conf/shipped.conf" || fail "no '#instance =' line in the shipped config"
rc=0
"$STACKMAPD" --check -c "$tmp/conf/shipped.conf" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || { cat "$tmp/err" >&2; fail "the shipped config is refused (exit status $rc)"; }
[ ! -e "$TRACEFS/instances/$name" ] || fail "--check created instance $name"
exit 0
