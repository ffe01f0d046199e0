#!/bin/bash
# Startup failures: each case starts the daemon on a broken archive or
# environment and checks that it either starts properly or fails cleanly:
# a clear error line, exit status 1 (78 for configuration), never a crash
# (exit 139 or another signal), never a hang (it exits by itself, or at
# least on SIGTERM), no tracefs instance left behind and the tracefs state
# unchanged; files it cannot prove are its own segments are moved aside,
# not deleted. Every failing case is reported, not only the first.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd unshare
. "$top_srcdir/tests/fault/lib-fault.sh"

failures=()
bad() { failures+=("$1: $2"); echo "not ok: $1: $2"; }
inst_dir=$TRACEFS/instances/$FINST

# run_case NAME DIR WANT [EXTRA CONF...]: start the daemon on archive DIR;
# WANT is "start" (it must start, then stop cleanly) or an exit status.
# Sets RC and LOG.
run_case() {
	local name=$1 dir=$2 want=$3 before after t
	shift 3
	fault_conf "$ftmp/$name.conf" "$dir" "$@"
	LOG=$ftmp/$name.log
	before=$(tracefs_state)
	"$STACKMAPD" -c "$ftmp/$name.conf" > "$LOG" 2>&1 &
	local pid=$!
	at_exit "kill -9 $pid"
	RC=
	for ((t = 0; t < 100; t++)); do
		kill -0 $pid 2>/dev/null || break
		grep -Eq 'recording [0-9]+ CPUs' "$LOG" && break
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null && ! grep -Eq 'recording [0-9]+ CPUs' "$LOG"; then
		bad "$name" "neither started nor exited in 10 s ($(tail -n 1 "$LOG"))"
		kill -TERM $pid
		sleep 2
		kill -0 $pid 2>/dev/null && { bad "$name" "deaf to SIGTERM"; kill -9 $pid; }
	elif kill -0 $pid 2>/dev/null; then
		kill -TERM $pid
	fi
	wait $pid
	RC=$?
	if [ "$want" = start ]; then
		grep -Eq 'recording [0-9]+ CPUs' "$LOG" || bad "$name" "did not start: $(grep '^<[0-3]>' "$LOG" | head -n 1)"
		[ "$RC" = 0 ] || bad "$name" "stop exited $RC"
	else
		[ "$RC" = "$want" ] || bad "$name" "exit status $RC, expected $want: $(grep '^<[0-3]>' "$LOG" | head -n 2 | tr '\n' ' ')"
		[ "$(grep -c '^<[0-3]>' "$LOG")" -ge 1 ] || bad "$name" "no error logged"
	fi
	[ ! -d "$inst_dir" ] || { bad "$name" "tracefs instance left behind"; remove_instance "$FINST"; }
	after=$(tracefs_state)
	[ "$before" = "$after" ] || bad "$name" "tracefs state changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 3 | tr '\n' ' ')"
}

# 1. missing directory, with parents: created like mkdir -p, mode 0750
run_case missing "$ftmp/m/a/b" start
[ -d "$ftmp/m/a/b" ] && [ "$(stat -c %a "$ftmp/m/a/b")" = 750 ] ||
	bad missing "the directory was not created with its parents, mode 0750"

# 2. not creatable: the parent is a file
touch "$ftmp/file"
run_case not-creatable "$ftmp/file/archive" 1

# 3. a missing directory on a read-only file system
mkdir "$ftmp/ro"
mount -t tmpfs -o size=1M,ro tmpfs "$ftmp/ro" || skip "cannot mount a tmpfs"
at_exit "umount -l '$ftmp/ro'"
run_case read-only "$ftmp/ro/archive" 1

# 4. a garbage .part: moved aside (kept), logged
mkdir "$ftmp/g"
head -c 5000 /dev/urandom > "$ftmp/g/00000001-20260101T000000.smseg.part"
cp "$ftmp/g/00000001-20260101T000000.smseg.part" "$ftmp/garbage.orig"
run_case garbage-part "$ftmp/g" start
found=$(find "$ftmp/g" -type f -exec cmp -s "$ftmp/garbage.orig" {} \; -print | head -n 1)
[ -n "$found" ] || bad garbage-part "the garbage file was deleted"
[ "$found" != "$ftmp/g/00000001-20260101T000000.smseg.part" ] ||
	bad garbage-part "the garbage file was left under its segment name"
grep -q '00000001-20260101T000000' "$LOG" || bad garbage-part "nothing logged about it"

# 5. a FIFO named like a segment being written
mkdir "$ftmp/f"
mkfifo "$ftmp/f/00000001-20260101T000000.smseg.part"
run_case fifo "$ftmp/f" start
[ -p "$(find "$ftmp/f" -type p | head -n 1)" ] || bad fifo "the FIFO was deleted"

# 6. a .part that is a directory
mkdir -p "$ftmp/d/00000001-20260101T000000.smseg.part"
run_case part-dir "$ftmp/d" start
[ -n "$(find "$ftmp/d" -mindepth 1 -type d | head -n 1)" ] || bad part-dir "the directory was deleted"

# 7. the control socket in use by a live daemon
mkdir "$ftmp/s1"
fault_conf "$ftmp/live.conf" "$ftmp/s1"
start_recording "$ftmp/live.conf" "$ftmp/live.log"
live=$DAEMON_PID
FINST_SAVE=$FINST
FINST=$(new_instance_name)
inst_dir=$TRACEFS/instances/$FINST
run_case socket-in-use "$ftmp/s2" 1
ctl status > /dev/null 2>&1 || bad socket-in-use "the running daemon no longer answers on its socket"
kill -TERM $live; wait $live
FINST=$FINST_SAVE
inst_dir=$TRACEFS/instances/$FINST

# 8. tracefs not mounted and not mountable (a mount namespace of its own)
cat > "$ftmp/nons.sh" <<EOS
umount -l /sys/kernel/tracing 2>/dev/null
umount -l /sys/kernel/debug/tracing 2>/dev/null
mount -t tmpfs -o ro,size=4k tmpfs /sys/kernel/tracing || exit 99
exec "$STACKMAPD" -c "$ftmp/nons.conf"
EOS
fault_conf "$ftmp/nons.conf" "$ftmp/n"
rc=0
timeout -s TERM 8 unshare -m --propagation private bash "$ftmp/nons.sh" > "$ftmp/nons.log" 2>&1 || rc=$?
case $rc in
1) ;;
99) note "cannot hide tracefs in a mount namespace" ;;
124) grep -q 'recording' "$ftmp/nons.log" && note "no-tracefs: the daemon mounted tracefs itself" ||
	bad no-tracefs "hangs: $(head -n 2 "$ftmp/nons.log" | tr '\n' ' ')" ;;
*) bad no-tracefs "exit status $rc, expected 1: $(head -n 2 "$ftmp/nons.log" | tr '\n' ' ')" ;;
esac
[ "$rc" = 99 ] || [ "$rc" = 124 ] || [ "$(grep -c '^<[0-3]>' "$ftmp/nons.log")" -ge 1 ] || bad no-tracefs "no error logged"

# 9. a configuration error: 78
run_case bad-config "$ftmp/c" 78 archive.segment_size=12
if [ ${#failures[@]} -gt 0 ]; then
	for f in "${failures[@]}"; do echo "FAIL: $TEST_NAME: $f" >&2; done
	exit 1
fi
exit 0
