#!/bin/sh
# SPDX-License-Identifier: MIT
# Every call in src/ that opens a descriptor for the library's own use is
# bracketed by devres__own_fd_opening() (at most 3 lines above) and
# devres__own_fd_opened() (at most 3 lines below), which record it with
# no gap a close by hand could fall into; a new open site without them
# fails. fdopen() and fdopendir() open nothing: the number
# under them was recorded where it was opened. Files whose descriptors are managed (the program's,
# in their own table) or that define the closing calls are left out.
# Each kind the records use needs a row of tests/posix/test-posix-own-fds.c
# (its every_kind_has_a_row case). Usage: check-own-fds.sh SRCDIR
set -eu
src=$1
calls='\b(open|openat|creat|eventfd|epoll_create1?|memfd_create|timerfd_create|signalfd|socket|socketpair|pipe2?|accept4?|fopen|opendir|dup|inotify_init1?|posix_openpt)\(|F_DUPFD|SYS_openat2|GET_DEVICE_FD'
# posix/fd.c, stdio.c: managed descriptors and streams (fd-table.c's table);
# fd-table.c: their twins, moved out of a closing range instead;
# interpose-fd.c: the closing calls themselves; vfio/interpose.c names
# VFIO_GROUP_GET_DEVICE_FD to refuse it, and opens nothing; base/own-fd.c
# makes the records' twins, inside the bracket of the open they duplicate.
skip='src/posix/(fd|stdio|fd-table|interpose-fd)\.c|src/vfio/interpose\.c|src/base/own-fd\.c'
status=0
n=0
for f in $(cd "$src" && find src -name '*.c' | sort); do
	echo "$f" | grep -qE "^($skip)\$" && continue
	for line in $(grep -nE "$calls" "$src/$f" | grep -vE '^[0-9]+:\s*(/?\*|//)' |
		cut -d: -f1); do
		n=$((n + 1))
		from=$((line > 3 ? line - 3 : 1))
		if ! sed -n "${from},$((line - 1))p" "$src/$f" |
			grep -q 'devres__own_fd_opening();' ||
			! sed -n "$((line + 1)),$((line + 3))p" "$src/$f" |
			grep -q 'devres__own_fd_opened('; then
			echo "$f:$line: opens a descriptor outside devres__own_fd_opening()/opened()" >&2
			status=1
		fi
	done
done
[ "$n" -gt 0 ] || { echo "no open site found under $src/src" >&2; exit 1; }
[ "$status" = 0 ] && echo "own fds: $n open sites, each recorded"
exit $status
