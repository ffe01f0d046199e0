#!/bin/sh
# Capture the stack-map fixtures in this directory from the stackmap test
# kernel. Run on the host:
#   run-in-vm --append 'ftrace_stackmap.bits=10' --share "$PWD" -- \
#       tests/data/stackmap/capture.sh tests/data/stackmap
# then on the host, keep only the kallsyms lines the stacks need:
#   tests/data/stackmap/kallsyms-subset.py stack_map_bin kallsyms.full > kallsyms
#   rm kallsyms.full
# In the guest: kmem_cache_alloc with stack ids plus the function tracer on
# schedule with func_stack_trace (trampoline frames), then copy the exports.
set -eu
out=${1:?output directory}
T=/sys/kernel/tracing
cd "$T"
echo 0 > tracing_on
echo 1 > options/stackmap
echo 1 > options/stacktrace
echo 1 > events/kmem/kmem_cache_alloc/enable
echo schedule > set_ftrace_filter
echo function > current_tracer
echo 1 > options/func_stack_trace
echo 1 > tracing_on
i=0
while [ $i -lt 20 ]; do
	ls -R /usr/share/doc > /dev/null 2>&1 || true
	cat /proc/self/status > /dev/null
	sleep 0.01
	i=$((i + 1))
done
echo 0 > tracing_on
cat stack_map > "$out/stack_map"
cat stack_map_stat > "$out/stack_map_stat"
cat stack_map_bin > "$out/stack_map_bin"
grep -o '<stack_id [0-9]*>' trace | sort | uniq -c | sort -rn > "$out/trace-ids"
cat /proc/kallsyms > "$out/kallsyms.full"
uname -r > "$out/kernel-release"
echo 0 > options/func_stack_trace
echo nop > current_tracer
echo > set_ftrace_filter
echo 0 > events/kmem/kmem_cache_alloc/enable
echo 0 > options/stacktrace
echo 0 > options/stackmap
