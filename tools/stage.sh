#!/bin/sh
# SPDX-License-Identifier: MIT
# One stage of make check: runs a command with its output in a log file and
# prints one line: its wall time, and the CPU time (user + system) of all
# it ran, which a loaded machine does not inflate as it does the wall
# time; on failure, the end of the log and the log's name.
# Usage: stage.sh NAME COMMAND...
name=$1
shift
mkdir -p build/logs
log=build/logs/$name.log
start=$(date +%s)
# The CPU time of the waited-for children, in whole seconds: the second
# line of `times` ("1m2.50s 0m3.10s", user then system), which must run
# in this shell (a command substitution would have no children).
cpu() {
	sed -n '2{s/[ms]/ /g;p;}' "$log.times" |
		awk '{ printf "%d\n", $1 * 60 + $2 + $3 * 60 + $4 + 0.5 }'
}
# The whole line at the end, so that stages run side by side do not mix.
"$@" >"$log" 2>&1
status=$?
times >"$log.times"
if [ $status = 0 ]; then
	printf '%-12s ok (%s s, CPU %s s)\n' "$name" \
		"$(($(date +%s) - start))" "$(cpu)"
	exit 0
fi
{
	printf '%-12s FAILED (%s s, CPU %s s): the last lines of %s:\n' "$name" \
		"$(($(date +%s) - start))" "$(cpu)" "$log"
	tail -n 40 "$log" | sed 's/^/    /'
} >&2
exit 1
