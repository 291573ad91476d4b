#!/bin/sh
# SPDX-License-Identifier: MIT
# Every lock of the library and of the compat headers has its line in
# docs/fork.md's list ("Every lock, and what fork() does to it"): each
# mutex, rwlock, spinlock, condition variable, once-flag, semaphore and
# barrier declared in src/, include/devres/ or include/kcompat/, each
# file that sleeps on a futex of its own, and each file that starts a
# thread. A line names the file and the declared name, as
#   | `src/base/bus.c` `devres__dm_lock` | ...
# (`futex` for a file's futex waits, `pthread_create` for its threads).
# A new lock without its line fails, and so does a line whose lock is
# gone. Usage: check-fork-locks.sh SRCDIR
set -eu
root=${1:?usage: check-fork-locks.sh SRCDIR}
doc=$root/docs/fork.md
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declarations, not pointers to a lock (a parameter, a field that names
# one) nor an extern of a definition listed at its file. Comments (lines
# that begin with * or /*, or //) are not code. One grep over the tree.
dirs="src include/devres include/kcompat"
code() {
	grep -rnHE --include='*.[ch]' "$1" $dirs |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|/\*|//)' || true
}
{
	code '\b(pthread_(mutex|rwlock|spinlock|cond|once|barrier)_t|sem_t)[[:space:]]+[A-Za-z_]' |
		grep -v 'extern' |
		sed -nE 's/^([^:]+):[0-9]+:.*\b(pthread_(mutex|rwlock|spinlock|cond|once|barrier)_t|sem_t)[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\1 \4/p'
	code 'FUTEX_WAIT' | sed -nE 's/^([^:]+):.*/\1 futex/p'
	code '\bpthread_create\(' | sed -nE 's/^([^:]+):.*/\1 pthread_create/p'
} | LC_ALL=C sort -u >"$tmp/found"

sed -nE 's/^\| `([^`]+)` `([^`]+)` \|.*/\1 \2/p' "$doc" | LC_ALL=C sort -u >"$tmp/listed"

status=0
if [ ! -s "$tmp/found" ]; then
	echo "no lock found in src/: the search is broken" >&2
	exit 1
fi
LC_ALL=C comm -23 "$tmp/found" "$tmp/listed" >"$tmp/missing"
LC_ALL=C comm -13 "$tmp/found" "$tmp/listed" >"$tmp/stale"
while read -r f name; do
	echo "$f: $name: not in docs/fork.md's list of locks (say what fork() does to it)" >&2
	status=1
done <"$tmp/missing"
while read -r f name; do
	echo "docs/fork.md lists $f $name, which is not there" >&2
	status=1
done <"$tmp/stale"
[ $status -eq 0 ] && echo "$(wc -l <"$tmp/found") locks, futex waits and thread starts listed"
exit $status
