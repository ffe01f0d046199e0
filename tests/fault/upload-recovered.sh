#!/bin/bash
# The segments around a crash reach the collector, and one segment the
# collector refuses for good does not block the others. stackmapd-upload
# is the segment hook; the collector (tests/system/put-server.py) answers
# 413 for one segment. The daemon is killed (-9) while recording and
# started again: the segment it recovers at start must be handed to the
# hook and uploaded like the others; the refused one must be moved aside
# (kept in SPOOL/refused, logged, counted by --status) and every later
# segment still sent, byte for byte.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd curl
. "$top_srcdir/tests/fault/lib-fault.sh"

upload=${STACKMAPD_UPLOAD:-$top_srcdir/scripts/stackmapd-upload}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
arch=$ftmp/archive
spool=$ftmp/spool
refuse=00000002-
PUT_REFUSE=$refuse python3 "$top_srcdir/tests/system/put-server.py" "$ftmp/collector" "$port" \
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
EOF
senders() { ps -eo pid=,args= | awk -v c="$ftmp/upload.conf" 'index($0, c " --send") { print $1 }'; }
at_exit 'kill -9 $(senders)'
fault_conf "$ftmp/c.conf" "$arch" archive.segment_size=1M \
	archive.hook="$upload --config $ftmp/upload.conf"
start_load 1

# a first run, with segments finished by rotation, ended by kill -9
start_recording "$ftmp/c.conf" "$ftmp/d1.log"
for i in 1 2 3; do
	sleep 0.3
	ctl rotate > /dev/null || fail "rotate failed"
done
sleep 0.5
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2> /dev/null
parts=("$arch"/*.smseg.part)
[ ${#parts[@]} = 1 ] || fail "expected one unfinished segment after the kill, found ${#parts[@]}"
recovered=${parts[0]%.part}
recovered=${recovered##*/}
# the second run recovers it, and records on
start_recording "$ftmp/c.conf" "$ftmp/d2.log"
grep -q "recovered the unfinished segment" "$ftmp/d2.log" || fail "no recovery at start"
ctl rotate > /dev/null || fail "rotate failed"
stop_daemon || { cat "$ftmp/d2.log"; fail "stop exited $?"; }

segs=("$arch"/*.smseg)
# everything is sent or set aside: nothing left in the spool
spool_empty() { [ -z "$(find "$spool" -maxdepth 1 -type f ! -name '.*')" ]; }
wait_until 30 spool_empty || fail "segments still spooled after 30 s: $(ls "$spool"); $(tail -5 "$ftmp/sender.log")"
sent=0
for s in "${segs[@]}"; do
	name=${s##*/}
	if [[ $name == $refuse* ]]; then
		cmp -s "$s" "$spool/refused/$name" || fail "the refused '$name' was not kept in $spool/refused"
		continue
	fi
	[ -f "$ftmp/collector/c/h/$name" ] || fail "'$name' never reached the collector (${name/$recovered/recovered at start: }$(tail -3 "$ftmp/sender.log"))"
	cmp -s "$s" "$ftmp/collector/c/h/$name" || fail "'$name' differs at the collector"
	sent=$((sent + 1))
done
[ -f "$ftmp/collector/c/h/$recovered" ] || fail "the segment recovered at start ('$recovered') was not uploaded"
grep -q "refused '$refuse" "$ftmp/sender.log" || fail "the refusal is not logged: $(tail -3 "$ftmp/sender.log")"
"$upload" --config "$ftmp/upload.conf" --status > "$ftmp/status.out" || fail "--status failed"
grep -q '^refused by the collector: 1 segments' "$ftmp/status.out" ||
	fail "--status does not count the refused segment: $(cat "$ftmp/status.out")"
note "${#segs[@]} segments: $sent sent (the recovered '$recovered' among them), 1 refused and kept"
exit 0
