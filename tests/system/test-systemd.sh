#!/bin/bash
# stackmapd under a real systemd (Debian 12, systemd 252, booted in a
# container by run-systemd): the installed unit verifies, starts only when
# the daemon reports READY=1 with every CPU reader running, reloads in place,
# restarts, logs to the journal with priorities, serves stackmapctl, pets the
# watchdog, starts at boot before sysinit.target, and on stop removes its
# tracefs instance. Prints the unit's `systemd-analyze security` exposure.
#
# The daemon records into its own instance (a random name), never the
# host's top-level tracing; the host's tracefs is checked afterwards.
. "$top_srcdir/tests/lib.sh"

need_tracefs
RUN_SYSTEMD=${RUN_SYSTEMD:-$top_srcdir/../shared/systemd/run-systemd}
[ -x "$RUN_SYSTEMD" ] || skip "run-systemd not found (set RUN_SYSTEMD): $RUN_SYSTEMD"
need_built "$STACKMAPD" "$STACKMAPCTL"
# A sanitizer build needs its runtime in the container: ask for it.
SYSTEMD_PACKAGES=(--packages "$SYSTEMD_RUNTIME_PACKAGES")
SANITIZED=0
if ldd "$STACKMAPD" | grep -q 'libasan\|libubsan'; then
	SANITIZED=1
	SYSTEMD_PACKAGES=(--packages "$SYSTEMD_RUNTIME_PACKAGES,libasan8,libubsan1")
	note "sanitizer build: the container gets libasan8 and libubsan1"
fi

state_before=$(tracefs_state)
tmp=$(mktmp)
inst=$(new_instance_name)

# Install as a distribution would, into a DESTDIR.
make -s -C "$top_builddir" install DESTDIR="$tmp/dest" prefix=/usr sysconfdir=/etc \
	> "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install failed"; }
for f in usr/sbin/stackmapd usr/bin/stackmapctl usr/lib/systemd/system/stackmapd.service etc/stackmapd.conf \
	usr/share/man/man8/stackmapd.8 usr/share/man/man1/stackmapctl.1 usr/share/man/man5/stackmapd.conf.5; do
	[ -f "$tmp/dest/$f" ] || fail "make install did not install /$f"
done
grep -q '^ExecStart=/usr/sbin/stackmapd -c /etc/stackmapd.conf$' "$tmp/dest/usr/lib/systemd/system/stackmapd.service" ||
	fail "unit: ExecStart does not use the installed paths"
if [ $SANITIZED = 1 ]; then
	# LeakSanitizer stops the process with ptrace, which the unit's system
	# call filter forbids: every sanitized process would then exit 1. Leaks
	# are checked by the sanitizer run of the other tests.
	mkdir -p "$tmp/dest/etc/systemd/system/stackmapd.service.d"
	printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
		> "$tmp/dest/etc/systemd/system/stackmapd.service.d/sanitizers.conf"
fi

# The configuration the daemon runs with inside (paths given explicitly, so
# that the test does not depend on the build's configure paths).
mkdir -p "$tmp/t"
cat > "$tmp/t/stackmapd.conf" <<EOF
[trace]
instance = $inst
events = sched:sched_process_fork sched:sched_process_exec
stackmap = auto
[archive]
directory = /var/lib/stackmapd
segment_size = 4M
max_size = 64M
[control]
socket = /run/stackmapd/control
[service]
status_interval = 5s
EOF

cat > "$tmp/t/inside.sh" <<'EOF'
#!/bin/bash
# Runs inside the container as root. $INST names the tracefs instance.
pass=0 failed=0
check() {
	local d=$1; shift
	if "$@"; then pass=$((pass + 1)); echo "PASS: $d"; else failed=$((failed + 1)); echo "FAIL: $d"; fi
}
prop() { systemctl show -P "$2" "$1"; }
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
ctl() { stackmapctl --socket /run/stackmapd/control "$@"; }
u=stackmapd.service

cp -a /dest/. / && cp /t/stackmapd.conf /etc/stackmapd.conf && systemctl daemon-reload
check "unit loaded" [ "$(prop $u LoadState)" = loaded ]
# The rootfs has no man-db: Documentation= cannot be checked here.
out=$(systemd-analyze verify --man=no /usr/lib/systemd/system/$u 2>&1); rc=$?
[ -n "$out" ] && echo "$out"
check "systemd-analyze verify: rc 0, no warnings" [ $rc = 0 -a -z "$out" ]

