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
#     with the daemon's library or libtracefs;
#   - files of one folder (daemon/, client/, each lib/*/) call each other's
#     functions round a loop (see below for what counts as a call).
# The build enforces the same per folder (each target gets only the include
# paths of the layers it may use); this check names the broken rule.
# The daemon's headers are found at run time, so the check follows files
# as they move. Needs nothing but the source tree.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
cd "$top_srcdir" || exit 99
. tests/lib-source.sh

bad=0
violation() { echo "$*"; bad=1; }

# Headers that exist only in daemon/: what lib/ and client/ may not see.
declare -A daemon_header=()
for h in daemon/*.h; do
	[ -f "$h" ] || continue
	n=${h#daemon/}
	compgen -G "lib/*/$n" >/dev/null || daemon_header[$n]=1
done

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

# Loops among one folder's files. A file X.c and its own headers (X.h,
# X-internal.h) are one unit. A unit uses another unit of its folder when
# its code calls ("name(", comments left out) a function that the other
# defines: in its .c (not static), or in its headers (static inline, or a
# macro with arguments). Including the other's header alone (its types and
# constants) is not a use. Every set of units that use each other round a
# loop is named with the functions that tie it: a module's files stand in
# layers, and the one at the bottom (state, I/O helpers) uses none of those
# above it.
for dir in daemon client lib/*; do
	[ -d "$dir" ] || continue
	files=("$dir"/*.c)
	[ -f "${files[0]}" ] || continue
	while IFS= read -r l; do
		case "$l" in
		loop\ *) violation "$dir/: files that use each other:${l#loop}" ;;
		*) echo "$l" ;;
		esac
	done < <(for f in "${files[@]}"; do
		echo "@file ${f##*/}"
		strip "$f"
		stem=${f%.c}
		for h in "$stem.h" "$stem-internal.h" "${stem}_internal.h"; do
			[ -f "$h" ] || continue
			echo "@header ${f##*/}"
			strip "$h"
		done
	done | awk '
	function flush_def() { pending = "" }
	function sorted(list,    v, k, i, j, t, out) {
		k = split(list, v, ", ")
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		out = v[1]
		for (i = 2; i <= k; i++) out = out ", " v[i]
		return out
	}
	/^@file / { file = $2; n++; name[n] = file; idx[file] = n; header = 0; flush_def(); next }
	/^@header / { header = 1; depth = 0; flush_def(); next }
	{
		# string and character literals name nothing
		line = $0
		gsub(/\047([^\047\\]|\\.)+\047/, "0", line)
		gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
		# a macro with arguments, in a header
		if (header && match(line, /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_][A-Za-z0-9_]*\(/)) {
			id = substr(line, RSTART, RLENGTH)
			sub(/^[ \t]*#[ \t]*define[ \t]+/, "", id)
			sub(/\($/, "", id)
			def[id] = def[id] " " file
			next
		}
		if (header) sub(/^static inline /, "", line)
		# definitions: a line at column 0 naming "f(", not static, whose
		# first "{" comes before any ";"
		if (pending != "") {
			if (line ~ /^\{/ || line ~ /\)[[:space:]]*\{/) {
				def[pending] = def[pending] " " file
				flush_def()
			} else if (line ~ /;/) {
				flush_def()
			}
		}
		if (line ~ /^[A-Za-z_]/ &&
		    line !~ /^(static|extern|typedef|struct [A-Za-z0-9_]+ *\{|enum|union)/ &&
		    match(line, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/)) {
			s = line
			cand = ""
			# the declarator: the first "name(" that is no attribute
			while (match(s, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/)) {
				id = substr(s, RSTART, RLENGTH); sub(/[[:space:]]*\($/, "", id)
				if (id !~ /^_[a-z_]*_$/) { cand = id; break }
				s = substr(s, RSTART + RLENGTH)
				parens = 1
				while (parens > 0 && s != "") {
					c = substr(s, 1, 1); s = substr(s, 2)
					if (c == "(") parens++; else if (c == ")") parens--
				}
			}
			if (cand != "") {
				if (line ~ /;[[:space:]]*$/ && line !~ /\{/) flush_def()
				else if (line ~ /\{[[:space:]]*$/) def[cand] = def[cand] " " file
				else pending = cand
			}
		}
		# calls: every "name(" in the line; in a header only in the body
		# of an inline function (its prototypes call nothing)
		if (header) {
			opened = depth
			depth += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
			if (opened == 0 && depth == 0) next
		}
		s = line
		while (match(s, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/)) {
			id = substr(s, RSTART, RLENGTH); sub(/[[:space:]]*\($/, "", id)
			# a member (p->f(), s.f()) is no function of the folder
			if (substr(s, 1, RSTART - 1) !~ /(->|\.)[[:space:]]*$/)
				calls[file, id] = 1
			s = substr(s, RSTART + RLENGTH)
		}
	}
	END {
		# the defining file of each function defined once in the folder
		for (f in def) {
			k = split(def[f], d, " ")
			if (k == 1) owner[f] = idx[d[1]]
		}
		for (key in calls) {
			split(key, kk, SUBSEP)
			if (!(kk[2] in owner)) continue
			a = idx[kk[1]]; b = owner[kk[2]]
			if (a == b) continue
			reach[a, b] = 1
			via[a, b] = via[a, b] ", " kk[2]
		}
		for (k = 1; k <= n; k++)
			for (i = 1; i <= n; i++)
				if ((i, k) in reach)
					for (j = 1; j <= n; j++)
						if ((k, j) in reach) reach[i, j] = 1
		for (i = 1; i <= n; i++) {
			if (done[i] || !((i, i) in reach)) continue
			members = ""
			for (j = 1; j <= n; j++)
				if (j == i || ((i, j) in reach && (j, i) in reach)) {
					done[j] = 1
					comp[j] = i
					members = members " " name[j]
				}
			print "loop" members
			for (a = 1; a <= n; a++)
				for (b = 1; b <= n; b++) {
					if (comp[a] != i || comp[b] != i || !((a, b) in via))
						continue
					names = sorted(substr(via[a, b], 3))
					print "  " name[a] " -> " name[b] ": " names
				}
		}
	}')
done

if [ $bad != 0 ]; then
	echo "FAIL: lib/ and client/ must not depend on daemon/ or tracefs, nor files of one folder"
	echo "      on each other round a loop (see doc/architecture.md)"
	exit 1
fi
echo "ok: lib/ and client/ use neither daemon/ nor tracefs (${#daemon_header[@]} daemon headers);"
echo "    no files of one folder use each other round a loop"
