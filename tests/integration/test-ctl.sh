#!/bin/bash
# The control socket against a recording daemon: every stackmapctl control
# command with and without --json, exit codes, who may connect (root, the
# [control] group by primary or supplementary gid, nobody else), garbage,
# oversized and silent clients, clients that leave before their reply, and
# 50 clients at once; the daemon keeps answering and recording throughout.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_cmd setpriv
need_built "$STACKMAPD" "$STACKMAPCTL"

GROUP=users			# an existing group that nobody (65534) is not in
getent group "$GROUP" >/dev/null || skip "needs the group '$GROUP'"
GID=$(getent group "$GROUP" | cut -d: -f3)

state_before=$(tracefs_state)
tmp=$(mktmp)
chmod 755 "$tmp"		# nobody must reach the socket to be refused by it
inst=$(new_instance_name)
sock=$tmp/run/control
# (ctl, with no CTL_SOCKET, finds the socket through the environment)
export STACKMAPD_SOCKET=$sock
pass=0
ok() { pass=$((pass + 1)); echo "ok $pass - $*"; }

write_conf() {
	write_config "$tmp/stackmapd.conf" <<-EOF
	[trace]
	instance = $inst
	events = sched:sched_process_fork sched:sched_process_exec
	stacktrace = all
	$1
	[archive]
	directory = $tmp/archive
	segment_size = 1M
	max_size = 16M
	[control]
	socket = $sock
	$2
	[service]
	status_interval = 5s
	EOF
}

load() { for ((i = 0; i < ${1:-20}; i++)); do /bin/true; done; }

events_total() {
	ctl status --json > "$tmp/st.json" || return 1
	json_value "$tmp/st.json" 'sum(c["events"] for c in r["cpus"])'
}

write_conf "" ""
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log" ''
answers() { ctl status >/dev/null 2>&1 || ! kill -0 "$DAEMON_PID" 2>/dev/null; }
wait_until 20 answers
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$tmp/daemon.log"; fail "stackmapd exited"; }
ctl status >/dev/null || { cat "$tmp/daemon.log"; fail "no answer on $sock"; }
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock"), expected 600 (no group)"
ok "daemon answers on $sock, mode 600"

# ---- every command, human and --json ----
ctl status > "$tmp/status.txt" || fail "status"
grep -q '^state: *recording$' "$tmp/status.txt" || fail "status: no 'state: recording' line"
grep -q "^instance: *$inst\$" "$tmp/status.txt" || fail "status: instance"
grep -Eq '^CPU +EVENTS +PAGES' "$tmp/status.txt" || fail "status: no per-CPU table"
ctl status --json > "$tmp/status.json" || fail "status --json"
[ "$(grep -Ec '^ *[0-9]+ ' "$tmp/status.txt")" = "$(json_value "$tmp/status.json" 'len(r["cpus"])')" ] ||
	fail "status: the per-CPU table does not have one line per CPU"
[ "$(wc -l < "$tmp/status.json")" = 1 ] || fail "status --json is not one line"
json "$tmp/status.json" 'r["version"] == 1 and r["ok"] and r["state"] == "recording" and r["instance"] == "'"$inst"'"
	and r["stack_mode"] in ("stackmap", "full") and isinstance(r["generation"], int)
	and len(r["cpus"]) > 0 and all(set(c) >= {"cpu", "events", "pages", "bytes", "lost_events", "rate_events_per_s"} for c in r["cpus"])
	and set(r["archive"]) >= {"directory", "bytes", "max_bytes", "segments"} and "unresolved" in r
	and (r["segment"] is None or set(r["segment"]) >= {"path", "bytes", "age_s"})
	and (r["map"] is None or set(r["map"]) >= {"entries", "capacity", "drops", "success_rate"})' ||
	fail "status --json fields: $(cat "$tmp/status.json")"
ok "status, status --json"

load 20
seg=$(ctl snapshot) || fail "snapshot"
[ "$(printf '%s\n' "$seg" | wc -l)" = 1 ] || fail "snapshot printed more than the path: $seg"
case "$seg" in "$tmp/archive/"*.smseg) ;; *) fail "snapshot path '$seg'";; esac
[ -f "$seg" ] || fail "snapshot: '$seg' does not exist"
ctl snapshot --json > "$tmp/snap.json" || fail "snapshot --json"
json "$tmp/snap.json" 'r["ok"] and r["path"].endswith(".smseg")' || fail "snapshot --json: $(cat "$tmp/snap.json")"
seg2=$(json_value "$tmp/snap.json" 'r["path"]')
[ -f "$seg2" ] && [ "$seg2" != "$seg" ] || fail "second snapshot '$seg2'"
ok "snapshot prints the finished segment's path; --json"