t0=$(now_ms)
systemctl enable --now $u; rc=$?
t1=$(now_ms)
echo "enable --now: rc $rc after $((t1 - t0)) ms"
check "enable --now" [ $rc = 0 -a "$(systemctl is-active $u)" = active -a "$(systemctl is-enabled $u)" = enabled ]
check "Type=notify, watchdog 30s" [ "$(prop $u Type) $(prop $u WatchdogUSec)" = "notify 30s" ]
# READY=1 comes only when every CPU reader runs: right after start returns,
# the daemon records every CPU into our instance.
ctl status --json > /tmp/status.json
check "recording on every CPU as soon as start returns" sh -c \
	"grep -q '\"state\":\"recording\"' /tmp/status.json && grep -q '\"instance\":\"$INST\"' /tmp/status.json &&
	 [ \$(grep -o '\"cpu\":' /tmp/status.json | wc -l) = $(nproc) ]"
check "instance exists with tracing on" [ "$(cat /sys/kernel/tracing/instances/$INST/tracing_on)" = 1 ]
start=$(prop $u ExecMainStartTimestampMonotonic) act=$(prop $u ActiveEnterTimestampMonotonic)
echo "main process start -> active: $(( (act - start) / 1000 )) ms"
check "active only after the daemon's READY=1 (its 'recording' line comes first)" sh -c \
	"journalctl -u $u -o cat | grep -n -m1 -e '^recording ' -e '^Started ' | head -1 | grep -q ':recording '"
check "status text from STATUS=" sh -c "systemctl show -P StatusText $u | grep -q ."
echo "StatusText: $(prop $u StatusText)"
systemctl status $u --no-pager -n 0 | sed -n '1,8p'

echo "== stackmapctl"
ctl status | head -8
check "stackmapctl status" ctl status >/dev/null
for i in $(seq 20); do /bin/true; done
seg=$(ctl snapshot)
check "stackmapctl snapshot -> $seg" test -f "$seg"
check "socket mode 0600 in /run/stackmapd (0755)" [ "$(stat -c %a /run/stackmapd/control) $(stat -c %a /run/stackmapd)" = "600 755" ]
check "archive /var/lib/stackmapd is 0750" [ "$(stat -c %a /var/lib/stackmapd)" = 750 ]

echo "== reload"
pid=$(prop $u MainPID)
systemctl reload $u; rc=$?
check "reload rc 0, same MainPID" [ $rc = 0 -a "$(prop $u MainPID)" = "$pid" -a "$(systemctl is-active $u)" = active ]
check "journal: systemd's Reloaded and (already) the daemon's reloaded line" sh -c \
	"journalctl -u $u -o cat | grep -q '^Reloaded stackmapd.service' && journalctl -u $u -o cat | grep -q \"^reloaded '/etc/stackmapd.conf'\""
# A reload that needs a restart (warning): done when systemctl returns.
sed -i 's/^stackmap = auto/buffer_size = 64K/' /etc/stackmapd.conf
systemctl reload $u; rc=$?
check "reload with a restart key: rc 0, the warning is logged by then" sh -c \
	"[ $rc = 0 ] && journalctl -u $u -o cat | grep -q 'take effect only after a restart: trace.buffer_size'"
# An invalid file: the reload job fails, the daemon keeps running.
echo 'bogus_key = 1' >> /etc/stackmapd.conf
systemctl reload $u 2>/dev/null; rc=$?
check "invalid file: reload fails (rc $rc), still active with the same MainPID" \
	[ $rc != 0 -a "$(systemctl is-active $u) $(prop $u MainPID)" = "active $pid" ]
cp /t/stackmapd.conf /etc/stackmapd.conf
systemctl reload $u

echo "== journal"
echo "  PRIORITY _TRANSPORT: MESSAGE of the daemon's lines"
journalctl -u $u --no-pager -o verbose _PID=$pid | awk '
	function out() { if (m != "") print "  " p " " t ": " m; m = "" }
	/^[^ ]/ { out() }
	/^    PRIORITY=/ { p = substr($0, 14) }
	/^    _TRANSPORT=/ { t = substr($0, 16) }
	/^    MESSAGE=/ { m = substr($0, 13) }
	END { out() }' | head -20
check "info lines have PRIORITY=6" sh -c "journalctl -u $u -o verbose PRIORITY=6 _PID=$pid | grep -q 'MESSAGE=recording '"
check "the restart warning has PRIORITY=4" sh -c "journalctl -u $u -o verbose PRIORITY=4 _PID=$pid | grep -q 'take effect only after a restart'"
check "the reload error has PRIORITY=3" sh -c "journalctl -u $u -o verbose PRIORITY=3 _PID=$pid | grep -q 'MESSAGE=reload failed.*bogus_key'"
journalctl -u $u -p warning -o cat _PID=$pid > /tmp/warnings
check "-p warning shows the warning and hides info lines" sh -c \
	"grep -q 'take effect only after a restart' /tmp/warnings && ! grep -q '^recording ' /tmp/warnings"
