#!/bin/sh
# SPDX-License-Identifier: MIT
# Every function the headers export has a section-3 man page, made from its
# kernel-doc by tools/kdoc2man.py, and every page (devres(7) too) renders
# without a warning and has a NAME, a DESCRIPTION and a SEE ALSO. Usage: check-manpages.sh SRCDIR OUTDIR
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
# One troff run over every page, with the warnings man --warnings asks
# for; troff names the file and line of each. (man(1) per page renders
# the same way, one process each.)
cd "$out"
warn=$(groff -man -Tutf8 -wmac -z man3/*.3 man7/*.7 2>&1 >/dev/null) ||
	{ echo "groff failed" >&2; status=1; }
if [ -n "$warn" ]; then
	echo "$warn" >&2
	status=1
fi
# Each function's page: a NAME line apropos can index ("name \- summary"),
# a non-empty DESCRIPTION, and a SEE ALSO; one awk over all of them.
n=$(ls man3/*.3 man7/*.7 | wc -l)
awk '
	function done() {
		if (FNR0 == "" || link) return
		if (!okname) print FNR0 ": no NAME line \"" name " \\- ...\""
		if (!desc) print FNR0 ": empty or no DESCRIPTION"
		if (!see) print FNR0 ": empty or no SEE ALSO"
		if (!(okname && desc && see)) bad = 1
	}
	FNR == 1 {
		done()
		FNR0 = FILENAME; name = FILENAME; sub(/.*\//, "", name)
		sub(/\.3$/, "", name)
		okname = desc = see = link = 0; sec = ""
	}
	FNR == 1 && /^\.so / { link = 1 }
	prev == ".SH NAME" && index($0, name " \\- ") == 1 { okname = 1 }
	{ prev = $0 }
	/^\.SH / { sec = $2; next }
	sec == "DESCRIPTION" && /[A-Za-z]/ { desc = 1 }
	sec == "SEE" && /\\fB/ { see = 1 }
	END { done(); exit bad }' man3/*.3 >&2 || status=1
# apropos devres finds every page, through an index of this tree alone.
if command -v mandb >/dev/null && command -v apropos >/dev/null; then
	mandb -q -c "$out" 2>/dev/null || true
	found=$(MANPATH=$out apropos devres 2>/dev/null | wc -l)
	[ "$found" = "$n" ] || {
		echo "apropos devres finds $found of $n pages" >&2
		status=1
	}
fi
[ "$status" = 0 ] && echo "$n pages render cleanly, each with NAME, DESCRIPTION and SEE ALSO; apropos devres finds them"
exit $status
