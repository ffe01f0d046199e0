#!/bin/bash
# A collector that refuses every segment as too large (413, as nginx does
# above its default client_max_body_size), the uploader as the segment
# hook, and an archive on a small file system (20 MiB tmpfs) with
# keep_free: every segment goes to SPOOL/refused/ as a second name of its
# file. refused/ must stay within its bound, the daemon's retention must
# keep segments in the archive (those refused/ holds free nothing when
# deleted), and the disk must not fill: no write error. The 413 is
# explained once in the sender's log.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd curl
. "$top_srcdir/tests/fault/lib-fault.sh"

upload=${STACKMAPD_UPLOAD:-$top_srcdir/scripts/stackmapd-upload}
SEGMENTS=${SEGMENTS:-30}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$ftmp/fs"
mount -t tmpfs -o size=20M tmpfs "$ftmp/fs" || fail "cannot mount a tmpfs"
at_exit "umount -l '$ftmp/fs'"
arch=$ftmp/fs/archive
spool=$ftmp/fs/spool
PUT_MAX_BODY=1000 python3 "$top_srcdir/tests/system/put-server.py" "$ftmp/collector" "$port" \
	"$ftmp/put.log" 2>> "$ftmp/server.err" &
at_exit "kill -9 $!"
server_up() { curl -s -o /dev/null "http://127.0.0.1:$port/"; }
wait_until 10 server_up || fail "the collector did not start: $(cat "$ftmp/server.err")"
cat > "$ftmp/upload.conf" <<EOF
url = http://127.0.0.1:$port/c
host = h
spool = $spool
retry_max = 1
start = detach
log = $ftmp/sender.log
min_free = 10
refused_max_segments = 4
EOF
senders() { ps -eo pid=,args= | awk -v c="$ftmp/upload.conf" 'index($0, c " --send") { print $1 }'; }
at_exit 'kill -9 $(senders)'
fault_conf "$ftmp/c.conf" "$arch" archive.segment_size=1M archive.keep_free=20 \
	archive.hook="$upload --config $ftmp/upload.conf"
start_load 1
start_recording "$ftmp/c.conf" "$ftmp/d.log"

# record until SEGMENTS segments finished (three times what the file
# system holds); the archive is never emptied on the way
finished() { grep -c 'finished segment' "$ftmp/d.log"; }
least=
t0=$SECONDS
while [ "$(finished)" -lt "$SEGMENTS" ]; do
	[ $((SECONDS - t0)) -lt 120 ] || fail "only $(finished) segments finished in 120 s"
	kill -0 "$DAEMON_PID" || { cat "$ftmp/d.log"; fail "the daemon died"; }
	n=$(find "$arch" -maxdepth 1 -name '*.smseg' | wc -l)
	if [ "$(finished)" -ge 10 ] && { [ -z "$least" ] || [ "$n" -lt "$least" ]; }; then
		least=$n
	fi
	sleep 0.2
done
errors=$(ctl status --json | sed -n 's/.*"write_errors": *\([0-9]*\).*/\1/p')
stop_daemon || { cat "$ftmp/d.log"; fail "stop exited $?"; }
wait_until 20 sh -c "[ -z \"\$(ps -eo args= | grep -F '$ftmp/upload.conf --send' | grep -v grep)\" ]" ||
	fail "the sender did not finish"
refused=$(find "$spool/refused" -maxdepth 1 -type f | wc -l)
kept=$(find "$arch" -maxdepth 1 -name '*.smseg' | wc -l)
note "$(finished) segments of 1 MiB on 20 MiB: $kept kept in the archive (at least $least after the 10th), $refused in refused/, $(grep -c 'dropped the refused segment' "$ftmp/sender.log") refused ones dropped, ${errors:-?} write errors"
[ "${errors:-1}" = 0 ] || fail "the disk filled: $errors write errors"
[ "$refused" -le 4 ] || fail "refused/ holds $refused segments, at most 4 wanted"
[ "${least:-0}" -ge 3 ] || fail "the archive went down to ${least:-0} segments"
[ "$(grep -c 'as too large (HTTP 413)' "$ftmp/sender.log")" = 1 ] ||
	fail "the 413 was not explained once: $(grep -c 'as too large' "$ftmp/sender.log") times"
"$upload" --config "$ftmp/upload.conf" --status | grep -Eq '^refused segments dropped: [1-9]' ||
	fail "no refused segment dropped or counted"
exit 0
