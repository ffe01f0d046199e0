#!/bin/bash
# stackmapctl report/stacks/folded against trace-cmd on the very same pages.
# mkseg records a load's events in our own instance and writes them as a
# plain segment, as a transcoded segment (stack_ref entries and a stack
# table, as the daemon writes them) and as raw page files, which
# `trace-cmd restore` turns into a trace.dat for `trace-cmd report`.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd trace-cmd
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
need_built "$MKSEG" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
inst=$(new_instance_name)
before=$(tracefs_state)
mkdir -p "$tmp/plain" "$tmp/tc" "$tmp/raw"

"$MKSEG" -n "$inst" -b 1024 -o "$tmp/plain" -O "$tmp/tc" -r "$tmp/raw" \
	-k kmem:kmem_cache_alloc -k sched:sched_switch -e sched:sched_wakeup \
	-- "$SMLOAD" -q -j 2 -t 0.3 > "$tmp/paths" || fail "mkseg failed"
plain=$(sed -n 1p "$tmp/paths")
transcoded=$(sed -n 2p "$tmp/paths")
[ -f "$plain" ] && [ -f "$transcoded" ] || fail "mkseg wrote no segments"
[ -d "$TRACEFS/instances/$inst" ] && fail "mkseg left its instance behind"
[ "$(tracefs_state)" = "$before" ] || fail "tracefs state differs after mkseg"

# trace-cmd restore maps its arguments to CPUs in order
raws=()
for ((i = 0; ; i++)); do
	[ -e "$tmp/raw/cpu$i.raw" ] || break
	raws+=("$tmp/raw/cpu$i.raw")
done
trace-cmd restore -c -o "$tmp/head.dat" >/dev/null 2>&1 || fail "trace-cmd restore -c failed"
trace-cmd restore -i "$tmp/head.dat" -o "$tmp/trace.dat" "${raws[@]}" >/dev/null 2>&1 ||
	fail "trace-cmd restore failed"
trace-cmd report -i "$tmp/trace.dat" 2>/dev/null | tail -n +2 > "$tmp/tc.txt"
trace-cmd report -N -i "$tmp/trace.dat" 2>/dev/null | tail -n +2 > "$tmp/tc-noplugins.txt"
[ -s "$tmp/tc.txt" ] || fail "trace-cmd report printed nothing"

"$STACKMAPCTL" report "$plain" > "$tmp/sm.txt" || fail "report exited $?"
"$STACKMAPCTL" report "$transcoded" > "$tmp/sm-tc.txt" || fail "report (transcoded) exited $?"

# The task name comes from saved_cmdlines, which may have changed between
# the two captures: compare from the "-PID" on (the name is 16 columns).
events_only() { awk '/ kernel_stack: /{s=1; next} /^\t?=>/{if (s) next} {s=0; print}' "$1" | cut -c17-; }
stacks_only() { awk '/ kernel_stack: /{print; s=1; next} /^=>/{if (s) print; next} {s=0}' "$1" | cut -c17-; }

# events: the print formats, as trace-cmd prints them without plugins
diff <(events_only "$tmp/tc-noplugins.txt") <(events_only "$tmp/sm.txt") > "$tmp/events.diff" ||
	fail "events differ from trace-cmd report -N: $(head -5 "$tmp/events.diff")"
# stacks: as trace-cmd prints a kernel_stack
diff <(stacks_only "$tmp/tc.txt") <(stacks_only "$tmp/sm.txt") > "$tmp/stacks.diff" ||
	fail "stacks differ from trace-cmd report: $(head -5 "$tmp/stacks.diff")"
n=$(grep -c ' kernel_stack: ' "$tmp/sm.txt")
[ "$n" -gt 100 ] || fail "only $n stacks"
note "$(grep -c . "$tmp/sm.txt") lines, $n stacks, same as trace-cmd"

# a transcoded segment (stack table instead of full stacks) reads the same
cmp -s "$tmp/sm.txt" "$tmp/sm-tc.txt" || fail "the transcoded segment reports differently"

# --cpu: exactly the events of that CPU (one that has events), none of another
event_lines() { grep -E '^ .{15}-[0-9]+ +\[[0-9]{3}\]' "$@"; }
cpu=$(event_lines "$tmp/sm.txt" | head -1 | sed -E 's/^ .{15}-[0-9]+ +\[0*([0-9]+)\].*/\1/')
"$STACKMAPCTL" report --cpu "$cpu" "$plain" > "$tmp/cpu.txt" || fail "report --cpu $cpu exited $?"
[ "$(event_lines "$tmp/cpu.txt" | wc -l)" -gt 0 ] || fail "report --cpu $cpu printed no events"
event_lines "$tmp/cpu.txt" | grep -v "\[$(printf %03d "$cpu")\]" && fail "report --cpu $cpu printed other CPUs"
cmp -s <(event_lines "$tmp/cpu.txt") <(event_lines "$tmp/sm.txt" | grep "\[$(printf %03d "$cpu")\]") ||
	fail "report --cpu $cpu does not print all the events of CPU $cpu"
# --events: the events, without their stacks
"$STACKMAPCTL" report --events "$plain" > "$tmp/events.txt" || fail "report --events exited $?"
[ "$(event_lines "$tmp/events.txt" | wc -l)" = "$(event_lines "$tmp/sm.txt" | grep -vc ' kernel_stack: ')" ] ||
	fail "report --events does not print every event"
grep -q -e '<stack trace >' -e '^=>' "$tmp/events.txt" && fail "report --events printed stacks"

