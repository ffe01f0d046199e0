#!/bin/bash
# The Debian package: `dpkg-buildpackage -us -uc -b` builds it from a copy
# of the source tree (the files git knows, as a clean checkout has them);
# lintian finds no error in the .deb and .changes. Then, in a booted
# Debian 12 with systemd (run-systemd), as on a device:
#  - `apt install ./stackmapd_*.deb` enables and starts the daemon, which
#    records; the upload path unit is active;
#  - an upgrade to a rebuilt package with a higher version restarts it: the
#    segment being written is finished by the old daemon (complete, not
#    recovered), the new one records into a new segment, both verify, and
#    the administrator's /etc/stackmapd.conf is kept;
#  - remove stops the daemon and keeps the archive and the configuration;
#    purge deletes both.
#
# The administrator's configuration (written before the install, kept as
# is) records into an instance of its own, never the host's top level.
. "$top_srcdir/tests/lib.sh"

need_tracefs
need_cmd dpkg-buildpackage
need_cmd dh
need_cmd lintian
RUN_SYSTEMD=${RUN_SYSTEMD:-$top_srcdir/../shared/systemd/run-systemd}
[ -x "$RUN_SYSTEMD" ] || skip "run-systemd not found (set RUN_SYSTEMD): $RUN_SYSTEMD"

state() { tracefs_state | grep -v '^smtest_'; }
state_before=$(state)
tmp=$(mktmp)
inst=$(new_instance_name)

# ---- build: twice, the second time with a higher version ----
mkdir -p "$tmp/src" "$tmp/t"
if git -C "$top_srcdir" rev-parse --git-dir > /dev/null 2>&1; then
	git -C "$top_srcdir" ls-files -z | (cd "$top_srcdir" && tar --null -T - -cf -) | tar -xf - -C "$tmp/src" ||
		fail "cannot copy the source tree"
else
	# a release tarball (distcheck): everything in it, except build output
	(cd "$top_srcdir" && tar --exclude='./_build*' --exclude='./*.deb' -cf - .) | tar -xf - -C "$tmp/src" ||
		fail "cannot copy the source tree"
fi
[ -f "$tmp/src/debian/rules" ] || fail "no debian/rules in the source tree"

