#!/bin/bash
# Tracefs changed under the daemon's feet while it records: tracing_on
# switched off, an event disabled, a filter replaced, an option flipped.
# Each is found by the periodic health check, set back, logged and counted
# in status (health.tracefs_repairs), and recording goes on. Removing the
# instance is refused by the kernel while it is being read.
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

inst=$TRACEFS/instances/$FINST
fault_conf "$ftmp/c.conf" "$ftmp/archive"
start_recording "$ftmp/c.conf" "$ftmp/d.log"
filter=$(cat "$inst/events/kmem/kmem_cache_alloc/filter")
repairs() { status_field tracefs_repairs; }
repaired() { [ "$(repairs)" -ge "$1" ]; }
recorded() { [ "$(status_field events)" -gt 0 ]; }
[ "$(repairs)" = 0 ] || fail "repairs before any change: $(repairs)"

n=0
for change in "tracing_on:0" "events/kmem/kmem_cache_alloc/enable:0" \
	"events/kmem/kmem_cache_alloc/filter:bytes_req > 1" "options/overwrite:1"; do
	file=${change%%:*}
	echo "${change#*:}" > "$inst/$file" || fail "cannot write $file"
	n=$((n + 1))
	wait_until 10 repaired $n ||
		{ cat "$ftmp/d.log"; fail "$file changed behind its back: not set back (repairs $(repairs))"; }
done
[ "$(cat "$inst/tracing_on")" = 1 ] || fail "tracing_on is not back on"
[ "$(cut -c1 "$inst/events/kmem/kmem_cache_alloc/enable")" = 1 ] || fail "the event is not enabled again"
[ "$(cat "$inst/events/kmem/kmem_cache_alloc/filter")" = "$filter" ] || fail "the filter is not ours again"
[ "$(cat "$inst/options/overwrite")" = 0 ] || fail "overwrite is not off again"
grep -q "was changed to .* by someone else: set back" "$ftmp/d.log" || fail "no log line for the changes"
# removing the instance: the kernel refuses while the readers hold its
# trace_pipe_raw files open (EBUSY), so recording goes on
if rmdir "$inst" 2>"$ftmp/rmdir.err"; then
	fail "the instance could be removed while the daemon records it"
fi
grep -q "busy" "$ftmp/rmdir.err" || fail "removing the instance failed, but not as busy: $(cat "$ftmp/rmdir.err")"
"$FLOAD" -j 1 -n 1000 -q
wait_until 10 recorded || fail "nothing recorded after the changes"
stop_daemon_ok "$ftmp/d.log"
exit 0
