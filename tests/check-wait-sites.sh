#!/bin/sh
# SPDX-License-Identifier: MIT
# Every blocking wait of the library is listed, and classed, in
# tests/base/test-wait-sites.c: the wait calls counted in each file of
# src/ and include/kcompat/ (lines of comments left out) are the counts
# its SITE() entries give. Usage: check-wait-sites.sh SRCDIR
set -eu
src=${1:?usage: check-wait-sites.sh SRCDIR}
list=$src/tests/base/test-wait-sites.c
pat='(^|[^A-Za-z0-9_])(pthread_cond_wait|pthread_cond_timedwait|pthread_join|sem_wait|sem_timedwait|epoll_wait|epoll_pwait|ppoll|poll|sched_yield|nanosleep|usleep)\(|FUTEX_WAIT[A-Z_]*[,) |]'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$src" && grep -rnE "$pat" src include/kcompat) |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*(\*|/\*|//)' |
	cut -d: -f1 | sort | uniq -c | awk '{ print $2, $1 }' >"$tmp/found"
grep -oE 'SITE\("[^"]+", [0-9]+' "$list" |
	sed -E 's/SITE\("([^"]+)", ([0-9]+)/\1 \2/' | sort >"$tmp/listed"
if ! diff -u "$tmp/listed" "$tmp/found"; then
	echo "the wait sites of src/ and include/kcompat/ (+) differ from" \
		"those listed in tests/base/test-wait-sites.c (-)" >&2
	exit 1
fi
echo "$(wc -l <"$tmp/found") files of waits, each listed"