build() {
	local t0=$SECONDS
	# Not the make check that runs this test: its MAKEFLAGS carry the
	# suite's TEST_LOGS, which would make the package build's own
	# `make check` run the whole suite instead of the unit tests.
	(cd "$tmp/src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		-u TESTS -u TEST_LOGS -u TESTS_ENVIRONMENT dpkg-buildpackage -us -uc -b) \
		> "$tmp/build.$1.log" 2>&1 ||
		{ tail -n 40 "$tmp/build.$1.log"; fail "dpkg-buildpackage ($1) failed"; }
	note "dpkg-buildpackage ($1): $((SECONDS - t0)) s"
}
build first
v1=$(cd "$tmp/src" && dpkg-parsechangelog -S Version)
deb1=$tmp/stackmapd_${v1}_$(dpkg --print-architecture).deb
[ -f "$deb1" ] || fail "no $deb1 after the build: $(ls "$tmp")"
ls "$tmp"/stackmapd-dbgsym_*.deb > /dev/null 2>&1 || fail "no -dbgsym package"
dpkg-deb -c "$deb1" > "$tmp/contents" || fail "dpkg-deb -c $deb1"
for f in etc/stackmapd.conf etc/stackmapd-upload.conf usr/sbin/stackmapd usr/bin/stackmapctl \
	usr/lib/stackmapd/stackmapd-upload lib/systemd/system/stackmapd.service \
	usr/lib/stackmapd/stackmapd-load etc/stackmapd-load.conf usr/share/stackmapd/clickhouse/schema.sql \
	lib/systemd/system/stackmapd-load.service lib/systemd/system/stackmapd-load.path \
	lib/systemd/system/stackmapd-upload.service lib/systemd/system/stackmapd-upload.path \
	usr/share/man/man8/stackmapd.8.gz usr/share/man/man1/stackmapctl.1.gz \
	usr/share/man/man5/stackmapd.conf.5.gz usr/share/bash-completion/completions/stackmapctl; do
	grep -q " \./$f\$" "$tmp/contents" || fail "the package lacks /$f"
done
conffiles=$(dpkg-deb -I "$deb1" conffiles)
grep -qx /etc/stackmapd.conf <<< "$conffiles" || fail "/etc/stackmapd.conf is not a conffile"

# lintian: no error (E:). Warnings are shown.
lintian "$tmp"/stackmapd_"${v1}"_*.changes > "$tmp/lintian.out" 2>&1
cat "$tmp/lintian.out"
grep -q '^E: ' "$tmp/lintian.out" && fail "lintian reports errors"
note "lintian: $(grep -c '^E: ' "$tmp/lintian.out") errors, $(grep -c '^W: ' "$tmp/lintian.out") warnings"

# The upgrade: the same source with a higher version (no tests: they ran).
v2=$v1+upgrade1
sed -i "1s/($v1)/($v2)/" "$tmp/src/debian/changelog"
DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" build upgrade
deb2=$tmp/stackmapd_${v2}_$(dpkg --print-architecture).deb
[ -f "$deb2" ] || fail "no $deb2 after the second build"
cp "$deb1" "$deb2" "$tmp/t/"

cat > "$tmp/t/stackmapd.conf" <<EOF
# the administrator's configuration
[trace]
instance = $inst
events = sched:sched_process_fork sched:sched_process_exec
[archive]
segment_size = 4M
max_size = 64M
EOF

cat > "$tmp/t/inside.sh" <<'EOF'
#!/bin/bash
# Runs inside the container as root. $INST names the tracefs instance,
# $V1 and $V2 the two package versions.
pass=0 failed=0
check() {
	local d=$1; shift
	if "$@"; then pass=$((pass + 1)); echo "PASS: $d"; else failed=$((failed + 1)); echo "FAIL: $d"; fi
}
u=stackmapd.service
export DEBIAN_FRONTEND=noninteractive
# the package's dependencies are in the rootfs; there is no mirror inside
apt_install() {
	apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold "$@" > /tmp/apt.log 2>&1 ||
		{ cat /tmp/apt.log; return 1; }
}
load() { for i in $(seq 50); do /bin/true; done; }
# wait_for COMMAND...: up to 30 s
wait_for() {
	local i
	for ((i = 0; i < 300; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}
recording() { stackmapctl status --json 2>/dev/null | grep -q '"state":"recording"'; }
list_json() { stackmapctl list --json; }

cp /t/stackmapd.conf /etc/stackmapd.conf
check "apt install ./stackmapd_${V1}_*.deb" apt_install /t/stackmapd_${V1}_*.deb
check "installed version $V1" [ "$(dpkg-query -W -f '${Version}' stackmapd)" = "$V1" ]
check "enabled and active" [ "$(systemctl is-enabled $u) $(systemctl is-active $u)" = "enabled active" ]
check "the upload path unit is active" [ "$(systemctl is-active stackmapd-upload.path)" = active ]
check "the daemon is recording" wait_for recording
check "into the administrator's instance" sh -c "stackmapctl status --json | grep -q '\"instance\":\"$INST\"'"
check "archive /var/lib/stackmapd is 0750" [ "$(stat -c %a /var/lib/stackmapd)" = 750 ]
out=$(systemd-analyze verify --man=no /lib/systemd/system/stackmapd-upload.service /lib/systemd/system/stackmapd-upload.path \
	/lib/systemd/system/stackmapd-load.service /lib/systemd/system/stackmapd-load.path 2>&1); rc=$?
[ -n "$out" ] && echo "$out"
check "the upload units verify" [ $rc = 0 -a -z "$out" ]
check "bash completion is installed" [ -f /usr/share/bash-completion/completions/stackmapctl ]
load
# the segment being written when the upgrade comes
cur=$(stackmapctl status --json | grep -o '"path":"[^"]*\.part"' | cut -d'"' -f4)
before=${cur%.part}
echo "segment being written before the upgrade: $before"
check "a segment is being written" [ -n "$cur" -a -f "$cur" ]
pid1=$(systemctl show -P MainPID $u)

echo "== upgrade to $V2"
check "apt install ./stackmapd_${V2}_*.deb" apt_install /t/stackmapd_${V2}_*.deb
check "installed version $V2" [ "$(dpkg-query -W -f '${Version}' stackmapd)" = "$V2" ]
check "restarted: active with a new MainPID" \
	[ "$(systemctl is-active $u)" = active -a "$(systemctl show -P MainPID $u)" != "$pid1" ]
check "recording again" wait_for recording
check "the changed /etc/stackmapd.conf is kept" cmp -s /t/stackmapd.conf /etc/stackmapd.conf
check "the old daemon stopped cleanly" sh -c "journalctl -u $u -o cat _PID=$pid1 | grep -q 'received signal 15, stopping'"
list_json > /tmp/list.json
check "the segment from before the upgrade is finished and complete (not recovered)" \
	grep -q "\"path\":\"$before\",[^}]*\"complete\":true" /tmp/list.json
check "no segment was recovered" sh -c "! grep -q '\"complete\":false' /tmp/list.json && ! journalctl -u $u -o cat | grep -qi recover"
load
after=$(stackmapctl rotate)
echo "segment written after the upgrade: $after"
check "a segment from after the upgrade" [ -n "$after" -a "$after" != "$before" -a -f "$after" ]
stackmapctl verify "$before" "$after"; rc=$?
check "both verify" [ $rc = 0 ]
stackmapctl info "$before" "$after" | grep -iE '^ *(events|segment|host|span)' | head -8

echo "== the upload hook inside the daemon's sandbox"
# no collector and no curl here: the segment must stay queued, and the
# sender be started for it
printf 'url = http://127.0.0.1:9/\n' > /etc/stackmapd-upload.conf
printf '[archive]\nhook = /usr/lib/stackmapd/stackmapd-upload --config /etc/stackmapd-upload.conf\n' >> /etc/stackmapd.conf
sed -i '0,/^\[archive\]$/!{/^\[archive\]$/d}' /etc/stackmapd.conf
systemctl reload $u
load
seg=$(stackmapctl rotate)
spooled=/var/lib/stackmapd/upload-spool/${seg##*/}
check "the hook queued $seg as a hard link" wait_for sh -c "[ \"\$(stat -c %h '$seg' 2>/dev/null)\" = 2 ] && [ -f '$spooled' ]"
check "stackmapd-upload.service was started for it" wait_for sh -c \
	"[ \"\$(systemctl show -P ExecMainStartTimestampMonotonic stackmapd-upload.service)\" != 0 ]"
journalctl -u stackmapd-upload.service -o cat | tail -n 3
check "the daemon saw no hook failure" sh -c "! journalctl -u $u -o cat | grep -q 'segment hook'"

echo "== remove"
check "apt remove" sh -c "apt-get remove -y stackmapd > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; false; }"
check "the daemon is stopped" [ "$(systemctl is-active $u)" != active ]
check "the binaries are gone" [ ! -e /usr/sbin/stackmapd -a ! -e /usr/bin/stackmapctl ]
check "the archive is kept" [ -f "$before" -a -f "$after" ]
check "the configuration is kept" [ -f /etc/stackmapd.conf -a -f /etc/stackmapd-upload.conf ]
check "the instance is removed" [ ! -e /sys/kernel/tracing/instances/$INST ]

echo "== purge"
check "apt purge" sh -c "apt-get purge -y stackmapd > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; false; }"
check "the archive is gone" [ ! -e /var/lib/stackmapd ]
check "the configuration is gone" [ ! -e /etc/stackmapd.conf -a ! -e /etc/stackmapd-upload.conf ]
check "dpkg knows nothing of it" sh -c "! dpkg-query -W -f '\${Status}' stackmapd 2>/dev/null | grep -q installed"
check "no unit is left enabled" sh -c "! ls /etc/systemd/system/*/stackmapd* 2>/dev/null | grep -q ."
echo "$pass passed, $failed failed"
[ $failed = 0 ]
EOF
chmod +x "$tmp/t/inside.sh"

rc=0
"$RUN_SYSTEMD" --packages "$SYSTEMD_RUNTIME_PACKAGES" --bind-ro "$tmp/t:/t" --env "INST=$inst" --env "V1=$v1" --env "V2=$v2" \
	--timeout 300 -- /t/inside.sh || rc=$?
[ $rc = 125 ] && skip "run-systemd could not boot the container (exit 125)"
[ $rc = 0 ] || fail "package checks under systemd failed"

[ ! -e "$TRACEFS/instances/$inst" ] || fail "instance $inst left on the host"
state_after=$(state)
[ "$state_after" = "$state_before" ] ||
	fail "the host's tracefs state changed: $(diff <(echo "$state_before") <(echo "$state_after"))"
echo "PASS: $TEST_NAME"
