#!/bin/sh
# SPDX-License-Identifier: MIT
# Every complete program in the docs (a ```c block with a main) compiles
# against the headers, links with the library and exits 0, so the docs
# cannot drift from the API. Usage: check-doc-examples.sh SRCDIR LIBDIR OUTDIR
set -eu
src=$1
libdir=$2
out=$3
cc=${CC:-cc}
rm -rf "$out"
mkdir -p "$out"
n=0
for md in "$src"/README.md "$src"/docs/*.md; do
	awk -v out="$out" -v base="$(basename "$md" .md)" '
		/^```c$/ { inblk = 1; k++; f = out "/" base "-" k ".c"; next }
		/^```$/ { inblk = 0; next }
		inblk { print > f }' "$md"
done
for c in "$out"/*.c; do
	[ -e "$c" ] || continue
	grep -q '^int main(' "$c" || continue
	exe=${c%.c}
	$cc -std=c11 -Wall -Wextra -Werror -I"$src/include" -o "$exe" "$c" \
		-L"$libdir" -ldevres -lpthread
	LD_LIBRARY_PATH=$libdir "$exe" >"$exe.out" 2>&1 || {
		echo "$(basename "$c"): exited $?" >&2
		cat "$exe.out" >&2
		exit 1
	}
	n=$((n + 1))
done
echo "$n programs from the docs built and ran"
[ "$n" -gt 0 ]
