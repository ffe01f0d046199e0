#!/bin/bash
# Disk full: the archive on a small ext4 image (a real file system, with
# fsync and renames that can fail; not a tmpfs) with max_size = 0 and
# keep_free = 0, the daemon recording under load with sync on; a filler
# file takes the remaining space. While the disk is full the daemon must: log the error (not once
# per failed write: at most a few lines), keep draining the kernel buffer
# (its "read events" keep growing), show the failure in status
# (write_errors and dropped events), and stay alive. Once the filler is
# removed it must write again by itself. After a stop: every segment
# verifies and the loss is recorded in the archive (info shows lost or
# dropped events, a STATS record says what was dropped) and summed up in
# the log. The drops of the write errors are told from the kernel's own
# losses: status counts them apart, and the STATS records must hold at
# least as many.
#
# The image is mounted in a mount namespace of the test's own (see
# tests/fault/power-cut.sh).
if [ -z "${DISK_FULL_NAMESPACE:-}" ] && command -v unshare > /dev/null; then
	DISK_FULL_NAMESPACE=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd mkfs.ext4
. "$top_srcdir/tests/fault/lib-fault.sh"

arch=$ftmp/small
mkdir "$arch"
truncate -s 16M "$ftmp/disk.img"
mkfs.ext4 -q -F -m 0 "$ftmp/disk.img" || fail "mkfs.ext4 failed"
mount -o loop "$ftmp/disk.img" "$arch" || skip "cannot loop-mount an image"
at_exit "umount -l '$arch'"
fault_conf "$ftmp/c.conf" "$arch" archive.segment_size=1M
log=$ftmp/d.log
start_recording "$ftmp/c.conf" "$log"
start_load 1
read_events() {
	awk -F': ' '/^read events/ { n += $2 } END { print n + 0 }' \
		"$TRACEFS/instances/$FINST"/per_cpu/cpu*/stats
}
seg_bytes() { find "$arch" -name '*.smseg*' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }

# fill the disk once some data is there
# (a function: wait_until runs it anew each time; "$(seg_bytes)" as an
# argument would be counted once, before the wait)
written_more_than() { [ "$(seg_bytes)" -gt "$1" ]; }
wait_until 30 written_more_than 100000 || fail "nothing written in 30 s"
dd if=/dev/zero of="$arch/.filler" bs=64K status=none 2>/dev/null
note "disk full: $(df -k --output=avail "$arch" | tail -1) KiB free"
full_at=$(date +%s)
read0=$(read_events)
sleep 6
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$log"; fail "the daemon died on a full disk"; }
read1=$(read_events)
failures=()
# 1. logged, at most a few times (rate-limited)
nlog=$(grep -ci 'no space left' "$log")
[ "$nlog" -ge 1 ] || failures+=("no 'No space left' error logged during 6 s of a full disk")
[ "$nlog" -le 5 ] || failures+=("$nlog 'No space left' lines in 6 s (not rate-limited)")
# 2. the kernel buffer is still drained
[ "$read1" -gt "$read0" ] || failures+=("the daemon stopped draining the kernel buffer ($read0 -> $read1 events read)")
# 3. status shows it
ctl status --json > "$ftmp/status.json" 2>&1 || failures+=("status failed: $(cat "$ftmp/status.json")")
we=$(grep -o '"write_errors": *[0-9]*' "$ftmp/status.json" | sed 's/.*: *//')
[ "${we:-0}" -gt 0 ] || failures+=("status shows write_errors=${we:-none} on a full disk")
grep -Eq '"dropped_(events|bytes)": *[1-9]' "$ftmp/status.json" ||
	failures+=("status shows no dropped_events/dropped_bytes count")
# 4. resumes by itself once space returns
before=$(seg_bytes)
rm -f "$arch/.filler"
grown() { [ "$(seg_bytes)" -gt $((before + 65536)) ]; }
wait_until 15 grown ||
	failures+=("writing did not resume within 15 s after space was freed ($before -> $(seg_bytes) bytes of segments)")
write_drops=$(write_dropped)
stop_daemon || failures+=("stop exited $?")
segs=("$arch"/*.smseg)
parts=("$arch"/*.smseg.part)
[ ${#parts[@]} = 0 ] || failures+=("unfinished segments left after the stop: ${parts[*]##*/}")
if [ ${#segs[@]} = 0 ]; then
	failures+=("no finished segment in the archive")
elif ! "$STACKMAPCTL" verify "${segs[@]}" > "$ftmp/verify.out" 2>&1; then
	failures+=("segments do not verify: $(grep -v ': ok,' "$ftmp/verify.out" | head -3 | tr '\n' ' ')")
fi
# 5. the loss is recorded in the archive: every event dropped for the
# full disk (status counts them apart from the kernel's own losses) is in
# a STATS record, and in the lost events of an index
if [ ${#segs[@]} -gt 0 ]; then
	loss=$(stats_dropped "${segs[@]}")
	lost=$(index_lost "${segs[@]}")
	[ "${write_drops:-0}" -gt 0 ] || failures+=("status counts no event dropped for the full disk")
	[ "$loss" -ge "${write_drops:-0}" ] ||
		failures+=("STATS records hold $loss dropped events; status counted $write_drops")
	[ "$lost" -ge "${write_drops:-0}" ] ||
		failures+=("the indexes count $lost lost events, fewer than the $write_drops write drops")
	note "write drops: $write_drops counted, $loss in STATS records, $lost lost events in the indexes"
fi
# 6. the outage's end is summed up in the journal, and the loss has its STATS record
grep -Eq 'works again after .*[1-9][0-9]* events' "$log" ||
	failures+=("no summary logged when writing resumed")
# (STATS payloads are stored uncompressed: their keys can be found in the file)
[ ${#segs[@]} -gt 0 ] && grep -qa 'write_dropped_events=[1-9]' "${segs[@]}" ||
	failures+=("no segment holds a STATS record of the dropped events")
note "daemon log:"; sed 's/^/#   /' "$log" | head -20
if [ ${#failures[@]} -gt 0 ]; then
	for f in "${failures[@]}"; do echo "FAIL: $TEST_NAME: $f" >&2; done
	exit 1
fi
exit 0
