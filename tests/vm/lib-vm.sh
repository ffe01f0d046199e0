# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the tests that boot the stackmap kernel (tests/vm/test-*.sh),
# sourced after tests/lib.sh. The test itself runs on the host; its guest
# part runs through run-in-vm in a work directory shared with the guest
# (the guest sees the host's files read-only, but not the host's /tmp, so
# the binaries under test are copied into the work directory).

: "${RUN_IN_VM:=}"
if [ -z "$RUN_IN_VM" ]; then
	if [ -x "$top_srcdir/../shared/kernel/run-in-vm" ]; then
		RUN_IN_VM=$(cd "$top_srcdir/../shared/kernel" && pwd)/run-in-vm
	else
		RUN_IN_VM=$(command -v run-in-vm || true)
	fi
fi
KERNEL_DIR=$(dirname "${RUN_IN_VM:-.}")

need_vm() {
	[ -n "$RUN_IN_VM" ] && [ -x "$RUN_IN_VM" ] || skip "run-in-vm not found (set RUN_IN_VM)"
	command -v "${QEMU:-qemu-system-x86_64}" >/dev/null 2>&1 || skip "QEMU is not installed"
	[ -x "$STACKMAPD" ] && [ -x "$STACKMAPCTL" ] && [ -x "$SMLOAD" ] ||
		skip "$top_builddir is not built (stackmapd, stackmapctl, smload)"
	need_cmd python3
}

# vm_workdir: a work directory under /tmp (removed at exit unless
# KEEP_VM_WORKDIR=1) holding the binaries and the guest scripts, which the
# guest runs from there; prints its path.
vm_workdir() {
	local w
	w=$(mktemp -d "/tmp/smvm-$TEST_NAME.XXXXXX")
	[ "${KEEP_VM_WORKDIR:-}" = 1 ] || at_exit "rm -rf '$w'"
	# the guest part too: the source tree may itself be under /tmp (a CI clone)
	cp "$STACKMAPD" "$STACKMAPCTL" "$SMLOAD" "$top_srcdir"/tests/vm/guest-*.sh "$w/" ||
		fail "cannot copy the binaries and guest scripts"
	echo "$w"
}

# build_smdump DIR: build smdump-ids (tests/vm/smdump-ids.c) against the
# build tree into DIR. Returns 1 if that is not possible.
build_smdump() {
	local cc=${CC:-cc} libs incs a objs=()
	libs=$(pkg-config --libs libtracefs libtraceevent libsystemd inih libzstd 2>/dev/null) || return 1
	incs=$(for d in "$top_srcdir"/lib/*/; do printf -- '-I%s ' "${d%/}"; done)
	for a in decode/libsmdecode kernel/libsmkernel segment/libsmsegment config/libsmconfig \
		base/libsmbase; do
		objs+=("$top_builddir/lib/$a.a")
	done
	# shellcheck disable=SC2086
	"$cc" -O1 $incs -o "$1/smdump-ids" "$top_srcdir/tests/vm/smdump-ids.c" \
		"${objs[@]}" $libs -pthread 2>"$1/smdump-ids.build.log" ||
		# a tree configured with --enable-sanitizers
		"$cc" -O1 -fsanitize=address,undefined $incs -o "$1/smdump-ids" \
			"$top_srcdir/tests/vm/smdump-ids.c" "${objs[@]}" $libs \
			-pthread 2>"$1/smdump-ids.build.log"
}

# The test's stderr as it was when this file was sourced: a guest run's
# output is often redirected to a file, a failure of the kernel log is not.
exec {_vm_stderr}>&2

# vm_klog_check KLOG: fails the test when the guest's kernel log has a
# warning, a BUG or an oops (a panic on a kernel with panic_on_warn), or
# is missing. An intended panic ("Kernel panic - not syncing: sysrq
# triggered crash") is none of these.
vm_klog_check() {
	local pat='WARNING:|BUG:|kernel BUG at|Oops|general protection fault|UBSAN:'
	if [ ! -f "$1" ]; then
		echo "FAIL: $TEST_NAME: the guest's kernel log $1 is missing" >&"$_vm_stderr"
		exit 1
	fi
	grep -qaE "$pat" "$1" || return 0
	{
		echo "FAIL: $TEST_NAME: the guest's kernel warned ($1):"
		grep -aE -A3 "$pat" "$1" | head -40 | LC_ALL=C tr -c '\11\12\40-\176' '?'
	} >&"$_vm_stderr"
	exit 1
}

# vm_run WORKDIR [run-in-vm options...] -- COMMAND: run COMMAND in the guest
# with WORKDIR shared and as the current directory; prints its output,
# returns its exit status; fails the test if the guest's kernel warned
# (vm_klog_check), on every boot of a --reboots run.
vm_run() {
	local w=$1 rc=0
	shift
	rm -f "$w/kernel.log"
	"$RUN_IN_VM" --share "$w" --cwd "$w" --klog "$w/kernel.log" --env "top_srcdir=$top_srcdir" \
		"$@" || rc=$?
	vm_klog_check "$w/kernel.log"
	return $rc
}

# vm_guest WORKDIR [run-in-vm options...] -- COMMAND: run COMMAND in the
# guest (vm_run), its output in WORKDIR/vm.log, shown afterwards with the
# run time; fails unless it exits 0.
vm_guest() {
	local w=$1 t0 rc=0
	t0=$(now_s)
	vm_run "$@" > "$w/vm.log" 2>&1 || rc=$?
	cat "$w/vm.log"
	note "guest run: $(elapsed "$t0") s (exit status $rc)"
	[ $rc -eq 0 ] || fail "the guest part failed"
}

# guest_daemon_ok WORKDIR LABEL LOG: the guest's stackmapd (LABEL as in
# its "LABEL: stackmapd exit status" line; '' for none) exited 0; else
# fails, showing LOG.
guest_daemon_ok() {
	local line="${2:+$2: }stackmapd exit status 0"
	grep -q "^$line" "$1/vm.log" && return 0
	cat "$3" >&2
	fail "stackmapd${2:+ ($2)} failed"
}

# now_s: seconds since the epoch with decimals, for run times.
now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }
