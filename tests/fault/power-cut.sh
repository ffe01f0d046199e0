#!/bin/bash
# Power cuts, the way file system developers test them: the archive on a
# loop-mounted ext4 image and an XFS image, the daemon recording under load
# with small segments, frequent snapshots and retention, and at a random
# moment the file system is shut down without flushing its log
# (FS_IOC_SHUTDOWN through `xfs_io -x -c "shutdown"`: every write not yet
# on the device is lost). Then the daemon is killed, the file system
# unmounted and mounted again (journal replay), and checked: every finished
# segment verifies, each unfinished one reads up to its last complete
# record; a start and a clean stop of the daemon recover them, and nothing
# but finished segments is left.
#
#   POWER_CUTS=N   cuts per file system (default 5; tests/fault/campaign: 50)
#   POWER_FS="ext4 xfs"
#
# The images are mounted in a mount namespace of the test's own: a copy of
# the host's mount table made meanwhile (a container, unshare) would keep
# a shut-down file system alive after our umount, and the next mount of
# the image would get that dead superblock back (EIO on every file).
if [ -z "${POWER_CUT_NAMESPACE:-}" ] && command -v unshare > /dev/null; then
	POWER_CUT_NAMESPACE=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd losetup
need_cmd xfs_io
. "$top_srcdir/tests/fault/lib-fault.sh"

cuts=${POWER_CUTS:-5}
start_load 2

# mkimg FS: an image with FS on it, in $ftmp/FS.img.
mkimg() {
	# mkfs.xfs wants 300 MB at least; the image is sparse
	truncate -s 320M "$ftmp/$1.img"
	case $1 in
	ext4) need_cmd mkfs.ext4; mkfs.ext4 -q -F "$ftmp/$1.img" ;;
	xfs) need_cmd mkfs.xfs; mkfs.xfs -q -f "$ftmp/$1.img" ;;
	esac || fail "mkfs.$1 failed"
}

do_mount() {
	local mnt=$1 img=$2
	mount -o loop "$img" "$mnt" || skip "cannot loop-mount an image"
}

do_umount() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		umount "$1" 2>/dev/null && return 0
		sleep 0.5
	done
	fail "cannot unmount $1: $(fuser -vm "$1" 2>&1)"
}

# cut FS N: one power cut on file system FS.
cut() {
	local fs=$1 n=$2 mnt=$ftmp/mnt.$1 arch=$ftmp/mnt.$1/archive what="$1 cut $2" p
	local delay=$((RANDOM % 3)).$((RANDOM % 10))
	do_mount "$mnt" "$ftmp/$fs.img"
	start_recording "$ftmp/$fs.conf" "$ftmp/d.$fs.$n.log" "$what: "
	# cuts land at random; rotations (1M segments), snapshots (every 200 ms)
	# and deletions (max_segments) happen every few hundred ms under this load
	sleep "$delay"
	local req=
	case $((RANDOM % 3)) in
	0) ctl rotate > /dev/null 2>&1 & req=$! ;;
	1) ctl snapshot > /dev/null 2>&1 & req=$! ;;
	esac
	sleep "0.0$((RANDOM % 10))"
	xfs_io -x -c shutdown "$mnt" || fail "$what: shutdown ioctl failed"
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	[ -z "$req" ] || wait "$req"
	do_umount "$mnt"
	do_mount "$mnt" "$ftmp/$fs.img"
	segs=("$arch"/*.smseg)
	parts=("$arch"/*.smseg.part)
	check_finished "$what" "${segs[@]}"
	for p in "${parts[@]}"; do
		[ -s "$p" ] && check_part "$what" "$p"
	done
	note "$what (after ${delay}s): ${#segs[@]} finished, ${#parts[@]} unfinished"
	# recovery
	start_recording "$ftmp/$fs.conf" "$ftmp/r.$fs.$n.log" "$what, recovery: "
	stop_daemon || { cat "$ftmp/r.$fs.$n.log"; fail "$what: stop after recovery exited $?"; }
	grep -E '^<[0-3]>' "$ftmp/r.$fs.$n.log" && fail "$what: errors logged by the recovering start"
	check_only_segments "$what" "$arch"
	segs=("$arch"/*.smseg)
	check_finished "$what, after recovery" "${segs[@]}"
	do_umount "$mnt"
}

for fs in ${POWER_FS:-ext4 xfs}; do
	mkimg "$fs"
	mkdir -p "$ftmp/mnt.$fs"
	at_exit "umount -l '$ftmp/mnt.$fs'"
	fault_conf "$ftmp/$fs.conf" "$ftmp/mnt.$fs/archive" stackmap.snapshot_interval=200ms \
		archive.max_segments=6 archive.segment_size=1M
	for n in $(seq 1 "$cuts"); do cut "$fs" "$n"; done
done
exit 0
