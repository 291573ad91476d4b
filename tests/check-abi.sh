#!/bin/sh
# SPDX-License-Identifier: MIT
# The ABI of the library against the committed baseline for its SONAME
# (abi/<soname>.abi, libabigail):
# any change but added functions fails, unless the SONAME was bumped. Update
# the baseline on purpose with `make abi-baseline` (README, "ABI").
# Usage: check-abi.sh LIB SRCDIR
set -eu
lib=$1
src=$2
so=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
base=$src/abi/$so.abi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -s "$base" ] || { echo "no ABI baseline for $so at $base: run make abi-baseline" >&2; exit 1; }
abidw --headers-dir "$src/include/devres" --no-corpus-path "$lib" >"$tmp/cur.abi"
status=0
abidiff --no-added-syms --suppressions "$src/abi/private.suppr" \
	--headers-dir1 "$src/include/devres" \
	--headers-dir2 "$src/include/devres" "$base" "$tmp/cur.abi" \
	>"$tmp/diff" || status=$?
if [ $((status & 3)) -ne 0 ]; then
	cat "$tmp/diff" >&2
	echo "abidiff failed to run (status $status)" >&2
	exit 1
fi
if [ $((status & 12)) -ne 0 ]; then
	cat "$tmp/diff" >&2
	echo "the ABI of $so changed (above) and the SONAME did not:" >&2
	echo "keep the ABI, or bump the SONAME; then make abi-baseline" >&2
	exit 1
fi
added=$(abidiff --suppressions "$src/abi/private.suppr" \
	--headers-dir1 "$src/include/devres" \
	--headers-dir2 "$src/include/devres" "$base" "$tmp/cur.abi" |
	grep -c "^  \[A\]" || true)
# A function added since the baseline goes into a version node of its
# own release: one the baseline does not have.
syms() { grep -o "<elf-symbol name='[^']*' version='[^']*'" "$1" |
	sed "s/.*name='\([^']*\)' version='\([^']*\)'/\1 \2/" | sort; }
syms "$base" >"$tmp/base.syms"
syms "$tmp/cur.abi" >"$tmp/cur.syms"
awk '{ print $2 }' "$tmp/base.syms" | sort -u >"$tmp/base.nodes"
bad=$(awk 'NR == FNR { old[$1] = 1; next } !($1 in old) { print }' \
	"$tmp/base.syms" "$tmp/cur.syms" |
	awk 'NR == FNR { node[$1] = 1; next } ($2 in node) { print $1 "@" $2 }' \
	"$tmp/base.nodes" -)
if [ -n "$bad" ]; then
	echo "$bad" >&2
	echo "functions added since the baseline are in a node it already has:" >&2
	echo "add them to a new DEVRES_M.N node in src/libdevres.map" >&2
	exit 1
fi
echo "ABI of $so unchanged ($added functions added)"
