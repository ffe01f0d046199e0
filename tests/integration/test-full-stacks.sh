#!/bin/bash
# Full stacks, on a kernel without the stack map (this machine's):
# (a) stackmap = auto on a named instance records full stacks and says so;
# (b) stackmap = on is refused with a clear error and exit 78, with a named
#     instance by the config check, on the top level (on this kernel) at
#     start, before anything in tracefs is touched;
# (c) the recording is complete and each distinct stack is stored once per
#     segment: every stack an event names resolves, no segment holds the
#     same stack twice, and distinct stacks are far fewer than stacks.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
need_events kmem:kmem_cache_alloc sched:sched_switch
# On a kernel with the stack map, (b) would start recording on the top level.
[ -e "$TRACEFS/stack_map" ] && skip "this kernel has a stack map; these checks are for one without"

tmp=$(mktmp)
before=$(tracefs_state)

# ---- (b) stackmap = on ----
# With a named instance: a config error, found by --check and at start.
inst=$(new_instance_name)
write_config "$tmp/on-named.conf" <<EOF
[trace]
instance = $inst
events = sched:sched_switch
stackmap = on

[archive]
directory = $tmp/on-named

[control]
socket = $tmp/on-named.sock
EOF
for args in "--check -c $tmp/on-named.conf" "-c $tmp/on-named.conf"; do
	rc=0
	timeout -s TERM 20 "$STACKMAPD" $args > "$tmp/out" 2>&1 || rc=$?
	[ $rc = 78 ] || { cat "$tmp/out"; fail "stackmapd $args: exit $rc, want 78"; }
	grep -q "$tmp/on-named.conf: stackmap = on needs the top-level instance" "$tmp/out" ||
		{ cat "$tmp/out"; fail "stackmapd $args: no error naming the file and the key"; }
	[ -d "$TRACEFS/instances/$inst" ] && fail "stackmapd $args created instance $inst"
done
note "stackmap = on with a named instance: $(sed 's/^<[0-9]>//' "$tmp/out")"

# On the top level: a valid config, but this kernel has no stack map. The
# daemon checks the kernel before it changes anything (recorder_new:
# tracing_open only looks up the top level, tracing_validate only reads),
# so the top level is safe; the timeout stops a daemon that starts anyway
# (TERM restores what it changed) and the state check below would fail.
write_config "$tmp/on-top.conf" <<EOF
[trace]
events = sched:sched_switch
stacktrace = all
stackmap = on

[archive]
directory = $tmp/on-top

[control]
socket = $tmp/on-top.sock
EOF
# --check runs the same tracefs checks as startup: it refuses too, with the same error.
rc=0
"$STACKMAPD" --check -c "$tmp/on-top.conf" > "$tmp/out" 2>&1 || rc=$?
[ $rc = 78 ] || { cat "$tmp/out"; fail "--check of stackmap = on without a stack map: exit $rc, want 78"; }
grep -q "on-top.conf:4: trace.stackmap: stackmap = on but this kernel has no stackmap" "$tmp/out" ||
	{ cat "$tmp/out"; fail "--check of stackmap = on without a stack map: no clear error"; }
rc=0
timeout -s TERM 20 "$STACKMAPD" -c "$tmp/on-top.conf" > "$tmp/out" 2>&1 || rc=$?
[ $rc = 78 ] || { cat "$tmp/out"; fail "stackmap = on without a stack map: exit $rc, want 78"; }
grep -q "stackmap = on but this kernel has no stackmap" "$tmp/out" ||
	{ cat "$tmp/out"; fail "stackmap = on without a stack map: no clear error"; }
[ ! -e "$tmp/on-top.sock" ] || fail "the control socket was left behind"
[ "$(tracefs_state)" = "$before" ] || { diff <(echo "$before") <(tracefs_state); fail "stackmap = on changed tracefs"; }
note "stackmap = on on the top level: $(sed 's/^<[0-9]>//' "$tmp/out")"

# ---- (a) stackmap = auto on a named instance: full stacks ----
inst=$(new_instance_name)
write_config "$tmp/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc sched:sched_switch
stacktrace = all
stackmap = auto
buffer_size = 8M

[archive]
directory = $tmp/archive
segment_size = 1M
max_size = 0
keep_free = 0

[control]
socket = $tmp/control
EOF
start_daemon "$tmp/stackmapd.conf" "$tmp/daemon.log"
"$STACKMAPCTL" --socket "$tmp/control" status --json > "$tmp/status.json" || fail "status failed"
python3 - "$tmp/status.json" <<'EOF' || fail "status does not say full stacks: $(cat "$tmp/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["stack_mode"] == "full" and s["map"] is None and s["generation"] == 0 else 1)
EOF
note "status: stack_mode full, no map"

