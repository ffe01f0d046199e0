#!/bin/bash
# bench/run, the benchmark behind doc/performance.md, still measures every
# tool it compares: a short run (--quick, the kmem workload) of the floors,
# trace-cmd, perf and stackmapd writes a CSV row per tool with its events,
# bytes, CPU and memory, a summary per tool, and each tool's ratios to
# perf's run of the same repetition; nothing is asserted about the figures
# themselves. Afterwards, and after a run stopped with SIGTERM
# while each tool records, nothing it started or made is left: no process,
# no tracefs instance, no work directory, the top level as it was.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD" "$top_builddir/bench/splice-floor"
need_cmd trace-cmd
need_cmd perf
need_cmd /usr/bin/time

tmp=$(mktmp)
bench=$top_srcdir/bench/run
tools=floor,floor-read,trace-cmd,perf,stackmapd
state_before=$(tracefs_state)

# left_behind PID WORKDIR: what a bench/run with that pid left (empty: nothing)
left_behind() {
	local pid=$1 dir=$2
	pgrep -af -- "$dir" | grep -v pgrep || true
	ls -d "$TRACEFS"/instances/smbench_*_"$pid" 2>/dev/null || true
	[ ! -e "$dir" ] || echo "work directory $dir"
	[ "$(tracefs_state)" = "$state_before" ] || echo "tracefs state changed"
}

# bench/run's work directory, from its output
work_dir() { sed -n 's/^# work dir: //p' "$1"; }

TMPDIR=$tmp "$bench" --builddir "$top_builddir" --quick --sections main --workloads kmem \
	--tools "$tools" --csv "$tmp/bench.csv" > "$tmp/bench.out" 2> "$tmp/bench.err" &
pid=$!
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { cat "$tmp/bench.err" >&2; fail "bench/run failed (exit $rc)"; }
cat "$tmp/bench.out"
dir=$(work_dir "$tmp/bench.out")
[ -n "$dir" ] || fail "bench/run did not say its work directory"

# one row per tool, its figures numbers that a measurement gives
python3 - "$tmp/bench.csv" "$tools" <<'EOF' || fail "the CSV lacks a tool's measurements"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ok = True
for tool in sys.argv[2].split(","):
    main = [r for r in rows if r["section"] == "main" and r["tool"] == tool]
    summ = {r["param"] for r in rows if r["section"] == "summary" and r["tool"] == tool}
    if len(main) != 1 or summ != {"median", "min", "max"}:
        print(f"{tool}: {len(main)} main rows, summary rows {sorted(summ)}")
        ok = False
        continue
    r = main[0]
    try:
        events, lost = int(r["events"]), int(r["lost"])
        bpe, cpu, rss = float(r["bytes_per_event"]), float(r["cpu_s_per_mevent"]), int(r["max_rss_kb"])
    except ValueError as e:
        print(f"{tool}: {e}: {r}")
        ok = False
        continue
    # a 2 s kmem run makes tens of thousands of events at the least
    if events < 10000 or lost < 0 or cpu <= 0 or rss <= 0 or (bpe <= 0 and tool != "floor-read"):
        print(f"{tool}: implausible measurement {r}")
        ok = False
    print(f"{tool}: {events} events, {lost} lost, {bpe} B/event, {cpu} CPU s/Mev, {rss} KiB")
sys.exit(0 if ok else 1)
EOF
grep -q '^## main' "$tmp/bench.out" || fail "no main table on standard output"
# each tool against perf in the same repetition: one pair each, a ratio per figure
grep -Eq '^kmem +stackmapd +[0-9.]+/[0-9.]+/[0-9.]+ +[0-9.]+/[0-9.]+/[0-9.]+ +1$' "$tmp/bench.out" ||
	fail "no ratio of stackmapd's bytes and CPU to perf's in the same repetition"
grep -Eq '^kmem +floor-read +-/-/- +[0-9.]+/[0-9.]+/[0-9.]+ +1$' "$tmp/bench.out" ||
	fail "floor-read, which stores nothing, has a bytes ratio or no CPU ratio"
left=$(left_behind "$pid" "$dir")
[ -z "$left" ] || fail "bench/run left behind: $left"

# Stopped while each tool records: SIGTERM once the recorder runs.
# (recording: a process other than the wrapping time whose command line
# names the work directory)
recording() {
	local p
	dir=$(work_dir "$tmp/term.out")
	[ -n "$dir" ] || return 1
	for p in $(pgrep -f -- "$dir/"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != time ] && return 0
	done
	return 1
}
for tool in ${tools//,/ }; do
	TMPDIR=$tmp "$bench" --builddir "$top_builddir" --quick --sections main --workloads kmem \
		--tools "$tool" > "$tmp/term.out" 2> "$tmp/term.err" &
	pid=$!
	wait_until 60 recording || { cat "$tmp/term.err" >&2; fail "$tool: bench/run did not start it"; }
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" != 0 ] || fail "$tool: bench/run stopped by SIGTERM exited 0"
	left=$(left_behind "$pid" "$dir")
	[ -z "$left" ] || fail "$tool: bench/run stopped by SIGTERM left behind: $left"
	note "$tool: stopped by SIGTERM (exit $rc), nothing left"
done
