#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the benchmarks of a release build and writes docs/PERFORMANCE.md
# and its plots (docs/perf-*.png). Called by `make bench`. The hand-written
# sections of the document live in bench/PERFORMANCE.others.md and are
# appended as they are.
set -eu
B=${BUILD:-build/release}
OUT=docs/PERFORMANCE.md
ROUNDS=${ROUNDS:-11}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "bench-core ($((ROUNDS * 2 - 1)) rounds)..." >&2
"$B/bench/bench-core" $((ROUNDS * 2 - 1)) >"$TMP/core.txt"
echo "bench-peers bulk ($ROUNDS rounds)..." >&2
"$B/bench/bench-peers" bulk "$ROUNDS" "$TMP/bulk.dat" >"$TMP/bulk.md"
echo "bench-peers frees ($ROUNDS rounds)..." >&2
"$B/bench/bench-peers" frees "$ROUNDS" "$TMP/frees.dat" >"$TMP/frees.md"
"$B/bench/bench-peers" bytes >"$TMP/bytes.md"

# Plots: ns per object against N (64 B), and per free against n.
for c in 0 1 2 3 4 5 6 7; do
	awk -v c=$c '$2 == 64 && $3 == c { print $1, $4 }' "$TMP/bulk.dat" \
		>"$TMP/bulk-$c.dat"
done
for o in 0 1 2; do
	awk -v o=$o '$2 == o { print $1, $3, $4, $5 }' "$TMP/frees.dat" \
		>"$TMP/frees-$o.dat"
done
gnuplot <<EOF
set terminal pngcairo size 800,500 noenhanced
set logscale x
set xlabel "objects (64 B each)"
set ylabel "ns per object, allocation + release (median)"
set key outside right
set grid
set output "docs/perf-bulk.png"
plot "$TMP/bulk-0.dat" w lp t "malloc/free", \
     "$TMP/bulk-1.dat" w lp lw 2 t "libdevres", \
     "$TMP/bulk-2.dat" w lp t "talloc", \
     "$TMP/bulk-3.dat" w lp t "talloc+destructor", \
     "$TMP/bulk-4.dat" w lp t "talloc_pool", \
     "$TMP/bulk-5.dat" w lp t "APR pool", \
     "$TMP/bulk-6.dat" w lp t "APR+cleanup", \
     "$TMP/bulk-7.dat" w lp t "kernel layout"
set xlabel "n objects (64 B), each freed on its own"
set ylabel "ns per free (median)"
set logscale y
set output "docs/perf-frees.png"
plot "$TMP/frees-0.dat" u 1:3 w lp lw 2 t "devm_kfree newest first", \
     "$TMP/frees-1.dat" u 1:3 w lp lw 2 t "devm_kfree oldest first", \
     "$TMP/frees-2.dat" u 1:3 w lp lw 2 t "devm_kfree random", \
     "$TMP/frees-0.dat" u 1:2 w lp t "free newest first", \
     "$TMP/frees-2.dat" u 1:2 w lp t "free random", \
     "$TMP/frees-1.dat" u 1:4 w lp t "talloc_free oldest first", \
     "$TMP/frees-2.dat" u 1:4 w lp t "talloc_free random"
EOF

model=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
{
	sed -n '1,/^<!-- generated -->$/p' bench/PERFORMANCE.head.md
	echo
	echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
		"$(git rev-parse --short HEAD 2>/dev/null || echo '?'):" \
		"$(nproc) CPUs ($model), $(uname -sr)," \
		"$(gcc --version | head -n 1), load average" \
		"$(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo
	echo "### bench-core: the targets"
	echo
	echo '```'
	cat "$TMP/core.txt"
	echo '```'
	echo
	echo "### Allocation + release of everything, against the peers"
	echo
	echo "ns per object (thread CPU time), median and interquartile range"
	echo "of $ROUNDS interleaved rounds; the ratio is taken within each"
	echo "round. \"slower\" marks a median ratio above malloc+free's."
	echo
	cat "$TMP/bulk.md"
	echo
	echo "![ns per object against N](perf-bulk.png)"
	echo
	echo "### Bytes per object (64 B objects, N = 100 000)"
	echo
	cat "$TMP/bytes.md"
	echo
	echo "### Individual frees in three orders"
	echo
	echo "ns per free, median of $ROUNDS interleaved rounds (at n = 10"
	echo "the clock's own cost, about 1 us per reading, dominates)."
	echo
	cat "$TMP/frees.md"
	echo
	echo "![ns per free against n](perf-frees.png)"
	echo
	sed -n '/^<!-- generated -->$/,$p' bench/PERFORMANCE.head.md | sed 1d
	echo
	sed 1,3d bench/PERFORMANCE.others.md
} >"$OUT"
echo "wrote $OUT, docs/perf-bulk.png, docs/perf-frees.png" >&2
