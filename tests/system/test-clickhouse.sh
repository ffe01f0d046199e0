#!/bin/bash
# A fleet in ClickHouse, from collector to query: three hosts recorded by
# the real daemon (each in UTS and mount namespaces of its own, for its
# host name and boot id: fleet-a; fleet-b with two boots; fleet-c losing
# events while the daemon is stopped) arrive at a collector's incoming
# directory with one damaged segment; stackmapd-load loads them into two
# Debian clickhouse-server processes on 127.0.0.1, the two shards of the
# schema's cluster. Then:
#   - the damaged segment is set aside with a log line, the others moved
#     to the archive; so is a segment that verify passes and export
#     refuses (FILE records beyond the readers' budget), and the good
#     segments of its batch load;
#   - per host, the events (ring-buffer entries) and the lost events in
#     ClickHouse equal `stackmapctl info` on the same files, and each
#     shard holds some hosts;
#   - the top 10 stacks of kmem_cache_alloc in a wall-clock window equal
#     `stackmapctl top` on the same files and window;
#   - the cookbook's memory queries (the allocations paired with their
#     frees, across segments and loads) answer as `stackmapctl memory
#     --json` on the same files: each host's peak bytes and the top stack
#     at it, and fleet-a's top stack at a moment (--at); again after a
#     segment of a batch is loaded alone, and after every segment is
#     loaded again in other batches;
#   - after each of these, every host's entries and lost events still
#     equal `stackmapctl info`: one segment of a batch loaded again
#     (--force), a segment a device sent again, a loader stopped between
#     its commit and moving the files, loading every segment again, and a
#     load that stops before its commit;
#   - a segment that verify cannot read (an I/O error) is left in incoming
#     for the next run, not set aside;
#   - every query of the cookbook in doc/fleet.md runs.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/system/lib-clickhouse.sh"
need_tracefs
need_clickhouse
need_cmd unshare
need_built "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD"
export TZ=UTC
LOAD=$top_srcdir/scripts/stackmapd-load

tmp=$(mktmp)
chmod 755 "$tmp"
ch_servers "$tmp" 2

# ---- three hosts, recorded ----
load_comm=smfleet$$
cp "$SMLOAD" "$tmp/$load_comm" || fail "cannot copy $SMLOAD"
real_stackmapd=$STACKMAPD
# stackmapd with the host name and boot id of the host it plays
cat > "$tmp/stackmapd-as" <<EOF
#!/bin/sh
exec unshare --uts --mount sh -c 'hostname "\$SM_HOST" && mount --bind "\$SM_BOOT" /proc/sys/kernel/random/boot_id && exec "\$0" "\$@"' '$real_stackmapd' "\$@"
EOF
chmod 755 "$tmp/stackmapd-as"

