#!/bin/bash
# stackmapctl top against perf report on the same workload: a compile and
# file reads, recorded by stackmapd's recorder (kmem_cache_alloc with a
# kernel stack on every event, in its own instance, the workload's tasks
# only) and by `perf record -g` on the same event. `top` must show the same function hitting
# the event, and under it the same leading call sites in the same order,
# within a few percent, as `perf report --stdio --no-children`; none of
# the tracing machinery's frames may show as a call site, in top or in
# `go tool pprof -top` on the pprof export.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd perf
need_cmd gcc
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL"; do
	[ -x "$b" ] || skip "$b is not built"
done
COMPARE="$top_srcdir/tests/integration/compare-top-perf.py"

# perf's stacks start in the allocator only while perf is the event's one
# tracer: with a second, the tracepoint calls both through its iterator and
# perf's stacks start there. Someone else tracing the event makes the
# comparison meaningless; say who.
for e in "$TRACEFS"/events/kmem/kmem_cache_alloc/enable \
	"$TRACEFS"/instances/*/events/kmem/kmem_cache_alloc/enable; do
	[ -f "$e" ] || continue
	case $(cat "$e") in
	1*) fail "kmem:kmem_cache_alloc is already traced (${e%/events/*}):" \
		"perf's stacks would not be the allocator's; stop that tracing first" ;;
	esac
done

tmp=$(mktmp)
inst=$(new_instance_name)

# the fixed workload: compile three small programs, read the system headers
cat > "$tmp/workload" <<'EOT'
#!/bin/bash
set -e
d=$(mktemp -d)
for i in 1 2 3; do
	printf '#include <stdio.h>\nint main(void) { printf("%%d\\n", %d); return 0; }\n' "$i" > "$d/t$i.c"
	gcc -O2 -o "$d/t$i" "$d/t$i.c"
done
for i in $(seq 1 20); do cat /usr/include/*.h > /dev/null; done
rm -rf "$d"
EOT
chmod +x "$tmp/workload"

# One after the other (two tracers on one tracepoint change the kernel's
# stacks), each only the workload's tasks: the machine runs other things.
# A first run unrecorded, so that both find the page cache as warm (on a
# fresh machine the first reads of the headers allocate along other paths).
"$tmp/workload" > /dev/null 2>&1 || fail "the workload failed"
mkdir -p "$tmp/seg"
"$MKSEG" -n "$inst" -p -b 32768 -O "$tmp/seg" -k kmem:kmem_cache_alloc -- "$tmp/workload" \
	> "$tmp/paths" 2> "$tmp/record.log" || fail "mkseg failed: $(tail -3 "$tmp/record.log")"
perf record -q -e kmem:kmem_cache_alloc -g -o "$tmp/perf.data" -- "$tmp/workload" \
	> "$tmp/perf-record.log" 2>&1 || fail "perf record failed: $(tail -3 "$tmp/perf-record.log")"

perf report -i "$tmp/perf.data" --stdio --no-children --sort sym > "$tmp/perf.txt" 2> /dev/null ||
	fail "perf report failed"
"$STACKMAPCTL" top --event kmem_cache_alloc --width 0 "$tmp/seg" > "$tmp/top.txt" ||
	fail "top failed"
if ! python3 "$COMPARE" "$tmp/top.txt" "$tmp/perf.txt" 3 3 > "$tmp/compare.txt" 2>&1; then
	head -40 "$tmp/top.txt"
	head -60 "$tmp/perf.txt"
	fail "top and perf report differ: $(cat "$tmp/compare.txt")"
fi

# no tracing frame as a call site, in the default view or by call site
"$STACKMAPCTL" top --sort callsite --event kmem_cache_alloc "$tmp/seg" > "$tmp/site.txt" ||
	fail "top --sort callsite failed"
grep -Eq '%[ 0-9]+  (trace_|__traceiter_|perf_trace_)' "$tmp/top.txt" "$tmp/site.txt" &&
	fail "tracing frames as call sites: $(head -5 "$tmp/site.txt")"
# with --raw-stacks the machinery is there, as the kernel wrote it
"$STACKMAPCTL" top --raw-stacks --event kmem_cache_alloc "$tmp/seg" |
	grep -Eq '^ +[0-9.]+% +[0-9]+  trace_event_raw_event_kmem_cache_alloc$' ||
	fail "top --raw-stacks lost the kernel's frames"

if command -v go > /dev/null; then
	"$STACKMAPCTL" export --format pprof -o "$tmp/prof.pb.gz" "$tmp/seg" || fail "export failed"
	HOME=$tmp go tool pprof -top -sample_index=kmem_cache_alloc "$tmp/prof.pb.gz" \
		> "$tmp/pprof.txt" 2>&1 || fail "go tool pprof failed: $(cat "$tmp/pprof.txt")"
	grep -Eq ' (trace_event_raw_event_|__traceiter_|perf_trace_)' "$tmp/pprof.txt" &&
		fail "pprof -top names tracing frames: $(head -12 "$tmp/pprof.txt")"
	grep -Eq '%.* kmem_cache_alloc' "$tmp/pprof.txt" ||
		fail "pprof -top lacks the allocator: $(head -12 "$tmp/pprof.txt")"
fi
exit 0
