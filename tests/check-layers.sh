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
# One nm over each set of objects: the defined symbols of the driver
# model's, then each low file's undefined ones, under its "name.c.o:".
# shellcheck disable=SC2046
(cd "$obj" && nm --defined-only $(printf '%s.c.o ' $dm)) |
	awk 'NF == 3 && $2 ~ /^[TtDdBbRr]$/ { print $3 }' | sort -u >"$tmp/dm"
# shellcheck disable=SC2046
(cd "$obj" && nm -u $(printf '%s.c.o ' $low)) | awk -v dm="$tmp/dm" '
	BEGIN { while ((getline s < dm) > 0) up[s] = 1 }
	/\.c\.o:$/ { f = $0; sub(/\.c\.o:$/, "", f); next }
	NF == 2 && ($2 in up) { print f, $2 }' | sort -u >"$tmp/up"
for f in $(cut -d" " -f1 "$tmp/up" | uniq); do
	echo "src/base/$f.c calls up into the driver model:" >&2
	sed -n "s/^$f //p" "$tmp/up" >&2
	status=1
done

# One grep over the subsystems' files (a process per file costs more than
# the check).
files=""
for dir in "$src"/src/*/; do
	d=${dir%/}
	d=${d##*/}
	[ "$d" = base ] && continue
	for f in "$dir"*.c "$dir"*.h; do
		[ -e "$f" ] && files="$files src/$d/${f##*/}"
	done
done
# The PCI bus's backend interface is the one exception, for the backends
# (src/vfio, src/uio) that sit above the bus.
# shellcheck disable=SC2086
(cd "$src" && grep -Hn '#include "[^"]*/' $files /dev/null) |
	grep -v '"base/subsys.h"' | grep -v '"pci/backend.h"' >"$tmp/up" || true
if [ -s "$tmp/up" ]; then
	cat "$tmp/up"
	cut -d: -f1 "$tmp/up" | uniq |
		sed 's/$/ includes another folder'"'"'s internals/' >&2
	status=1
fi
# A backend's operations are called through src/pci/bkops.c alone, which
# classes each as a read or a write for read-only mode (docs/pci.md): a
# call made elsewhere would skip that.
(cd "$src" && grep -Hn -- '->backend->[a-z_]*(\|\bb->[a-z_]*(pdev' \
	src/pci/*.c /dev/null) | grep -v '^src/pci/bkops\.c:' >"$tmp/bk" || true
if [ -s "$tmp/bk" ]; then
	cat "$tmp/bk"
	echo "a backend's operation called past src/pci/bkops.c" >&2
	status=1
fi
[ "$status" = 0 ] && echo "layers: no call or include goes up"
exit $status
