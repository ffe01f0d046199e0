#!/bin/bash
# Open a trace.dat file in KernelShark on a virtual X server and take a
# screenshot, to see that KernelShark loads what `stackmapctl export
# --format trace.dat` writes.
#
#   kernelshark-screenshot.sh TRACE.DAT OUT.png [SECONDS]
#
# Needs kernelshark, xvfb and imagemagick (import). Waits until KernelShark's
# window is mapped (at most SECONDS, default 60), then a few seconds for it
# to draw, takes the screenshot and stops both. Exit 0 when the screenshot
# was taken, 1 if KernelShark exited early (its output is printed).
set -u
dat=$1 out=$2 limit=${3:-60}
for c in kernelshark Xvfb import xwininfo; do
	command -v "$c" > /dev/null || { echo "needs $c" >&2; exit 77; }
done
[ -r "$dat" ] || { echo "cannot read $dat" >&2; exit 1; }

tmp=$(mktemp -d /tmp/kshark.XXXXXX)
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1400x900x24 -nolisten tcp > "$tmp/xvfb.log" 2>&1 &
xvfb=$!
ks=
cleanup() {
	[ -n "$ks" ] && kill "$ks" 2> /dev/null && wait "$ks" 2> /dev/null
	kill "$xvfb" 2> /dev/null && wait "$xvfb" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
export DISPLAY=$display
for ((i = 0; i < 100; i++)); do
	xwininfo -root > /dev/null 2>&1 && break
	sleep 0.1
done

# KernelShark keeps its settings under HOME: start from none. As root it
# first asks whether to go on: run it as nobody when we are root.
cp "$dat" "$tmp/trace.dat"
chmod 755 "$tmp"
chmod 644 "$tmp/trace.dat"
mkdir -m 700 "$tmp/home"
as=()
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$tmp/home"
	as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/home QT_QPA_PLATFORM=xcb \
	"${as[@]}" kernelshark "$tmp/trace.dat" > "$tmp/ks.log" 2>&1 &
ks=$!
shown=
for ((i = 0; i < limit * 10; i++)); do
	kill -0 "$ks" 2> /dev/null || break
	if xwininfo -root -tree 2> /dev/null | grep -qi 'kernelshark'; then
		shown=1
		break
	fi
	sleep 0.1
done
if [ -z "$shown" ]; then
	echo "KernelShark did not show a window:" >&2
	cat "$tmp/ks.log" >&2
	exit 1
fi
sleep 5		# loading and drawing the trace
kill -0 "$ks" 2> /dev/null || { echo "KernelShark exited:" >&2; cat "$tmp/ks.log" >&2; exit 1; }
import -display "$display" -window root "$out" || exit 1
echo "screenshot: $out"
sed 's/^/kernelshark: /' "$tmp/ks.log"
exit 0
