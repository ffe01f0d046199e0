#!/bin/bash
# The daemon's own markers (ftrace print events starting "stackmapd:
# clock", "snap", "gen" or "crash") are left out of report, folded, top
# and flamegraph unless --markers is given, and each says how many it
# left out and which kinds, once; a marker of anyone else's is shown. The markers are written
# into mkseg's instance while it records.
. "$top_srcdir/tests/lib.sh"

need_tracefs
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL"; do
	[ -x "$b" ] || fail "$b is not built"
done
tmp=$(mktmp)
inst=$(new_instance_name)
"$MKSEG" -n "$inst" -b 256 -o "$tmp" -e sched:sched_switch -- sh -c '
	for m in "stackmapd: clock 1" "stackmapd: snap 3 0123456789abcdef" \
		 "stackmapd: gen 2 begin 0123456789abcdef" "stackmapd: crash stop clean" \
		 "my own marker"; do
		echo "$m" > "$1/instances/$2/trace_marker" || exit 1
	done' sh "$TRACEFS" "$inst" > "$tmp/paths" || fail "mkseg failed"
seg=$(sed -n 1p "$tmp/paths")
[ -f "$seg" ] || fail "mkseg wrote no segment"
note='4 of the daemon.s own markers (stackmapd: clock, snap, gen, crash) not shown: --markers shows them'

"$STACKMAPCTL" report --events "$seg" > "$tmp/report" 2> "$tmp/err" || fail "report: $(cat "$tmp/err")"
grep ': print: ' "$tmp/report" | grep -v 'my own marker' && fail "report shows the daemon's markers"
grep -q ': print: .*my own marker' "$tmp/report" || fail "report lacks a marker of the traced system's"
grep -q "$note" "$tmp/err" || fail "report did not say what it left out: $(cat "$tmp/err")"
"$STACKMAPCTL" report --events --markers "$seg" > "$tmp/report" 2> "$tmp/err" || fail "report --markers"
[ "$(grep -c ': print: ' "$tmp/report")" = 5 ] || fail "report --markers: $(grep ': print: ' "$tmp/report")"
grep -q 'not shown' "$tmp/err" && fail "report --markers says markers were left out: $(cat "$tmp/err")"

"$STACKMAPCTL" top "$seg" > "$tmp/top" 2> "$tmp/err" || fail "top: $(cat "$tmp/err")"
grep -q '^# print: 1 events' "$tmp/top" || fail "top counts: $(grep '^# ' "$tmp/top")"
tail -n 1 "$tmp/top" | grep -qx "# not shown: ${note/ not shown:/;}" ||
	fail "top's last line: $(tail -n 1 "$tmp/top")"
grep -q 'not shown' "$tmp/err" && fail "top says it twice: $(cat "$tmp/err")"
"$STACKMAPCTL" top --markers "$seg" > "$tmp/top" 2> "$tmp/err" || fail "top --markers: $(cat "$tmp/err")"
grep -q '^# print: 5 events' "$tmp/top" || fail "top --markers counts: $(grep '^# ' "$tmp/top")"
grep -q 'not shown' "$tmp/top" && fail "top --markers says markers were left out"

"$STACKMAPCTL" folded "$seg" > /dev/null 2> "$tmp/err" || fail "folded: $(cat "$tmp/err")"
grep -q "$note" "$tmp/err" || fail "folded did not say what it left out: $(cat "$tmp/err")"
"$STACKMAPCTL" flamegraph -o "$tmp/fg.svg" "$seg" 2> "$tmp/err" || fail "flamegraph: $(cat "$tmp/err")"
grep -q "$note" "$tmp/err" || fail "flamegraph did not say what it left out: $(cat "$tmp/err")"
exit 0
