#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# An archive that spans two boots: the guest records, reboots (a second
# run-in-vm on the same work directory) and records again into the same
# archive. Reading the directory labels each boot with its own boot id and
# decodes them one after the other; a wall-clock window from the first
# boot's recording to the second one's prints events of both boots, and a
# window after the first boot prints only the second.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/boots.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
buffer_size = 1M
[archive]
directory = $W/archive
segment_age = 1s
sync = no
[control]
socket = /run/smtest-boots.sock
CONF

for boot in 1 2; do
	t0=$(now_s)
	vm_run "$W" --smp 2 --timeout 300 \
		-- "$W/guest-record.sh" "$W/boots.conf" 0 2 > "$W/vm$boot.log" 2>&1
	rc=$?
	note "boot $boot: $(elapsed "$t0") s (exit status $rc)"
	[ $rc -eq 0 ] || { cat "$W/vm$boot.log"; fail "the guest part of boot $boot failed"; }
	grep -q '^stackmapd exit status 0' "$W/vm$boot.log" ||
		{ cat "$W/stackmapd.log"; fail "stackmapd failed in boot $boot"; }
done
export TZ=UTC

"$STACKMAPCTL" report --markers --wall --events "$W/archive" > "$W/all.report" || fail "report of the archive failed"
mapfile -t boots < <(sed -n 's/^# host .* boot \([^ ]*\) recording .*/\1/p' "$W/all.report")
[ ${#boots[@]} = 2 ] || fail "want 2 labelled recordings, got ${#boots[@]}: $(grep '^#' "$W/all.report")"
[ "${boots[0]}" != "${boots[1]}" ] || fail "both recordings carry boot id ${boots[0]}"

# dates of the first and last kmem event of each boot
dates() {
	awk -v want="$2" '/^# host/ { n++ } n == want && / kmem_cache_alloc: / {
		sub(/.*\] /, ""); sub(/: kmem_cache_alloc:.*/, ""); print }' "$1"
}
first1=$(dates "$W/all.report" 1 | head -1)
last1=$(dates "$W/all.report" 1 | tail -1)
first2=$(dates "$W/all.report" 2 | head -1)
last2=$(dates "$W/all.report" 2 | tail -1)
[ -n "$first1" ] && [ -n "$first2" ] || fail "a boot has no kmem events"
note "boot 1: $first1 .. $last1; boot 2: $first2 .. $last2"
[[ $last1 < $first2 ]] || fail "the second boot's events are not later than the first's"

# DATE +-SECONDS as ISO 8601 UTC (printed dates are cut to microseconds)
iso() {
	python3 -c 'import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%d %H:%M:%S.%f")
print((t + datetime.timedelta(seconds=float(sys.argv[2]))).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))' "$1" "$2"
}
# a window over the end of the first boot and the start of the second
"$STACKMAPCTL" report --markers --wall --events --since "$(iso "$last1" -0.5)" \
	--until "$(iso "$first2" 0.5)" "$W/archive" > "$W/both.report" ||
	fail "report of the window over both boots failed"
n1=$(dates "$W/both.report" 1 | wc -l)
n2=$(dates "$W/both.report" 2 | wc -l)
[ "$n1" -ge 1 ] && [ "$n2" -ge 1 ] || fail "the window holds $n1 events of boot 1 and $n2 of boot 2"
# a window after the first boot: only the second one's events
"$STACKMAPCTL" report --markers --wall --events --since "$(iso "$first2" -0.001)" "$W/archive" \
	> "$W/second.report" || fail "report of the second boot's window failed"
total2=$(dates "$W/all.report" 2 | wc -l)
got=$(grep -c ' kmem_cache_alloc: ' "$W/second.report")
[ "$got" = "$total2" ] || fail "the second boot's window holds $got kmem events, the boot $total2"
exit 0
