#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The dependency direction of the source tree: lib/ is shared by the daemon
# and the client and knows nothing of either, nor of tracefs; daemon/ adds
# tracefs, the readers, the archive and the stack map; client/ uses lib/
# only. Fails, naming each file and line, if
#   - a file in lib/ or client/ includes a daemon header: one under a
#     daemon/ path, or one whose name exists in daemon/ and not in lib/ (nor
#     next to the including file);
#   - a file in lib/ or client/ includes tracefs.h or calls tracefs_*();
#   - Makefile.am builds a lib/ library or stackmapctl (client/) with a
#     daemon/ source, include path or tracefs flags, or links stackmapctl
#     with the daemon's library or libtracefs.
# The build enforces the same per folder (each target gets only the include
# paths of the layers it may use); this check names the broken rule.
# The daemon's headers are found at run time, so the check follows files
# as they move. Needs nothing but the source tree.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
cd "$top_srcdir" || exit 99

bad=0
violation() { echo "$*"; bad=1; }

# Headers that exist only in daemon/: what lib/ and client/ may not see.
declare -A daemon_header=()
for h in daemon/*.h; do
	[ -f "$h" ] || continue
	n=${h#daemon/}
	compgen -G "lib/*/$n" >/dev/null || daemon_header[$n]=1
done

# strip FILE: FILE without its comments (lines kept, so numbers stay right);
# string literals are left as they are.
strip() {
	awk '{
		out = ""; s = $0
		while (s != "") {
			if (incomment) {
				i = index(s, "*/")
				if (!i) { s = ""; break }
				s = substr(s, i + 2); incomment = 0; continue
			}
			a = index(s, "/*"); b = index(s, "//")
			if (a && (!b || a < b)) { out = out substr(s, 1, a - 1) " "; s = substr(s, a + 2); incomment = 1; continue }
			if (b) { out = out substr(s, 1, b - 1); s = ""; break }
			out = out s; s = ""
		}
		print out
	}' "$1"
}

for f in lib/*/*.[ch] client/*.[ch]; do
	[ -f "$f" ] || continue
	dir=${f%/*}
	code=$(strip "$f")
	while IFS=: read -r line inc; do
		name=${inc#*[\"<]}
		name=${name%%[\">]*}
		base=${name##*/}
		case "$name" in
		daemon/* | */daemon/*) violation "$f:$line: includes the daemon header '$name'" ;;
		esac
		case "$inc" in
		*\"*)
			# quoted: the including file's directory first
			[ -e "$dir/$name" ] && continue
			[ -n "${daemon_header[$name]:-}" ] &&
				violation "$f:$line: includes '$name', a header of daemon/ only"
			;;
		esac
		[ "$base" = tracefs.h ] && violation "$f:$line: includes tracefs.h"
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' <<<"$code" |
		sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*/\1:/')
	while IFS=: read -r line call; do
		violation "$f:$line: calls $call) (tracefs belongs to daemon/)"
	done < <(grep -noE '\btracefs_[A-Za-z0-9_]+[[:space:]]*\(' <<<"$code")
done

# Makefile.am: VAR's value, continuation lines joined (all its = and += lines).
am_var() {
	sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' Makefile.am |
		sed -nE "s/^$1[[:space:]]*\\+?=[[:space:]]*//p"
}
lib_vars=$(grep -oE '^lib_[a-z]+_lib[a-z]+_a_(SOURCES|CPPFLAGS)' Makefile.am | sort -u)
[ -n "$lib_vars" ] || violation "Makefile.am: no lib/ library found"
for v in $lib_vars stackmapctl_SOURCES stackmapctl_CPPFLAGS CLIENT_CPPFLAGS; do
	for word in $(am_var "$v"); do
		case "$word" in
		daemon/* | */daemon/* | -I*daemon) violation "Makefile.am: $v uses $word" ;;
		*TRACEFS*) violation "Makefile.am: $v uses $word (tracefs belongs to daemon/)" ;;
		esac
	done
done
for v in stackmapctl_LDADD CLIENT_LIBS; do
	for lib in $(am_var "$v"); do
		case "$lib" in
		libstackmapd.a | */libstackmapd.a | *DAEMON*) violation "Makefile.am: $v links $lib, the daemon's modules" ;;
		*TRACEFS*) violation "Makefile.am: $v links $lib" ;;
		esac
	done
done
[ -n "$(am_var stackmapctl_SOURCES)" ] || violation "Makefile.am: no stackmapctl_SOURCES found"

if [ $bad != 0 ]; then
	echo "FAIL: lib/ and client/ must not depend on daemon/ or tracefs (see doc/architecture.md)"
	exit 1
fi
echo "ok: lib/ and client/ use neither daemon/ nor tracefs (${#daemon_header[@]} daemon headers)"
