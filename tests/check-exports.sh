#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports exactly the functions the headers declare with
# DEVRES_API, each with the DEVRES_0 version. Usage: check-exports.sh LIB SRCDIR
set -eu
lib=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Lines are joined first: clang-format may break a declaration after its
# return type.
cat "$src"/include/devres/*.h | tr '\n' ' ' | grep -o 'DEVRES_API [^(;#]*(' |
	sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | grep -v '^__' | sort -u >"$tmp/api"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBVW]$/ { print $3 }' |
	grep -v '^DEVRES_' >"$tmp/exported.v"
sed 's/@.*//' "$tmp/exported.v" | sort -u >"$tmp/exported"

status=0
if ! diff -u "$tmp/api" "$tmp/exported"; then
	echo "exports differ from the headers' DEVRES_API declarations" >&2
	echo "(lines with - are declared but not exported: add them to src/libdevres.map)" >&2
	status=1
fi
if grep -v '@@DEVRES_0$' "$tmp/exported.v"; then
	echo "the symbols above carry no DEVRES_0 version" >&2
	status=1
fi
[ "$status" = 0 ] && echo "$(wc -l <"$tmp/api") functions exported, all versioned DEVRES_0"
exit $status
