#!/bin/bash
# stackmapd-upload as the segment hook: every finished segment reaches the
# collector (a local HTTP server that accepts PUT) exactly once and byte
# for byte (sha256), across a 30-second outage of the collector, a daemon
# restart and a sender killed as a reboot would (the spool outlives it).
# While the collector is down, recording goes on (segments keep finishing,
# no hook fails or hangs) and the spool holds hard links to the archive's
# files, not copies.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd curl
need_cmd python3
need_cmd setsid
need_cmd flock
[ -x "$STACKMAPD" ] || skip "stackmapd is not built ($STACKMAPD)"
UPLOAD=$top_srcdir/scripts/stackmapd-upload
OUTAGE=${OUTAGE:-30}

tmp=$(mktmp)
chmod 755 "$tmp"
load_comm=smload$$
cp "$SMLOAD" "$tmp/$load_comm" || fail "cannot copy $SMLOAD"
SMLOAD=$tmp/$load_comm
mkdir -p "$tmp/collector"
echo "secret-$RANDOM" > "$tmp/token"
chmod 600 "$tmp/token"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# ---- the collector ----
server_pid=
server_start() {
	python3 "$top_srcdir/tests/system/put-server.py" "$tmp/collector" "$port" "$tmp/put.log" \
		"$(cat "$tmp/token")" 2>> "$tmp/server.err" &
	server_pid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
		sleep 0.1
	done
	fail "the collector did not start: $(cat "$tmp/server.err")"
}
server_stop() {
	kill -9 "$server_pid" 2> /dev/null
	wait "$server_pid" 2> /dev/null
	server_pid=
}
at_exit 'server_stop'
# the senders the hook started (detached): found by their arguments
senders() { ps -eo pid=,args= | awk -v c="$tmp/upload.conf" 'index($0, c " --send") { print $1 }'; }
at_exit 'kill -9 $(senders)'

cat > "$tmp/upload.conf" <<EOF
# a collector on this machine
url = http://127.0.0.1:$port/fleet
token_file = $tmp/token
host = testhost
spool = $tmp/archive/upload-spool
retry_max = 2
start = detach
log = $tmp/sender.log
EOF

inst=$(new_instance_name)
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = kmem:kmem_cache_alloc
filter.kmem:kmem_cache_alloc = COMM == "$load_comm"
filter.sched:sched_switch = COMM == "$load_comm"
buffer_size = 1M
[archive]
directory = $tmp/archive
segment_size = 1M
segment_age = 2s
max_size = 0
keep_free = 0
hook = $UPLOAD --config $tmp/upload.conf --limit-rate 20M
[control]
socket = $tmp/control
EOF

(while :; do "$SMLOAD" -j 1 -n 2000 -q; sleep 0.05; done) &
load=$!
at_exit "kill $load"

