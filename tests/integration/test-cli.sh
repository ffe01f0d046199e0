#!/bin/bash
# stackmapctl's command line as a user meets it: `help COMMAND` prints the
# command's help; a mistyped command gets the closest name, not the whole
# list; an unknown sort key of top names the keys there are; the command
# list says what export writes; control commands'
# --help explains their options; the manual's synopsis keeps
# `boot-cmdline [-c FILE]` on one line; bash completion offers every
# command even when stackmapctl is not in PATH. Needs no tracefs.
. "$top_srcdir/tests/lib.sh"

[ -x "$STACKMAPCTL" ] || fail "$STACKMAPCTL is not built"
tmp=$(mktmp)

"$STACKMAPCTL" help report > "$tmp/out" 2>&1 || fail "help report exited $?: $(cat "$tmp/out")"
grep -q '^Usage: stackmapctl report' "$tmp/out" || fail "help report printed: $(head -3 "$tmp/out")"
"$STACKMAPCTL" help > "$tmp/out" || fail "help exited $?"
grep -q '^  top ' "$tmp/out" || fail "help lists no top"
"$STACKMAPCTL" help nosuchthing > /dev/null 2>&1 && fail "help of an unknown command succeeded"

rc=0
"$STACKMAPCTL" reprot > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "an unknown command exited $rc"
grep -q "unknown command 'reprot'; did you mean 'report'?" "$tmp/err" || fail "said: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] ||
	fail "an unknown command printed more than the hint: $(cat "$tmp/err")"

rc=0
"$STACKMAPCTL" top --sort dso /nonexistent > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "top with an unknown sort key exited $rc"
grep -q "unknown sort key 'dso' (symbol, stack, callsite, comm or pid)" "$tmp/err" ||
	fail "top --sort dso said: $(cat "$tmp/err")"

"$STACKMAPCTL" --help | grep -E '^  export .*trace\.dat' > /dev/null ||
	fail "--help does not say export writes trace.dat"

"$STACKMAPCTL" status --help > "$tmp/out" || fail "status --help exited $?"
[ "$(wc -l < "$tmp/out")" -ge 4 ] && grep -q -- '--timeout SEC' "$tmp/out" &&
	grep -q 'State of the running daemon' "$tmp/out" || fail "status --help: $(cat "$tmp/out")"

if command -v man > /dev/null; then
	MANWIDTH=80 man -l "$top_srcdir/man/stackmapctl.1" 2> /dev/null > "$tmp/man.txt"
	grep -q 'boot-cmdline \[-c FILE\]' "$tmp/man.txt" ||
		fail "the manual splits boot-cmdline's synopsis: $(grep -A1 'boot-cmdline \[' "$tmp/man.txt")"
fi

if [ -r /usr/share/bash-completion/bash_completion ]; then
	cmds=$(bash -c '. /usr/share/bash-completion/bash_completion
		. "$1/completion/stackmapctl"; _stackmapctl_commands /nonexistent/stackmapctl' _ \
		"$top_srcdir")
	for c in report top flamegraph export folded info help; do
		grep -qw -- "$c" <<< "$cmds" || fail "completion without stackmapctl lacks $c: $cmds"
	done
fi
exit 0