# record HOST BOOT_ID [lose]: one daemon run into incoming/HOST
record() {
	local host=$1 inst buffer=2M t0=$SECONDS
	[ "${3:-}" = lose ] && buffer=64K
	run=$((run + 1))
	inst=$(new_instance_name)
	mkdir -p "$tmp/incoming/$host"
	echo "$2" > "$tmp/boot.$host"
	write_config "$tmp/$host.conf" <<EOF
[trace]
instance = $inst
events = kmem:kmem_cache_alloc kmem:kmalloc kmem:kmem_cache_free kmem:kfree sched:sched_switch
stacktrace = kmem:kmem_cache_alloc kmem:kmalloc
filter.kmem:kmem_cache_alloc = COMM == "$load_comm"
filter.kmem:kmalloc = COMM == "$load_comm"
filter.kmem:kmem_cache_free = COMM == "$load_comm"
filter.kmem:kfree = COMM == "$load_comm"
filter.sched:sched_switch = COMM == "$load_comm"
buffer_size = $buffer
[archive]
directory = $tmp/incoming/$host
segment_age = 1s
max_size = 0
keep_free = 0
[control]
socket = $tmp/control.$host
EOF
	export SM_HOST=$host SM_BOOT=$tmp/boot.$host
	STACKMAPD=$tmp/stackmapd-as start_daemon "$tmp/$host.conf" "$tmp/daemon.$host.$run.log"
	"$tmp/$load_comm" -j 1 -t 1.2 -r 1500 -q
	# pipes held a moment: a peak of live memory with a stack of its own
	"$tmp/$load_comm" -H 200 -t 0.3 > /dev/null
	if [ "${3:-}" = lose ]; then
		kill -STOP "$DAEMON_PID"
		"$tmp/$load_comm" -j 1 -t 0.4 -q
		kill -CONT "$DAEMON_PID"
	fi
	"$tmp/$load_comm" -j 1 -t 0.8 -r 1500 -q
	stop_daemon_ok "$tmp/daemon.$host.$run.log" "$host"
	grep -q "hostname=$host" "$tmp"/incoming/"$host"/*.smseg ||
		fail "$host: the segments do not carry the host name"
	note "$host recorded in $((SECONDS - t0)) s"
}
run=0
record fleet-a 0a0a0a0a-0000-4000-8000-00000000000a
record fleet-b 0b0b0b0b-0000-4000-8000-0000000000b1
record fleet-b 0b0b0b0b-0000-4000-8000-0000000000b2
record fleet-c 0c0c0c0c-0000-4000-8000-00000000000c lose
shopt -s nullglob
for h in fleet-a fleet-b fleet-c; do
	segs=("$tmp/incoming/$h"/*.smseg)
	[ ${#segs[@]} -ge 2 ] || fail "$h: only ${#segs[@]} segments"
	"$STACKMAPCTL" verify "${segs[@]}" > /dev/null || fail "$h: its segments are damaged"
done
segs=("$tmp"/incoming/*/*.smseg)
note "recorded: ${#segs[@]} segments of 3 hosts"

# a damaged segment: a copy of one of fleet-a's, with bytes in the middle overwritten
segs=("$tmp"/incoming/fleet-a/*.smseg)
seg=${segs[0]}
bad=$tmp/incoming/fleet-a/99999999-20260101T000000.smseg
cp "$seg" "$bad"
size=$(stat -c %s "$bad")
printf 'DAMAGEDDAMAGEDDAMAGED' | dd of="$bad" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$STACKMAPCTL" verify "$bad" > /dev/null 2>&1 && fail "the damaged copy verifies"
# a segment that verifies and that export refuses: FILE records beyond the
# readers' memory budget; first in its batch, with two segments of fleet-a
mkdir -p "$tmp/incoming/fleet-0"
bomb=$tmp/incoming/fleet-0/00000001-20260101T000000.smseg
cp "$top_srcdir/tests/fuzz/crashes/report/budget-file-bomb-16MiB-x33.smseg" "$bomb"
"$STACKMAPCTL" verify "$bomb" > /dev/null || fail "the FILE bomb does not verify"

# ---- the first load ----
loader() {
	"$LOAD" --incoming "$tmp/incoming" --archive "$tmp/archive" --damaged "$tmp/damaged" \
		--state "$tmp/state" --port "${CH_TCP[1]}" --stackmapctl "$STACKMAPCTL" --batch 3 "$@"
}
loader 2> "$tmp/load1.log" || { cat "$tmp/load1.log"; fail "the loader failed"; }
cat "$tmp/load1.log"
grep -q "damaged segment '$bad' moved to '$tmp/damaged/fleet-a/${bad##*/}'" "$tmp/load1.log" ||
	fail "no log line about the damaged segment"
[ -f "$tmp/damaged/fleet-a/${bad##*/}" ] && [ ! -e "$bad" ] && [ ! -e "$tmp/archive/fleet-a/${bad##*/}" ] ||
	fail "the damaged segment was not set aside"
grep -q "damaged segment '$bomb' moved to '$tmp/damaged/fleet-0/${bomb##*/}': export refuses it: .*FILE records" \
	"$tmp/load1.log" || fail "no log line about the segment export refuses"
