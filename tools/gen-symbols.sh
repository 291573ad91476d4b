#!/bin/sh
# SPDX-License-Identifier: MIT
# debian/libdevres1.symbols from src/libdevres.map: every exported symbol
# with its version node, and the package version that first had it. A node
# DEVRES_M.N is release M.N.0. vfork is defined only where the library
# has its stub (src/base/vfork.c: x86-64 and AArch64).
# Usage: gen-symbols.sh [SRCDIR] > debian/libdevres1.symbols
set -eu
src=${1:-.}
echo "libdevres.so.1 libdevres1 #MINVER#"
echo "* Build-Depends-Package: libdevres-dev"
sed -e 's,/\*.*\*/,,g' -e 's/[[:space:]]//g' "$src/src/libdevres.map" |
	awk '
	/^DEVRES_[0-9.]*\{$/ { node = $0; sub(/\{$/, "", node); global = 0
		ver = node; sub(/^DEVRES_/, "", ver)
		if (ver !~ /\./) ver = ver ".1"
		ver = ver ".0"
		print " " node "@" node " " ver; next }
	/^global:$/ { global = 1; next }
	/^local:/ { global = 0; next }
	/^\}/ { global = 0; next }
	global && /;$/ { sym = $0; sub(/;$/, "", sym); if (sym == "") next
		arch = sym == "vfork" ? "(arch=amd64 arm64)" : ""
		print " " arch sym "@" node " " ver }' | LC_ALL=C sort -u
