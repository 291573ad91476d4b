#!/bin/sh
# SPDX-License-Identifier: MIT
# Every managed call the library exports (devm_*, dmam_*, pcim_* in the
# version script) is a column of the states tables (st_calls[] of
# tests/hostile/states-calls.h, "acquisition+release" names) or a line of
# tests/hostile/states-calls.exclude, whose test file must name it. An
# exclusion of a call that is a column, or no longer exported, fails too:
# the list stays short and true. A call that takes a PCI function
# (pcim_*) has its states in the PCI function's table: it must be a column
# there (call_name[] of tests/pci/pci-lifecycle.h, test-pci-states.c's
# columns) and is never excluded. Usage: check-states-calls.sh SRCDIR
set -eu
src=$1
calls=$src/tests/hostile/states-calls.h
excl=$src/tests/hostile/states-calls.exclude
pci=$src/tests/pci/pci-lifecycle.h
tab=$(printf '\t')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -oE '\b(devm|dmam|pcim)_[a-z0-9_]+' "$src/src/libdevres.map" |
	sort -u >"$tmp/exported"
[ -s "$tmp/exported" ] || { echo "no managed calls in $src" >&2; exit 1; }
# The column names: { "a+b", ... }, a call's "(case)" left out.
sed -n 's/^[[:space:]]*{ "\([^"]*\)",.*/\1/p' "$calls" | tr '+' '\n' |
	sed 's/(.*//' | sort -u >"$tmp/columns"
grep -v '^#' "$excl" | cut -f1 | sort >"$tmp/excluded"
# The PCI table's columns: the strings of call_name[], up to its "};".
sed -n '/call_name\[NR_CALLS\] = {/,/^};/p' "$pci" |
	grep -oE '"[a-z0-9_]+"' | tr -d '"' | sort -u >"$tmp/pci-columns"
[ -s "$tmp/pci-columns" ] || { echo "no calls in $pci" >&2; exit 1; }

status=0
if [ -n "$(uniq -d "$tmp/excluded")" ]; then
	echo "excluded twice: $(uniq -d "$tmp/excluded")" >&2
	status=1
fi
while read -r name; do
	case $name in
	pcim_*)
		grep -qx "$name" "$tmp/pci-columns" && continue
		echo "$name: exported, but not a column of the PCI function's" \
			"table ($pci)" >&2
		status=1
		continue
		;;
	esac
	grep -qx "$name" "$tmp/columns" && continue
	line=$(grep "^$name$tab" "$excl" || true)
	if [ -z "$line" ]; then
		echo "$name: exported, but neither a column of $calls nor" \
			"excluded in $excl" >&2
		status=1
		continue
	fi
	file=$(printf '%s\n' "$line" | cut -f2)
	why=$(printf '%s\n' "$line" | cut -f3)
	if [ -z "$why" ] || ! grep -qw "$name" "$src/$file" 2>/dev/null; then
		echo "$name: its exclusion needs a reason and a test that" \
			"names it ($file does not)" >&2
		status=1
	fi
done <"$tmp/exported"
while read -r name; do
	if grep -qx "$name" "$tmp/columns" ||
		grep -qx "$name" "$tmp/pci-columns"; then
		echo "$name: excluded, but a column: drop its exclusion" >&2
		status=1
	elif ! grep -qx "$name" "$tmp/exported"; then
		echo "$name: excluded, but not exported: drop it" >&2
		status=1
	fi
done <"$tmp/excluded"
[ $status -eq 0 ] && echo "$(wc -l <"$tmp/exported") managed calls:" \
	"$(grep -c '^pcim_' "$tmp/exported") in the PCI function's table," \
	"$(wc -l <"$tmp/excluded") excluded, each with a reason"
exit $status