# stacks and folded
"$STACKMAPCTL" stacks "$transcoded" > "$tmp/stacks.txt" || fail "stacks exited $?"
grep -q '^generation 0 id 1 refs ' "$tmp/stacks.txt" || fail "stacks: no daemon stack listed"
"$STACKMAPCTL" stacks --json "$transcoded" > "$tmp/stacks.json" || fail "stacks --json exited $?"
if command -v python3 >/dev/null; then
	python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/stacks.json" ||
		fail "stacks --json is not JSON"
fi
"$STACKMAPCTL" folded "$plain" > "$tmp/folded.txt" || fail "folded exited $?"
"$STACKMAPCTL" folded "$transcoded" | cmp -s - "$tmp/folded.txt" ||
	fail "folded differs between plain and transcoded segments"
# root first: the event, ..., the innermost frame (the tracepoint's own function)
grep -Eq '^kmem_cache_alloc;entry_[^;]*;.*;[^;]*kmem_cache_alloc[^; ]* [0-9]+$' "$tmp/folded.txt" ||
	fail "folded: no kmem_cache_alloc stacks"
total=$(awk '{n += $NF} END {print n}' "$tmp/folded.txt")
[ "$total" = "$n" ] || fail "folded counts $total stacks, report printed $n"
"$STACKMAPCTL" folded --event sched:sched_switch "$plain" > "$tmp/folded-switch.txt" ||
	fail "folded --event exited $?"
grep -q '^sched_switch;' "$tmp/folded-switch.txt" || fail "folded --event printed no sched_switch stacks"
grep -v '^sched_switch;' "$tmp/folded-switch.txt" && fail "folded --event let other events through"

# a finished segment cut short: what precedes the cut, an error naming the file, exit 1
size=$(stat -c %s "$plain")
head -c $((size / 2)) "$plain" > "$tmp/cut.smseg"
"$STACKMAPCTL" report "$tmp/cut.smseg" > "$tmp/cut.txt" 2> "$tmp/cut.err"
rc=$?
[ $rc = 1 ] || fail "report of a cut segment exited $rc"
grep -q "cut.smseg" "$tmp/cut.err" || fail "no error for the cut segment: $(cat "$tmp/cut.err")"
# the same bytes as the segment being written: read as far as they go, a note, exit 0
cp "$tmp/cut.smseg" "$tmp/cut.smseg.part"
"$STACKMAPCTL" report "$tmp/cut.smseg.part" > "$tmp/part.txt" 2> "$tmp/part.err" ||
	fail "report of an unfinished segment exited $?: $(cat "$tmp/part.err")"
grep -q "cut.smseg.part': unfinished" "$tmp/part.err" || fail "no note for the unfinished segment: $(cat "$tmp/part.err")"
cmp -s "$tmp/cut.txt" "$tmp/part.txt" || fail "the unfinished segment read differently from the cut one"
# (its symbols and task names were to be written at the end: compare pid, CPU, time, event)
heads() { grep -v '^\(CPU:\|\t\?=>\)' "$1" | cut -c17- | awk '{print $1, $2, $3, $4}'; }
heads "$tmp/cut.txt" > "$tmp/cut.heads"
[ -s "$tmp/cut.heads" ] || fail "nothing printed from the cut segment"
extra=$(comm -23 <(sort "$tmp/cut.heads") <(heads "$tmp/sm.txt" | sort) | head -3)
[ -z "$extra" ] || fail "the cut segment printed events the whole one does not have: $extra"

# without a segment, report reads the configured archive
"$STACKMAPCTL" report --no-such-option > /dev/null 2>&1
[ $? = 2 ] || fail "report with an unknown option does not exit 2"
"$STACKMAPCTL" report -c "$tmp/no-such.conf" > /dev/null 2>&1
[ $? = 1 ] || fail "report of a missing configuration does not exit 1"
printf '[archive]\ndirectory = %s\n' "$tmp/plain" > "$tmp/plain.conf"
"$STACKMAPCTL" report -c "$tmp/plain.conf" > "$tmp/conf.txt" || fail "report of the configured archive failed"
cmp -s "$tmp/conf.txt" "$tmp/sm.txt" || fail "the configured archive reads differently from its segment"
# the next segment as the daemon has just created it (or a kill left it): empty.
# Nothing to read, nothing to warn about; verify names it cut short.
next_part=$tmp/plain/99999999-20261203T000000.smseg.part
: > "$next_part"
"$STACKMAPCTL" report -c "$tmp/plain.conf" > "$tmp/conf.txt" 2> "$tmp/conf.err" ||
	fail "report of an archive with an empty .part exited $?: $(cat "$tmp/conf.err")"
cmp -s "$tmp/conf.txt" "$tmp/sm.txt" || fail "an empty .part changes the report: $(head -3 "$tmp/conf.txt")"
[ ! -s "$tmp/conf.err" ] || fail "an empty .part makes report warn: $(cat "$tmp/conf.err")"
"$STACKMAPCTL" verify --json "$next_part" > "$tmp/empty-part.json"
json "$tmp/empty-part.json" 'r["cut_short"] and r["records"] == 0' ||
	fail "verify does not call an empty .part cut short: $(cat "$tmp/empty-part.json")"
rm -f "$next_part"
"$STACKMAPCTL" report --cpu x "$plain" > /dev/null 2>&1
[ $? = 2 ] || fail "report --cpu x does not exit 2"
exit 0
