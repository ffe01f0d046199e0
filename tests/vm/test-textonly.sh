#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A kernel with only the required stack_map text node (no stack_map_stat,
# no stack_map_bin), as later versions of the kernel series may ship:
# stackmapd reads the text export, stores symbolized stacks, still resets
# the map on its interval, and every stack it resolves matches the oracle's
# (a secondary instance recording the same events with full stacks); fewer
# than 0.5% stay unresolved (ids near a reset whose generations disagree).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
KERNEL=$KERNEL_DIR/bzImage-textonly
[ -f "$KERNEL" ] || skip "no text-only kernel ($KERNEL)"
SECS=${TEXTONLY_TEST_SECONDS:-6}

W=$(vm_workdir)
# A reset a second: the text export is slow to read (100-200 ms in the
# emulated guest with a sanitizer build), which widens each reset window.
vm_guest "$W" --smp 2 --kernel "$KERNEL" --timeout 600 --env MIN_RESETS=6 --env RESET_INTERVAL=1s \
	-- "$W/guest-generations.sh" "$SECS" lossless
guest_daemon_ok "$W" lossless "$W/lossless.log"
[ ! -s "$W/lossless.stack_map_stat" ] || fail "the kernel has stack_map_stat: not the text-only kernel"

segs=("$W"/arch-lossless/*.smseg)
[ -e "${segs[0]}" ] || fail "no segments"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/lossless.report" || fail "stackmapctl report failed"
"$STACKMAPCTL" report --markers "$W"/arch-oracle/*.smseg > "$W/oracle.report" ||
	fail "stackmapctl report failed on the oracle's archive"
texts=$("$STACKMAPCTL" stacks "${segs[@]}" | grep -cE '^  \[0\] [^ ]+\+0x[0-9a-f]+/0x[0-9a-f]+$') || true
resets=$(grep -c 'stack map generation [0-9]* begins' "$W/lossless.log")
echo "textonly: ${#segs[@]} segments, $resets resets, $texts symbolized stack entries"
[ "$resets" -ge 5 ] || fail "only $resets resets"
[ "$texts" -gt 0 ] || fail "no symbolized (text) stack entries"
python3 "$top_srcdir/tests/vm/compare-oracle.py" --archive "$W/lossless.report" \
	--oracle "$W/oracle.report" --kallsyms "$W/kallsyms" --label textonly \
	--min-events 10000 --max-unresolved 0.005
