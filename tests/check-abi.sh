#!/bin/sh
# SPDX-License-Identifier: MIT
# The ABI of libdevres.so.0 against the committed baseline (abi/, libabigail):
# any change but added functions fails, unless the SONAME was bumped. Update
# the baseline on purpose with `make abi-baseline` (README, "ABI").
# Usage: check-abi.sh LIB SRCDIR
set -eu
lib=$1
src=$2
base=$src/abi/libdevres.so.0.abi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -s "$base" ] || { echo "no ABI baseline at $base: run make abi-baseline" >&2; exit 1; }
abidw --headers-dir "$src/include/devres" --no-corpus-path "$lib" >"$tmp/cur.abi"
soname() { grep -o "soname='[^']*'" "$1" | head -n 1; }
if [ "$(soname "$base")" != "$(soname "$tmp/cur.abi")" ]; then
	echo "SONAME changed ($(soname "$base") -> $(soname "$tmp/cur.abi")):"
	echo "the baseline is for the old one; commit a new one with make abi-baseline"
	exit 0
fi
status=0
abidiff --no-added-syms --headers-dir1 "$src/include/devres" \
	--headers-dir2 "$src/include/devres" "$base" "$tmp/cur.abi" \
	>"$tmp/diff" || status=$?
if [ $((status & 3)) -ne 0 ]; then
	cat "$tmp/diff" >&2
	echo "abidiff failed to run (status $status)" >&2
	exit 1
fi
if [ $((status & 12)) -ne 0 ]; then
	cat "$tmp/diff" >&2
	echo "the ABI of libdevres.so.0 changed (above) and the SONAME did not:" >&2
	echo "keep the ABI, or bump the SONAME; then make abi-baseline" >&2
	exit 1
fi
added=$(abidiff --headers-dir1 "$src/include/devres" \
	--headers-dir2 "$src/include/devres" "$base" "$tmp/cur.abi" |
	grep -c "^  \[A\]" || true)
echo "ABI of libdevres.so.0 unchanged ($added functions added)"
