#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Readers follow CPU hotplug: with CPU 1 offline at start, stackmapd
# records CPU 0 only; once CPU 1 comes online it is recorded without a
# restart (logged, counted in status), and it still is after going offline
# and coming back.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
# The archive and the log live on the guest's tmpfs while CPUs come and go,
# and are copied to the share once the last CPU change is over: the share
# (9p) once lost a write made while CPU 1 came online, and the file kept
# zeros in its place.
cat > "$W/hotplug.conf" <<CONF
[trace]
instance = hotplug
events = kmem:kmem_cache_alloc
stacktrace = all
buffer_size = 1M
[archive]
directory = /tmp/hotplug-guest/archive
segment_age = 1s
sync = no
[control]
socket = /run/smtest-hotplug.sock
CONF

vm_run "$W" --smp 2 --timeout 300 \
	-- "$W/guest-hotplug.sh" "$W/hotplug.conf" /run/smtest-hotplug.sock > "$W/vm.log" 2>&1
rc=$?
cat "$W/vm.log"
[ $rc -eq 0 ] || fail "the guest part failed"
grep -q '^stackmapd exit status 0' "$W/vm.log" || { cat "$W/stackmapd.log"; fail "stackmapd failed"; }
grep -q 'recording 1 CPUs' "$W/stackmapd.log" || { cat "$W/stackmapd.log"; fail "did not start with CPU 1 offline"; }
grep -q 'CPU 1 came online: recording it' "$W/stackmapd.log" ||
	{ cat "$W/stackmapd.log"; fail "CPU 1 was not picked up when it came online"; }
grep -q '"cpus_added": *1' "$W/status.json" || fail "status does not count the CPU added: $(cat "$W/status.json")"
segs=("$W"/archive/*.smseg)
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/report" || fail "stackmapctl report failed"
n1=$(grep -c 'smload.*\[001\].*kmem_cache_alloc' "$W/report")
# the load that ran after CPU 1 went offline and came back (guest time)
back=$(cat "$W/back-online") || fail "the guest did not say when CPU 1 came back"
"$STACKMAPCTL" report --since "$back" "${segs[@]}" > "$W/report-back" ||
	fail "stackmapctl report --since $back failed"
nback=$(grep -c 'smload.*\[001\].*kmem_cache_alloc' "$W/report-back")
echo "CPU 1: $n1 events of the load, $nback after it came back at $back"
[ "$n1" -ge 100 ] || fail "CPU 1 was not recorded after it came online ($n1 events)"
[ "$nback" -ge 1 ] || fail "CPU 1 was not recorded after going offline and back"
exit 0