[ -f "$tmp/damaged/fleet-0/${bomb##*/}" ] || fail "the segment export refuses was not set aside"
left=("$tmp"/incoming/*/*.smseg)
[ ${#left[@]} = 0 ] || fail "segments left in incoming: ${left[*]}"
grep -Eq 'loaded [0-9]+ segments, [0-9]+ rows, [0-9]+ entries, [0-9]+ bytes: [0-9.]+ rows/s, [0-9.]+ entries/s, [0-9.]+ MB/s' \
	"$tmp/load1.log" || fail "the loader did not report its throughput"

# per host: ClickHouse's figures against `stackmapctl info` on the same files
info_figures() {
	"$STACKMAPCTL" info --json "$tmp/archive/$1"/*.smseg | python3 -c '
import json, sys
ev = lost = 0
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        ev += int(d["events"]); lost += int(d.get("lost_events", 0))
print(ev, lost)'
}
check_counts() {
	local h want got
	# one query for every host: each query costs a client's start
	chq 1 "SELECT host, sum(entries), toUInt64(0) FROM stackmapd.fleet_events GROUP BY host
		UNION ALL SELECT host, toUInt64(0), sum(lost) FROM stackmapd.fleet_losses GROUP BY host" |
		awk -F '\t' '{ e[$1] += $2; l[$1] += $3 } END { for (h in e) print h, e[h], l[h] }' \
		> "$tmp/counts" || fail "$1: the count query failed"
	for h in fleet-a fleet-b fleet-c; do
		want=$(info_figures "$h")
		got=$(awk -v h="$h" '$1 == h { print $2, $3 }' "$tmp/counts")
		[ "$got" = "$want" ] || fail "$1: $h: ClickHouse has $got (entries, lost), info $want"
	done
}
check_counts "first load"

iso() { python3 -c 'import sys, time; n = int(sys.argv[1]); print(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(n // 10**9)) + ".%09d" % (n % 10**9))' "$1"; }

# ---- live kernel memory: the cookbook's queries against stackmapctl memory ----
# cookbook_query NAME: the query of doc/fleet.md whose first line is "-- memory: NAME"
cookbook_query() {
	python3 - "$top_srcdir/doc/fleet.md" "$1" <<'EOF'
import re, sys
for q in re.findall(r"```sql\n(.*?)```", open(sys.argv[1]).read(), re.S):
    if q.startswith("-- memory: %s\n" % sys.argv[2]):
        print(q, end="")
        sys.exit(0)
sys.exit("no cookbook query '-- memory: %s'" % sys.argv[2])
EOF
}
cookbook_query "each host's peak" > "$tmp/q-peak.sql" &&
	cookbook_query "the stacks at each host's peak" > "$tmp/q-peak-stacks.sql" &&
	cookbook_query "live bytes by stack at a moment" > "$tmp/q-at.sql" ||
	fail "the memory queries are missing from the cookbook"
# memory's figures as the queries print them: HOST BYTES, then HOST BYTES
# EVENT STACK of the top stack (of the peak, or of the --at moment)
mem_figures() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)[sys.argv[2]]
s = d["stacks"][0]
print("%s\t%d" % (sys.argv[1], d["bytes"]))
print("%s\t%d\t%s\t%s" % (sys.argv[1], s["bytes"], s["event"], " <- ".join(s["frames"])))' "$@"
}
: > "$tmp/mem-want"
for h in fleet-a fleet-b fleet-c; do
	"$STACKMAPCTL" memory --json "$tmp/archive/$h"/*.smseg > "$tmp/mem.$h.json" ||
		fail "stackmapctl memory failed on $h"
	mem_figures "$h" peak < "$tmp/mem.$h.json" >> "$tmp/mem-want" || fail "$h: memory found no peak"
done
# a moment in fleet-a's span: for memory --at, and in ns for the query
read -r lo hi < <(chq 1 "SELECT min(alloc_ns), max(alloc_ns) FROM stackmapd.fleet_allocations
	WHERE host = 'fleet-a'")
at_ns=$((lo + (hi - lo) / 2))
"$STACKMAPCTL" memory --json --at "$(iso $at_ns)" "$tmp/archive/fleet-a"/*.smseg |
	mem_figures fleet-a at > "$tmp/mem-at-want" || fail "memory --at failed on fleet-a"
sed "s/toUInt64(toDateTime('[^']*')) \* 1000000000 AS at_ns/toUInt64($at_ns) AS at_ns/g" \
	"$tmp/q-at.sql" > "$tmp/q-at-fleet-a.sql"
grep -q "toUInt64($at_ns) AS at_ns" "$tmp/q-at-fleet-a.sql" || fail "no moment to set in the --at query"
# check_memory LABEL: the queries' answers equal memory's (the queries on both servers)
check_memory() {
	clickhouse-client --port "${CH_TCP[1]}" --multiquery < "$tmp/q-peak.sql" > "$tmp/ch-peak" &&
		clickhouse-client --port "${CH_TCP[2]}" --multiquery < "$tmp/q-peak-stacks.sql" \
			> "$tmp/ch-peak-stacks" &&
		clickhouse-client --port "${CH_TCP[1]}" --multiquery < "$tmp/q-at-fleet-a.sql" \
			> "$tmp/ch-at" || fail "$1: a memory query failed"
	awk -F '\t' -v OFS='\t' 'NR == FNR { print $1, $3; next }
		!seen[$1]++ { print $1, $4, $3, $6 }' "$tmp/ch-peak" "$tmp/ch-peak-stacks" |
		sort > "$tmp/mem-got"
	sort "$tmp/mem-want" | cmp -s - "$tmp/mem-got" ||
		fail "$1: ClickHouse's peaks differ from stackmapctl memory's: $(sort "$tmp/mem-want" | diff - "$tmp/mem-got" | head -c 3000)"
	got=$(awk -F '\t' -v OFS='\t' 'NR == 1 { print $1, $3, $2, $5 }' "$tmp/ch-at")
	[ "$(sed -n 2p "$tmp/mem-at-want")" = "$got" ] ||
		fail "$1: at $(iso $at_ns), ClickHouse's top stack is '$got', memory's '$(sed -n 2p "$tmp/mem-at-want")'"
}
check_memory "first load"
note "memory: each host's peak and its top stack, and fleet-a's top stack at $(iso $at_ns), equal stackmapctl memory's ($(awk -F '\t' 'NF == 2 { printf "%s %s B ", $1, $2 }' "$tmp/mem-want"))"
read -r lost_c < <(chq 1 "SELECT sum(lost) FROM stackmapd.fleet_losses WHERE host = 'fleet-c'")
[ "$lost_c" -gt 0 ] || fail "fleet-c lost nothing: the test forced no loss"
[ "$(chq 1 "SELECT uniqExact(boot_id) FROM stackmapd.fleet_events WHERE host = 'fleet-b'")" = 2 ] ||
	fail "fleet-b does not have two boots"
n1=$(chq 1 "SELECT count() FROM stackmapd.events")
n2=$(chq 2 "SELECT count() FROM stackmapd.events")
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || fail "one shard holds nothing: $n1, $n2 rows"
total=$(chq 2 "SELECT count() FROM stackmapd.fleet_events")
[ "$total" = $((n1 + n2)) ] || fail "the fleet has $total rows, the shards $n1 + $n2"
# What a load of the same segments must repeat: the entries (each a row of
# the segment that holds it, whatever batch it was exported in).
total_entries=$(chq 2 "SELECT sum(entries) FROM stackmapd.fleet_events")
note "first load: $total events on two shards ($n1 + $n2), fleet-c lost $lost_c"

# ---- the top 10 stacks in a wall-clock window, across hosts ----
read -r lo hi < <(chq 1 "SELECT min(wall_ns), max(wall_ns) FROM stackmapd.fleet_events
	WHERE host = 'fleet-a' AND event = 'kmem_cache_alloc'")
since=$((lo + (hi - lo) / 4))
until=$((lo + (hi - lo) * 3 / 4))
chq 2 "SELECT c, arrayStringConcat(frames, ' <- ') AS k
	FROM (SELECT stack_key, count() AS c FROM stackmapd.fleet_events
	      WHERE event = 'kmem_cache_alloc' AND wall_ns BETWEEN $since AND $until GROUP BY stack_key)
	ANY LEFT JOIN (SELECT stack_key, any(frames) AS frames FROM stackmapd.fleet_stacks GROUP BY stack_key)
	USING stack_key ORDER BY c DESC, k LIMIT 10" > "$tmp/ch-top" || fail "the top query failed"
"$STACKMAPCTL" top --json --sort stack --event kmem_cache_alloc --limit 10 --since "$(iso $since)" \
	--until "$(iso $until)" "$tmp"/archive/*/*.smseg | python3 -c '
import json, sys
for e in json.load(sys.stdin)["events"]:
    for r in e["rows"]:
        print("%d\t%s" % (r["count"], r["key"]))' > "$tmp/sm-top" || fail "stackmapctl top failed"
[ "$(wc -l < "$tmp/sm-top")" = 10 ] || fail "top found fewer than 10 stacks in the window"
cmp -s "$tmp/ch-top" "$tmp/sm-top" || fail "ClickHouse's top 10 differ from stackmapctl top's: $(diff "$tmp/ch-top" "$tmp/sm-top" | head -c 3000)"
note "top 10 in $(iso $since) .. $(iso $until): equal ($(head -c 60 "$tmp/ch-top")...)"

# ---- loading again counts nothing twice ----
# one segment of a batch of three, loaded again
segs=("$tmp"/archive/fleet-b/*.smseg)
loader --force "${segs[1]}" 2> "$tmp/load-one.log" || { cat "$tmp/load-one.log"; fail "loading one segment again failed"; }
[ "$(chq 1 "SELECT count() FROM stackmapd.fleet_loads WHERE host = 'fleet-b'")" -gt ${#segs[@]} ] ||
	fail "the segment was not loaded again"
check_counts "one segment of a batch loaded again"
check_memory "one segment of a batch loaded again"

# a segment a device sent again (its answer was lost) that verify cannot
# read at first (an I/O error): left for the next run, then loaded
segs=("$tmp"/archive/fleet-a/*.smseg)
again=$tmp/incoming/fleet-a/${segs[0]##*/}
cp "${segs[0]}" "$again"
cat > "$tmp/stackmapctl-eio" <<EOF
#!/bin/sh
# stackmapctl, whose verify cannot read \$EIO_FILE (as on a failing disk)
if [ "\$1" = verify ]; then
	for a; do
		[ "\$a" = "\$EIO_FILE" ] || continue
		echo "stackmapctl: cannot read '\$a': Input/output error" >&2
		echo '{"path":"'"\$a"'","status":"unreadable","complete":false,"truncated":false,"records":0,"bytes":0,"error_offset":0,"error":"Input/output error","cut_short":false}'
		exit 1
	done
fi
exec "$STACKMAPCTL" "\$@"
EOF
chmod 755 "$tmp/stackmapctl-eio"
rc=0
EIO_FILE=$again loader --stackmapctl "$tmp/stackmapctl-eio" 2> "$tmp/load-eio.log" || rc=$?
[ $rc = 1 ] || { cat "$tmp/load-eio.log"; fail "a loader that could not read a segment exited with $rc"; }
[ -f "$again" ] && [ ! -e "$tmp/damaged/fleet-a/${again##*/}" ] ||
	fail "a segment verify could not read was moved away"
grep -q "cannot read segment '$again' (verify: unreadable .*Input/output error.*): left for the next run" \
	"$tmp/load-eio.log" || fail "no log line about the unreadable segment: $(cat "$tmp/load-eio.log")"
grep -q "1 segments could not be read: left for the next run" "$tmp/load-eio.log" ||
	fail "the unreadable segment was not counted"

# ... and a loader stopped after its commit, before it moved the segments:
# the one sent again and a copy of one of fleet-c's
segs=("$tmp"/archive/fleet-c/*.smseg)
again_c=$tmp/incoming/fleet-c/${segs[0]##*/}
cp "${segs[0]}" "$again_c"
rc=0
STACKMAPD_LOAD_CRASH_AFTER=loads loader 2> "$tmp/load-stop.log" || rc=$?
[ $rc = 3 ] && [ -f "$again" ] && [ -f "$again_c" ] ||
	{ cat "$tmp/load-stop.log"; fail "the loader stopped after its commit exited with $rc"; }
check_counts "a segment sent again, a loader stopped after its commit"
loader 2> "$tmp/load-after.log" || { cat "$tmp/load-after.log"; fail "the load after the stop failed"; }
[ ! -e "$again" ] && [ ! -e "$again_c" ] || fail "the segments left by the stopped loader were not loaded"
check_counts "the load after a stop after the commit"
note "exactly once after a partial --force, a segment sent again, a stop after the commit"

raw0=$(( $(chq 1 "SELECT sum(entries) FROM stackmapd.events") + $(chq 2 "SELECT sum(entries) FROM stackmapd.events") ))
loads_before=$(chq 1 "SELECT count() FROM stackmapd.fleet_loads")
loader 2> "$tmp/load2.log" || { cat "$tmp/load2.log"; fail "the loader failed with nothing to do"; }
[ "$(chq 1 "SELECT count() FROM stackmapd.fleet_loads")" = "$loads_before" ] ||
	fail "a loader with nothing to do loaded something"
nseg=$(ls "$tmp"/archive/*/*.smseg | wc -l)
loader --force "$tmp"/archive/*/*.smseg 2> "$tmp/load3.log" ||
	{ cat "$tmp/load3.log"; fail "loading the archive again failed"; }
[ "$(chq 1 "SELECT count() FROM stackmapd.fleet_loads")" = $((loads_before + nseg)) ] ||
	fail "the segments were not loaded again"
check_counts "loaded twice"
raw=$(( $(chq 1 "SELECT sum(entries) FROM stackmapd.events") + $(chq 2 "SELECT sum(entries) FROM stackmapd.events") ))
[ "$raw" = $((raw0 + total_entries)) ] ||
	fail "after loading all again the shards hold $raw entries, not $raw0 + $total_entries"

# a load that stops after inserting its rows, before its commit
rc=0
STACKMAPD_LOAD_CRASH_AFTER=events loader --force "$tmp"/archive/fleet-c/*.smseg 2> "$tmp/load4.log" || rc=$?
[ $rc = 3 ] || { cat "$tmp/load4.log"; fail "the interrupted load exited with $rc"; }
check_counts "after an interrupted load"
check_memory "after loading every segment again and an interrupted load"
raw2=$(( $(chq 1 "SELECT sum(entries) FROM stackmapd.events") + $(chq 2 "SELECT sum(entries) FROM stackmapd.events") ))
[ "$raw2" -gt "$raw" ] || fail "the interrupted load inserted nothing: the test proves nothing"
[ "$(chq 1 "SELECT count() FROM stackmapd.fleet_events")" = "$total" ] ||
	fail "the fleet's events changed after an interrupted load"
note "loaded twice and once interrupted: $raw2 entries stored, $total_entries counted"

# ---- the cookbook of doc/fleet.md, as written ----
python3 - "$top_srcdir/doc/fleet.md" "$tmp/cookbook" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
qs = re.findall(r"```sql\n(.*?)```", text, re.S)
for i, q in enumerate(qs):
    open("%s.%02d.sql" % (sys.argv[2], i), "w").write(q)

EOF
n=0
for q in "$tmp"/cookbook.*.sql; do
	out=$(clickhouse-client --port "${CH_TCP[1]}" --multiquery < "$q" 2>&1) ||
		fail "cookbook query $(basename "$q") fails: $out
$(cat "$q")"
	n=$((n + 1))
done
[ $n -ge 6 ] || fail "only $n cookbook queries in doc/fleet.md"
note "$n cookbook queries ran"
exit 0
