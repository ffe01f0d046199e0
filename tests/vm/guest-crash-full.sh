#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest part of test-crash-full-disk.sh, run at every boot of one
# `run-in-vm --reboots 1` from the work directory. Boot 1 is
# guest-crash.sh's (record with CONF, a load, a last marker, a panic).
# Boot 2 starts stackmapd with its archive on a small tmpfs that a filler
# file has filled, checks that it records and keeps the previous boot's
# crash buffer unsaved and unarmed, removes the filler and waits for the
# daemon to save the capture and arm the buffer; then stops it and copies
# the archive into the work directory (archive2).
#   guest-crash-full.sh CONF SECONDS
set -u
. "$(dirname "$0")/guest-lib.sh"
W=$PWD
CONF=$1
SECS=$2

if [ "$RUN_IN_VM_BOOT" = 1 ]; then
	exec "$W/guest-crash.sh" "$CONF" panic "$SECS"
fi

cat /proc/sys/kernel/random/boot_id > "$W/boot2.id"
F=/tmp/full
mkdir -p $F
mount -t tmpfs -o size=12m tmpfs $F || { echo "cannot mount a tmpfs on $F"; exit 1; }
sed "s|^directory = .*|directory = $F/archive|" "$CONF" > "$W/full.conf"
mkdir -p $F/archive
dd if=/dev/zero of=$F/filler bs=64k 2>/dev/null
echo "filled: $(df -k $F | tail -1)"
"$W/stackmapd" -d -c "$W/full.conf" > "$W/stackmapd2.log" 2>&1 &
pid=$!
wait_recording "$W/stackmapd2.log" $pid 60
"$W/stackmapctl" status -c "$W/full.conf" > "$W/status-full.out" 2>&1
rm -f $F/filler
i=0
while ! grep -q 'saved the crash buffer of the previous boot' "$W/stackmapd2.log"; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "the capture was not saved within 30 s of the disk's room"; break; }
	kill -0 $pid 2>/dev/null || { echo "stackmapd exited"; break; }
	sleep 0.1
done
"$W/stackmapctl" status -c "$W/full.conf" > "$W/status.out" 2>&1
kill -TERM $pid
wait $pid
echo "boot 2: stackmapd exit status $?"
cp -a $F/archive "$W/archive2"
