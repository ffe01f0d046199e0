#!/bin/bash
# The segment hook ([archive] hook): it runs once for every finished
# segment (rotations, snapshots, the last one at the stop) with the
# segment's final path, which exists and verifies by then; it runs as an
# ordinary program (no signal blocked, none of the daemon's files open),
# started without a shell: its words are split at blanks with no quoting,
# and the segment path is one argument whatever characters it holds. A
# hook that fails or hangs never stops recording: the daemon logs a
# warning and goes on finishing segments, and stops without waiting for
# it.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
chmod 755 "$tmp"
private_load "$tmp"
CTL_SOCKET=$tmp/control

# conf NAME: record into $tmp/NAME with the hook $tmp/NAME.hook; the
# daemon creates the instance (and must remove it at the stop).
conf() {
	inst=$(new_instance_name)
	write_config "$tmp/stackmapd.conf" <<-EOF
	[trace]
	instance = $inst
	events = kmem:kmem_cache_alloc sched:sched_switch sched:sched_wakeup
	stacktrace = kmem:kmem_cache_alloc
	filter.kmem:kmem_cache_alloc = COMM == "$LOAD_COMM"
	filter.sched:sched_switch = COMM == "$LOAD_COMM"
	filter.sched:sched_wakeup = COMM == "$LOAD_COMM"
	buffer_size = 4M
	[archive]
	directory = $tmp/$1
	segment_size = 1M
	max_size = 0
	keep_free = 0
	hook = $tmp/$1.hook
	[control]
	socket = $tmp/control
	EOF
}

# hook NAME BODY: the hook script of NAME. It records its argument in
# $tmp/NAME.hooked, then runs BODY.
hook() {
	cat > "$tmp/$1.hook" <<-EOF
	#!/bin/sh
	echo "\$1" >> "$tmp/$1.hooked"
	$2
	EOF
	chmod 755 "$tmp/$1.hook"
}

# run NAME N: start the daemon of NAME and wait until N segments are
# finished. The load fills a 1 MiB segment in 4 to 5 s on a busy machine:
# a rotation is asked for each second, so that N does not depend on it.
run() {
	start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.$1.log"
	wait_until 60 finished_rotating "$1" "$2" || fail "$1: fewer than $2 segments finished in a minute"
}
finished() {
	kill -0 "$DAEMON_PID" || { cat "$tmp/daemon.$1.log"; fail "$1: the daemon died"; }
	[ "$(grep -c 'finished segment' "$tmp/daemon.$1.log")" -ge "$2" ]
}
last_rotate=0
finished_rotating() {
	finished "$@" && return 0
	if [ "$SECONDS" != "$last_rotate" ]; then
		last_rotate=$SECONDS
		ctl rotate > /dev/null 2>&1
	fi
	return 1
}

# wait_lines FILE N: wait (at most 10 s) until FILE has N lines.
has_lines() { [ "$(cat "$1" 2>/dev/null | wc -l)" -ge "$2" ]; }
wait_lines() { wait_until 10 has_lines "$@"; }

# The hanging hooks outlive the daemon: end them (by their pids) at exit.
kill_hung() { [ -s "$tmp/hang.pids" ] && kill -9 $(cat "$tmp/hang.pids"); }
at_exit kill_hung

load_bursts 0.05 -j 1 -n 2000

