#!/bin/bash
# Capture raw ring-buffer pages with kernel stacks from this machine's
# kernel into tests/data/pages/, for the parser and transcoder unit tests.
# Needs root and tracefs; works in its own instance and removes it.
set -eu
T=${TRACEFS:-/sys/kernel/tracing}
out=$(cd "$(dirname "$0")" && pwd)/pages
inst=smcapture_$$
d=$T/instances/$inst
cleanup() {
	[ -d "$d" ] || return 0
	echo 0 > "$d/tracing_on"
	echo '!stacktrace' > "$d/events/kmem/kmem_cache_alloc/trigger" 2>/dev/null || true
	echo > "$d/set_event"
	rmdir "$d"
}
trap cleanup EXIT
mkdir -p "$out" "$d"
echo 64 > "$d/buffer_size_kb"
echo 1 > "$d/events/kmem/kmem_cache_alloc/enable"
echo 1 > "$d/events/sched/sched_switch/enable"
echo stacktrace > "$d/events/kmem/kmem_cache_alloc/trigger"
echo "capture marker" > "$d/trace_marker"
# some load on CPU 0
taskset -c 0 sh -c 'for i in $(seq 200); do cat /proc/self/stat >/dev/null; done'
echo 0 > "$d/tracing_on"
cat "$T/events/header_page" > "$out/header_page"
cat "$T/events/header_event" > "$out/header_event"
for e in ftrace/kernel_stack ftrace/print kmem/kmem_cache_alloc sched/sched_switch; do
	mkdir -p "$out/$(dirname "$e")"
	cat "$T/events/$e/format" > "$out/$e.format"
done
# whole pages, as splice would hand them (a read of trace_pipe_raw returns one page)
dd if="$d/per_cpu/cpu0/trace_pipe_raw" of="$out/cpu0.raw" bs=4096 count=16 iflag=nonblock 2>/dev/null || true
ls -l "$out"
