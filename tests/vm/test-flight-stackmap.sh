#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The flight recorder with the stack map: its buffer is the recording, so a
# reset request must not read (and so empty) it. The reset is refused with
# a reason, and the snapshot that follows still holds the load recorded
# before it, its stacks resolved.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/flight.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = on
buffer_size = 2M
mode = flight
[archive]
directory = $W/archive
sync = no
[control]
socket = /run/smtest-flight.sock
CONF

vm_run "$W" --smp 2 --timeout 300 \
	-- "$W/guest-flight.sh" "$W/flight.conf" /run/smtest-flight.sock > "$W/vm.log" 2>&1
rc=$?
cat "$W/vm.log"
[ $rc -eq 0 ] || fail "the guest part failed"
grep -q '^stackmapd exit status 0' "$W/vm.log" || { cat "$W/stackmapd.log"; fail "stackmapd failed"; }
grep -q '^reset exit status 0' "$W/vm.log" && fail "the reset was accepted in flight mode"
grep -q 'flight mode' "$W/reset.out" || fail "the reset was refused without the reason: $(cat "$W/reset.out")"
grep -q '^snapshot exit status 0' "$W/vm.log" || fail "snapshot failed: $(cat "$W/snapshot.out")"
segs=("$W"/archive/*.smseg)
[ -e "${segs[0]}" ] || fail "no segment saved"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/report" || fail "stackmapctl report failed"
n=$(grep -c 'smload.*kmem_cache_alloc' "$W/report")
unres=$(grep -c '<unresolved' "$W/report")
echo "snapshot: $n events of the load, $unres unresolved stacks"
[ "$n" -ge 1000 ] || fail "the snapshot holds only $n events of the load: the buffer was emptied"
[ "$unres" = 0 ] || fail "$unres stacks unresolved"
exit 0
