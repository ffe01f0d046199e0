#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The oracle comparison of the QEMU stack-map tests (tests/vm/compare-oracle.py)
# on two small reports made up here: it must not pair an event with a
# neighbour of the same fields. At the start of a recording, a daemon's
# own thread allocates the same object at the same call site for an
# openat and a rename a fraction of a millisecond apart; when the oracle
# lacks the archive's first event, its next call is the only candidate.
# The usual offset between the two recordings (6 us here, from the other
# events) says it is not the same hit: the pair would count a right stack
# as wrong.
#
# Two more cases: in a load's loop, the same task allocates a file at the
# same call site for a socket and then for an open, a few tens of
# microseconds apart, and the same object (a file freed and allocated
# again) makes their fields equal. The oracle's copy of the socket's
# event is in the long tail of the offsets (an interrupt between the two
# probes: 80 us early), the open's is 38 us later: close in time, but on
# the side the offsets never reach (the oracle's probe runs first), so
# it is not the same hit and must not count as a wrong stack. And a stack
# that is really wrong, at the usual offset, must still fail. Needs
# python3 only.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
COMPARE=$top_srcdir/tests/vm/compare-oracle.py
command -v python3 > /dev/null || { echo "SKIP: needs python3"; exit 77; }

tmp=$(mktemp -d /tmp/smtest-compare-oracle.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
echo "ffffffff81000000 T _stext" > "$tmp/kallsyms"

# common OFFSET_US: the events both reports hold, each 1 ms apart, OFFSET_US
# later in the oracle; every one has its own fields and a stack
common() {
	awk -v off="$1" 'BEGIN {
		for (i = 0; i < 60; i++) {
			t = 1.0 + i / 1000 + off / 1e6
			printf "           load-300   [000] %12.6f: kmem_cache_alloc: call_site=f%d+0x10 ptr=0x%x\n", t, i, 4096 + i
			printf "           load-300   [000] %12.6f: kernel_stack: <stack trace >\n", t + 0.000005
			printf "=> kmem_cache_alloc_noprof (ffffffff81000100)\n=> f%d (ffffffff81000200)\n", i
		}
	}'
}
# the daemon's rename, the first event of the archive
{
	printf '       stackmapd-291   [000]     0.999000: kmem_cache_alloc: call_site=getname_flags+0x2a ptr=0x1\n'
	printf '       stackmapd-291   [000]     0.999005: kernel_stack: <stack trace >\n'
	printf '=> kmem_cache_alloc_noprof (ffffffff81000100)\n=> getname_flags (ffffffff81000300)\n'
	printf '=> __x64_sys_rename (ffffffff81000400)\n'
	common 0
} > "$tmp/archive.report"
# the oracle lacks it, and has the openat that follows it, same fields
{
	printf '       stackmapd-291   [000]     0.999198: kmem_cache_alloc: call_site=getname_flags+0x2a ptr=0x1\n'
	printf '       stackmapd-291   [000]     0.999203: kernel_stack: <stack trace >\n'
	printf '=> kmem_cache_alloc_noprof (ffffffff81000100)\n=> getname_flags (ffffffff81000300)\n'
	printf '=> __x64_sys_openat (ffffffff81000500)\n'
	common -6
} > "$tmp/oracle.report"

out=$(python3 "$COMPARE" --archive "$tmp/archive.report" --oracle "$tmp/oracle.report" \
	--kallsyms "$tmp/kallsyms" --min-events 50 2>&1)
st=$?
echo "$out"
if [ $st != 0 ] || ! grep -q 'matched 60 .* WRONG 0 ' <<<"$out"; then
	echo "FAIL: check-compare-oracle: the daemon's rename was paired with its openat, or the" \
		"common events were not all matched (exit status $st)"
	exit 1
fi

# loop WRONG_AT: 200 events of a load, each 1 ms apart, and the oracle's
# copy (loop.oracle): 6-12 us earlier, every 25th 60 or 100 us earlier;
# the archive's stack of event WRONG_AT (-1: none) is not the oracle's
loop() {
	awk -v out="$tmp/loop" -v wrong="$1" 'BEGIN {
		for (i = 0; i < 200; i++) {
			t = 2.0 + i / 1000
			off = i % 50 == 0 ? 100 : i % 50 == 25 ? 60 : 6 + i % 7
			for (r = 0; r < 2; r++) {
				f = out (r ? ".oracle" : ".archive")
				ts = t - (r ? off / 1e6 : 0)
				printf "           load-300   [000] %12.6f: kmem_cache_alloc: call_site=f%d+0x10 ptr=0x%x\n", ts, i, 4096 + i > f
				printf "           load-300   [000] %12.6f: kernel_stack: <stack trace >\n", ts + 0.000005 > f
				printf "=> kmem_cache_alloc_noprof (ffffffff81000100)\n=> f%d (ffffffff81000200)\n", i > f
				if (!r && i == wrong)
					printf "=> __x64_sys_rename (ffffffff81000400)\n" > f
			}
		}
	}'
}
# file EVENT_TS STACK_TS CALLER SYSCALL: a file allocated by the load
file() {
	printf '           load-300   [000] %12.6f: kmem_cache_alloc: call_site=alloc_empty_file+0x4e ptr=0xf00\n' "$1"
	printf '           load-300   [000] %12.6f: kernel_stack: <stack trace >\n' "$2"
	printf '=> kmem_cache_alloc_noprof (ffffffff81000100)\n=> alloc_empty_file (ffffffff81000300)\n'
	printf '=> %s (ffffffff81000600)\n=> %s (ffffffff81000500)\n' "$3" "$4"
}
loop -1
{
	cat "$tmp/loop.archive"
	file 2.2000 2.200005 sock_alloc_file __sys_socket
	file 2.200047 2.200052 path_openat do_sys_openat2
} > "$tmp/archive.report"
{
	cat "$tmp/loop.oracle"
	file 2.199920 2.199925 sock_alloc_file __sys_socket
	file 2.200038 2.200043 path_openat do_sys_openat2
} > "$tmp/oracle.report"
out=$(python3 "$COMPARE" --archive "$tmp/archive.report" --oracle "$tmp/oracle.report" \
	--kallsyms "$tmp/kallsyms" --min-events 50 2>&1)
st=$?
echo "$out"
if [ $st != 0 ] || ! grep -q ' WRONG 0 ' <<<"$out"; then
	echo "FAIL: check-compare-oracle: the load's socket was paired with its open," \
		"38 us later on the side the offsets never reach (exit status $st)"
	exit 1
fi

loop 120
out=$(python3 "$COMPARE" --archive "$tmp/loop.archive" --oracle "$tmp/loop.oracle" \
	--kallsyms "$tmp/kallsyms" --min-events 50 2>&1)
st=$?
echo "$out"
if [ $st != 1 ] || ! grep -q 'matched 200 .* WRONG 1 ' <<<"$out"; then
	echo "FAIL: check-compare-oracle: a wrong stack was not reported (exit status $st)"
	exit 1
fi
exit 0
