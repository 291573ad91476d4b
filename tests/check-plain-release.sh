#!/bin/sh
# SPDX-License-Identifier: MIT
# Every managed acquisition a driver can call has its plain release in a
# table test, or a line saying why it has none: the library's (devm_*,
# dmam_*, pcim_* of the version script) in managed[] of
# tests/misuse/test-unmanaged-release.c, ROW() or NONE(); the compat
# headers' own (a devm_*, dmam_* or pcim_* function or macro that
# include/kcompat defines and the library does not export) in pairs[] or
# none[] of tests/kcompat/test-kc-by-hand.c. A managed call added without
# its row fails, and so does a row of the compat table whose call is no
# longer defined. Usage: check-plain-release.sh SRCDIR
set -eu
src=${1:?usage: check-plain-release.sh SRCDIR}
lib_test=$src/tests/misuse/test-unmanaged-release.c
kc_test=$src/tests/kcompat/test-kc-by-hand.c
names='(devm|dmam|pcim)_[a-z0-9_]+'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -oE "\\b$names" "$src/src/libdevres.map" | sort -u >"$tmp/lib"
[ -s "$tmp/lib" ] || { echo "no managed calls in $src/src/libdevres.map" >&2; exit 1; }
# The compat headers' definitions: a static inline function (its name on
# the line of its type or the next) or a function-like macro.
(
	cd "$src/include/kcompat"
	grep -rhoE "^static inline [^(]*\\b$names\\(" . |
		grep -oE "$names\\(\$"
	grep -rhE -A1 '^static inline [a-z_ ]*\*?$' . |
		grep -oE "^$names\\("
	grep -rhoE "^#define $names\\(" . | sed 's/^#define //'
) | tr -d '(' | sort -u >"$tmp/kc-all"
[ -s "$tmp/kc-all" ] || { echo "no managed calls in $src/include/kcompat" >&2; exit 1; }
comm -23 "$tmp/kc-all" "$tmp/lib" >"$tmp/kc"
# The compat table's rows: the first string of each entry of pairs[] and
# of none[].
sed -n '/^static const struct pair pairs\[\] = {/,/^};/p;/^static const struct none none\[\] = {/,/^};/p' "$kc_test" |
	grep -oE "^[[:space:]]*\\{ \"$names\"" | grep -oE "$names" |
	sort >"$tmp/kc-rows"

status=0
while read -r name; do
	grep -qE "(ROW|NONE)\\(\"$name\"," "$lib_test" && continue
	echo "$name: exported, but no row in managed[] of $lib_test" >&2
	status=1
done <"$tmp/lib"
while read -r name; do
	grep -qx "$name" "$tmp/kc-rows" && continue
	echo "$name: defined by include/kcompat, but no row in pairs[] or" \
		"none[] of $kc_test" >&2
	status=1
done <"$tmp/kc"
if [ -n "$(uniq -d "$tmp/kc-rows")" ]; then
	echo "rows twice in $kc_test: $(uniq -d "$tmp/kc-rows")" >&2
	status=1
fi
while read -r name; do
	grep -qx "$name" "$tmp/kc" && continue
	echo "$name: a row of $kc_test, but not a call only include/kcompat" \
		"defines: drop it" >&2
	status=1
done <"$tmp/kc-rows"
[ $status -eq 0 ] && echo "$(wc -l <"$tmp/lib") managed calls of the" \
	"library and $(wc -l <"$tmp/kc") of the compat headers, each with" \
	"its row"
exit $status
