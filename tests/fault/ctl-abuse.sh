#!/bin/bash
# Control socket abuse while the daemon records: 200 idle clients kept
# connected, garbage, truncated, oversized and very slow requests, clients
# that never read their replies, and peers that are not allowed in.
# `stackmapctl status` must answer every time within 1 s; the daemon must
# keep recording and survive; its fd count must come back to where it was
# after the first round
# and its RSS must not grow from one round of abuse to the next; the
# refusals, evictions and reply timeouts must be counted in `status` and logged
# rate-limited.
#   CTL_IDLE=N (200), CTL_SECONDS=N (8)
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd python3
need_cmd setpriv
. "$top_srcdir/tests/fault/lib-fault.sh"

fault_conf "$ftmp/c.conf" "$ftmp/archive"
start_recording "$ftmp/c.conf" "$ftmp/d.log"
start_load 1
nfd() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status"; }
# control_field KEY: the control.KEY counter of `status --json`.
control_field() {
	ctl status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["control"][sys.argv[1]])' "$1"
}
failures=()
failed() { failures+=("$*"); }

# abuse ROUND SECONDS: one round of abuse; checks its status timings.
abuse() {
	python3 "$top_srcdir/tests/fault/ctl-abuse.py" "$ftmp/control" "$STACKMAPCTL" \
		"${CTL_IDLE:-200}" "$2" > "$ftmp/abuse$1.out" 2>&1 ||
		{ cat "$ftmp/abuse$1.out"; fail "the abuse client failed"; }
	sed 's/^/# round '"$1"': /' "$ftmp/abuse$1.out"
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died: $(tail -n 5 "$ftmp/d.log")"
	local worst
	worst=$(sed -n 's/.*worst_status_s=\([0-9.]*\).*/\1/p' "$ftmp/abuse$1.out")
	awk -v w="$worst" 'BEGIN { exit !(w != "" && w <= 1.0) }' ||
		failed "round $1: status took up to ${worst}s to answer (limit 1 s)"
	grep -q 'failures=0 ' "$ftmp/abuse$1.out" || failed "round $1: status failed or was slow while clients were connected"
}
clients_gone() { [ "$(control_field clients)" -le 1 ]; }

wait_until 10 ctl status >/dev/null || fail "no answer: $(tail -n 5 "$ftmp/d.log")"
ev0=$(status_field events)

# Peers that are neither root nor in a group: refused, counted, logged once.
for ((i = 0; i < 30; i++)); do
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override \
		--ambient-caps=+dac_override "$STACKMAPCTL" --socket "$ftmp/control" status \
		> /dev/null 2> "$ftmp/denied.err"
	rc=$?
	[ $rc = 77 ] || { failed "uid 65534: exit $rc, expected 77: $(cat "$ftmp/denied.err")"; break; }
done
grep -q "permission denied: uid 65534" "$ftmp/denied.err" || failed "refusal message: $(cat "$ftmp/denied.err")"
[ "$(control_field denied)" -ge 30 ] || failed "status control.denied $(control_field denied), expected >= 30"
n=$(grep -c 'control: refused uid 65534' "$ftmp/d.log")
[ "$n" -ge 1 ] && [ "$n" -le 2 ] || failed "$n log lines for 30 refused peers, expected 1 (rate-limited)"

abuse 1 3
wait_until 15 clients_gone || failed "round 1: $(control_field clients) clients still connected 15 s after they left"
rss1=$(rss_kb)
fd1=$(nfd)		# after a first round: the readers' pipes and such are open by now
abuse 2 "${CTL_SECONDS:-8}"
wait_until 15 clients_gone || failed "round 2: $(control_field clients) clients still connected 15 s after they left"
rss2=$(rss_kb)
echo "# RSS ${rss1} kB after round 1, ${rss2} kB after round 2"
if sanitized "$STACKMAPD"; then
	note "sanitizer build: RSS growth not checked (ASan's quarantine); leaks are LeakSanitizer's"
else
	[ "$rss2" -le $((rss1 + 4096)) ] || failed "RSS grew from $rss1 kB to $rss2 kB between two rounds of abuse"
fi

ctl status --json > "$ftmp/st.json" || fail "status"
python3 - "$ftmp/st.json" "${CTL_IDLE:-200}" <<-'EOF' > "$ftmp/counters" || failed "status counters: $(cat "$ftmp/counters")"
	import json, sys
	c = json.load(open(sys.argv[1]))["control"]
	print(c)
	ok = (c["max_clients"] < int(sys.argv[2]) and c["evicted"] > 0
	      and c["reply_timeouts"] > 0 and c["bad_requests"] > 0 and c["refused"] == 0
	      and c["accepted"] > int(sys.argv[2]))
	sys.exit(0 if ok else 1)
	EOF
sed 's/^/# control: /' "$ftmp/counters"
ctl status > "$ftmp/st.txt" || fail "status (text)"
grep -Eq '^control\.evicted: +[1-9]' "$ftmp/st.txt" || failed "status text has no control.evicted line: $(grep control "$ftmp/st.txt")"

for what in "evicted so far" "did not read its reply"; do
	n=$(grep -c "$what" "$ftmp/d.log")
	[ "$n" -ge 1 ] && [ "$n" -le 2 ] || failed "$n log lines '$what', expected 1 or 2 (rate-limited)"
done
grep -E '^<[0-3]>' "$ftmp/d.log" > "$ftmp/errors"
[ ! -s "$ftmp/errors" ] || failed "errors in the log: $(head -n 3 "$ftmp/errors")"

ev1=$(status_field events)
[ "${ev1:-0}" -gt "${ev0:-0}" ] || failed "recording stalled: events $ev0 -> $ev1"
back() { [ "$(nfd)" -le "$fd1" ]; }
wait_until 15 back || failed "fd leak: $fd1 fds after round 1, $(nfd) 15 s after the clients left: $(ls -l "/proc/$DAEMON_PID/fd" | sed 's/.* -> //' | sort | uniq -c | tr '\n' ' ')"
stop_daemon || failed "stop exited $?"
if [ ${#failures[@]} -gt 0 ]; then
	for f in "${failures[@]}"; do echo "FAIL: $TEST_NAME: $f" >&2; done
	exit 1
fi
exit 0
