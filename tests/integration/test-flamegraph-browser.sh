#!/bin/bash
# The flame graph in a browser, as a user sees it: headless Chromium driven
# through chromedriver (WebDriver over HTTP on 127.0.0.1) opens the SVGs
# that `stackmapctl flamegraph` wrote from a small recording, plain and
# differential, and checks that the script runs without errors, the graph
# fills the window, hover shows a frame's count, a click zooms a frame to
# the full width, a search highlights the matching frames and shows their
# share, and diff frames are red or blue with their change
# (flamegraph-browser.py). Screenshots are left in the test's directory.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
need_cmd chromium
need_cmd chromedriver
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || skip "$b is not built"
done

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir -p "$tmp/a" "$tmp/b"
"$MKSEG" -n "$inst" -p -b 4096 -O "$tmp/a" -k kmem:kmem_cache_alloc -- "$SMLOAD" -q -j 1 -n 2000 \
	> /dev/null || fail "mkseg failed"
"$MKSEG" -n "$inst" -p -b 4096 -O "$tmp/b" -k kmem:kmem_cache_alloc -- \
	sh -c 'cat /usr/include/*.h > /dev/null; ls -lR /usr/include > /dev/null' \
	> /dev/null || fail "mkseg failed"
"$STACKMAPCTL" flamegraph -o "$tmp/plain.svg" "$tmp/a" || fail "flamegraph failed"
"$STACKMAPCTL" flamegraph -o "$tmp/diff.svg" --diff "$tmp/a" "$tmp/b" || fail "flamegraph --diff failed"
HOME=$tmp python3 "$top_srcdir/tests/integration/flamegraph-browser.py" "$(command -v chromedriver)" \
	"$(command -v chromium)" "$tmp" "$tmp/plain.svg" "$tmp/diff.svg" kmem_cache_alloc ||
	fail "the flame graph does not work in the browser"
for p in hover zoom search diff; do
	[ -s "$tmp/flamegraph-$p.png" ] || fail "no screenshot of $p"
done
if [ -n "${KEEP_SCREENSHOTS:-}" ]; then cp "$tmp"/flamegraph-*.png "$KEEP_SCREENSHOTS/"; fi
exit 0
