#!/bin/bash
# stackmapctl info on a hostile segment of 65 NOTE records, one of them
# 8 MiB (a fuzzing finding: its JSON was 50 MB of escapes and took the
# fuzzer past its 10 s limit): info shows at most 4096 bytes of a note and
# 64 notes, says what it left out, and exits as for any unfinished segment.
. "$top_srcdir/tests/lib.sh"
need_built "$STACKMAPCTL"

seg=$top_srcdir/tests/fuzz/crashes/verify/info-note-8MiB-65-notes.smseg
[ -f "$seg" ] || fail "$seg is missing"
tmp=$(mktmp)

"$STACKMAPCTL" info --json "$seg" > "$tmp/info.json" 2> "$tmp/err"
rc=$?
[ "$rc" -le 1 ] || fail "info --json exited $rc: $(head -c 300 "$tmp/err")"
size=$(stat -c %s "$tmp/info.json")
[ "$size" -lt 1000000 ] || fail "info --json printed $size bytes for a 20 KB file"
python3 - "$tmp/info.json" <<'PY' || fail "the notes are not bounded as they should be"
import json, sys
d = json.loads(open(sys.argv[1]).readline())
notes = d["notes"]
assert len(notes) == 64, len(notes)
assert d.get("notes_not_shown") == 1, d.get("notes_not_shown")
cut = [n for n in notes if "more bytes not shown]" in n]
assert len(cut) == 1 and cut[0].endswith("[8384512 more bytes not shown]"), [n[-60:] for n in cut]
PY
"$STACKMAPCTL" info "$seg" > "$tmp/info.txt" 2>/dev/null
size=$(stat -c %s "$tmp/info.txt")
[ "$size" -lt 1000000 ] || fail "info printed $size bytes for a 20 KB file"
grep -q "1 more notes not shown" "$tmp/info.txt" || fail "info does not say a note was left out"
exit 0
