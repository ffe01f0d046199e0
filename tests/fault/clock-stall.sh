#!/bin/bash
# Dates are as good as the clock pair behind them: a daemon preempted
# between its readings of the wall clock and the marker it writes between
# them would date every event by half the gap. Stalled for 1.5 s on the
# first try of every pair (the fault hook compiled into the test build of
# the daemon, tests/fault/stackmapd-faults), the daemon tries again: the
# events of a load run at a known moment are dated within it, give or take
# 0.1 s, and nothing is said. A pair that stays uncertain through every try
# is logged with its uncertainty.
. "$top_srcdir/tests/lib.sh"
need_tracefs
STACKMAPD=${STACKMAPD_FAULTS:-$top_builddir/tests/fault/stackmapd-faults}
. "$top_srcdir/tests/fault/lib-fault.sh"
need_cmd python3

fault_conf "$ftmp/c.conf" "$ftmp/archive"

# dated_within BEFORE AFTER LOG: the load's events in the archive are dated
# within [BEFORE - 0.1 s, AFTER + 0.1 s] (seconds since the epoch).
dated_within() {
	"$STACKMAPCTL" report --wall --comm "$load_comm" "$ftmp/archive" > "$ftmp/report.txt" ||
		fail "report failed"
	python3 - "$1" "$2" "$ftmp/report.txt" <<'PY' || { tail -5 "$3" >&2; fail "the load's events are dated outside the moment it ran"; }
import datetime, re, sys
before, after = float(sys.argv[1]), float(sys.argv[2])
dates = []
for line in open(sys.argv[3]):
    m = re.search(r'(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\.\d+)', line)
    if m:
        dates.append(datetime.datetime.fromisoformat(m.group(1).replace(' ', 'T')).timestamp())
if not dates:
    sys.exit("no dated event of the load")
lo, hi = min(dates), max(dates)
print(f"# the load ran {before:.3f}..{after:.3f}, its {len(dates)} events are dated {lo:.3f}..{hi:.3f}")
sys.exit(0 if lo >= before - 0.1 and hi <= after + 0.1 else 1)
PY
}

STACKMAPD_FAULT_CLOCK_STALL=1500 start_recording "$ftmp/c.conf" "$ftmp/d.log"
before=$EPOCHREALTIME
"$FLOAD" -j 1 -n 300 -q || fail "the load failed"
after=$EPOCHREALTIME
ctl snapshot > /dev/null || fail "snapshot failed"
dated_within "$before" "$after" "$ftmp/d.log"
! grep 'clock pair is uncertain' "$ftmp/d.log" >&2 ||
	fail "a stall on the first try left the pair uncertain"
stop_daemon_ok "$ftmp/d.log"
no_log_errors "$ftmp/d.log"

# Every try stalled for 20 ms: the pair keeps 20 ms of uncertainty, and says so.
STACKMAPD_FAULT_CLOCK_STALL=20:all start_recording "$ftmp/c.conf" "$ftmp/d2.log"
wait_for_log "$ftmp/d2.log" 'the clock pair is uncertain by 2[0-9] ms after 4 tries' ||
	fail "an uncertain pair was not logged: $(cat "$ftmp/d2.log")"
stop_daemon_ok "$ftmp/d2.log"
exit 0
