#!/bin/bash
# A stack split across a segment boundary: the last event of one segment
# has its stack as the first entry of the next (the kernel stamps a stack
# after its event). report prints them together; top, folded and the
# ClickHouse export must pair them too, not count a "[no stack]" event
# and an "[unknown]" stack; the export keeps each entry in its own
# segment's rows. The two segments come from the real pages of
# tests/data (test-decode --split). Needs no tracefs.
. "$top_srcdir/tests/lib.sh"

: "${TEST_DECODE:=$top_builddir/tests/unit/test-decode}"
for b in "$TEST_DECODE" "$STACKMAPCTL"; do
	[ -x "$b" ] || fail "$b is not built"
done
tmp=$(mktmp)
mkdir "$tmp/seg"
"$TEST_DECODE" --split "$tmp/seg" > "$tmp/paths" 2> "$tmp/err" ||
	fail "test-decode --split: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/paths")" = 2 ] || fail "test-decode --split wrote: $(cat "$tmp/paths")"

# report: every kmem_cache_alloc is followed by its stack
"$STACKMAPCTL" report "$tmp/seg" > "$tmp/report" 2> "$tmp/err" || fail "report: $(cat "$tmp/err")"
events=$(grep -c ' kmem_cache_alloc: ' "$tmp/report")
[ "$events" -gt 0 ] || fail "report printed no kmem_cache_alloc"
awk '/ kmem_cache_alloc: /{want=1; next} want && / kernel_stack: /{paired++} {want=0}
	END{print paired+0}' "$tmp/report" > "$tmp/paired"
[ "$(cat "$tmp/paired")" = "$events" ] ||
	fail "report paired $(cat "$tmp/paired") of $events kmem_cache_alloc events with a stack"

# top: no kmem_cache_alloc without its stack
"$STACKMAPCTL" top "$tmp/seg" > "$tmp/top" 2> "$tmp/err" || fail "top: $(cat "$tmp/err")"
grep -q "^# kmem_cache_alloc: $events events" "$tmp/top" || fail "top: $(grep '^#' "$tmp/top")"
awk '/^# /{sec=$2} sec=="kmem_cache_alloc:" && /\[no stack\]/' "$tmp/top" > "$tmp/nostack"
[ ! -s "$tmp/nostack" ] || fail "top counts kmem_cache_alloc without a stack: $(cat "$tmp/nostack")"

# folded: every kmem_cache_alloc with a stack, one "[unknown]": the first
# stack of the data, whose event the kernel lost before the first page
"$STACKMAPCTL" folded "$tmp/seg" > "$tmp/folded" 2> "$tmp/err" || fail "folded: $(cat "$tmp/err")"
got=$(awk '/^kmem_cache_alloc;/{n += $NF} END{print n+0}' "$tmp/folded")
unknown=$(awk '/^\[unknown\]/{n += $NF} END{print n+0}' "$tmp/folded")
[ "$got" = "$events" ] && [ "$unknown" = 1 ] ||
	fail "folded: $got of $events kmem_cache_alloc with a stack, $unknown [unknown] stacks"

# ClickHouse: every kmem_cache_alloc row with its stack. The split
# stack's entry stays its segment's: a row without event ("[unknown]",
# beside the lost one's), so that each segment's rows count the same
# whether it is exported with the other or alone (the loader's batches);
# apart, only the paired event's row lacks its stack.
"$STACKMAPCTL" export --format clickhouse -o "$tmp/ch" "$tmp/seg" 2> "$tmp/err" ||
	fail "export: $(cat "$tmp/err")"
got=$(grep -c $'\tkmem_cache_alloc\t' "$tmp/ch/events.tsv")
nostack=$(awk -F '\t' '$11 == "kmem_cache_alloc" && $14 == 0' "$tmp/ch/events.tsv" | wc -l)
unknown=$(grep -c $'\t\\[unknown\\]\t' "$tmp/ch/events.tsv")
[ "$got" = "$events" ] && [ "$nostack" = 0 ] && [ "$unknown" = 2 ] ||
	fail "clickhouse: $got rows of $events kmem_cache_alloc ($nostack without a stack), $unknown [unknown] rows"
i=0
while read -r seg; do
	i=$((i + 1))
	"$STACKMAPCTL" export --format clickhouse -o "$tmp/ch$i" "$seg" 2> "$tmp/err" ||
		fail "export of $seg: $(cat "$tmp/err")"
done < "$tmp/paths"
# rows without their load id (each export has its own)
cut -f 5 --complement "$tmp/ch/events.tsv" | sort > "$tmp/together"
cat "$tmp/ch1/events.tsv" "$tmp/ch2/events.tsv" | cut -f 5 --complement | sort > "$tmp/apart"
entries() { awk -F '\t' '{ n += $NF } END { print n + 0 }' "$@"; }
[ "$(entries "$tmp/ch/events.tsv")" = "$(entries "$tmp/ch1/events.tsv" "$tmp/ch2/events.tsv")" ] ||
	fail "clickhouse: $(entries "$tmp/ch/events.tsv") entries together, $(entries "$tmp/ch1/events.tsv" "$tmp/ch2/events.tsv") apart"
[ "$(diff "$tmp/together" "$tmp/apart" | grep -c '^[<>]')" = 2 ] ||
	fail "clickhouse: the segments' rows apart differ in more than the paired event's: $(diff "$tmp/together" "$tmp/apart" | head -20)"
exit 0
