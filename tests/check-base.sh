#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What lib/base says it is the one place for stays so. Fails, naming each
# file and line of lib/, daemon/ and client/ (comments left out), on
#   - a capacity doubled by hand (a name with "cap" times 2, or shifted
#     left by 1), or a realloc()/reallocarray() of a size with "* 2" or
#     "<< 1" in it, outside lib/base: arrays grow with GREEDY_REALLOC()
#     (util.h), or BUDGET_GREEDY_REALLOC() where the readers' budget is
#     charged (budget.h);
#   - a realloc()/reallocarray() to one or two elements more ("+ 1", "+ 2"),
#     outside lib/base: the same;
#   - bytes put together by hand into an integer, or out of one ("p[1] << 8",
#     "(uint8_t)(v >> 8)"), or byte swapping (bswap, le32toh, htole32, ...),
#     outside lib/base/byteorder.h: get_le32(), put_le32() and the rest;
#   - the constants of a hash function (FNV, the golden ratio, MurmurHash,
#     SplitMix64, xxHash, wyhash) outside lib/base/hashtab.h: hash_u64(),
#     hash_bytes() and hash_fnv1a() are the tree's only ones.
# A few lines are known exceptions, listed below with the reason. Needs
# nothing but the source tree.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
cd "$top_srcdir" || exit 99
. tests/lib-source.sh

bad=0
violation() { echo "$*"; bad=1; }

# Exceptions: "path glob|code of the line, blanks trimmed|why".
exceptions=(
	"lib/segment/frame-columns*.c|cap *= 2;|the column encoder's dictionary: a hash table's slots, a power of two"
)

excepted() {
	local f=$1 code=$2 e glob line
	code=$(sed -E 's/^[[:space:]]+//; s/[[:space:]]+$//' <<<"$code")
	for e in "${exceptions[@]}"; do
		glob=${e%%|*}
		line=${e#*|}
		line=${line%%|*}
		# shellcheck disable=SC2053
		[[ $f == $glob && $code == "$line" ]] && return 0
	done
	return 1
}

# rule FILE CODE REGEX MESSAGE: each line of CODE that matches (grep -E -i).
rule() {
	local f=$1 code=$2 re=$3 msg=$4 line text
	while IFS=: read -r line text; do
		excepted "$f" "$text" || violation "$f:$line: $msg: $(sed -E 's/^[[:space:]]+//' <<<"$text")"
	done < <(grep -niE -- "$re" <<<"$code")
}

alloc='\b(re)?allocarray[[:space:]]*\(|\brealloc[[:space:]]*\('
doubling="\\b[a-z_0-9]*cap[a-z_0-9]*\\b[[:space:]]*(\\*=?[[:space:]]*2|<<=?[[:space:]]*1)\\b|\\b2[[:space:]]*\\*[[:space:]]*[a-z_0-9>.-]*cap[a-z_0-9]*\\b|($alloc).*(\\*[[:space:]]*2\\b|<<[[:space:]]*1\\b)"
by_one="($alloc).*\\+[[:space:]]*[12]\\b"
bytes='\][[:space:]]*<<[[:space:]]*(8|16|24|32|40|48|56)\b|\(u?int8_t\)[[:space:]]*\(?[^;]*>>[[:space:]]*(8|16|24|32|40|48|56)\b|\b(__builtin_)?bswap_?(16|32|64)\b|\b(le|be)(16|32|64)toh\b|\bhto(le|be)(16|32|64)\b'
hash='0x(cbf29ce484222325|0*100000001b3|811c9dc5|0*1000193|9e3779b9|ff51afd7ed558ccd|c4ceb9fe1a85ec53|85ebca6b|c2b2ae35|cc9e2d51|1b873593|87c37b91114253d5|4cf5ad432745937f|bf58476d1ce4e5b9|94d049bb133111eb|9e3779b185ebca87|c2b2ae3d27d4eb4f|165667b19e3779f9|85ebca77c2b2ae63|27d4eb2f165667c5|a0761d6478bd642f|e7037ed1a0b428db|8ebc6af09c88c6e3|589965cc75374cc3)'

files=0
for f in lib/*/*.[ch] daemon/*.[ch] client/*.[ch]; do
	[ -f "$f" ] || continue
	files=$((files + 1))
	code=$(strip "$f")
	case "$f" in
	lib/base/*) ;;
	*)
		rule "$f" "$code" "$doubling" "a capacity doubled by hand (use GREEDY_REALLOC(), util.h)"
		rule "$f" "$code" "$by_one" "an array grown by one by hand (use GREEDY_REALLOC(), util.h)"
		;;
	esac
	[ "$f" = lib/base/byteorder.h ] ||
		rule "$f" "$code" "$bytes" "byte order by hand (use lib/base/byteorder.h)"
	[ "$f" = lib/base/hashtab.h ] ||
		rule "$f" "$code" "$hash" "a hash function of its own (use lib/base/hashtab.h)"
done
[ "$files" -gt 100 ] || violation "only $files source files found in lib/, daemon/ and client/"

if [ $bad != 0 ]; then
	echo "FAIL: lib/base is the one place for growing arrays, byte order and hash functions" \
		"(doc/architecture.md)"
	exit 1
fi
echo "ok: arrays grow, bytes are ordered and keys are hashed by lib/base only ($files files)"
