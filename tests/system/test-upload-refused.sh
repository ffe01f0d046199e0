#!/bin/bash
# stackmapd-upload against a collector (a local HTTP server) that answers
# 503 for a while and 413 for bodies over 1 MB, as nginx does by default:
#   - a 503 is retried, nothing is set aside;
#   - a 413 sets the segment aside in SPOOL/refused/ and is explained once
#     in the log, with the refused size and the largest accepted one;
#   - refused/ keeps at most refused_max_segments segments and
#     refused_max_size bytes: the oldest beyond are dropped, each logged
#     and counted by --status; on a disk about to fill (a small tmpfs),
#     the oldest of them go first.
# No daemon: the segments are files of the sizes wanted, spooled as hard
# links of an archive's files, as the hook does.
. "$top_srcdir/tests/lib.sh"
need_root
need_cmd curl
need_cmd python3
need_cmd flock
UPLOAD=$top_srcdir/scripts/stackmapd-upload

tmp=$(mktmp)
mkdir -p "$tmp/collector" "$tmp/archive" "$tmp/spool"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
touch "$tmp/fail"
PUT_MAX_BODY=1000000 PUT_FAIL_FILE=$tmp/fail python3 "$top_srcdir/tests/system/put-server.py" \
	"$tmp/collector" "$port" "$tmp/put.log" 2>> "$tmp/server.err" &
server=$!
at_exit "kill $server"
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$port/" || fail "the collector did not start"

cat > "$tmp/upload.conf" <<EOF
url = http://127.0.0.1:$port/fleet
host = testhost
spool = $tmp/spool
retry_max = 1
refused_max_segments = 3
EOF
up() { "$UPLOAD" --config "$tmp/upload.conf" "$@"; }

# spool NAME SIZE...: segments of these sizes in the archive, spooled in order
n=0
spool() {
	local size name
	for size; do
		n=$((n + 1))
		name=$(printf '%08d-20261201T0000%02d.smseg' "$n" "$n")
		head -c "$size" /dev/urandom > "$tmp/archive/$name"
		ln "$tmp/archive/$name" "$tmp/spool/$name"
		touch -d "@$((1700000000 + n))" "$tmp/spool/$name"
	done
}
refused_names() { ls "$tmp/spool/refused" 2> /dev/null | tr '\n' ' '; }

# ---- 503: retried, nothing set aside; then 413 for the large one ----
spool 200000 1500000
up --send 2> "$tmp/sender.log" &
sender=$!
at_exit "kill $sender 2> /dev/null"
wait_until 20 sh -c "[ \$(grep -c ' 503\$' '$tmp/put.log' 2> /dev/null || echo 0) -ge 2 ]" ||
	fail "no retry after a 503: $(cat "$tmp/sender.log")"
[ -z "$(refused_names)" ] || fail "a 503 set a segment aside: $(refused_names)"
[ "$(ls "$tmp/spool" | grep -c smseg)" = 2 ] || fail "a segment left the spool on a 503"
rm "$tmp/fail"
wait_until 20 sh -c "! kill -0 $sender 2> /dev/null" || fail "the sender did not finish"
wait "$sender" || fail "the sender exited with $?"
[ -f "$tmp/collector/fleet/testhost/00000001-20261201T000001.smseg" ] || fail "the small segment was not sent"
[ "$(refused_names)" = "00000002-20261201T000002.smseg " ] || fail "refused/ holds: $(refused_names)"
grep -q "the collector refuses a segment of 1500000 bytes as too large (HTTP 413): .*below the segment size (the largest segment it accepted: 200000 bytes).*client_max_body_size.*segment_size" \
	"$tmp/sender.log" || fail "the 413 is not explained with both sizes: $(cat "$tmp/sender.log")"
note "503 retried $(grep -c ' 503$' "$tmp/put.log") times; the 413 explained"