finished() { grep -c 'finished segment' "$tmp/daemon.$1.log"; }
received() { sort -u "$tmp/put.log" 2> /dev/null | wc -l; }
spooled() { find "$tmp/archive/upload-spool" -maxdepth 1 -type f ! -name '.*' 2> /dev/null | wc -l; }
# wait_until SECONDS COMMAND...
wait_until() {
	local t=$1 i; shift
	for ((i = 0; i < t * 10; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}
daemon_start() {
	start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.$1.log"
	wait_for_log "$tmp/daemon.$1.log" 'recording [0-9]+ CPUs' 20 ||
		{ cat "$tmp/daemon.$1.log"; fail "$1: the daemon did not start"; }
}

server_start
daemon_start first
wait_until 30 sh -c "[ \$(sort -u '$tmp/put.log' 2>/dev/null | wc -l) -ge 3 ]" ||
	fail "fewer than 3 segments arrived in 30 s: $(tail -5 "$tmp/sender.log" 2>/dev/null)"
note "collector up: $(received) segments received"

# ---- the outage: the collector is gone for $OUTAGE s ----
server_stop
t0=$SECONDS
n0=$(finished first)
wait_until 20 sh -c "[ \$(find '$tmp/archive/upload-spool' -maxdepth 1 -type f ! -name '.*' | wc -l) -ge 3 ]" ||
	fail "the spool does not fill while the collector is down"
f=$(find "$tmp/archive/upload-spool" -maxdepth 1 -type f ! -name '.*' | head -n 1)
[ "$(stat -c %h "$f")" = 2 ] || fail "a spooled segment is not a hard link of the archive's file: $f"
[ "$(finished first)" -gt "$n0" ] || fail "no segment finished while the collector was down"
# a reboot: the sender dies, the daemon restarts; what was spooled stays
kill -9 $(senders) 2> /dev/null
stop_daemon || { cat "$tmp/daemon.first.log"; fail "the daemon exited with $?"; }
daemon_start second
while [ $((SECONDS - t0)) -lt "$OUTAGE" ]; do
	kill -0 "$DAEMON_PID" || { cat "$tmp/daemon.second.log"; fail "the daemon died during the outage"; }
	sleep 1
done
[ "$(finished second)" -ge 3 ] || fail "only $(finished second) segments finished during the outage after the restart"
q=$(spooled)
note "after ${OUTAGE} s without the collector: $q segments spooled, $(grep -c 'will retry' "$tmp/sender.log") retries"
[ "$q" -ge 10 ] || fail "only $q segments spooled during the outage"

# ---- back: everything arrives ----
server_start
t1=$SECONDS
wait_until 60 sh -c "[ \$(find '$tmp/archive/upload-spool' -maxdepth 1 -type f ! -name '.*' | wc -l) = 0 ]" ||
	fail "$(spooled) segments still spooled 60 s after the collector came back"
note "spool drained $((SECONDS - t1)) s after the collector came back"
stop_daemon || { cat "$tmp/daemon.second.log"; fail "the daemon exited with $?"; }
kill "$load"
shopt -s nullglob
segs=("$tmp"/archive/*.smseg)
n=${#segs[@]}
[ "$n" = $(($(finished first) + $(finished second))) ] ||
	fail "$n segments in the archive, $(($(finished first) + $(finished second))) finished"
wait_until 30 sh -c "[ \$(wc -l < '$tmp/put.log') -ge $n ] && [ \$(find '$tmp/archive/upload-spool' -maxdepth 1 -type f ! -name '.*' | wc -l) = 0 ]" ||
	fail "$(wc -l < "$tmp/put.log") PUTs for $n segments"
wait_until 10 sh -c "[ -z \"\$(ps -eo args= | grep -F '$tmp/upload.conf --send' | grep -v grep)\" ]" ||
	fail "the sender did not exit once the spool was empty"

# every segment exactly once, byte for byte; nothing else
for s in "${segs[@]}"; do
	name=${s##*/}
	sum=$(sha256sum < "$s" | cut -d' ' -f1)
	c=$(grep -c "^fleet/testhost/$name " "$tmp/put.log")
	[ "$c" = 1 ] || fail "$name arrived $c times"
	grep -q "^fleet/testhost/$name $(stat -c %s "$s") $sum\$" "$tmp/put.log" ||
		fail "$name: the collector's copy differs: $(grep "$name" "$tmp/put.log")"
	cmp -s "$s" "$tmp/collector/fleet/testhost/$name" || fail "$name: stored copy differs"
done
[ "$(wc -l < "$tmp/put.log")" = "$n" ] || fail "$(wc -l < "$tmp/put.log") PUTs for $n segments"
[ "$(find "$tmp/collector" -type f | wc -l)" = "$n" ] ||
	fail "the collector holds other files: $(find "$tmp/collector" -type f | grep -v smseg\$ | head -3)"
grep -E 'segment hook|hooks still running' "$tmp"/daemon.*.log && fail "hook failures in the daemon log"
[ ! -s "$tmp/server.err" ] || { cat "$tmp/server.err"; fail "the collector reported errors"; }
note "$n segments, each received once with its sha256; $(grep -c 'will retry' "$tmp/sender.log") failed attempts"
exit 0
