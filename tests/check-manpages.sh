#!/bin/sh
# SPDX-License-Identifier: MIT
# Every function the headers export has a section-3 man page, made from its
# kernel-doc by tools/kdoc2man.py, and every page (devres(7) too) renders
# with man(1) without a warning. Usage: check-manpages.sh SRCDIR OUTDIR
set -eu
src=$1
out=$2
rm -rf "$out"
python3 "$src/tools/kdoc2man.py" "$src" "$out" check

status=0
cat "$src"/include/devres/*.h | tr '\n' ' ' | grep -o 'DEVRES_API [^(;#]*(' |
	sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | grep -v '^__' | sort -u |
	while read -r fn; do
		[ -s "$out/man3/$fn.3" ] || { echo "no man page for $fn" >&2; exit 1; }
	done || status=1

# .so links resolve relative to the manual's root, as in an installed tree.
cd "$out"
n=0
for page in man3/*.3 man7/*.7; do
	warn=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null) || {
		echo "$page: man failed" >&2; status=1; }
	if [ -n "$warn" ]; then
		echo "$page: $warn" >&2
		status=1
	fi
	n=$((n + 1))
done
[ "$status" = 0 ] && echo "$n pages render cleanly"
exit $status
