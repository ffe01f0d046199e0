#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The crash buffer across a warm reboot (run-in-vm --reboots 1, the kernel
# booted with what `stackmapctl boot-cmdline` prints), for each way a boot
# can end: a kernel panic (sysrq c), an immediate reset without a clean
# stop (reboot(2) at once, as reboot -f does) and a clean stop of
# stackmapd followed by that reboot; the panic and the clean case with the
# stack map in the live recording, the reset with full stacks, the panic
# with boot capture on as well. After the next boot the archive holds a
# crash capture of boot 1: its events up to and including the marker
# written just before the end, each with its stack, under boot 1's id,
# dated within a second of boot 1's wall clock, nothing printed twice
# (check-crash.py); info and list say how the boot ended, status that
# the crash buffer is armed again, report --boot -1 --last 3s gives the
# last seconds directly, the segment hook runs for the capture, and
# stackmapd --check warns on a kernel booted without the arguments. A
# fourth case panics after the load overwrote every marker of the daemon:
# the capture is saved all the same, under the boot its armed record names.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)

# run_case NAME END STACKMAP BOOT_CAPTURE [CLOCK_INTERVAL CRASH_SIZE SECONDS LOAD]
run_case() {
	local name=$1 end=$2 stackmap=$3 boot_capture=$4 interval=${5:-100ms} size=${6:-4M}
	local secs=${7:-2} load=${8:-} d=$W/$1 cmdline t0 rc seg
	mkdir -p "$d"
	cp "$W"/stackmapd "$W"/stackmapctl "$W"/smload "$W"/guest-*.sh "$d/"
	printf '#!/bin/sh\necho "$1" >> %s/hooked.txt\n' "$d" > "$d/hook.sh"
	chmod +x "$d/hook.sh"
	# The two-CPU load wraps each CPU's 2 MiB of the crash buffer in about
	# a second, faster on a quicker host: the previous boot is known by the
	# clock markers, so they are written ten times a second (a CPU kept
	# as little as 0.37 s in one run).
	cat > "$d/crash.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = $stackmap
buffer_size = 1M
[archive]
directory = $d/archive
sync = no
keep_free = 0
hook = $d/hook.sh
[control]
socket = /run/smtest-crash.sock
[crash]
buffer_size = $size
clock_interval = $interval
CONF
	cmdline=$("$STACKMAPCTL" boot-cmdline -c "$d/crash.conf") ||
		fail "stackmapctl boot-cmdline failed"
	case "$cmdline" in
	*reserve_mem=$size:4096:stackmapd_crash*trace_instance=stackmapd_crash^traceoff@stackmapd_crash,kmem:kmem_cache_alloc*) ;;
	*) fail "boot-cmdline has no crash buffer arguments: $cmdline" ;;
	esac
	# the panic with everything boot-cmdline prints (boot capture too: its probes
	# come first); the others with the crash buffer's arguments only, boot capture
	# slows the boot several times
	[ "$boot_capture" = yes ] ||
		cmdline=$(tr ' ' '\n' <<< "$cmdline" | grep -E '^(reserve_mem|trace_instance)=' |
			  tr '\n' ' ')
	t0=$(now_s)
	vm_run "$d" --smp 2 --reboots 1 --timeout 300 --append "$cmdline" \
		-- "$d/guest-crash.sh" "$d/crash.conf" "$end" "$secs" $load > "$d/vm.log" 2>&1
	rc=$?
	note "$name: guest runs $(elapsed "$t0") s (exit status $rc)"
	[ $rc -eq 0 ] || { cat "$d/vm.log" "$d"/stackmapd*.log; fail "$name: the guest part failed"; }
	# not anchored: after a warm reboot the guest's output may begin with stale bytes
	grep -q 'boot 2: stackmapd exit status 0' "$d/vm.log" ||
		{ cat "$d/vm.log" "$d"/stackmapd*.log; fail "$name: stackmapd failed in boot 2"; }
	grep -q -l 'capture=crash' "$d"/archive/*.smseg ||
		{ cat "$d/stackmapd2.log"; fail "$name: the crash buffer was not saved"; }

	# exit status 1 when stack ids are unresolved: the live segment the panic cut
	# short lost its stack-map tables (the capture's full stacks are checked)
	TZ=UTC "$STACKMAPCTL" report --wall "$d/archive" > "$d/wall.report" 2>"$d/report.err"
	[ $? -le 1 ] && [ -s "$d/wall.report" ] ||
		{ cat "$d/report.err"; fail "$name: report of the archive failed"; }
	"$STACKMAPCTL" report "$d/archive" > "$d/trace.report" 2>>"$d/report.err"
	[ $? -le 1 ] && [ -s "$d/trace.report" ] || fail "$name: report of the archive failed"
	python3 "$top_srcdir/tests/vm/check-crash.py" "$d/wall.report" "$d/trace.report" \
		"$(cat "$d/boot1.id")" "$(cat "$d/last-marker.txt")" ||
		fail "$name: the crash capture is not as it should be"

	seg=$(grep -l 'capture=crash' "$d"/archive/*.smseg | head -1)
	[ -n "$seg" ] || fail "$name: no segment is marked as a crash capture"
	"$STACKMAPCTL" info --json "$d"/archive/*.smseg > "$d/info.json" 2>/dev/null
	python3 - "$d/info.json" "$(cat "$d/boot1.id")" <<'PY' && note "$name: the capture's first clock pair is older than boot 1's recording"
import json, sys
segs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = [s.get("meta", {}) for s in segs if s.get("meta", {}).get("boot_id") == sys.argv[2]]
cap = [int(x.get("capture_first_usec", 0)) for x in m if x.get("capture")]
live = [int(x.get("opened_usec", 0)) for x in m if not x.get("capture")]
sys.exit(0 if cap and live and 0 < min(cap) < min(live) else 1)
PY
	grep -qx "$seg" "$d/hooked.txt" ||
		fail "$name: the hook did not run for the capture: $(cat "$d/hooked.txt" 2>&1)"
	TZ=UTC "$STACKMAPCTL" info "$seg" > "$d/info" || fail "$name: info failed"
	if [ "$name" = lost ]; then
		grep -q 'named by the armed record' "$d/stackmapd2.log" ||
			{ cat "$d/stackmapd2.log"; fail "$name: a marker was left: the case needs none"; }
		grep -q '^capture: *previous boot .*, its markers overwritten: ended at ' "$d/info" ||
			{ cat "$d/info"; fail "$name: info does not say the markers were overwritten"; }
	elif [ "$end" = clean ]; then
		grep -q '^capture: *previous boot .*, the daemon stopped cleanly at ' "$d/info" ||
			{ cat "$d/info"; fail "$name: info does not say the daemon stopped cleanly"; }
	else
		grep -q '^capture: *previous boot .*, ended without a clean stop at ' "$d/info" ||
			{ cat "$d/info"; fail "$name: info does not say the boot ended without a clean stop"; }
	fi
	grep '^capture:' "$d/info"
	grep -q 'configuration is valid' "$d/check.out" && ! grep -q 'crash.buffer_size:' "$d/check.out" ||
		{ cat "$d/check.out"; fail "$name: --check in the guest: $(cat "$d/check.out")"; }
	grep -q '^  crash capture: previous boot ' "$d/list.out" ||
		{ cat "$d/list.out"; fail "$name: list does not show the crash capture"; }
	grep -q 'crash_buffer: *armed' "$d/status.out" ||
		{ cat "$d/status.out"; fail "$name: status does not say the crash buffer is armed"; }
	grep -q 'crash_captured: *1' "$d/status.out" ||
		{ cat "$d/status.out"; fail "$name: status does not count the capture"; }
	# the last seconds of the previous boot, asked for directly
	"$STACKMAPCTL" report --events --boot -1 --last 3s "$d/archive" > "$d/last.report" 2>/dev/null
	grep -q "crash-test-last-marker $(cat "$d/boot1.id")" "$d/last.report" ||
		fail "$name: report --boot -1 --last 3s has not the last marker"
	! grep -q "^# host .* boot $(cat "$d/boot2.id")" "$d/last.report" ||
		fail "$name: report --boot -1 holds the next boot"
}

# a kernel booted without the arguments (this machine's): --check says so, the file is valid
if [ -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/tracing/instances/stackmapd_crash ]; then
	printf '[crash]\nbuffer_size = 4M\n' > "$W/check.conf"
	"$STACKMAPD" --check -c "$W/check.conf" > "$W/check.out" 2>&1 ||
		{ cat "$W/check.out"; fail "--check refused a valid file"; }
	grep -q 'crash.buffer_size: the kernel was not booted with the crash buffer' "$W/check.out" ||
		{ cat "$W/check.out"; fail "--check does not say the kernel lacks the crash buffer"; }
fi

run_case panic panic on yes
# a short load: the buffer does not wrap, and the capture's first clock pair,
# written when the crash buffer was armed, is older than the opening of boot
# 1's own recording; the capture must still come after that recording
run_case reset reset off no 100ms 4M 0.5
run_case clean clean on no
# every marker overwritten: one clock marker in ten minutes, a buffer the load wraps
# many times over on every CPU (a load on each); the armed record names the boot
run_case lost panic on no 10min 1M 3 pinned
exit 0
