#!/bin/bash
# A full disk, a crash and a restart: the archive on a 6 MiB tmpfs, the
# daemon recording under load; a filler takes the remaining space and the
# daemon is killed (-9) during the outage, leaving a .part that cannot be
# recovered while the disk is full (recovery appends a NOTE and a
# trailer). Started again with the disk still full, the daemon must start
# anyway (not exit 1 and loop under Restart=on-failure), record meanwhile
# (drain the kernel buffers, count what it drops), and once space
# returns, recover the .part by itself, hand it to the segment hook, open
# a segment and record the loss there (STATS write_dropped_events).
. "$top_srcdir/tests/lib.sh"
need_tracefs
. "$top_srcdir/tests/fault/lib-fault.sh"

arch=$ftmp/small
mkdir "$arch"
mount -t tmpfs -o size=6M,mode=0750 tmpfs "$arch" || skip "cannot mount a tmpfs"
at_exit "umount -l '$arch'"
record_hooked "$arch" "$arch" "$ftmp/d1.log" archive.segment_size=1M
dd if=/dev/zero of="$arch/.filler" bs=64K status=none 2>/dev/null
in_outage() { [ "$(write_dropped)" -gt 0 ] 2>/dev/null; }
wait_until 20 in_outage || { cat "$ftmp/d1.log"; fail "no outage on a full disk"; }
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
parts=("$arch"/*.smseg.part)
[ ${#parts[@]} = 1 ] || fail "expected one unfinished segment after the kill, found ${#parts[@]}"
part=${parts[0]}
# its last page full: a recovery cannot even append its NOTE on the full disk
# (else it may fit in the page's slack, and this test would not test the wait)
"$STACKMAPCTL" verify --json "$part" > "$ftmp/part.json" 2>/dev/null
truncate -s -64K "$arch/.filler"	# room for the padding; taken again below
python3 "$top_srcdir/tests/fault/pad-part.py" "$part" "$(json_value "$ftmp/part.json" 'r["bytes"]')" \
	"$(json_value "$ftmp/part.json" 'r["records"]')" "$(getconf PAGESIZE)" || fail "cannot pad '$part'"
dd if=/dev/zero of="$arch/.filler" bs=4K oflag=append conv=notrunc status=none 2>/dev/null
part_records=$("$STACKMAPCTL" verify --json "$part" 2>/dev/null | grep -o '"records":[0-9]*' | cut -d: -f2)
note "killed during the outage: '${part##*/}' left with ${part_records:-?} records, $(df -k --output=avail "$arch" | tail -1) KiB free"

# 1. the start on a full disk
log=$ftmp/d2.log
"$STACKMAPD" -c "$ftmp/c.conf" > "$log" 2>&1 &
DAEMON_PID=$!
at_exit "kill -9 $DAEMON_PID; wait $DAEMON_PID"
started() { grep -Eq 'recording [0-9]+ CPUs' "$log" || ! kill -0 "$DAEMON_PID" 2>/dev/null; }
wait_until 30 started
kill -0 "$DAEMON_PID" 2>/dev/null ||
	{ cat "$log"; fail "the daemon did not start on a full disk with an unfinished segment"; }
grep -Eq 'recording [0-9]+ CPUs' "$log" || { cat "$log"; fail "the daemon did not start recording"; }
# 2. it records meanwhile: frames are dropped and counted, the .part waits
dropping() { [ "$(write_dropped)" -gt 1000 ] 2>/dev/null; }
wait_until 20 dropping ||
	{ ctl status; cat "$log"; fail "no events counted as dropped while the disk is full"; }
[ -e "$part" ] || fail "the unfinished segment vanished while the disk was full"
[ "$(status_field unrecovered)" = 1 ] ||
	fail "status does not show the unrecovered segment: unrecovered=$(status_field unrecovered)"
dropped_full=$(write_dropped)
# 3. space returns: recovery, a new segment, the loss recorded
rm -f "$arch/.filler"
recovered() { [ ! -e "$part" ] && [ "$(status_field unrecovered)" = 0 ]; }
wait_until 15 recovered ||
	{ cat "$log"; fail "the unfinished segment was not recovered within 15 s after space returned"; }
final=${part%.part}
[ -f "$final" ] || fail "the unfinished segment was not recovered as '${final##*/}'"
hooked() { grep -qxF "$final" "$ftmp/hooked" 2>/dev/null; }
wait_until 10 hooked || fail "the recovered segment was not handed to the hook"
resumed() { ! ctl status --json | grep -q '"active": *true'; }
wait_until 15 resumed || { ctl status; fail "the write outage did not end after space returned"; }
after=$(write_dropped)
stop_daemon || { cat "$log"; fail "stop exited $?"; }
segs=("$arch"/*.smseg)
check_only_segments "after the stop" "$arch"
check_finished "after the stop" "${segs[@]}"
# the recovered segment holds the records that were in the .part (and its NOTE)
rec_records=$("$STACKMAPCTL" verify --json "$final" 2>/dev/null | grep -o '"records":[0-9]*' | cut -d: -f2)
[ "${rec_records:-0}" -gt "${part_records:-1}" ] ||
	fail "the recovered segment has ${rec_records:-no} records, the .part had $part_records"
# the loss of the full disk is in the archive
loss=$(stats_dropped "${segs[@]}")
[ "$loss" -ge "$after" ] && [ "$after" -ge "$dropped_full" ] ||
	fail "STATS records hold $loss dropped events; status counted $after ($dropped_full while the disk was full)"
lost=$(index_lost "${segs[@]}")
[ "$lost" -ge "$after" ] || fail "the indexes count $lost lost events, fewer than the $after write drops"
grep -q 'works again after' "$log" || fail "no summary logged when writing resumed"
note "restart on a full disk: $after events dropped, $loss recorded in STATS, $lost lost in the indexes;" \
	"recovered '${final##*/}' ($rec_records records)"
exit 0