# A recording daemon always has a segment to finish: rotate, like
# snapshot, succeeds and prints the finished segment's path.
load 5
ctl rotate > "$tmp/rotate.txt" || fail "rotate exited with $?"
r=$(cat "$tmp/rotate.txt")
[ "$(wc -l < "$tmp/rotate.txt")" = 1 ] && [ -f "$r" ] || fail "rotate printed '$r', not a file"
case "$r" in "$tmp/archive/"*.smseg) ;; *) fail "rotate path '$r'";; esac
load 5
ctl rotate --json > "$tmp/rotate.json" || fail "rotate --json exited with $?"
json "$tmp/rotate.json" 'r["version"] == 1 and r["ok"] and r["path"].endswith(".smseg")' ||
	fail "rotate --json: $(cat "$tmp/rotate.json")"
r2=$(json_value "$tmp/rotate.json" 'r["path"]')
[ -f "$r2" ] && [ "$r2" != "$r" ] || fail "second rotate '$r2'"
ok "rotate, rotate --json print the finished segment's path"

ctl reset > "$tmp/reset.txt" 2> "$tmp/reset.err"; rc=$?
ctl reset --json > "$tmp/reset.json" 2>/dev/null; rcj=$?
[ $rc = $rcj ] || fail "reset: exit $rc, with --json $rcj"
if json "$tmp/status.json" 'r["stack_mode"] == "stackmap"'; then
	[ $rc = 0 ] && grep -q '^generation: *[0-9]' "$tmp/reset.txt" || fail "reset: exit $rc"
	json "$tmp/reset.json" 'r["ok"] and isinstance(r["generation"], int)' || fail "reset --json"
else
	# full stacks (no kernel stack map here): a daemon error, exit 1, message on stderr
	[ $rc = 1 ] && [ -s "$tmp/reset.err" ] && [ ! -s "$tmp/reset.txt" ] || fail "reset with full stacks: exit $rc"
	json "$tmp/reset.json" 'not r["ok"] and r["errno"] == "EOPNOTSUPP" and r["error"]' ||
		fail "reset --json: $(cat "$tmp/reset.json")"
fi
ok "reset, reset --json (exit $rc)"

ctl list > "$tmp/list.txt" || fail "list"
grep -q "^SEGMENT " "$tmp/list.txt" || fail "list: no header"
grep -qF "$seg " "$tmp/list.txt" || fail "list does not show $seg"
grep -Eq '^[0-9]+ segments?, ' "$tmp/list.txt" || fail "list: no summary line"
ctl list --json > "$tmp/list.json" || fail "list --json"
json "$tmp/list.json" 'r["ok"] and any(s["path"] == "'"$seg"'" for s in r["segments"])
	and all(set(s) >= {"path", "bytes", "first_ts", "last_ts", "complete"} for s in r["segments"])
	and all(s["first_ts"] is None or s["first_ts"] <= s["last_ts"] for s in r["segments"])' ||
	fail "list --json: $(cat "$tmp/list.json")"
ok "list, list --json"

ctl reload > "$tmp/reload.txt" 2> "$tmp/reload.err" || fail "reload: $(cat "$tmp/reload.err")"
[ ! -s "$tmp/reload.txt" ] && [ ! -s "$tmp/reload.err" ] || fail "reload printed something"
ctl reload --json > "$tmp/reload.json" || fail "reload --json"
json "$tmp/reload.json" 'r["ok"] and r["restart_needed"] == []' || fail "reload --json: $(cat "$tmp/reload.json")"
# Keys that need a restart: not applied, named (stderr, or restart_needed), exit 0.
clock=$(sed 's/.*\[\(.*\)\].*/\1/' "$TRACEFS/instances/$inst/trace_clock" | sed 's/^local$/global/;t;s/.*/local/')
write_conf "clock = $clock" ""
ctl reload 2> "$tmp/reload.err" || fail "reload with a restart key: $(cat "$tmp/reload.err")"
grep -q "restart: .*clock" "$tmp/reload.err" || fail "reload: no restart note: $(cat "$tmp/reload.err")"
write_conf "clock = $clock
buffer_size = 64K" ""
ctl reload --json > "$tmp/reload.json" 2>/dev/null
json "$tmp/reload.json" 'r["ok"] and any("buffer_size" in k for k in r["restart_needed"])' ||
	fail "reload --json restart_needed: $(cat "$tmp/reload.json")"
# An invalid file: error, exit 1, nothing changes.
write_conf "no_such_key = 1" ""
ctl reload 2> "$tmp/reload.err"; rc=$?
[ $rc = 1 ] && grep -q "no_such_key" "$tmp/reload.err" || fail "invalid reload: exit $rc: $(cat "$tmp/reload.err")"
ctl status >/dev/null || fail "status after a failed reload"
write_conf "" ""
ctl reload || fail "reload back"
ok "reload: applied, restart keys named, invalid file refused"

