#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The kernel never warns because of the daemon's changes to the ring
# buffer. Recordings one after the other on one boot, the top-level buffer
# never cleared between them: the stack map with 1M (stopped), full stacks
# with 1M (stopped), the stack map with 32K paused for 0.5 s under load so
# that the buffer overruns; then full stacks with 1M and 16K sub-buffers,
# paused. Each start and each stop resizes the buffer and changes its
# sub-buffer size; done while the buffer holds pages, that leaves the
# kernel's page counts wrong, and Linux 6.12 then warns in
# ring_buffer_nr_dirty_pages at the next overrun (the first three alone
# did, 4 times of 4). lib-vm.sh fails the test on any WARNING, BUG or
# Oops in the guest's kernel log; each daemon must exit 0.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cases=(map1m:on:1M:auto:stop full1m:off:1M:auto:stop map32k:on:32K:auto:pause
       full1m-16k:off:1M:16K:pause)
vm_guest "$W" --smp 2 --timeout 300 -- "$W/guest-resize.sh" "${cases[@]}"
for c in "${cases[@]}"; do
	guest_daemon_ok "$W" "${c%%:*}" "$W/stackmapd-${c%%:*}.log"
done
grep -q 'dropped\|lost' "$W/stackmapd-map32k.log" ||
	note "map32k: the daemon logged no loss for the pause"
