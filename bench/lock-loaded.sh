#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One device shared by THREADS (8) threads pinned (PINNED=0: not), the
# two sides alternated (bench-alternate), under a fixed background load:
# LOOPS (4) busy loops at nice 0, each in a session of its own, started
# SETTLE (5) s before the first run and killed when the script ends,
# however it ends. THREADS may list counts ("2 4 8"), LOOPS may be 0.
#
#   bench/lock-loaded.sh RUNS BENCH-ALTERNATE [BENCH-ALTERNATE...]
#
# Each round runs every bench-alternate given, in turn (an A/B pair of
# builds sees the same load), each BENCH_EACH=1 for one case of three
# windows of MS (500) ms a side: a line a window with both sides' ns an
# operation, their ratio, each side's fairness (the slowest thread's
# operations over the average's), the slowest thread's CPU share, what it
# was short of, and the 1-minute load average. A window fails if the
# ratio is above 2 or libdevres's fairness below half; the summary counts
# the failures of each build.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 RUNS BENCH-ALTERNATE [BENCH-ALTERNATE...]" >&2
	exit 2
fi
runs=$1
shift
loops=${LOOPS:-4} threads=${THREADS:-8} ms=${MS:-500} pinned=${PINNED:-1}

pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
for _ in $(seq "$loops"); do
	setsid bash -c 'while :; do :; done' &
	pids+=($!)
done
sleep "${SETTLE:-5}"

out=$(mktemp)
trap 'kill "${pids[@]}" 2>/dev/null; rm -f "$out"' EXIT
for r in $(seq "$runs"); do
	for b in "$@"; do
		# shellcheck disable=SC2086 # a list of counts
		BENCH_PINNED=$pinned BENCH_EACH=1 "$b" "$ms" 10 $threads |
			sed -n "s|^run: |$r $b |p" | tee -a "$out"
	done
done
echo
echo "build, threads: windows, above 2x, fairness below half," \
	"ratio min/median/max"
for b in "$@"; do
	for t in $threads; do
		awk -v b="$b" -v t="$t" '$2 == b && $4 == t { print $10, $12 }' \
			"$out" | sort -n | awk -v b="$b, $t" '{
			r[NR] = $1; if ($1 > 2) hi++; if ($2 < 0.5) lo++
		} END {
			printf "%s: %d, %d, %d, %.2f / %.2f / %.2f\n", b, NR,
				hi, lo, r[1], r[int((NR + 1) / 2)], r[NR]
		}'
	done
done
