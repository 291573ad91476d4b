#!/bin/sh
# SPDX-License-Identifier: MIT
# Layers call downward only (docs/internals.md). The devres core and the
# cross-cutting files of src/base/ neither include the driver model's
# private header nor reference a symbol it defines; a subsystem's files
# include nothing of src/ but "base/subsys.h" and headers of their own
# folder. Usage: check-layers.sh SRCDIR OBJDIR (OBJDIR: src/base's objects)
set -eu
src=${1:?usage: check-layers.sh SRCDIR OBJDIR}
obj=${2:?usage: check-layers.sh SRCDIR OBJDIR}
dm="core dd bus driver platform sweep sweep-driver"
low="devres group action kmalloc debug check kind log fault ledger"
status=0

for f in $low; do
	if grep -n '#include "base.h"' "$src/src/base/$f.c"; then
		echo "src/base/$f.c includes the driver model's base.h" >&2
		status=1
	fi
done
for h in node.h internal.h subsys.h; do
	if grep -n '#include "base.h"' "$src/src/base/$h"; then
		echo "src/base/$h includes the driver model's base.h" >&2
		status=1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in $dm; do
	nm --defined-only "$obj/$f.c.o" | awk '$2 ~ /^[TtDdBbRr]$/ { print $3 }'
done | sort -u >"$tmp/dm"
for f in $low; do
	nm -u "$obj/$f.c.o" | awk '{ print $2 }' | sort -u >"$tmp/u"
	if [ -n "$(comm -12 "$tmp/dm" "$tmp/u")" ]; then
		echo "src/base/$f.c calls up into the driver model:" >&2
		comm -12 "$tmp/dm" "$tmp/u" >&2
		status=1
	fi
done

for dir in "$src"/src/*/; do
	[ "$(basename "$dir")" = base ] && continue
	for f in "$dir"*.c "$dir"*.h; do
		[ -e "$f" ] || continue
		# The PCI bus's backend interface is the one exception, for the
		# backends (src/vfio, src/uio) that sit above the bus.
		if grep -n '#include "[^"]*/' "$f" | grep -v '"base/subsys.h"' |
			grep -v '"pci/backend.h"'; then
			echo "$f includes another folder's internals" >&2
			status=1
		fi
	done
done
[ "$status" = 0 ] && echo "layers: no call or include goes up"
exit $status
