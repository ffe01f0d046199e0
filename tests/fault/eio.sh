#!/bin/bash
# I/O errors (EIO) on the archive's device, then the device healthy again:
# the archive on a FUSE file system (tests/fault/eiofs.py) that fails
# every write, truncate, create and rename with EIO while a switch file
# exists. A failed write is then not even cut back (ftruncate fails too),
# which leaves the segment's writer unusable. With segment_age = 0 that
# segment would never rotate: the outage must still end by itself once the
# device works again (the broken segment finished by recovery and handed
# to the hook, a new one opened), and what was dropped must be counted in
# status and recorded in the archive (STATS write_dropped_events), apart
# from what the kernel itself lost.
#
# tests/fault/dm-eio.sh does the same on a device-mapper target (error,
# then linear again), where the kernel has device-mapper.
. "$top_srcdir/tests/lib.sh"
need_tracefs
# Debian's python3 (python3-fusepy), whatever python3 comes first in PATH
pyfuse=/usr/bin/python3
"$pyfuse" -c 'import fusepy' 2> /dev/null || skip "needs python3-fusepy"
[ -c /dev/fuse ] || skip "needs /dev/fuse"
. "$top_srcdir/tests/fault/lib-fault.sh"

back=$ftmp/back mnt=$ftmp/mnt switch=$ftmp/eio-on
mkdir "$back" "$mnt"
"$pyfuse" "$top_srcdir/tests/fault/eiofs.py" "$back" "$mnt" "$switch" > "$ftmp/eiofs.log" 2>&1 &
fs_pid=$!
at_exit "kill $fs_pid"
at_exit "umount -l '$mnt'"
mounted() { mountpoint -q "$mnt"; }
wait_until 20 mounted || { cat "$ftmp/eiofs.log"; skip "cannot mount a FUSE file system"; }
arch=$mnt/archive
log=$ftmp/d.log
record_hooked "$arch" "$back/archive" "$log" archive.segment_size=64M archive.segment_age=0
first=$(find "$back/archive" -name '*.smseg.part' -printf '%f\n')

# the device fails
touch "$switch"
dropping() { [ "$(write_dropped)" -gt 1000 ] 2>/dev/null; }
wait_until 20 dropping || { ctl status; cat "$log"; fail "no events counted as dropped during EIO"; }
sleep 2
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$log"; fail "the daemon died on EIO"; }
grep -qi 'input/output error' "$log" || fail "no I/O error logged"
during=$(write_dropped)
# the device works again: recording resumes by itself
before=$(seg_bytes)
rm -f "$switch"
resumed() { ! ctl status --json | grep -q '"active": *true' && [ "$(seg_bytes)" -gt $((before + 65536)) ]; }
wait_until 20 resumed ||
	{ ctl status; tail -20 "$log"; fail "recording did not resume within 20 s after the device healed"; }
salvaged=$(status_field salvaged)
[ "${salvaged:-0}" -ge 1 ] ||
	fail "the segment a failed cut back left unusable was not finished by recovery (salvaged=${salvaged:-?})"
after=$(write_dropped)
stop_daemon || { cat "$log"; fail "stop exited $?"; }
segs=("$back/archive"/*.smseg)
check_only_segments "after the stop" "$back/archive"
check_finished "after the stop" "${segs[@]}"
# the first segment, written before the errors, was finished (normally or
# by recovery) and handed to the hook
[ -f "$back/archive/${first%.part}" ] || fail "'${first%.part}' was not finished"
grep -qF "${first%.part}" "$ftmp/hooked" || fail "'${first%.part}' was not handed to the hook"
# what was dropped is in the archive, apart from the kernel's own losses
loss=$(stats_dropped "${segs[@]}")
[ "$loss" -ge "$after" ] ||
	fail "STATS records hold $loss dropped events; status counted $after"
lost=$(index_lost "${segs[@]}")
[ "$lost" -ge "$after" ] || fail "the indexes count $lost lost events, fewer than the $after write drops"
grep -q 'works again after' "$log" || fail "no summary logged when writing resumed"
note "EIO: $after events dropped (status), $loss recorded in STATS, $lost lost in the indexes;" \
	"segments salvaged: ${salvaged:-0}"
exit 0
