#!/bin/bash
# I/O errors from a real block device, then the device healthy again: the
# archive on ext4 (no journal, errors=continue, mounted sync so that a
# write or a truncate reports the device's error at once) over a
# device-mapper target on a loop device. The table is switched to the
# `error` target (dmsetup suspend, load, resume) while the daemon records,
# then back to `linear`. Recording must resume by itself (with segment_age
# = 0: the segment a failed cut back left unusable is finished by
# recovery and a new one opened), and every event dropped meanwhile must
# be counted in status and recorded in the archive.
#
# Needs a kernel with device-mapper (skips without it). tests/fault/eio.sh
# is the suite's version, on a FUSE file system; tests/fault/campaign runs
# this one.
#
#   DM_EIO_SECONDS=N   how long the device fails (default 3)
#   DM_EIO_ROUNDS=N    error/healthy cycles (default 2)
if [ -z "${DM_EIO_NAMESPACE:-}" ] && command -v unshare > /dev/null; then
	DM_EIO_NAMESPACE=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd dmsetup
need_cmd losetup
need_cmd mkfs.ext4
dmsetup version > /dev/null 2>&1 || skip "this kernel has no device-mapper"
. "$top_srcdir/tests/fault/lib-fault.sh"

seconds=${DM_EIO_SECONDS:-3}
rounds=${DM_EIO_ROUNDS:-2}
img=$ftmp/dev.img
mnt=$ftmp/mnt
dm=smtest-eio-$$
truncate -s 128M "$img"
loop=$(losetup -f --show "$img") || skip "cannot set up a loop device"
at_exit "losetup -d $loop"
sectors=$(blockdev --getsz "$loop")
dmsetup create "$dm" --table "0 $sectors linear $loop 0" || fail "dmsetup create failed"
at_exit "dmsetup remove --retry $dm"
table() {
	dmsetup suspend "$dm" && dmsetup load "$dm" --table "0 $sectors $1" &&
		dmsetup resume "$dm" || fail "cannot switch $dm to $1"
}
mkfs.ext4 -q -F -O ^has_journal "/dev/mapper/$dm" || fail "mkfs.ext4 failed"
mkdir "$mnt"
mount -o sync,errors=continue "/dev/mapper/$dm" "$mnt" || fail "cannot mount /dev/mapper/$dm"
at_exit "umount -l '$mnt'"
# (cleanups run last registered first: back to linear before the unmount)
at_exit "dmsetup suspend $dm; dmsetup load $dm --table '0 $sectors linear $loop 0'; dmsetup resume $dm"

arch=$mnt/archive
log=$ftmp/d.log
record_hooked "$arch" "$arch" "$log" archive.segment_size=64M archive.segment_age=0
for round in $(seq 1 "$rounds"); do
	d0=$(write_dropped)
	table error
	more_dropped() { [ "$(write_dropped)" -gt $((d0 + 1000)) ]; }
	wait_until 20 more_dropped || { ctl status; tail "$log"; fail "round $round: no events dropped on EIO"; }
	sleep "$seconds"
	kill -0 "$DAEMON_PID" 2> /dev/null || { cat "$log"; fail "round $round: the daemon died on EIO"; }
	table "linear $loop 0"
	before=$(seg_bytes)
	resumed() { ! ctl status --json | grep -q '"active": *true' && [ "$(seg_bytes)" -gt $((before + 65536)) ]; }
	wait_until 30 resumed ||
		{ ctl status; tail -20 "$log"; fail "round $round: recording did not resume within 30 s"; }
	note "round $round: $(( $(write_dropped) - d0 )) events dropped during ${seconds}+ s of EIO, resumed"
done
after=$(write_dropped)
salvaged=$(status_field salvaged)
stop_daemon || { cat "$log"; fail "stop exited $?"; }
segs=("$arch"/*.smseg)
check_only_segments "after the stop" "$arch"
check_finished "after the stop" "${segs[@]}"
loss=$(stats_dropped "${segs[@]}")
lost=$(index_lost "${segs[@]}")
[ "$loss" -ge "$after" ] || fail "STATS records hold $loss dropped events; status counted $after"
[ "$lost" -ge "$after" ] || fail "the indexes count $lost lost events, fewer than the $after write drops"
note "$rounds rounds of EIO: $after events dropped, $loss in STATS, $lost lost in the indexes;" \
	"segments salvaged: ${salvaged:-0}; nothing lost uncounted"
exit 0
