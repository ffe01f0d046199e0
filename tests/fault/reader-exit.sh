#!/bin/bash
# A CPU reader thread that ends unexpectedly, while a snapshot waits for it:
# the main loop finds it (the thread is joined, not asked), logs it once,
# status shows the CPU as not read and names the problem, the watchdog is
# no longer pinged, and the flush barrier does not wait for it: the waiting
# snapshot gets an error reply at once (the segment of the other CPUs is
# finished all the same), later snapshots and rotations too, and the daemon
# stops cleanly. The thread is ended by the fault hook compiled into the
# test build of the daemon (tests/fault/stackmapd-faults): at the first
# flush request after a trigger file exists, it returns without a word.
. "$top_srcdir/tests/lib.sh"
need_tracefs
STACKMAPD=${STACKMAPD_FAULTS:-$top_builddir/tests/fault/stackmapd-faults}
. "$top_srcdir/tests/fault/lib-fault.sh"
need_cmd python3

cpu=$(cut -d, -f1 /sys/devices/system/cpu/online | cut -d- -f1)
trigger=$ftmp/reader-exit
notify=$ftmp/notify.sock
pings=$ftmp/pings

# the service manager's side of sd_notify(): count WATCHDOG=1 datagrams
python3 - "$notify" "$pings" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
n = 0
while True:
    if b"WATCHDOG=1" in s.recv(4096):
        n += 1
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(str(n))
        import os
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])
EOF
at_exit "kill $!"
wait_until 10 test -S "$notify" || fail "the notify listener did not start"
pinged() { [ -s "$pings" ] && [ "$(cat "$pings")" -ge "$1" ]; }

fault_conf "$ftmp/c.conf" "$ftmp/archive" stackmap.snapshot_interval=200ms
NOTIFY_SOCKET=$notify WATCHDOG_USEC=400000 STACKMAPD_FAULT_READER_EXIT="$cpu:$trigger" \
	start_recording "$ftmp/c.conf" "$ftmp/d.log"
start_load
wait_until 10 pinged 3 || fail "no watchdog pings from a healthy daemon"
ctl status --json > "$ftmp/s0.json" || fail "status failed"
json "$ftmp/s0.json" 'r["health"]["problem"] is None and all(c["reading"] for c in r["cpus"])' ||
	fail "unhealthy before the fault: $(cat "$ftmp/s0.json")"

touch "$trigger"
t0=${EPOCHREALTIME/./}
rc=0
timeout 20 "$STACKMAPCTL" --socket "$ftmp/control" snapshot > "$ftmp/snap.out" 2>&1 || rc=$?
t1=${EPOCHREALTIME/./}
[ $rc = 124 ] && fail "the snapshot waiting for the ended reader got no reply within 20 s"
[ $rc != 0 ] || fail "the snapshot succeeded although CPU $cpu is not read: $(cat "$ftmp/snap.out")"
grep -q "a CPU reader stopped" "$ftmp/snap.out" || fail "snapshot error does not say why: $(cat "$ftmp/snap.out")"
note "snapshot answered in $(((t1 - t0) / 1000)) ms: $(cat "$ftmp/snap.out")"
grep -q "CPU $cpu: its reader thread ended" "$ftmp/d.log" || { cat "$ftmp/d.log"; fail "no log line for the ended reader"; }
[ "$(grep -c "its reader thread ended" "$ftmp/d.log")" = 1 ] || fail "the ended reader was logged more than once"

ctl status --json > "$ftmp/s1.json" || fail "status failed"
json "$ftmp/s1.json" "r['health']['problem'] == 'a CPU reader stopped'" ||
	fail "status does not name the problem: $(cat "$ftmp/s1.json")"
json "$ftmp/s1.json" "[c['cpu'] for c in r['cpus'] if not c['reading']] == [$cpu]" ||
	fail "status does not show CPU $cpu as not read: $(cat "$ftmp/s1.json")"
ls "$ftmp"/archive/*.smseg > /dev/null 2>&1 || fail "the waiting snapshot did not finish the segment"

# the watchdog: the daemon says it skips the ping, and the pings stop
wait_for_log "$ftmp/d.log" 'watchdog not pinged' 10 || fail "no log line about the watchdog"
before=$(cat "$pings")
sleep 1		# five watchdog periods: proving that nothing comes needs time
[ "$(cat "$pings")" = "$before" ] || fail "the watchdog is still pinged ($before, then $(cat "$pings"))"

# what comes later is answered at once, and nothing piles up
for cmd in snapshot rotate; do
	rc=0
	timeout 10 "$STACKMAPCTL" --socket "$ftmp/control" $cmd > "$ftmp/$cmd.out" 2>&1 || rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] && grep -q "a CPU reader stopped" "$ftmp/$cmd.out" ||
		fail "$cmd after the fault: exit $rc, $(cat "$ftmp/$cmd.out")"
done
stop_daemon_ok "$ftmp/d.log" "stop after the fault"
check_finished "after the fault" "$ftmp"/archive/*.smseg
exit 0
