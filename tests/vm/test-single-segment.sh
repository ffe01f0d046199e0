#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Segments are self-contained: record with the stack map and a rotation
# every second, keep only one segment from the middle of the recording (its
# stack ids were mostly assigned while earlier segments were written), and
# it still reports with every stack resolved, each the same as when all
# segments are decoded together.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/rot.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc kmem:kmalloc
stacktrace = all
stackmap = on
buffer_size = 1M
[stackmap]
snapshot_interval = 500ms
reset_fill = 0
reset_drops = 0
[archive]
directory = $W/archive
segment_age = 1s
sync = no
[control]
socket = /run/smtest-rot.sock
CONF

vm_guest "$W" --smp 2 --timeout 300 \
	-- "$W/guest-record.sh" "$W/rot.conf" 0 6
guest_daemon_ok "$W" '' "$W/stackmapd.log"

segs=("$W"/archive/*.smseg)
n=${#segs[@]}
[ "$n" -ge 4 ] || fail "only $n segments, want at least 4"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$W/all.report" || fail "stackmapctl report failed"
mid=${segs[$((n / 2))]}
mkdir "$W/one"
mv "$mid" "$W/one/"
rm -f "$W"/archive/*.smseg
one=("$W"/one/*.smseg)
echo "kept $(basename "${one[0]}") of $n segments"
"$STACKMAPCTL" report --markers "${one[@]}" > "$W/one.report" || fail "stackmapctl report failed on the kept segment"
out=$(python3 "$top_srcdir/tests/vm/check-report.py" "$W/one.report" --kallsyms "$W/kallsyms" \
	--first-frame 'trace_event_raw_event_(kmem_cache_alloc|kmalloc)' --subset-of "$W/all.report")
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the kept segment does not read as it does among all segments"
read -r _ events _ ids _ full _ resolved _ unresolved _ <<<"$(head -1 <<<"$out")"
[ "$ids" -gt 1000 ] || fail "only $ids stack ids in the kept segment"
[ "$unresolved" -eq 0 ] || fail "$unresolved unresolved stacks in the kept segment"
odd=$(sed -n 's/^stacks not starting at [^:]*: //p' <<<"$out")
[ "$odd" -eq 0 ] || fail "$odd stacks do not start in a kmem probe"
