#!/bin/sh
# SPDX-License-Identifier: MIT
# Every array of a constant size in the library's per-thread state (a
# thread-local variable: __thread, _Thread_local, TLS_FAST; a pool of
# per-thread slots, DEVRES_TSLOTS) and in its per-object state (a member
# of a struct or union declared at file level) of src/ and include/ is
# either a fixed limit with a cell, or excluded with a reason. A cell
# names it by a comment "limit-cell: <key>" in a test under tests/ (the
# limit tables: hostile/test-hostile-limits-all.c,
# hostile/test-hostile-limits.c, base/test-limits-silent.c ...); an
# exclusion is a line "<key>: <reason>" of tests/limits-exclude.txt. A
# key is path:name for a thread-local array or a pool, path:struct.member
# for a member (tests/limits-scan.awk finds them). A marker or an
# exclusion that names nothing found is an error too, so that the list
# never outlives the code.
# Usage: check-limits.sh SRCDIR
set -eu
src=${1:?usage: check-limits.sh SRCDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$src"
find src include -name '*.[ch]' | LC_ALL=C sort |
	xargs awk -f tests/limits-scan.awk | LC_ALL=C sort -u >"$tmp/found"
grep -rhoE 'limit-cell: [^ ]+' tests --include='*.c' --include='*.h' |
	sed 's/^limit-cell: //' | LC_ALL=C sort -u >"$tmp/cells"
grep -vE '^[[:space:]]*(#|$)' tests/limits-exclude.txt >"$tmp/excl.lines"
bad=0
if grep -vE '^[^: ]+:[^: ]+: .+' "$tmp/excl.lines" >"$tmp/noreason"; then
	echo "tests/limits-exclude.txt: an entry without a reason:" >&2
	cat "$tmp/noreason" >&2
	bad=1
fi
cut -d: -f1,2 "$tmp/excl.lines" | LC_ALL=C sort >"$tmp/excl.all"
LC_ALL=C sort -u "$tmp/excl.all" >"$tmp/excl"
if ! cmp -s "$tmp/excl.all" "$tmp/excl"; then
	echo "tests/limits-exclude.txt: an entry twice" >&2
	bad=1
fi
if LC_ALL=C comm -12 "$tmp/cells" "$tmp/excl" | grep . >"$tmp/both"; then
	echo "both a cell and excluded:" >&2
	cat "$tmp/both" >&2
	bad=1
fi
LC_ALL=C sort -u "$tmp/cells" "$tmp/excl" >"$tmp/known"
if LC_ALL=C comm -23 "$tmp/found" "$tmp/known" | grep . >"$tmp/new"; then
	echo "fixed-size arrays of per-thread or per-object state with no" \
		"cell (a comment \"limit-cell: <key>\" in a test) and not in" \
		"tests/limits-exclude.txt:" >&2
	cat "$tmp/new" >&2
	bad=1
fi
if LC_ALL=C comm -13 "$tmp/found" "$tmp/known" | grep . >"$tmp/stale"; then
	echo "cells or exclusions that name no array of src/ or include/:" >&2
	cat "$tmp/stale" >&2
	bad=1
fi
[ "$bad" = 0 ] || exit 1
echo "$(wc -l <"$tmp/found") fixed-size arrays of per-thread and" \
	"per-object state: $(wc -l <"$tmp/cells") with a cell, the others" \
	"excluded with a reason"