# ---- (c) the same recording, full stacks stored once each ----
"$SMLOAD" -j 2 -t 2 -q || fail "smload failed"
stop_daemon_ok "$tmp/daemon.log"
no_log_errors "$tmp/daemon.log"

list_segments "$tmp/archive"
[ ${#segs[@]} -ge 2 ] || fail "expected rotations, got ${#segs[@]} segment(s)"
verify_ok "the archive" "${segs[@]}"
"$STACKMAPCTL" info --json "${segs[@]}" > "$tmp/info.json" || fail "info failed"
"$STACKMAPCTL" stacks --json "${segs[@]}" > "$tmp/stacks.json" || fail "stacks failed"
"$STACKMAPCTL" report --markers "${segs[@]}" > "$tmp/report.txt" 2> "$tmp/report.err" ||
	{ cat "$tmp/report.err"; fail "report failed"; }
grep -qi unresolved "$tmp/report.err" && { cat "$tmp/report.err"; fail "report: unresolved stacks"; }

rc=0
python3 - "$tmp/info.json" "$tmp/stacks.json" "$tmp/report.txt" "${segs[@]}" > "$tmp/dedup.out" 2>&1 <<'EOF' || rc=$?
import json, os, sys

info_path, stacks_path, report_path, segs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
ok = True

def bad(msg):
	global ok
	ok = False
	print(f'FAIL: {msg}', file=sys.stderr)

infos = [json.loads(l) for l in open(info_path) if l.strip()]
events = sum(i['events'] for i in infos)
raw = sum(c['raw_bytes'] for i in infos for c in i['cpus'])
lost = sum(i['lost_events'] for i in infos)
for i in infos:
	if i['meta'].get('stack_mode') != 'full':
		bad(f'{i["path"]}: stack mode {i["meta"].get("stack_mode")!r}, want full')
	if i['unresolved']:
		bad(f'{i["path"]}: {i["unresolved"]} unresolved stack references')

# Each segment's stack table: one entry per distinct stack, one per id.
entries = 0
everywhere = set()
for line in open(stacks_path):
	if not line.strip():
		continue
	seg = json.loads(line)
	if seg['errors']:
		bad(f'{seg["path"]}: {seg["errors"]}')
	seen, ids = {}, set()
	for st in seg['stacks']:
		if st['generation'] != 0 or st['absent'] or st['conflict']:
			bad(f'{seg["path"]}: unexpected entry {st["generation"]}/{st["id"]}')
		frames = tuple(f['address'] for f in st['frames'])
		if len(frames) != st['depth'] or not frames:
			bad(f'{seg["path"]}: stack {st["id"]}: depth {st["depth"]}, {len(frames)} frames')
		if st['id'] in ids:
			bad(f'{seg["path"]}: id {st["id"]} stored twice')
		if frames in seen:
			bad(f'{seg["path"]}: ids {seen[frames]} and {st["id"]} are the same stack')
		ids.add(st['id'])
		seen[frames] = st['id']
		if not all(f['symbol'] and not f['symbol'].startswith('0x') for f in st['frames']):
			bad(f'{seg["path"]}: stack {st["id"]} has frames without symbols')
	entries += len(seen)
	everywhere.update(seen)

# Every event's stack, as the report prints it (innermost frame first).
stacks = 0
with open(report_path) as f:
	for line in f:
		if line.startswith('=> '):
			if '<' in line:
				bad(f'report: {line.strip()}')
			continue
		if ': kernel_stack: ' in line or ': stack_ref: ' in line:
			stacks += 1
# (the segments count a stack as an entry of the ring buffer, like the kernel)
hits = events - stacks
size = sum(os.path.getsize(s) for s in segs)
print(f'{len(segs)} segments: {hits} events with {stacks} stacks ({lost} entries lost); '
      f'{entries} stack table entries ({len(everywhere)} distinct stacks in all), '
      f'{stacks / max(entries, 1):.0f} stacks per entry')
print(f'{size} bytes stored: {size / max(hits, 1):.1f} bytes per event with its stack; '
      f'{raw / max(hits, 1):.1f} bytes per event in the pages before compression')
if stacks < hits / 2:
	bad(f'only {stacks} stacks for {hits} events')
# dedup works: far fewer distinct stacks than stacks
if entries * 20 > stacks:
	bad(f'{entries} stack table entries for {stacks} stacks: not deduplicated')
sys.exit(0 if ok else 1)
EOF
sed 's/^/# /' "$tmp/dedup.out"
[ $rc = 0 ] || fail "stacks are not stored once each"

remove_instance "$inst"
[ "$(tracefs_state)" = "$before" ] || { diff <(echo "$before") <(tracefs_state); fail "tracefs state changed"; }
note "ok"
exit 0
