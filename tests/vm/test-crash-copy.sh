#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# After a panic with the stack map in the live recording: the recording's
# last segment is recovered at the next start without its stack map
# tables, and the crash capture holds its last events with full stacks.
# The report of the archive reads the capture's copies where both exist
# (no stack id prints unresolved where the capture has the event), the
# capture's tasks print as <...>-PID (not with the next boot's names for
# the same pids), and info dates boot 1's recording and its capture by
# their events, not by when boot 2 recovered and saved them.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-vm.sh"

need_vm
W=$(vm_workdir)
cat > "$W/crash.conf" <<CONF
[trace]
events = kmem:kmem_cache_alloc
stacktrace = all
stackmap = on
buffer_size = 1M
[archive]
directory = $W/archive
sync = no
keep_free = 0
[control]
socket = /run/smtest-crash.sock
[crash]
buffer_size = 4M
clock_interval = 100ms
CONF
cmdline=$("$STACKMAPCTL" boot-cmdline -c "$W/crash.conf") || fail "stackmapctl boot-cmdline failed"
cmdline=$(tr ' ' '\n' <<< "$cmdline" | grep -E '^(reserve_mem|trace_instance)=' | tr '\n' ' ')
t0=$(now_s)
# boot 2 runs tasks first: its saved_cmdlines then names pids that boot 1's tasks had
vm_run "$W" --smp 2 --reboots 1 --timeout 300 --append "$cmdline" --env CRASH_TASKS=150 \
	-- "$W/guest-crash.sh" "$W/crash.conf" panic 2 > "$W/vm.log" 2>&1
rc=$?
note "guest runs $(elapsed "$t0") s (exit status $rc)"
[ $rc -eq 0 ] || { cat "$W/vm.log" "$W"/stackmapd*.log; fail "the guest part failed"; }
grep -q 'boot 2: stackmapd exit status 0' "$W/vm.log" ||
	{ cat "$W/vm.log" "$W"/stackmapd*.log; fail "stackmapd failed in boot 2"; }
grep -q -l 'capture=crash' "$W"/archive/*.smseg || fail "the crash buffer was not saved"
boot1=$(cat "$W/boot1.id")

bad=
# exit status 1: the recovered segment's earlier ids stay unresolved
"$STACKMAPCTL" report --markers "$W/archive" > "$W/trace.report" 2> "$W/report.err"
[ $? -le 1 ] && [ -s "$W/trace.report" ] || { cat "$W/report.err"; fail "report failed"; }
python3 "$top_srcdir/tests/vm/check-crash-copy.py" "$W/trace.report" "$boot1" ||
	bad+="the report reads the wrong copies or names; "

"$STACKMAPCTL" info --json --summary "$W/archive" > "$W/info.json" || fail "info failed"
python3 - "$W/info.json" "$boot1" <<'PY' || bad+="info dates boot 1 by boot 2's writes; "
import json, sys
recs = json.loads(open(sys.argv[1]).readline())["recordings"]
mine = [r for r in recs if r["boot_id"] == sys.argv[2]]
boot2 = min(r["first_usec"] for r in recs if r["boot_id"] != sys.argv[2])
for r in mine:
    print("boot 1 recording %s: %.1f s to %.1f s before boot 2's recording opened" %
          (r["recording_id"][:8], (boot2 - r["first_usec"]) / 1e6, (boot2 - r["last_usec"]) / 1e6))
# both end with boot 1's last events (the recording's last flush before the
# panic, the capture's at it), well before boot 2 (a reboot of 20-50 s in
# the emulated guest) recovered the one and saved the other
sys.exit(0 if len(mine) == 2 and
         all(0 < r["first_usec"] <= r["last_usec"] < boot2 - 5000000 for r in mine) else 1)
PY
[ -z "$bad" ] || fail "${bad%; }"