# ---- a hook that works: once per finished segment, when it is complete ----
conf good
hook good "[ -f \"\$1\" ] || echo \"missing \$1\" >> '$tmp/good.err'
'$STACKMAPCTL' verify \"\$1\" > /dev/null 2>&1 || echo \"does not verify: \$1\" >> '$tmp/good.err'
ls -l /proc/\$\$/fd/ > '$tmp/good.fds.'\$\$
exec grep '^SigBlk:' /proc/self/status >> '$tmp/good.sigblk'"
run good 4
ctl snapshot > /dev/null || fail "good: snapshot"
ctl rotate > /dev/null || fail "good: rotate"
sleep 0.5
stop_daemon_ok "$tmp/daemon.good.log" good
list_segments "$tmp/good"
[ ${#segs[@]} -ge 6 ] || fail "good: only ${#segs[@]} segments"
wait_lines "$tmp/good.hooked" ${#segs[@]} ||
	fail "good: the hook ran $(cat "$tmp/good.hooked" 2>/dev/null | wc -l) times for ${#segs[@]} segments"
sleep 0.5
diff <(printf '%s\n' "${segs[@]}") <(sort "$tmp/good.hooked") > "$tmp/good.diff" ||
	fail "good: the hook's arguments are not the finished segments, each once: $(cat "$tmp/good.diff")"
[ ! -s "$tmp/good.err" ] || fail "good: $(cat "$tmp/good.err")"
# (each hook writes its files, then its SigBlk line last)
sigblk_lines() { [ "$(grep -c '^SigBlk:' "$tmp/good.sigblk" 2>/dev/null)" -ge "$1" ]; }
wait_until 10 sigblk_lines ${#segs[@]} ||
	fail "good: $(grep -c '^SigBlk:' "$tmp/good.sigblk" 2>/dev/null) hooks wrote their signal mask, for ${#segs[@]} segments"
[ "$(find "$tmp" -maxdepth 1 -name 'good.fds.*' | wc -l)" = ${#segs[@]} ] ||
	fail "good: $(find "$tmp" -maxdepth 1 -name 'good.fds.*' | wc -l) hooks listed their files, for ${#segs[@]} segments"
grep -v '^SigBlk:[[:space:]]*0*$' "$tmp/good.sigblk" && fail "good: the hook runs with signals blocked"
cat "$tmp"/good.fds.* | grep -E 'tracing|smseg|socket:|pipe:|anon_inode:' > "$tmp/good.fds"
[ ! -s "$tmp/good.fds" ] || fail "good: the hook inherited the daemon's files: $(sort -u -k 11 "$tmp/good.fds" | head -5)"
# (the last segment's hook may still be running at the stop: a note, not a warning)
grep -E '^<[0-3]>|^<4>.*hook' "$tmp/daemon.good.log" && fail "good: errors or hook warnings in the daemon log"
note "good hook: ran once for each of the ${#segs[@]} segments, each complete when it ran"

# ---- no shell: words stay literal, the segment path is one argument ----
# The directory name holds blanks, quotes and a command substitution; so
# do the hook's words. A shell would run them (one would create
# pwned.word) or split them.
odd="odd dir \$(id -un); '\"x"
conf "$odd"
sed -i "s|^hook = .*|hook = $tmp/argv.hook \$(touch $tmp/pwned.word) 'a  \"b;c|" "$tmp/stackmapd.conf"
cat > "$tmp/argv.hook" <<EOF
#!/bin/sh
{ echo "argc \$#"; for a in "\$@"; do echo "arg <\$a>"; done; } > "$tmp/argv.out.\$\$"
EOF
chmod 755 "$tmp/argv.hook"
run argv 1
stop_daemon || { cat "$tmp/daemon.argv.log"; fail "argv: the daemon exited with $?"; }
segs=("$tmp/$odd"/*.smseg)
[ ${#segs[@]} -ge 1 ] || fail "argv: no segment in '$tmp/$odd'"
for ((i = 0; i < 100; i++)); do
	outs=("$tmp"/argv.out.*)
	[ ${#outs[@]} -ge ${#segs[@]} ] && break
	sleep 0.1
done
[ ${#outs[@]} = ${#segs[@]} ] || fail "argv: the hook ran ${#outs[@]} times for ${#segs[@]} segments"
for out in "${outs[@]}"; do
	wait_lines "$out" 6 || fail "argv: the hook's output is short: $(cat "$out")"
done
[ ! -e "$tmp/pwned.word" ] ||
	fail "argv: a shell ran the hook's words or the segment path"
expect="argc 5
arg <\$(touch>
arg <$tmp/pwned.word)>
arg <'a>
arg <\"b;c>"
for out in "${outs[@]}"; do
	[ "$(head -n 5 "$out")" = "$expect" ] ||
		fail "argv: the hook's arguments are not the literal words: $(cat "$out")"
	seg=$(sed -n '6s/^arg <\(.*\)>$/\1/p' "$out")
	[ "$(wc -l < "$out")" = 6 ] && [ -n "$seg" ] && [ -f "$seg" ] &&
		[ "$(dirname "$seg")" = "$tmp/$odd" ] ||
		fail "argv: the segment path is not one argument naming a segment: $(cat "$out")"
done
grep -E '^<[0-3]>|^<4>.*hook' "$tmp/daemon.argv.log" && fail "argv: errors or hook warnings in the daemon log"
note "no shell: the hook got its words literally and the segment path as one argument"

# ---- a hook that fails: warnings, recording goes on ----
conf fail
hook fail "exit 1"
run fail 5
n1=$(grep -c 'finished segment' "$tmp/daemon.fail.log")
more_segments() { [ "$(grep -c 'finished segment' "$1")" -gt "$2" ]; }
wait_until 60 more_segments "$tmp/daemon.fail.log" "$n1" ||
	fail "fail: no segment finished in 60 s after the hook failed $n1 times"
stop_daemon_ok "$tmp/daemon.fail.log" fail
list_segments "$tmp/fail"
wait_lines "$tmp/fail.hooked" ${#segs[@]} || fail "fail: the hook ran $(wc -l < "$tmp/fail.hooked") times for ${#segs[@]} segments"
# Every hook is accounted for: a warning for each that failed before the
# stop or at it, a note for each still running when the daemon left.
failed=$(grep -c 'segment hook (pid [0-9]*) failed with status 1' "$tmp/daemon.fail.log")
left=$(grep -c 'segment hook (pid [0-9]*) still running at the stop' "$tmp/daemon.fail.log")
[ "$((failed + left))" = "${#segs[@]}" ] && [ "$failed" -ge "$n1" ] ||
	fail "fail: ${#segs[@]} segments, $failed hooks warned of as failed, $left left running: $(grep 'segment hook' "$tmp/daemon.fail.log" | head -3)"
no_log_errors "$tmp/daemon.fail.log" fail
note "failing hook: ${#segs[@]} segments finished, $failed failures warned of, $left hooks running at the stop"

# ---- a slow hook: the segments that find 8 hooks running wait their turn ----
conf slow
hook slow "echo \"\$\$ \$1\" >> '$tmp/slow.started'
while [ ! -e '$tmp/slow.release' ]; do sleep 0.1; done"
run slow 10
ctl status --json > "$tmp/slow.status" || fail "slow: status failed"
json "$tmp/slow.status" 'r["hook"]["running"] == 8 and r["hook"]["queued"] >= 2' ||
	fail "slow: status does not show 8 hooks running and the others waiting: $(grep -o '"hook":{[^}]*}' "$tmp/slow.status")"
[ "$(wc -l < "$tmp/slow.hooked")" = 8 ] || fail "slow: $(wc -l < "$tmp/slow.hooked") hooks run at once"
touch "$tmp/slow.release"
wait_lines "$tmp/slow.hooked" 10 ||
	fail "slow: the hook ran for $(wc -l < "$tmp/slow.hooked") segments: those that waited never ran"
ctl status --json > "$tmp/slow.status" || fail "slow: status failed"
json "$tmp/slow.status" 'r["hook"]["deferred"] >= 2 and r["hook"]["dropped"] == 0' ||
	fail "slow: status does not count the hooks that waited: $(grep -o '"hook":{[^}]*}' "$tmp/slow.status")"
stop_daemon_ok "$tmp/daemon.slow.log" slow
list_segments "$tmp/slow"
# Started oldest first: in the order of their pids, counted from the first
# hook's across a wrap of pid_max (the hooks that waited start together at
# the release, and which of their shells writes first is a race).
wait_lines "$tmp/slow.started" 10 || fail "slow: $(wc -l < "$tmp/slow.started") hooks started"
awk -v max="$(cat /proc/sys/kernel/pid_max)" 'NR == 1 { p0 = $1 } { print ($1 - p0 + max) % max, $2 }' \
	"$tmp/slow.started" | sort -n | head -n 10 | cut -d ' ' -f 2- |
	diff - <(printf '%s\n' "${segs[@]}" | head -n 10) > "$tmp/slow.diff" ||
	fail "slow: the hooks did not start for the first segments, oldest first: $(cat "$tmp/slow.diff")"
no_log_errors "$tmp/daemon.slow.log" slow
note "slow hook: 8 ran at once, $(json_value "$tmp/slow.status" 'r["hook"]["deferred"]') waited and ran later"

# ---- a hook that hangs: recording goes on, the stop does not wait ----
conf hang
hook hang "echo \$\$ >> '$tmp/hang.pids'
exec sleep 60"
run hang 12
n1=$(grep -c 'finished segment' "$tmp/daemon.hang.log")
wait_until 60 more_segments "$tmp/daemon.hang.log" "$n1" ||
	fail "hang: no segment finished in 60 s while hooks hang"
ctl status --json > "$tmp/hang.status" || fail "hang: status failed"
json "$tmp/hang.status" 'r["hook"]["running"] == 8 and r["hook"]["queued"] >= 1' ||
	fail "hang: status does not show 8 hooks running and the others waiting: $(grep -o '"hook":{[^}]*}' "$tmp/hang.status")"
wait_lines "$tmp/hang.pids" 8 || fail "hang: $(wc -l < "$tmp/hang.pids") hooks started"
[ "$(wc -l < "$tmp/hang.pids")" = 8 ] || fail "hang: $(wc -l < "$tmp/hang.pids") hooks run at once"
stop_daemon_ok "$tmp/daemon.hang.log" hang
pids=$(cat "$tmp/hang.pids")
for p in $pids; do
	kill -0 "$p" 2>/dev/null || fail "hang: hook $p ended with the daemon"
done
[ ! -d "$TRACEFS/instances/$inst" ] || fail "hang: the instance is left behind while the hooks run"
[ "$(grep -c 'segment hook (pid [0-9]*) still running at the stop' "$tmp/daemon.hang.log")" = 8 ] &&
	grep -q 'segment hooks waiting at the stop are not run' "$tmp/daemon.hang.log" ||
	fail "hang: the log does not say which hooks were left running and which not run: $(grep 'at the stop' "$tmp/daemon.hang.log")"
list_segments "$tmp/hang"
verify_ok "hang: the archive" "${segs[@]}"
# a hook is an ordinary process: SIGTERM ends it
kill -TERM $pids
alive() { local p; for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done; }
none_alive() { [ -z "$(alive)" ]; }
wait_until 5 none_alive || fail "hang: $(alive | wc -l) hooks survived SIGTERM"
no_log_errors "$tmp/daemon.hang.log" hang
note "hanging hooks: ${#segs[@]} segments finished while 8 hooks hung; stopped without waiting"
exit 0