check "structured logging (_TRANSPORT=journal, not stdout)" sh -c "journalctl -u $u -o verbose _PID=$pid _TRANSPORT=journal | grep -q 'MESSAGE=recording '"

echo "== watchdog (2 s) and restart"
mkdir -p /run/systemd/system/$u.d
printf '[Service]\nWatchdogSec=2s\n' > /run/systemd/system/$u.d/watchdog.conf
systemctl daemon-reload && systemctl restart $u
pid2=$(prop $u MainPID)
check "restart: new MainPID" [ "$(systemctl is-active $u)" = active -a "$pid2" != "$pid" ]
sleep 5
check "watchdog petted: same MainPID after 5 s with WatchdogSec=2s" [ "$(prop $u MainPID) $(prop $u NRestarts)" = "$pid2 0" -a "$(systemctl is-active $u)" = active ]
rm -rf /run/systemd/system/$u.d && systemctl daemon-reload

echo "== systemd-analyze security"
systemd-analyze security --no-pager $u | grep -E '^✗|Overall'
systemd-analyze security --no-pager $u | tail -n 1 | sed 's/^/EXPOSURE: /'

echo "== stop"
systemctl stop $u; rc=$?
check "stop rc 0, inactive" [ $rc = 0 -a "$(systemctl is-active $u)" = inactive ]
check "stop removed the instance" [ ! -e /sys/kernel/tracing/instances/$INST ]
check "stop removed the socket" [ ! -e /run/stackmapd/control ]
journalctl -u $u -p err -o cat > /tmp/errors
check "no unexpected errors in the journal (the reload failure is there)" sh -c \
	"grep -q 'reload failed' /tmp/errors && ! grep -v -e 'reload failed' -e 'bogus_key' -e '^stackmapd.service: Control process exited' -e '^Reload failed' /tmp/errors | grep ."
systemctl disable $u 2>/dev/null
echo "$pass passed, $failed failed"
[ $failed = 0 ]
EOF

cat > "$tmp/t/boot.sh" <<'EOF'
#!/bin/bash
# Inside the container; stackmapd was installed and enabled before boot.
pass=0 failed=0
check() {
	local d=$1; shift
	if "$@"; then pass=$((pass + 1)); echo "PASS: $d"; else failed=$((failed + 1)); echo "FAIL: $d"; fi
}
ts() { systemctl show -P "$2" "$1"; }
u=stackmapd.service
check "active after boot" [ "$(systemctl is-active $u)" = active ]
mnt=$(ts sys-kernel-tracing.mount ActiveEnterTimestampMonotonic)
st=$(ts $u ExecMainStartTimestampMonotonic)
act=$(ts $u ActiveEnterTimestampMonotonic)
si=$(ts sysinit.target ActiveEnterTimestampMonotonic)
echo "monotonic us: tracefs mounted $mnt, stackmapd started $st, ready $act, sysinit.target $si"
check "tracefs mounted before the daemon started" [ "$mnt" -le "$st" ]
check "sysinit.target reached only after the daemon was ready" [ "$act" -le "$si" ]
journalctl -b -o cat > /tmp/boot.journal
check "no ordering cycle (in a boot journal that has the daemon's start)" sh -c \
	"grep -q '^recording ' /tmp/boot.journal && ! grep -qi 'ordering cycle' /tmp/boot.journal"
systemd-analyze critical-chain $u --no-pager | sed -n '1,8p'
systemctl stop $u
check "stop removed the instance" [ ! -e /sys/kernel/tracing/instances/$INST ]
echo "$pass passed, $failed failed"
[ $failed = 0 ]
EOF
chmod +x "$tmp/t/inside.sh" "$tmp/t/boot.sh"

run() {
	local rc=0
	"$RUN_SYSTEMD" "${SYSTEMD_PACKAGES[@]}" --bind "$tmp/dest:/dest" --bind-ro "$tmp/t:/t" \
		--env "INST=$inst" --timeout 300 "$@" || rc=$?
	[ $rc = 125 ] && skip "run-systemd could not boot the container (exit 125)"
	return $rc
}
run -- /t/inside.sh || fail "checks under systemd failed"
run --before-boot "cp -a /dest/. / && cp /t/stackmapd.conf /etc/stackmapd.conf && systemctl enable stackmapd.service" \
	-- /t/boot.sh || fail "boot checks failed"

[ ! -e "$TRACEFS/instances/$inst" ] || fail "instance $inst left on the host"
[ "$(tracefs_state)" = "$state_before" ] || fail "the host's tracefs state changed"
echo "PASS: $TEST_NAME"
