#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers of the guest parts (tests/vm/guest-*.sh), which run in the VM
# under /bin/sh from the work directory they were copied to. Source it:
#   . "$(dirname "$0")/guest-lib.sh"

# wait_recording LOG PID [SECONDS]: wait (default 30 s) until the stackmapd
# PID logs that it records; exits 1, showing LOG, if it exits or does not.
wait_recording() {
	_i=0
	while ! grep -Eq '^<6>(recording|flight recorder on)' "$1" 2>/dev/null; do
		kill -0 "$2" 2>/dev/null || { echo "stackmapd exited early:"; cat "$1"; exit 1; }
		_i=$((_i + 1))
		[ $_i -lt $((${3:-30} * 10)) ] || { echo "stackmapd did not start:"; cat "$1"; exit 1; }
		sleep 0.1
	done
}
