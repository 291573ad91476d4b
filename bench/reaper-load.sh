#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The reaper-vs-allocator pattern of test-lock (200 000 rounds) on a loaded
# machine: LOOPS busy loops run meanwhile, each in a session of its own
# (own) or all in the test's own session (shared). With the scheduler's
# autogroups, a session is one group: busy loops in sessions of their own
# are more groups beside the test's, busy loops in the test's session
# share its group's one share with the test's two threads.
#
#   bench/reaper-load.sh own|shared LOOPS RUNS TEST-LOCK [TEST-LOCK...]
#
# Each run starts the loops, waits (at most 90 s) for the 1-minute load
# average to reach LOAD_MIN (12), then runs each test-lock given, in
# turn, under the same loops (an A/B pair with two builds), printing
# uptime before and after each and what test-lock prints: wall and CPU
# time of the process, CPU, faults and context switches of each thread.
# The loops are killed when the run ends, however it ends.
set -eu

mode=${1:-}
loops=${2:-}
runs=${3:-}
if [ $# -lt 4 ] || { [ "$mode" != own ] && [ "$mode" != shared ]; }; then
	echo "usage: $0 own|shared LOOPS RUNS TEST-LOCK [TEST-LOCK...]" >&2
	exit 2
fi
shift 3
export ROUNDS=${ROUNDS:-200000} LOAD_MIN=${LOAD_MIN:-12}

# One run: the loops, the wait, each build, the loops killed.
one_run() {
	local mode=$1 loops=$2 run=$3 i b
	shift 3
	# Not local: the trap runs when the shell exits, after this returns.
	pids=()
	for i in $(seq "$loops"); do
		if [ "$mode" = own ]; then
			setsid bash -c 'while :; do :; done' &
		else
			bash -c 'while :; do :; done' &
		fi
		pids+=($!)
	done
	trap 'kill "${pids[@]}" 2>/dev/null' EXIT
	for i in $(seq 45); do
		awk -v min="$LOAD_MIN" '{ exit !($1 >= min) }' /proc/loadavg &&
			break
		sleep 2
	done
	for b in "$@"; do
		echo "[run $run, $mode, $loops loops] $b"
		echo "  start: $(uptime)"
		DEVRES_LOCK_ROUNDS=$ROUNDS "$b" | grep -A3 "reaper vs allocator:"
		echo "  end:   $(uptime)"
	done
}
export -f one_run

for r in $(seq "$runs"); do
	if [ "$mode" = own ]; then
		bash -c 'one_run "$@"' one_run "$mode" "$loops" "$r" "$@"
	else
		# A new session: the test and the loops in one autogroup.
		setsid -w bash -c 'one_run "$@"' one_run "$mode" "$loops" \
			"$r" "$@" </dev/null
	fi
done
