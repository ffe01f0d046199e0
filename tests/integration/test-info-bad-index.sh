#!/bin/bash
# stackmapctl info on an unfinished segment (no footer) whose INDEX record
# is intact as a record (its CRCs match) but whose payload does not decode:
# info must call it damaged and exit non-zero; the same file with a good
# INDEX payload is a plain unfinished segment (exit 0).
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
for b in "$MKSEG" "$STACKMAPCTL" "$SMLOAD"; do
	[ -x "$b" ] || skip "$b is not built"
done

tmp=$(mktmp)
inst=$(new_instance_name)
"$MKSEG" -n "$inst" -b 256 -o "$tmp" -e sched:sched_switch -- "$SMLOAD" -q -t 0.1 \
	> "$tmp/paths" || fail "mkseg failed"
seg=$(sed -n 1p "$tmp/paths")
[ -f "$seg" ] || fail "mkseg wrote no segment"

# cut FILE OUT BREAK: drop the footer; with BREAK, claim one CPU line more
# in the INDEX payload than it holds, with both CRCs recomputed.
cut_seg() {
	python3 - "$@" <<'PY'
import struct, sys
src, out, brk = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
d = bytearray(open(src, "rb").read())
off = struct.unpack_from("<Q", d, len(d) - 24)[0]
d = d[:len(d) - 24]
if brk:
    p = off + 32
    n = struct.unpack_from("<I", d, p)[0]
    struct.pack_into("<I", d, p, n + 1)
    struct.pack_into("<I", d, off + 24, crc(bytes(d[p:])))
    struct.pack_into("<I", d, off + 28, crc(bytes(d[off:off + 28])))
open(out, "wb").write(d)
PY
}
cut_seg "$seg" "$tmp/good.smseg.part" 0 || fail "cannot cut the segment"
cut_seg "$seg" "$tmp/bad.smseg.part" 1 || fail "cannot cut the segment"

rc=0
"$STACKMAPCTL" info "$tmp/good.smseg.part" > "$tmp/good.out" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$tmp/good.out"; fail "info on an unfinished segment with a good INDEX exited $rc"; }
grep -q '^state: *unfinished' "$tmp/good.out" || { cat "$tmp/good.out"; fail "not shown as unfinished"; }
"$STACKMAPCTL" verify --json "$tmp/bad.smseg.part" > "$tmp/verify.out" 2>&1
rc=0
"$STACKMAPCTL" info "$tmp/bad.smseg.part" > "$tmp/bad.out" 2>&1 || rc=$?
[ $rc != 0 ] || { cat "$tmp/bad.out"; fail "info on an unfinished segment with a bad INDEX exited 0"; }
grep -q '^state: *damaged' "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "a bad INDEX is not shown as damage"; }
rc=0
"$STACKMAPCTL" info --json "$tmp/bad.smseg.part" > "$tmp/bad.json" 2>&1 || rc=$?
[ $rc != 0 ] && grep -q '"state": *"damaged"' "$tmp/bad.json" ||
	{ cat "$tmp/bad.json"; fail "info --json: exit $rc on a bad INDEX"; }
exit 0
