#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports exactly the functions the headers declare with
# DEVRES_API, each with the version node src/libdevres.map gives it (the
# default version: name@@DEVRES_M.N). Usage: check-exports.sh LIB SRCDIR
set -eu
lib=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Lines are joined first: clang-format may break a declaration after its
# return type.
cat "$src"/include/devres/*.h | tr '\n' ' ' | grep -o 'DEVRES_API [^(;#]*(' |
	sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | grep -v '^__' >"$tmp/api.h"
sort -u "$tmp/api.h" >"$tmp/api"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBVW]$/ { print $3 }' |
	grep -v '^DEVRES_' >"$tmp/exported.v"
# libc's entry points the library interposes, so that it sees a managed
# descriptor, stream or mapping released by hand (src/posix/interpose-fd.c,
# src/base/maps.c, src/base/maps-advise.c, src/vfio/interpose.c, src/base/vfork.c): exported, versioned in the
# map, declared by libc's headers.
interposed='close closedir close_range closefrom dup2 dup3 endmntent fclose freopen freopen64 ioctl madvise mmap mmap64 mprotect
	mq_close mremap munmap pclose pkey_mprotect posix_madvise process_madvise pthread_clockjoin_np
	pthread_detach pthread_join pthread_timedjoin_np pthread_tryjoin_np
	remap_file_pages shmat thrd_detach thrd_join vfork'
sed 's/@.*//' "$tmp/exported.v" | sort -u |
	grep -vxF "$(printf '%s\n' $interposed)" >"$tmp/exported"

status=0
if ! diff -u "$tmp/api" "$tmp/exported"; then
	echo "exports differ from the headers' DEVRES_API declarations" >&2
	echo "(lines with - are declared but not exported: add them to src/libdevres.map)" >&2
	status=1
fi
# What the map says: name@@node for every function it lists.
sed -e 's,/\*.*\*/,,g' -e 's/[[:space:]]//g' "$src/src/libdevres.map" |
	awk '/^DEVRES_[0-9]+\.[0-9]+\{$/ { node = $0; sub(/\{$/, "", node); next }
	/^(global|local):/ { next }
	/^[a-z_0-9]+;$/ { sub(/;$/, ""); print $0 "@@" node }' |
	sort >"$tmp/map.v"
sort "$tmp/exported.v" >"$tmp/exported.vs"
if ! diff -u "$tmp/map.v" "$tmp/exported.vs"; then
	echo "symbol versions differ from src/libdevres.map's nodes (DEVRES_M.N)" >&2
	status=1
fi
[ "$status" = 0 ] && echo "$(wc -l <"$tmp/api") functions exported, each in its version node ($(cut -d@ -f3 "$tmp/map.v" | sort -u | tr '\n' ' '))"
exit $status
