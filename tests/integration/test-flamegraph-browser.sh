#!/bin/bash
# The flame graph is a web page: an SVG that `stackmapctl flamegraph` wrote
# from a real recording, plain and differential, opened in headless
# Chromium through chromedriver and used as a person would
# (check-flamegraph-browser.py: no script errors, full window width,
# hover shows the count, click zooms a frame to the full width, Search
# highlights the matches and shows their share, diff colours follow the
# change). FLAMEGRAPH_SCREENSHOT=FILE.png keeps the plain graph's
# screenshot there (doc/flamegraph.png is one).
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd chromium
need_cmd chromedriver
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
	skip "needs Debian's python3-selenium"
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
need_built "$MKSEG" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
inst=$(new_instance_name)
check=$top_srcdir/tests/integration/check-flamegraph-browser.py

# Two recordings of kmem_cache_alloc with their stacks: the load, then file
# reads, whose allocations come from other call paths.
record() { # record DIR COMMAND...: prints the segment
	local dir=$1
	shift
	mkdir -p "$dir/plain" "$dir/seg"
	"$MKSEG" -n "$inst" -b 1024 -o "$dir/plain" -O "$dir/seg" -k kmem:kmem_cache_alloc \
		-- "$@" > "$dir/paths" || fail "mkseg failed"
	sed -n 2p "$dir/paths"
}
before=$(record "$tmp/a" "$SMLOAD" -q -j 2 -t 0.3)
after=$(record "$tmp/b" sh -c 'for i in 1 2 3; do cat /proc/kallsyms /proc/self/maps; ls -lR /usr/lib >/dev/null 2>&1; done >/dev/null')
[ -f "$before" ] && [ -f "$after" ] || fail "mkseg wrote no segments"

"$STACKMAPCTL" flamegraph -o "$tmp/plain.svg" "$before" || fail "flamegraph failed"
"$STACKMAPCTL" flamegraph -o "$tmp/diff.svg" --diff "$before" "$after" ||
	fail "flamegraph --diff failed"
grep -q '>Flame graph: kmem_cache_alloc ([0-9]* events)</text>' "$tmp/plain.svg" ||
	fail "the title does not name the event: $(grep -o '<text id="title"[^<]*' "$tmp/plain.svg")"
grep -q "<text id=\"subtitle\"[^>]*>all events; 1 segment of $before</text>" "$tmp/plain.svg" ||
	fail "the subtitle does not name the source: $(grep -o '<text id="subtitle"[^<]*' "$tmp/plain.svg")"
grep -q "; against $before</text>" "$tmp/diff.svg" || fail "the diff's subtitle does not name its baseline"

shot=${FLAMEGRAPH_SCREENSHOT:-$tmp/plain.png}
# Chromium and chromedriver keep their profile in HOME.
HOME=$tmp timeout 180 /usr/bin/python3 "$check" "$tmp/plain.svg" "$shot" ||
	fail "the plain flame graph failed in the browser"
HOME=$tmp timeout 180 /usr/bin/python3 "$check" --diff "$tmp/diff.svg" "$tmp/diff.png" ||
	fail "the differential flame graph failed in the browser"
[ -s "$shot" ] && [ -s "$tmp/diff.png" ] || fail "no screenshot"
exit 0
