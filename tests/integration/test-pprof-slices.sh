#!/bin/bash
# export --format pprof --slice on a real recording that lost events (the
# daemon stopped while a load filled its buffer), read back with
# `go tool pprof -raw`: one profile per second, host, kernel and event,
# each with the slice's start time and duration, host, kernel and event
# as comments, no pid or cpu labels unless asked for, and a
# "[lost events]" sample that adds up, over the slices, to the losses
# `stackmapctl info` reports. Without --slice, one profile whose start is
# the recording's first event in wall-clock time.
. "$top_srcdir/tests/lib.sh"
need_tracefs
need_cmd go
need_cmd python3
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
export TZ=UTC

tmp=$(mktmp)
chmod 755 "$tmp"
load_comm=smslice$$
cp "$SMLOAD" "$tmp/$load_comm" || fail "cannot copy $SMLOAD"
inst=$(new_instance_name)
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = kmem:kmem_cache_alloc
filter.kmem:kmem_cache_alloc = COMM == "$load_comm"
filter.sched:sched_switch = COMM == "$load_comm"
buffer_size = 64K
[archive]
directory = $tmp/archive
segment_age = 1s
max_size = 0
keep_free = 0
[control]
socket = $tmp/control
EOF
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
"$tmp/$load_comm" -j 1 -t 1.2 -r 1500 -q
kill -STOP "$DAEMON_PID"
"$tmp/$load_comm" -j 1 -t 0.4 -q
kill -CONT "$DAEMON_PID"
"$tmp/$load_comm" -j 1 -t 1.2 -r 1500 -q
stop_daemon_ok "$tmp/daemon.log"
list_segments "$tmp/archive"
verify_ok "the archive" "${segs[@]}"

read -r lost < <("$STACKMAPCTL" info --json "${segs[@]}" | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        n += int(d.get("lost_events", 0)) + int(d.get("lost_unknown_pages", 0))
print(n)')
[ "$lost" -gt 0 ] || fail "the recording lost nothing: the test forced no loss"

"$STACKMAPCTL" export --format pprof --slice 1s -o "$tmp/slices" "${segs[@]}" ||
	fail "export --slice failed"
shopt -s nullglob
files=("$tmp"/slices/*.pb.gz)
[ ${#files[@]} -ge 3 ] || fail "only ${#files[@]} slice profiles"
for f in "${files[@]}"; do
	HOME=$tmp go tool pprof -raw "$f" > "$f.raw" 2> "$f.err" || fail "pprof cannot read $f: $(cat "$f.err")"
done
python3 - "$lost" "$(uname -n)" "$(uname -r)" "${files[@]}" <<'EOF' || fail "the slices are not what they should be"
import calendar, os, re, sys, time

want_lost, host, kernel = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lost_by_slice = {}
events = set()
for f in sys.argv[4:]:
    raw = open(f + ".raw").read()
    name = os.path.basename(f)
    m = re.match(r"(\d{8}T\d{6}Z)_(.+)\.pb\.gz$", name)
    assert m, name
    start = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))
    comments = dict(c.split("=", 1) for c in re.findall(r"^Comment: (.*)$", raw, re.M))
    assert comments.get("host") == host, (name, comments)
    assert comments.get("kernel") == kernel, (name, comments)
    event = comments.get("event")
    assert event and name.endswith("_%s.pb.gz" % event), (name, comments)
    events.add(event)
    t = re.search(r"^Time: (\S+ \S+) ", raw, re.M)
    assert t and calendar.timegm(time.strptime(t.group(1), "%Y-%m-%d %H:%M:%S")) == start, (name, t)
    assert re.search(r"^Duration: 1s$", raw, re.M), (name, "duration")
    assert not re.search(r"\b(pid|cpu):\[", raw), (name, "pid/cpu labels by default")
    loc = re.search(r"^\s+(\d+): 0x1 M=\d+ \[lost events\]", raw, re.M)
    if loc:
        n = sum(int(v) for v, ids in re.findall(r"^\s+(\d+): ([\d ]+?) *$", raw, re.M)
                if ids.split() == [loc.group(1)])
        # every event's profile of a slice shows the same loss
        assert lost_by_slice.setdefault(start, n) == n, (name, n, lost_by_slice[start])
assert {"kmem_cache_alloc", "sched_switch"} <= events, events
got = sum(lost_by_slice.values())
assert got == want_lost, ("lost events in the slices", got, "info", want_lost)
print("# %d slice profiles; %d lost events in %d slices" % (len(sys.argv) - 4, got, len(lost_by_slice)))
EOF

# one profile: its start is the first event's wall-clock time; labels on request
"$STACKMAPCTL" export --format pprof --pid-cpu-labels -o "$tmp/all.pb.gz" "${segs[@]}" ||
	fail "export pprof failed"
HOME=$tmp go tool pprof -raw "$tmp/all.pb.gz" > "$tmp/all.raw" 2>&1 || fail "pprof cannot read it"
first=$(ls "$tmp"/slices/*.pb.gz | head -n 1)
first=${first##*/}
start=$(sed -n 's/^Time: \([0-9-]* [0-9:]*\).*/\1/p' "$tmp/all.raw")
[ "$(date -u -d "$start" +%Y%m%dT%H%M%SZ)" = "${first%%_*}" ] ||
	fail "the profile starts at $start, the first slice is ${first%%_*}"
grep -Eq '\<pid:\[' "$tmp/all.raw" && grep -Eq '\<cpu:\[' "$tmp/all.raw" ||
	fail "--pid-cpu-labels gave no pid and cpu labels"
grep -q '\[lost events\]' "$tmp/all.raw" || fail "the profile has no [lost events] sample"
exit 0
