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
# makes the records' twins, inside the bracket of the open they duplicate;
# base/tslots.c reads a thread's stat in /proc and closes it at once, in a
# full pool's rare reclaim that may run in a signal handler (the ledger's
# first count), where a record, which may allocate, cannot be made.
skip='src/posix/(fd|stdio|fd-table|interpose-fd)\.c|src/vfio/interpose\.c|src/base/own-fd\.c|src/base/tslots\.c'
# One grep over every file and one awk over the sites: a process per site
# or per file costs more than the check itself.
files=$(cd "$src" && find src -name '*.c' | sort | grep -vE "^($skip)\$" || true)
[ -n "$files" ] || { echo "no source file under $src/src" >&2; exit 1; }
# file:line of each call, less the lines that are comments.
# shellcheck disable=SC2086
sites=$(cd "$src" && grep -nE "$calls" $files /dev/null |
	grep -vE '^[^:]*:[0-9]+:\s*(/?\*|//)' | cut -d: -f1,2 || true)
# shellcheck disable=SC2086
cd "$src" && awk -v sites="$sites" '
	{ text[FILENAME, FNR] = $0 }
	# Whether lines a to b of f hold s (b < a: line a alone, as sed -n a,bp).
	function holds(f, a, b, s,  i) {
		if (b < a)
			b = a
		for (i = a; i <= b; i++)
			if (index(text[f, i], s))
				return 1
		return 0
	}
	END {
		n = sites == "" ? 0 : split(sites, site, "\n")
		status = 0
		for (k = 1; k <= n; k++) {
			split(site[k], p, ":")
			f = p[1]
			line = p[2] + 0
			from = line > 3 ? line - 3 : 1
			if (!holds(f, from, line - 1, "devres__own_fd_opening();") ||
			    !holds(f, line + 1, line + 3, "devres__own_fd_opened(")) {
				printf "%s:%d: opens a descriptor outside devres__own_fd_opening()/opened()\n", f, line | "cat >&2"
				status = 1
			}
		}
		if (n == 0) {
			print "no open site found under src" | "cat >&2"
			exit 1
		}
		if (status == 0)
			printf "own fds: %d open sites, each recorded\n", n
		exit status
	}' $files
