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
printf '%-12s ' "$name"
if "$@" >"$log" 2>&1; then
	echo "ok ($(($(date +%s) - start)) s)"
	exit 0
fi
echo "FAILED ($(($(date +%s) - start)) s): the last lines of $log:"
tail -n 40 "$log" | sed 's/^/    /'
exit 1
