#!/bin/bash
# Filters that cannot match say so: a window that ends before it begins, a
# CPU the recording does not have, an event type, task name or pid that is
# not in it (with what it holds and the closest name) are errors with exit
# status 2 and no output, in every command that takes the filters; a valid
# filter that matches nothing prints "no events matched" on stderr.
. "$top_srcdir/tests/lib.sh"

need_tracefs
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || skip "$b is not built"
done

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir -p "$tmp/seg"
"$MKSEG" -n "$inst" -p -b 4096 -O "$tmp/seg" -k kmem:kmem_cache_alloc -e sched:sched_switch \
	-- "$SMLOAD" -q -j 1 -t 0.2 > /dev/null || fail "mkseg failed"
ncpus=$(getconf _NPROCESSORS_CONF)

# expect_mistake PATTERN COMMAND-ARGS...: exit 2, PATTERN on stderr, nothing on stdout
expect_mistake() {
	local pattern=$1 rc
	shift
	rm -rf "$tmp/out" "$tmp/csv"
	"$STACKMAPCTL" "$@" > "$tmp/stdout" 2> "$tmp/stderr"
	rc=$?
	[ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2: $(cat "$tmp/stderr")"
	grep -Eq -- "$pattern" "$tmp/stderr" || fail "'$*' said: $(cat "$tmp/stderr")"
	[ -s "$tmp/stdout" ] && fail "'$*' printed: $(head -3 "$tmp/stdout")"
	[ -e "$tmp/out" ] && fail "'$*' wrote its output file"
	return 0
}

for cmd in report top folded "flamegraph -o $tmp/out" "export --format pprof -o $tmp/out"; do
	# shellcheck disable=SC2086
	set -- $cmd
	expect_mistake 'since 200 is after --until 100' "$@" --since 200 --until 100 "$tmp/seg"
	expect_mistake "cpu $((ncpus + 3)): the selection was recorded on CPU" \
		"$@" --cpu "$((ncpus + 3))" "$tmp/seg"
	expect_mistake "event kmem:nosuch: no event type .*It holds: .*kmem:kmem_cache_alloc" \
		"$@" --event kmem:nosuch "$tmp/seg"
	expect_mistake "did you mean 'kmem_cache_alloc'" "$@" --event kmem_cach_alloc "$tmp/seg"
	expect_mistake "comm smlaod: .*did you mean 'smload'" "$@" --comm smlaod "$tmp/seg"
	expect_mistake "pid 99999999: no event" "$@" --pid 99999999 "$tmp/seg"
done
# a pid one digit off one of smload's (which is not another task's): a
# task with a pid that close is named, and smload among those held
pid=$("$STACKMAPCTL" report "$tmp/seg" | sed -nE 's/^ *smload-([0-9]+) .*/\1/p' | sort -n | tail -n 1)
[ -n "$pid" ] || fail "no event of smload in the recording"
"$STACKMAPCTL" report "$tmp/seg" | sed -nE 's/^ *[^ ]+-([0-9]+) +\[.*/\1/p' | sort -u > "$tmp/pids"
typo=
for d in 0 1 2 3 4 5 6 7 8 9; do
	t=${pid%?}$d
	grep -qx "$t" "$tmp/pids" || { typo=$t; break; }
done
[ -n "$typo" ] || fail "no pid one digit off $pid is free"
for cmd in report top; do
	expect_mistake "pid $typo: no event .*did you mean [0-9]+ \([^)]+\)\? It holds: .*$pid \(smload\)" \
		"$cmd" --pid "$typo" "$tmp/seg"
done

# a wall-clock window reversed
expect_mistake 'is after --until' report --since -1min --until -2min "$tmp/seg"

# valid filters that match nothing: a notice, exit status 0
"$STACKMAPCTL" top --since 999999 "$tmp/seg" > "$tmp/stdout" 2> "$tmp/stderr" ||
	fail "top with an empty window exited $?: $(cat "$tmp/stderr")"
grep -q 'no events matched' "$tmp/stderr" || fail "no notice: $(cat "$tmp/stderr")"
"$STACKMAPCTL" report --comm smload --event sched_switch --until 0.000001 "$tmp/seg" \
	> "$tmp/stdout" 2> "$tmp/stderr"
[ $? = 0 ] && grep -q 'no events matched' "$tmp/stderr" && [ ! -s "$tmp/stdout" ] ||
	fail "a valid filter matching nothing: $(cat "$tmp/stderr")"

# and filters that match still work
"$STACKMAPCTL" top --comm smload --event kmem_cache_alloc --cpu 0-$((ncpus - 1)) "$tmp/seg" \
	> "$tmp/stdout" 2> "$tmp/stderr" || fail "top with matching filters exited $?"
grep -q '^# kmem_cache_alloc: ' "$tmp/stdout" || fail "top printed: $(head -3 "$tmp/stdout")"
grep -q 'no events matched' "$tmp/stderr" && fail "notice although events matched"
exit 0
