#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Measures how many stack ids a lossless recording leaves unresolved
# around its own resets, as tests/vm/test-generations.sh does, but in
# lossless mode only and for several runs in a row (one VM at a time): a
# figure of a few hundredths of a percent needs more than one run. Not
# part of the suite.
#
#   campaign-generations.sh OUTDIR [RUNS] [SECONDS]   (default 3 runs of 8 s)
#
# Environment as for the VM tests (top_srcdir, top_builddir, or STACKMAPD to
# measure another build); RESET_INTERVAL (default 700ms) and BITS (default
# 10, ftrace_stackmap.bits) set the load on the map. OUTDIR/summary has one
# line per run: the comparison's figures, the unresolved ids by reason,
# and the median and largest reset window of the run.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

out=${1:?usage: campaign-generations.sh OUTDIR [RUNS] [SECONDS]}
runs=${2:-3}
secs=${3:-8}
mkdir -p "$out" || exit 2
need_vm
for ((n = 1; n <= runs; n++)); do
	W=$(vm_workdir)
	vm_guest "$W" --smp 2 --append "ftrace_stackmap.bits=${BITS:-10}" --timeout 900 \
		--env "RESET_INTERVAL=${RESET_INTERVAL:-700ms}" --env MIN_RESETS=8 \
		-- "$W/guest-generations.sh" "$secs" lossless > "$out/$n.guest" 2>&1
	guest_daemon_ok "$W" lossless "$W/lossless.log"
	"$STACKMAPCTL" report --markers "$W"/arch-lossless/*.smseg > "$W/lossless.report" ||
		fail "stackmapctl report failed"
	"$STACKMAPCTL" report --markers "$W"/arch-oracle/*.smseg > "$W/oracle.report" ||
		fail "stackmapctl report failed on the oracle's archive"
	line=$(python3 "$top_srcdir/tests/vm/compare-oracle.py" --archive "$W/lossless.report" \
		--oracle "$W/oracle.report" --kallsyms "$W/kallsyms" --label lossless \
		--min-events 10000 --max-unresolved 1 | grep -E '^lossless: (events|FAIL)' | tr '\n' ' ')
	reasons=$(sed -nE 's/^=> <unresolved[^:]*: ([a-z ]*).*/\1/p' "$W/lossless.report" | sort | uniq -c |
		awk '{ $1 = $1 "x"; print }' | tr '\n' ';')
	windows=$("$STACKMAPCTL" stacks "$W"/arch-lossless/*.smseg |
		sed -nE 's/^generation ([0-9]+) \(previous [0-9]+\).* window ([0-9.]+)-([0-9.]+).*/\1 \2 \3/p' |
		sort -u | awk '{ printf "%.1f\n", ($3 - $2) * 1000 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "windows %d, median %s ms, max %s ms", NR, v[int((NR + 1) / 2)], v[NR] }')
	resets=$(grep -ac 'stack map generation [0-9]* begins' "$W/lossless.log")
	echo "$n resets $resets $line| $reasons | $windows" | tee -a "$out/summary"
	[ "${KEEP_VM_WORKDIR:-}" = 1 ] || rm -rf "$W"
done
