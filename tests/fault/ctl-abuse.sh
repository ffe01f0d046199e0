#!/bin/bash
# Control socket abuse: 200 idle clients, garbage, oversized and very slow
# requests, a client that never reads its replies, all while the daemon
# records; `stackmapctl status` must answer every time within 1 s, the
# daemon must keep recording and survive, and its fd count must come back
# to where it was once the clients are gone.
#   CTL_IDLE=N (200), CTL_SECONDS=N (8)
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd python3
. "$top_srcdir/tests/fault/lib-fault.sh"

fault_conf "$ftmp/c.conf" "$ftmp/archive"
start_recording "$ftmp/c.conf" "$ftmp/d.log"
start_load 1
nfd() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
sleep 1
fd0=$(nfd)
ev0=$(status_field events)
python3 "$top_srcdir/tests/fault/ctl-abuse.py" "$ftmp/control" "$STACKMAPCTL" \
	"${CTL_IDLE:-200}" "${CTL_SECONDS:-8}" > "$ftmp/abuse.out" 2>&1 || { cat "$ftmp/abuse.out"; fail "the abuse client failed"; }
cat "$ftmp/abuse.out" | sed 's/^/# /'
failures=()
kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died: $(tail -n 5 "$ftmp/d.log")"
worst=$(sed -n 's/.*worst_status_s=\([0-9.]*\).*/\1/p' "$ftmp/abuse.out")
awk -v w="$worst" 'BEGIN { exit !(w <= 1.0) }' || failures+=("status took up to ${worst}s to answer (limit 1 s)")
grep -q 'failures=0' "$ftmp/abuse.out" || failures+=("status failed while clients were connected")
ev1=$(status_field events)
[ "${ev1:-0}" -gt "${ev0:-0}" ] || failures+=("recording stalled: events $ev0 -> $ev1")
back() { [ "$(nfd)" -le "$fd0" ]; }
wait_until 15 back || failures+=("fd leak: $fd0 fds before, $(nfd) 15 s after the clients left")
stop_daemon || failures+=("stop exited $?")
if [ ${#failures[@]} -gt 0 ]; then
	for f in "${failures[@]}"; do echo "FAIL: $TEST_NAME: $f" >&2; done
	exit 1
fi
exit 0
