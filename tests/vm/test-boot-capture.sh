#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# From-boot capture: the kernel starts tracing kmem_cache_alloc with the
# stack map from its command line (as `stackmapctl boot-cmdline` prints it),
# stackmapd starts later with the same configuration, adopts the map the
# boot filled, and its archive holds the events from boot on (the first
# within 2 s of uptime), the full stacks of early boot (before the map is
# published) decoded, and every stack id resolved. With subbuf_size set,
# the boot's events are kept in the kernel's one-page sub-buffers, and the
# recording goes on in 16 KiB ones in a segment of its own.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/boot.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = on
buffer_size = 16M
subbuf_size = 16K
[stackmap]
snapshot_interval = 1s
[archive]
directory = $W/archive
sync = no
[control]
socket = /run/smtest-boot.sock
CONF
cmdline=$("$STACKMAPCTL" boot-cmdline -c "$W/boot.conf") || fail "stackmapctl boot-cmdline failed"
note "kernel command line: $cmdline"

vm_guest "$W" --smp 2 --append "$cmdline" --timeout 300 \
	-- "$W/guest-record.sh" "$W/boot.conf" 3 3
guest_daemon_ok "$W" '' "$W/stackmapd.log"

segs=("$W"/archive/*.smseg)
[ -e "${segs[0]}" ] || fail "no segments"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/report" || fail "stackmapctl report failed"
"$STACKMAPCTL" stacks "${segs[@]}" | grep '^generation [0-9]* (previous' | sort -u
out=$(python3 "$top_srcdir/tests/vm/check-report.py" "$W/report" --kallsyms "$W/kallsyms" \
	--first-frame trace_event_raw_event_kmem_cache_alloc) || fail "check-report failed"
echo "$out"
read -r _ events _ ids _ full _ resolved _ unresolved _ first _ last <<<"$(head -1 <<<"$out")"
odd=$(sed -n 's/^stacks not starting at [^:]*: //p' <<<"$out")
status=0
awk -v f="$first" 'BEGIN { exit !(f < 2.0) }' || { echo "FAIL: first event at $first s, not from boot"; status=1; }
[ "$unresolved" -eq 0 ] || { echo "FAIL: $unresolved unresolved stacks"; status=1; }
[ "$full" -gt 0 ] || { echo "FAIL: no full stacks from early boot"; status=1; }
[ "$ids" -gt 0 ] || { echo "FAIL: no stack ids"; status=1; }
[ "$odd" -eq 0 ] || { echo "FAIL: $odd stacks do not start in the kmem_cache_alloc probe"; status=1; }
# the boot capture in pages of the boot's size, the rest in the configured one
sizes=$("$STACKMAPCTL" info --json "${segs[@]}" | python3 -c '
import json, sys
print(" ".join(json.loads(l)["meta"]["page_size"] for l in sys.stdin if l.strip()))')
note "page sizes of the segments: $sizes"
case "$sizes" in
"4096 16384"*) ;;
*) echo "FAIL: page sizes $sizes, not 4096 (boot capture) then 16384"; status=1 ;;
esac
# the early full stacks come first: the map is published at tracefs init
for kind in kernel_stack stack_id; do
	grep -m1 " $kind: " "$W/report" | sed -E "s/.*\] +([0-9.]+): .*/first $kind at \1 s/"
done
exit $status