# ---- refused/ bounded by count: 6 more refused, 3 kept ----
spool 1100000 1100000 1100000 1100000 1100000 1100000
up --send 2>> "$tmp/sender.log" || fail "the sender failed: $(tail -3 "$tmp/sender.log")"
[ "$(refused_names)" = "00000006-20261201T000006.smseg 00000007-20261201T000007.smseg 00000008-20261201T000008.smseg " ] ||
	fail "refused/ does not hold the newest 3: $(refused_names)"
[ "$(grep -c "dropped the refused segment" "$tmp/sender.log")" = 4 ] ||
	fail "not every drop is logged: $(grep "dropped the refused" "$tmp/sender.log")"
grep -q "dropped the refused segment '00000002-20261201T000002.smseg' (1500000 bytes): refused/ keeps at most 3 segments" \
	"$tmp/sender.log" || fail "the oldest was not dropped first"
up --status > "$tmp/status" || fail "--status failed"
grep -q '^refused by the collector: 3 segments, 3300000 bytes' "$tmp/status" &&
	grep -q '^refused segments dropped: 4$' "$tmp/status" || fail "--status: $(cat "$tmp/status")"
[ "$(grep -c 'as too large (HTTP 413)' "$tmp/sender.log")" = 1 ] ||
	fail "the 413 was explained more than once"

# ---- and by size: at most 3M ----
spool 1100000 1100000
up --send --refused-max-segments 16 --refused-max-size 3M 2>> "$tmp/sender.log" ||
	fail "the sender failed: $(tail -3 "$tmp/sender.log")"
[ "$(refused_names)" = "00000009-20261201T000009.smseg 00000010-20261201T000010.smseg " ] ||
	fail "refused/ does not hold the newest 3 MiB: $(refused_names)"
up --status --refused-max-size 3M > "$tmp/status"
grep -q '^refused segments dropped: 7$' "$tmp/status" || fail "--status: $(cat "$tmp/status")"
[ "$(ls "$tmp/archive" | wc -l)" = 10 ] || fail "the archive lost files"
[ ! -s "$tmp/server.err" ] || fail "the collector reported errors: $(cat "$tmp/server.err")"
note "refused/ bounded: 3 segments, then 3 MiB; 7 dropped, each logged and counted"

# ---- a disk about to fill: refused segments that only refused/ holds go first ----
mkdir -p "$tmp/small"
mount -t tmpfs -o size=4M tmpfs "$tmp/small" || fail "cannot mount a tmpfs"
at_exit "umount '$tmp/small'"
mkdir -p "$tmp/small/spool/refused"
for i in 1 2; do
	head -c 1000000 /dev/urandom > "$tmp/small/spool/refused/0000000$i-20261201T00000$i.smseg"
	touch -d "@$((1700000000 + i))" "$tmp/small/spool/refused/0000000$i-20261201T00000$i.smseg"
done
# what is left of the 4 MiB: less than 10 % free
avail=$(stat -f -c '%a * %S' "$tmp/small")
head -c $(( $avail - 200000 )) /dev/zero > "$tmp/small/filler"
up --send --spool "$tmp/small/spool" --min-free 10 2> "$tmp/small.log" || fail "the sender failed: $(cat "$tmp/small.log")"
[ "$(ls "$tmp/small/spool/refused")" = "00000002-20261201T000002.smseg" ] ||
	fail "not the oldest refused segment dropped for free space: $(ls "$tmp/small/spool/refused") $(cat "$tmp/small.log")"
grep -q "less than 10% free in $tmp/small/spool: dropped the refused segment '00000001-20261201T000001.smseg'" "$tmp/small.log" ||
	fail "the drop for free space is not logged: $(cat "$tmp/small.log")"
up --status --spool "$tmp/small/spool" | grep -q '^refused segments dropped: 1$' ||
	fail "the drop for free space is not counted"
note "a disk about to fill: the oldest refused segment dropped"
exit 0