# ---- exit codes of the client itself ----
STACKMAPD_SOCKET=$tmp/none ctl status 2> "$tmp/err"; rc=$?
[ $rc = 69 ] && grep -q "stackmapd is not running (no socket at $tmp/none)" "$tmp/err" ||
	fail "no daemon: exit $rc: $(cat "$tmp/err")"
"$STACKMAPCTL" --socket "$tmp/none" list 2>/dev/null; [ $? = 69 ] || fail "--socket not used"
ctl status --bogus 2>/dev/null; [ $? = 2 ] || fail "bad option: not exit 2"
env -u STACKMAPD_SOCKET "$STACKMAPCTL" status --config "$tmp/stackmapd.conf" >/dev/null ||
	fail "--config: the socket from the daemon's file not used"
echo "[control]" > "$tmp/other.conf"
echo "socket = $tmp/none" >> "$tmp/other.conf"
env -u STACKMAPD_SOCKET "$STACKMAPCTL" status -c "$tmp/other.conf" 2>/dev/null; [ $? = 69 ] ||
	fail "-c: socket key ignored"
ok "exit 69 without a daemon, 2 on usage errors, --socket, --config"

# ---- who may connect ----
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody "$STACKMAPCTL" status 2> "$tmp/err"; rc=$?
if [ $rc = 127 ]; then
	# The loader could not run the client as nobody: show the modes on
	# the way to every library it needs, which this machine got wrong.
	ldd "$STACKMAPCTL" | awk '$3 ~ /^\// { print $3 }' | xargs -r namei -l >&2
	ls -l /etc/ld.so.cache >&2
fi
[ $rc = 77 ] && grep -q "permission denied" "$tmp/err" || fail "nobody, socket 0600: exit $rc: $(cat "$tmp/err")"
# Past the file mode (CAP_DAC_OVERRIDE), the daemon's own credential check refuses.
as_nobody --inh-caps=+dac_override --ambient-caps=+dac_override "$STACKMAPCTL" status --json \
	> "$tmp/denied.json" 2> "$tmp/err"; rc=$?
[ $rc = 77 ] || fail "nobody with CAP_DAC_OVERRIDE: exit $rc: $(cat "$tmp/err")"
json "$tmp/denied.json" 'not r["ok"] and r["errno"] == "EACCES" and r["error"].startswith("permission denied: uid 65534")' ||
	fail "refusal reply: $(cat "$tmp/denied.json")"
ok "nobody is refused (exit 77), by the file mode and by SO_PEERCRED"

write_conf "" "group = $GROUP"
ctl reload || fail "reload with a group"
[ "$(stat -c '%a %g' "$sock")" = "660 $GID" ] || fail "socket after group reload: $(stat -c '%a %g' "$sock")"
setpriv --reuid=65534 --regid=65534 --groups="$GID" "$STACKMAPCTL" status >/dev/null ||
	fail "supplementary member of $GROUP refused"
setpriv --reuid=65534 --regid="$GID" --clear-groups "$STACKMAPCTL" status >/dev/null ||
	fail "primary member of $GROUP refused"
as_nobody "$STACKMAPCTL" status 2>/dev/null; rc=$?
[ $rc = 77 ] || fail "non-member with group set: exit $rc"
as_nobody --inh-caps=+dac_override --ambient-caps=+dac_override "$STACKMAPCTL" status 2> "$tmp/err"; rc=$?
[ $rc = 77 ] && grep -q "neither root nor in group '$GROUP'" "$tmp/err" || fail "non-member past the mode: exit $rc"
ok "[control] group: members (primary, supplementary) allowed, others refused"

# ---- hostile and careless clients while recording ----
before=$(events_total) || fail "status"
python3 - "$sock" > "$tmp/raw.out" 2>&1 <<-'EOF' &
	import socket, sys, time
	path = sys.argv[1]
	def conn():
	    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
	    s.connect(path)
	    s.settimeout(10)
	    return s
	def ask(data):
	    s = conn()
	    s.send(data)
	    r = s.recv(1 << 20)
	    s.close()
	    return r.decode()
	cases = [(b"garbage \xff\xfe", "EBADMSG"), (b"sta\x00tus", "EBADMSG"), (b"x" * 5000, "EMSGSIZE"),
	         (b"STATUS", "EBADMSG"), (b"no-such-command", "EOPNOTSUPP"), (b"status bogus=1", "EINVAL"),
	         (b"status a=\"unterminated", "EBADMSG")]
	for data, err in cases:
	    r = ask(data)
	    print("garbage", "ok" if '"ok":false' in r and err in r else "WRONG", data[:20], r)
	r = ask(b"ping")
	print("ping", "ok" if '"ok":true' in r else "WRONG", r)
	# silent clients: hold 3 connections without a request; they get a timeout reply
	silent = [conn() for _ in range(3)]
	t = time.time()
	print("silent-started", flush=True)
	for s in silent:
	    r = s.recv(4096).decode()
	    dt = time.time() - t
	    # the idle timeout is 2 s
	    print("silent", "ok" if "ETIMEDOUT" in r and 1.5 <= dt <= 4 else "WRONG", "%.1f" % dt, r)
	# leave before the reply: the snapshot still happens, nothing breaks
	s = conn()
	s.send(b"snapshot")
	s.close()
	print("left", "ok")
	EOF
