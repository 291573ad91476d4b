#!/bin/sh
# SPDX-License-Identifier: MIT
# Every managed call the library exports (devm_*, dmam_*, pcim_* in the
# version script) and every release function src/ gives devres_alloc() or
# devres_alloc_named() must have an entry in the managed[] table of
# tests/misuse/test-unmanaged-release.c: a row that gives it back with the
# plain call, or why it has none. A managed kind added without one fails.
# Usage: check-managed-kinds.sh SRCDIR
set -eu
src=$1
test=$src/tests/misuse/test-unmanaged-release.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -oE '\b(devm|dmam|pcim)_[a-z0-9_]+' "$src/src/libdevres.map" >"$tmp/names"
# The first argument of each allocation; "release" is a wrapper's parameter
# (io, posix fds, regions), whose callers are the exported calls above.
find "$src/src" -name '*.c' -exec cat {} + |
	grep -oE 'devres_alloc(_named)?\([a-z_0-9]+' |
	sed 's/.*(//' | grep -vxE 'release|[a-z_0-9]+_t' >>"$tmp/names"
sort -u "$tmp/names" -o "$tmp/names"
[ -s "$tmp/names" ] || { echo "no managed kinds found under $src" >&2; exit 1; }

status=0
n=0
while read -r name; do
	n=$((n + 1))
	if ! grep -qE "(ROW|NONE)\(\"$name\"," "$test"; then
		echo "$name: managed, but not in managed[] of $test" >&2
		status=1
	fi
done <"$tmp/names"
[ $status -eq 0 ] && echo "$n managed calls and node kinds, each with an entry"
exit $status
