#!/bin/bash
# Progress bars of the commands that stream their output (report, stacks,
# verify): on stderr when that is a terminal and stdout goes to a file,
# never in the file, never when stdout is a pipe or with --json, never with
# STACKMAPCTL_PROGRESS=never. A pseudo-terminal stands for the user's
# terminal; STACKMAPCTL_PROGRESS=always draws the bar from the start, so
# that a short recording shows it.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd python3
: "${MKSEG:=$top_builddir/tests/integration/mkseg}"
need_built "$MKSEG" "$STACKMAPCTL" "$SMLOAD"

tmp=$(mktmp)
inst=$(new_instance_name)
mkdir -p "$tmp/a" "$tmp/b"
"$MKSEG" -n "$inst" -b 1024 -o "$tmp/a" -O "$tmp/b" -k kmem:kmem_cache_alloc \
	-- "$SMLOAD" -q -j 1 -t 0.2 > "$tmp/paths" || fail "mkseg failed"
segs=("$tmp"/a/*.smseg "$tmp"/b/*.smseg)
[ -f "${segs[0]}" ] && [ -f "${segs[1]}" ] || fail "mkseg wrote no segments"

# on_tty SHELL-COMMAND: run it with stderr on a pseudo-terminal; prints what
# reached the terminal. The command's own stdout is its business.
on_tty() {
	python3 - "$1" <<'PY'
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen(['bash', '-c', sys.argv[1]], stdin=subprocess.DEVNULL, stderr=slave)
os.close(slave)
out = b''
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
p.wait()
sys.stdout.write(out.decode('utf-8', 'replace').replace('\r', '<CR>').replace('\x1b', '<ESC>'))
sys.exit(p.returncode)
PY
}

export STACKMAPCTL_PROGRESS=always
for cmd in report stacks verify; do
	on_tty "'$STACKMAPCTL' $cmd ${segs[*]} > '$tmp/$cmd.out'" > "$tmp/$cmd.tty" ||
		fail "$cmd to a file failed: $(cat "$tmp/$cmd.tty")"
	grep -q "$cmd \[#*\.*\] *[0-9]*%" "$tmp/$cmd.tty" ||
		fail "$cmd to a file: no progress bar on the terminal: $(cat "$tmp/$cmd.tty")"
	grep -q '<ESC>\[K' "$tmp/$cmd.tty" || fail "$cmd: the bar was not erased"
	[ -s "$tmp/$cmd.out" ] || fail "$cmd wrote nothing"
	! LC_ALL=C grep -q $'[\r\x1b]' "$tmp/$cmd.out" || fail "$cmd: control characters in its output file"

	on_tty "'$STACKMAPCTL' $cmd ${segs[*]} | cat > /dev/null" > "$tmp/$cmd.pipe.tty" ||
		fail "$cmd into a pipe failed"
	! grep -q '%' "$tmp/$cmd.pipe.tty" || fail "$cmd into a pipe drew a bar: $(cat "$tmp/$cmd.pipe.tty")"

	STACKMAPCTL_PROGRESS=never on_tty "'$STACKMAPCTL' $cmd ${segs[*]} > /dev/null" > "$tmp/$cmd.never.tty" ||
		fail "$cmd with STACKMAPCTL_PROGRESS=never failed"
	! grep -q '%' "$tmp/$cmd.never.tty" || fail "$cmd drew a bar with STACKMAPCTL_PROGRESS=never"
done
on_tty "'$STACKMAPCTL' stacks --json ${segs[*]} > '$tmp/stacks.json'" > "$tmp/json.tty" ||
	fail "stacks --json failed"
! grep -q '%' "$tmp/json.tty" || fail "stacks --json drew a bar: $(cat "$tmp/json.tty")"
echo "report, stacks and verify: a bar on the terminal only when their output goes to a file"
