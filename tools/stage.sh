#!/bin/sh
# SPDX-License-Identifier: MIT
# One stage of make check: runs a command with its output in a log file and
# prints one line; on failure, the end of the log and the log's name.
# Usage: stage.sh NAME COMMAND...
name=$1
shift
mkdir -p build/logs
log=build/logs/$name.log
start=$(date +%s)
# The whole line at the end, so that stages run side by side do not mix.
if "$@" >"$log" 2>&1; then
	printf '%-12s ok (%s s)\n' "$name" "$(($(date +%s) - start))"
	exit 0
fi
{
	printf '%-12s FAILED (%s s): the last lines of %s:\n' "$name" \
		"$(($(date +%s) - start))" "$log"
	tail -n 40 "$log" | sed 's/^/    /'
} >&2
exit 1
