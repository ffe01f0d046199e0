#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The crash buffer survives a start on a full disk. Boot 1 records with a
# crash buffer, runs a load, writes a last marker and panics (run-in-vm
# --reboots 1); boot 2 starts stackmapd with its archive on a small tmpfs
# that a filler file has filled. The daemon records (an outage without a
# segment), leaves the previous boot's black box unsaved and unarmed
# (status says so), and once the filler is gone saves it and arms the
# buffer: the archive then holds boot 1's capture, whose last seconds hold
# the last marker. Before, the start drained the buffer into no segment
# and armed it: the capture was lost.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/crash.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = on
buffer_size = 1M
[archive]
directory = $W/archive
sync = no
keep_free = 0
[control]
socket = /run/smtest-crash-full.sock
[crash]
buffer_size = 4M
clock_interval = 100ms
CONF
cmdline=$("$STACKMAPCTL" boot-cmdline -c "$W/crash.conf" | tr ' ' '\n' |
	  grep -E '^(reserve_mem|trace_instance)=' | tr '\n' ' ') ||
	fail "stackmapctl boot-cmdline failed"
t0=$(now_s)
vm_run "$W" --smp 2 --reboots 1 --timeout 300 --append "$cmdline" \
	-- "$W/guest-crash-full.sh" "$W/crash.conf" 2 > "$W/vm.log" 2>&1
rc=$?
note "guest runs $(elapsed "$t0") s (exit status $rc)"
[ $rc -eq 0 ] || { cat "$W/vm.log" "$W"/stackmapd*.log; fail "the guest part failed"; }
grep -q 'boot 2: stackmapd exit status 0' "$W/vm.log" ||
	{ cat "$W/vm.log" "$W"/stackmapd*.log; fail "stackmapd failed in boot 2"; }
seg=$(grep -l 'capture=crash' "$W"/archive2/*.smseg 2>/dev/null | head -1)
[ -n "$seg" ] || { cat "$W/stackmapd2.log"; fail "the crash buffer was not saved"; }
grep -q "cannot save the crash buffer of the previous boot .* no room" "$W/stackmapd2.log" ||
	{ cat "$W/vm.log" "$W/stackmapd2.log"; fail "the disk was not full at the start"; }
grep -q 'waits for room' "$W/status-full.out" ||
	{ cat "$W/status-full.out"; fail "status does not say the crash buffer waits for room"; }
grep -q 'crash_buffer: *armed' "$W/status.out" ||
	{ cat "$W/status.out" "$W/stackmapd2.log"; fail "the crash buffer was not armed once saved"; }
"$STACKMAPCTL" info "$seg" | grep '^capture:'
"$STACKMAPCTL" report --events --boot -1 --last 3s "$W/archive2" > "$W/last.report" 2>/dev/null
grep -q "crash-test-last-marker $(cat "$W/boot1.id")" "$W/last.report" ||
	{ head -20 "$W/last.report"; fail "the capture's last seconds lack the last marker"; }
events=$(grep -c 'kmem_cache_alloc' "$W/last.report")
note "the last 3 s of boot 1 in the capture: $events kmem events"
[ "$events" -gt 100 ] || fail "only $events events in the capture's last seconds"
