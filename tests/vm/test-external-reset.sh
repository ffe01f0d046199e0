#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Resets that stackmapd did not make: while it records with the stack map
# (and makes no reset of its own), the map is reset behind its back by
# writing to stack_map, and once by switching options/stackmap off and on.
# The daemon must notice, start a new generation, and never resolve an id
# to a wrong stack: compared with an oracle recording full stacks from a
# secondary instance. Ids it cannot prove stay unresolved: those of events
# between the last snapshot that matched (up to 100 ms before the reset)
# and the marker written once it was found, where both maps hold the id
# with different stacks (0.01 to 0.9% of the stacks in this test; at most
# 2% allowed). A wrong stack fails the test.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
SECS=${GEN_TEST_SECONDS:-8}

W=$(vm_workdir)
vm_guest "$W" --smp 2 --append 'ftrace_stackmap.bits=10' --timeout 600 \
	-- "$W/guest-generations.sh" "$SECS" external
guest_daemon_ok "$W" external "$W/external.log"

made=$(sed -n 's/.*, \([0-9]*\) made behind its back.*/\1/p' "$W/vm.log")
seen=$(grep -ac 'reset by someone else' "$W/external.log")
gens=$(grep -ac 'stack map generation [0-9]* begins (external' "$W/external.log")
note "resets made behind its back: ${made:-0}; detected: $seen; generations begun: $gens"
[ "${made:-0}" -ge 3 ] || fail "the guest made too few resets"
[ "$seen" -ge 1 ] && [ "$gens" -ge 1 ] || fail "no reset made by someone else was detected"

segs=("$W"/arch-external/*.smseg)
[ -e "${segs[0]}" ] || fail "no segments"
"$STACKMAPCTL" report --markers "$W"/arch-oracle/*.smseg > "$W/oracle.report" || fail "oracle report failed"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/external.report" || fail "report failed"
python3 "$top_srcdir/tests/vm/compare-oracle.py" --archive "$W/external.report" \
	--oracle "$W/oracle.report" --kallsyms "$W/kallsyms" --label external \
	--min-events 10000 --max-unresolved 0.02 || fail "stacks resolved wrongly (or too few events compared)"
exit 0