raw=$!
wait_until 10 grep -q silent-started "$tmp/raw.out" || fail "raw client: $(cat "$tmp/raw.out")"
# The daemon answers others while the silent clients wait.
t0=$(date +%s%N)
ctl status >/dev/null || fail "status while silent clients wait"
t1=$(date +%s%N)
[ $(( (t1 - t0) / 1000000 )) -lt 3000 ] || fail "status took $(( (t1 - t0) / 1000000 )) ms while silent clients wait"
wait $raw || fail "raw client: $(cat "$tmp/raw.out")"
grep -q WRONG "$tmp/raw.out" && fail "$(grep WRONG "$tmp/raw.out")"
[ "$(grep -c '^garbage ok' "$tmp/raw.out")" = 7 ] && grep -q '^ping ok' "$tmp/raw.out" && grep -q '^left ok' "$tmp/raw.out" ||
	fail "raw client: not every case answered: $(cat "$tmp/raw.out")"
[ "$(grep -c '^silent ok' "$tmp/raw.out")" = 3 ] || fail "silent clients: $(grep silent "$tmp/raw.out")"
ctl status --json > "$tmp/st.json" || fail "status"
json "$tmp/st.json" 'r["control"]["idle_timeouts"] >= 3 and r["control"]["bad_requests"] >= 5
	and r["control"]["denied"] >= 2 and r["control"]["clients"] == 1' ||
	fail "status control counters: $(cat "$tmp/st.json")"
n=$(grep -c 'control: client pid [0-9]* sent no request within 2 s' "$tmp/daemon.log")
[ "$n" = 1 ] || fail "$n log lines for 3 silent clients, expected 1 (rate-limited)"
n=$(grep -c 'control: refused uid 65534' "$tmp/daemon.log")
[ "$n" = 1 ] || fail "$n log lines for the refused peers, expected 1 (rate-limited)"
load 50
ctl snapshot >/dev/null || fail "snapshot after hostile clients"
after=$(events_total) || fail "status after hostile clients"
[ "$after" -gt "$before" ] || fail "not recording: $before events before, $after after"
ok "garbage, oversized, silent and departing clients: error replies, still answering, still recording ($before -> $after events)"

# ---- 50 clients at once ----
clients=()
for ((i = 0; i < 50; i++)); do
	if ((i % 5 == 0)); then
		( ctl snapshot > "$tmp/c.$i" 2>&1; echo $? > "$tmp/rc.$i" ) &
	else
		( ctl status --json > "$tmp/c.$i" 2>&1; echo $? > "$tmp/rc.$i" ) &
	fi
	clients+=($!)
done
wait "${clients[@]}"	# not the daemon, also a child of this shell
for ((i = 0; i < 50; i++)); do
	[ "$(cat "$tmp/rc.$i")" = 0 ] || fail "client $i: exit $(cat "$tmp/rc.$i"): $(cat "$tmp/c.$i")"
	if ((i % 5 == 0)); then
		[ -f "$(cat "$tmp/c.$i")" ] || fail "client $i: snapshot '$(cat "$tmp/c.$i")'"
	else
		json "$tmp/c.$i" 'r["ok"]' || fail "client $i: $(cat "$tmp/c.$i")"
	fi
done
ok "50 clients at once (10 snapshots, 40 status) all answered"

# ---- stop ----
kill -0 "$DAEMON_PID" || fail "daemon died"
stop_daemon || fail "stackmapd exited with $?"
[ ! -e "$sock" ] || fail "socket left behind"
[ ! -d "$TRACEFS/instances/$inst" ] || fail "instance left behind"
[ "$(tracefs_state)" = "$state_before" ] || fail "tracefs state changed"
grep -E '^<[0-3]>' "$tmp/daemon.log" | grep -v "reload failed" > "$tmp/errors"
[ ! -s "$tmp/errors" ] || fail "errors in the log: $(cat "$tmp/errors")"
ok "clean stop: socket and instance removed, tracefs as found, no unexpected errors"
echo "$pass passed"
