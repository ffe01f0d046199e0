#!/bin/bash
# `stackmapctl top --follow` on an archive while the daemon records into it:
# the segment being written (still a .part, without the kallsyms subset the
# daemon adds when it finishes a segment) shows kernel function names taken
# from the running kernel, as it is of this boot, not bare addresses; the
# table is refreshed once per interval and --iterations ends it. (That a
# segment of another boot keeps its addresses: tests/unit/test-decode.c.)
# Its events have wall-clock time long before the first periodic flush:
# the daemon reads its opening clock marker back right away. And a refresh
# holds what was recorded up to it: top --follow asks the daemon to flush.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
need_events kmem:kmem_cache_alloc
grep -q ' [tT] kmem_cache_alloc' /proc/kallsyms 2>/dev/null && ! grep -q '^0\{16\} ' /proc/kallsyms ||
	skip "kernel addresses are hidden in /proc/kallsyms"

tmp=$(mktmp)
inst=$(new_instance_name)
# The daemon on CPU 0, this script and the load on the others: the opening
# clock marker's page then stays partial until the daemon reads it.
if [ "$(nproc)" -ge 2 ]; then
	taskset -cp 1-$(($(nproc) - 1)) $$ >/dev/null || fail "cannot pin the test to CPUs 1-"
	printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$STACKMAPD" > "$tmp/stackmapd-cpu0"
	chmod +x "$tmp/stackmapd-cpu0"
	STACKMAPD=$tmp/stackmapd-cpu0
fi
write_config "$tmp/stackmapd.conf" <<EOT
[trace]
instance = $inst
events = kmem:kmem_cache_alloc
stacktrace = all
buffer_size = 2M

[stackmap]
snapshot_interval = 1h

[archive]
directory = $tmp/archive
segment_age = 1h
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOT
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
load_bursts 0.2 -j 1 -n 300

# wait until the segment being written holds stacks in the last minute
# (the load's among them; it has no task names yet: those, too, come when
# it is finished)
has_load_stack() {
	"$STACKMAPCTL" top --sort stack --since -60s "$tmp/archive" 2>/dev/null | grep -q '^ .*%.*<-'
}
wait_until 30 has_load_stack || fail "no stack of the load recorded: $(tail "$tmp/daemon.log")"

"$STACKMAPCTL" top --sort stack --follow --window 60 --iterations 3 --limit 5 "$tmp/archive" > "$tmp/top.txt" 2> "$tmp/top.err" ||
	fail "top --follow failed: $(cat "$tmp/top.err")"
list_segments "$tmp/archive"
[ ${#segs[@]} = 0 ] && [ ${#parts[@]} = 1 ] ||
	fail "expected only the segment being written, got: ${segs[*]} ${parts[*]}"
kill "$BG_PID"
wait "$BG_PID" 2>/dev/null
stop_daemon_ok "$tmp/daemon.log"

# A refresh holds everything recorded up to it, not what the daemon's last
# periodic flush (an hour) wrote out: with frames of 16 MiB nothing of a
# short burst reaches the file before that, unless top --follow asks the
# daemon (found through -c) to flush. It then counts at least as many
# events as the finished segment holds up to the second before it (the
# machine's other tasks add a few more).
sed -i 's/^max_size = 0$/&\nframe_size = 16M/' "$tmp/stackmapd.conf"
rm -rf "$tmp/archive"
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon2.log"
load_events() { sed -nE 's/^# kmem_cache_alloc: ([0-9]+) .*/\1/p' "$1" | head -n 1; }
"$SMLOAD" -q -j 1 -n 300 || fail "the load failed"
# The bound is a whole second, taken a second after the load and a second
# before the refresh: the refresh's own work (reading kallsyms, thousands of
# allocations) stays clear of it even if the wall-clock pairs are off by
# some hundred milliseconds.
sleep 1.1
until=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1.1
"$STACKMAPCTL" top --follow --window 600 --iterations 1 -c "$tmp/stackmapd.conf" \
	> "$tmp/live.txt" 2> "$tmp/top.err" || fail "top --follow failed: $(cat "$tmp/top.err")"
! grep -E 'did not (flush|answer)' "$tmp/top.err" || fail "the daemon did not flush for top --follow"
STACKMAPD_SOCKET=$tmp/control "$STACKMAPCTL" snapshot > /dev/null || fail "snapshot failed"
"$STACKMAPCTL" top --since -600s --until "$until" "$tmp/archive" > "$tmp/done.txt" ||
	fail "top of the finished segment failed"
live=$(load_events "$tmp/live.txt") done=$(load_events "$tmp/done.txt")
[ -n "$done" ] || fail "no event count: $(head -3 "$tmp/done.txt")"
if [ "${live:-0}" -lt "$done" ]; then
	cat "$tmp/top.err" "$tmp/live.txt" "$tmp/done.txt" >&2
	"$STACKMAPCTL" info -v "$tmp/archive" >&2
	fail "the live refresh counted ${live:-0} events, the finished segment $done up to $until"
fi
note "live refresh: $live events; the finished segment up to $until: $done"

# A daemon that does not answer (stopped here) leaves the refresh at its
# last periodic flush, and top --follow says so instead of showing less
# without a word.
kill -STOP "$DAEMON_PID"
"$STACKMAPCTL" top --follow --window 600 --iterations 1 -c "$tmp/stackmapd.conf" \
	> "$tmp/stalled.txt" 2> "$tmp/stalled.err"
rc=$?
kill -CONT "$DAEMON_PID"
[ $rc = 0 ] || fail "top --follow with a stopped daemon failed ($rc): $(cat "$tmp/stalled.err")"
grep -q 'stackmapd did not answer the flush request within [0-9]* s: what it recorded since its last periodic flush is not shown' "$tmp/stalled.err" ||
	fail "top --follow said nothing of the flush a stopped daemon did not answer: $(cat "$tmp/stalled.err")"
stop_daemon_ok "$tmp/daemon2.log"

# three refreshes, each with the hottest stacks (the load's), by function name
blocks=$(grep -Ec '^# [0-9]{2}:[0-9]{2}:[0-9]{2}, last 60 s$' "$tmp/top.txt")
[ "$blocks" = 3 ] || { cat "$tmp/top.txt"; fail "$blocks refreshes, expected 3"; }
awk '
	/^# [0-9][0-9]:/ { block++; next }
	/^# kmem_cache_alloc:/ { sect = 1; next }
	/^#/ { sect = 0; next }
	sect && /%/ { rows[block]++; if ($0 ~ /(^| )0x[0-9a-f]+( |$)/) hex[block]++
		      if ($0 ~ /kmem_cache_alloc/) named[block]++ }
	END {
		for (b = 1; b <= 3; b++) {
			if (!rows[b] || hex[b] || !named[b]) {
				printf "refresh %d: %d stacks, %d with an address, %d named\n",
				       b, rows[b], hex[b], named[b]
				bad = 1
			}
		}
		exit bad
	}' "$tmp/top.txt" || { cat "$tmp/top.txt"; fail "the segment being written is not symbolized"; }

exit 0
