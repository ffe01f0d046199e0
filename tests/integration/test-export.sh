#!/bin/bash
# stackmapctl top, flamegraph and export on a real recording, cross-checked:
# `go tool pprof -top` on the pprof export and sqlite3 on the CSV export
# give the same counts as `stackmapctl top`; the flame graph and its diff
# are complete SVG documents with the recorded events in them.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd go
need_cmd sqlite3
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || skip "$b is not built"
done

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir -p "$tmp/plain" "$tmp/tc"
"$MKSEG" -n "$inst" -b 1024 -o "$tmp/plain" -O "$tmp/tc" \
	-k kmem:kmem_cache_alloc -k sched:sched_switch -e sched:sched_wakeup \
	-- "$SMLOAD" -q -j 2 -t 0.3 > "$tmp/paths" || fail "mkseg failed"
plain=$(sed -n 1p "$tmp/paths")
seg=$(sed -n 2p "$tmp/paths")
[ -f "$plain" ] && [ -f "$seg" ] || fail "mkseg wrote no segments"

# top: text and JSON agree; no row starts with the tracing machinery
"$STACKMAPCTL" top --event kmem_cache_alloc "$seg" > "$tmp/top-site" ||
	fail "top failed"
"$STACKMAPCTL" top --sort callsite --event kmem_cache_alloc "$seg" > "$tmp/top-callsite" ||
	fail "top --sort callsite failed"
grep -Eq '^ +[0-9.]+% +[0-9]+  (trace_|__traceiter_|perf_trace_)' "$tmp/top-site" "$tmp/top-callsite" &&
	fail "top shows tracing frames as call sites: $(head -3 "$tmp/top-site" "$tmp/top-callsite")"
awk 'NR == 2 && $1 == "100.00%" { exit 1 }' "$tmp/top-callsite" ||
	fail "one call site for all events: $(head -3 "$tmp/top-callsite")"
"$STACKMAPCTL" top --json --limit 5 "$seg" > "$tmp/top.json" || fail "top --json failed"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/top.json" ||
	fail "top --json is not JSON"

# pprof: the innermost function's count equals top's count of that function
"$STACKMAPCTL" export --format pprof -o "$tmp/prof.pb.gz" "$seg" || fail "export pprof failed"
site=$(awk 'NR == 2 { print $2, $3 }' "$tmp/top-site")
[ -n "$site" ] || fail "top printed no call site"
HOME=$tmp go tool pprof -top -sample_index=kmem_cache_alloc "$tmp/prof.pb.gz" \
	> "$tmp/pprof-top" 2>&1 || fail "go tool pprof failed: $(cat "$tmp/pprof-top")"
awk -v want="$site" '$6 != "" && ($1 " " $6) == want { found = 1 } END { exit !found }' \
	"$tmp/pprof-top" || fail "pprof -top lacks '$site': $(head -12 "$tmp/pprof-top")"
grep -Eq ' (trace_event_raw_event_|__traceiter_|perf_trace_)' "$tmp/pprof-top" &&
	fail "pprof -top names tracing frames: $(head -12 "$tmp/pprof-top")"

# CSV: sqlite's top 5 stacks of kmem_cache_alloc are top's first five rows
"$STACKMAPCTL" export --format csv -o "$tmp/csv" "$seg" || fail "export csv failed"
(cd "$tmp/csv" && sqlite3 -batch :memory: '.import --csv events.csv events' \
	'.import --csv stacks.csv stacks' \
	"SELECT count(*) AS n, replace(s.frames, ';', ' <- ') AS f FROM events e
	 JOIN stacks s ON s.stack_id = e.stack_id WHERE e.event = 'kmem_cache_alloc'
	 GROUP BY s.stack_id ORDER BY n DESC, f LIMIT 5") | tr '|' ' ' > "$tmp/sql-top" ||
	fail "sqlite3 failed"
"$STACKMAPCTL" top --sort stack --width 0 --event kmem_cache_alloc --limit 5 "$seg" |
	awk 'NR > 1 { $1 = ""; sub(/^ +/, ""); sub(/  /, " "); print }' > "$tmp/smctl-top"
[ "$(wc -l < "$tmp/sql-top")" = 5 ] || fail "sqlite3 found fewer than 5 stacks"
# rows with equal counts may come in another order: compare as sets
cmp -s <(sort "$tmp/sql-top") <(sort "$tmp/smctl-top") ||
	fail "sqlite3 and top differ: $(diff <(sort "$tmp/sql-top") <(sort "$tmp/smctl-top"))"

# flame graphs
"$STACKMAPCTL" flamegraph -o "$tmp/fg.svg" "$seg" || fail "flamegraph failed"
"$STACKMAPCTL" flamegraph -o "$tmp/diff.svg" --diff "$plain" "$seg" || fail "flamegraph --diff failed"
for f in "$tmp/fg.svg" "$tmp/diff.svg"; do
	python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$f" ||
		fail "$f is not well-formed XML"
	grep -q '<title>kmem_cache_alloc (' "$f" || fail "$f lacks kmem_cache_alloc"
done
grep -q '>Differential flame graph: ' "$tmp/diff.svg" || fail "diff.svg is not differential"
[ -e "$tmp/fg.svg.tmp" ] && fail "flamegraph left its temporary file"
# an output that is not a regular file (a FIFO here, /dev/null elsewhere) is
# written in place, never replaced by a renamed file
for fmt in flamegraph pprof trace.dat; do
	rm -f "$tmp/out.fifo" "$tmp/out.got"
	mkfifo "$tmp/out.fifo"
	cat "$tmp/out.fifo" > "$tmp/out.got" &
	reader=$!
	case "$fmt" in
	flamegraph) "$STACKMAPCTL" flamegraph -o "$tmp/out.fifo" "$seg" ;;
	*) "$STACKMAPCTL" export --format "$fmt" -o "$tmp/out.fifo" "$seg" ;;
	esac || fail "$fmt to a FIFO failed"
	wait "$reader"
	[ -p "$tmp/out.fifo" ] || fail "$fmt replaced the FIFO it wrote to"
	[ -s "$tmp/out.got" ] || fail "$fmt wrote nothing into the FIFO"
	[ -e "$tmp/out.fifo.tmp" ] && fail "$fmt left a temporary file next to the FIFO"
done
exit 0
