#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# stackmapctl memory against ground truth on the stackmap kernel: the
# kernel records the shipped configuration's slab events from boot
# (allocations with stacks, frees without; `stackmapctl boot-cmdline`),
# stackmapd adopts that capture, and a workload holds N pipes for 3 s while
# the daemon resets the stack map (its reset control; up to 2 s in the
# emulated guest), so the pipes' allocations and their frees lie in two
# generations. The peak must come while the pipes were held, its first
# stack must be the pipes' path with at least N objects, all freed by the
# end (check-memory.py). No stack may be resolved wrongly: every
# allocation's stack is compared with an oracle recording full stacks from
# a secondary instance (compare-oracle.py); what cannot be proved stays
# unresolved. The whole archive, the boot's capture too, reads in memory.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
N=${MEMORY_TEST_PIPES:-1000}

W=$(vm_workdir)
events=$(sed -n 's/^events = //p' "$top_srcdir/conf/stackmapd.conf")
stacks=$(sed -n 's/^stacktrace = //p' "$top_srcdir/conf/stackmapd.conf")
[ -n "$events" ] && [ -n "$stacks" ] || fail "no events and stacktrace lines in the shipped config"
# both daemons on the local clock, so that the oracle's time stamps match
cat > "$W/memory.conf" <<CONF
[trace]
events = $events
stacktrace = $stacks
stackmap = on
buffer_size = 8M
clock = local
[stackmap]
snapshot_interval = 100ms
[archive]
directory = $W/archive
sync = no
[control]
socket = /run/smtest-memory.sock
CONF
cat > "$W/oracle.conf" <<CONF
[trace]
instance = oracle
events = $stacks
stacktrace = $stacks
stackmap = off
buffer_size = 8M
clock = local
[archive]
directory = $W/oracle
sync = no
[control]
socket = /run/smtest-oracle.sock
CONF
cmdline=$("$STACKMAPCTL" boot-cmdline -c "$W/memory.conf") || fail "stackmapctl boot-cmdline failed"
note "kernel command line: $cmdline"

vm_guest "$W" --smp 2 --append "$cmdline" --timeout 600 \
	-- "$W/guest-memory.sh" "$W/memory.conf" "$W/oracle.conf" "$N" 3
guest_daemon_ok "$W" '' "$W/stackmapd.log"
guest_daemon_ok "$W" oracle "$W/oracle.log"
grep -q '^workload exit status 0' "$W/vm.log" || fail "the workload failed: $(cat "$W/workload")"

# the reset came while the pipes were held
gens=$(grep -ac 'stack map generation [0-9]* begins' "$W/stackmapd.log")
note "generations begun after the first: $gens"
[ "$gens" -ge 1 ] || fail "the stack map was not reset: $(cat "$W/stackmapd.log")"

segs=("$W"/archive/*.smseg)
[ -e "${segs[0]}" ] || fail "no segments"
# The boot's capture, which the daemon adopts, lacks a CLOCK pair (its clock
# marker cannot be written then): a wall-clock window leaves it out, and
# the workload's steps are wall-clock times. From a second before it.
opening=$(sed -n 's/^smload: opening [0-9]* \([0-9]*\)$/\1/p' "$W/workload")
[ -n "$opening" ] || fail "the workload did not say when it began: $(cat "$W/workload")"
since=$(date -u -d "@$((opening / 1000000000 - 1))" +%Y-%m-%dT%H:%M:%SZ)
# the workload's allocations (the oracle daemon holds pipes of its own to the end)
"$STACKMAPCTL" memory --comm smload --json --limit 1000 --svg "$W/curve.svg" --since "$since" \
	"${segs[@]}" > "$W/memory.json" 2> "$W/memory.err" || fail "memory failed: $(cat "$W/memory.err")"
python3 "$top_srcdir/tests/integration/check-memory.py" "$W/memory.json" "$W/curve.svg" \
	"$W/workload" "$N" || fail "memory does not match the workload"
# the reset lies between the pipes' allocation and their free (both CLOCK_REALTIME)
done_ns=$(sed -n 's/^reset done at \([0-9]*\)$/\1/p' "$W/vm.log")
closing_ns=$(sed -n 's/^smload: closing [0-9]* \([0-9]*\)$/\1/p' "$W/workload")
[ -n "$done_ns" ] && [ -n "$closing_ns" ] && [ "$done_ns" -lt "$closing_ns" ] ||
	fail "the reset did not end while the pipes were held (done ${done_ns:-?}, closing ${closing_ns:-?})"

# no stack wrong: the allocations' stacks against the oracle's full stacks
"$STACKMAPCTL" report --markers --event kmem:kmem_cache_alloc --event kmem:kmalloc "${segs[@]}" \
	> "$W/archive.report" || fail "report failed"
"$STACKMAPCTL" report --markers "$W"/oracle/*.smseg > "$W/oracle.report" || fail "oracle report failed"
python3 "$top_srcdir/tests/vm/compare-oracle.py" --archive "$W/archive.report" \
	--oracle "$W/oracle.report" --kallsyms "$W/kallsyms" --label memory \
	--min-events "$N" --max-unresolved 0.02 || fail "stacks resolved wrongly (or too few compared)"
# every allocation of the whole archive (the boot's capture too) with its
# stack or said unresolved, as report decodes them (compared above)
"$STACKMAPCTL" memory --json --limit 100000 "${segs[@]}" > "$W/all.json" 2> "$W/all.err" ||
	fail "memory of the whole archive failed: $(cat "$W/all.err")"
python3 - "$W/all.json" <<'PY' || fail "memory of the whole archive is not sound"
import json, sys
d = json.load(open(sys.argv[1]))
stacks = d["end"]["stacks"] + d["peak"]["stacks"]
unres = sum(s["objects"] for s in stacks if any("unresolved" in f for f in s["frames"]))
print("# whole archive: %d slab allocations, %d frees, %d losses (the boot's buffer filled); "
      "%d live objects shown unresolved" % (d["events"]["slab_allocations"],
      d["events"]["slab_frees"], d["gaps"]["losses"], unres))
if d["events"]["slab_allocations"] < 10000:
    sys.exit("too few allocations")
PY
exit 0
