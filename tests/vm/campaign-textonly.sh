#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs tests/vm/test-textonly.sh again and again (one VM at a time), for a
# run that is rarely red: not part of the suite.
#
#   campaign-textonly.sh OUTDIR [MINUTES]   (default 50)
#
# Needs the same environment as the test (top_srcdir, top_builddir; run it
# from a build directory as `top_builddir=$PWD ../../tests/vm/campaign-textonly.sh`).
# Stops starting new runs after MINUTES. For every run, OUTDIR/N/ keeps the
# test's output and status and, compressed, the two reports and kallsyms, so
# that the oracle comparison can be run again on them. OUTDIR/summary has
# one line per run: number, exit status, run time, the comparison's line.
set -u
out=${1:?usage: campaign-textonly.sh OUTDIR [MINUTES]}
minutes=${2:-50}
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
test=$top_srcdir/tests/vm/test-textonly.sh
mkdir -p "$out" || exit 2
end=$(( $(date +%s) + minutes * 60 ))
n=0
while [ "$(date +%s)" -lt "$end" ]; do
	n=$((n + 1))
	d=$out/$n
	mkdir -p "$d"
	before=$(ls -d /tmp/smvm-test-textonly.* 2>/dev/null | sort)
	t0=$(date +%s)
	KEEP_VM_WORKDIR=1 "$test" > "$d/output" 2>&1
	st=$?
	t1=$(date +%s)
	after=$(ls -d /tmp/smvm-test-textonly.* 2>/dev/null | sort)
	w=$(comm -13 <(echo "$before") <(echo "$after") | tail -1)
	if [ -n "$w" ] && [ -d "$w" ]; then
		for f in lossless.report oracle.report kallsyms lossless.log vm.log; do
			[ -f "$w/$f" ] && zstd -q -3 "$w/$f" -o "$d/$f.zst"
		done
		rm -rf "$w"
	fi
	echo "$st" > "$d/status"
	line=$(grep -E '^textonly: events' "$d/output" | tail -1)
	printf '%d status %d %ds %s\n' "$n" "$st" $((t1 - t0)) "$line" >> "$out/summary"
done
echo "campaign: $n runs, $(awk '$3 != 0' "$out/summary" | wc -l) not passed; see $out/summary"
