#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A restart that leaves stack-map mode: a daemon using the kernel stack
# map is killed under load, and one configured for full stacks starts on
# the same ring buffer and keeps the events it holds, whose stacks are
# stack ids. Only the map as the first left it resolves them, and the
# second turns it off: it must store the map's stacks with the kept
# events' segment first. Every kept stack id resolves, to a stack that
# starts in a kmem probe, and the events recorded afterwards carry full
# stacks. The second daemon also switches the sub-buffer size (4K to 8K)
# once it has read the kept events, and sets its page layout up again: the
# pages it writes after that must still name its stack_ref event by the
# id of the format its segments store (no "UNKNOWN EVENT TYPE").
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
for mode in map full; do
	cat > "$W/$mode.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc kmem:kmalloc
stacktrace = all
stackmap = $([ $mode = map ] && echo on || echo off)
subbuf_size = $([ $mode = map ] && echo 4K || echo 8K)
buffer_size = 1M
[archive]
directory = $W/arch-$mode
sync = no
[control]
socket = /run/smtest-switch.sock
CONF
done

vm_guest "$W" --smp 2 --timeout 300 -- "$W/guest-mode-switch.sh"
guest_daemon_ok "$W" full "$W/full.log"

segs=("$W"/arch-full/*.smseg)
[ -e "${segs[0]}" ] || fail "the full-stack daemon wrote no segment"
"$STACKMAPCTL" report "${segs[@]}" > "$W/full.report" 2> "$W/full.report.err" ||
	fail "stackmapctl report failed: $(cat "$W/full.report.err")"
out=$(python3 "$top_srcdir/tests/vm/check-report.py" "$W/full.report" --kallsyms "$W/kallsyms" \
	--first-frame 'trace_event_raw_event_(kmem_cache_alloc|kmalloc)')
echo "$out"
read -r _ events _ ids _ full _ resolved _ unresolved _ <<<"$(head -1 <<<"$out")"
bad=
unknown=$(grep -c 'UNKNOWN EVENT TYPE' "$W/full.report") || true
[ "$unknown" -eq 0 ] || bad+="$unknown events of an unknown type ($(grep -m1 -o \
	'UNKNOWN EVENT TYPE [0-9]*' "$W/full.report")); "
[ "$ids" -gt 500 ] || bad+="only $ids stack ids kept from the stack-map daemon's buffer; "
[ "$full" -gt 500 ] || bad+="only $full full stacks recorded after the restart; "
[ "$unresolved" -eq 0 ] || bad+="$unresolved of $ids kept stack ids unresolved ($(grep -m1 -o \
	'<unresolved [^>]*>' "$W/full.report")); "
odd=$(sed -n 's/^stacks not starting at [^:]*: //p' <<<"$out")
[ "$odd" -eq 0 ] || bad+="$odd stacks do not start in a kmem probe; "
[ -z "$bad" ] || fail "${bad%; }"
