#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the benchmarks of a release build and writes docs/PERFORMANCE.md
# and its plots (docs/perf-*.png). Called by `make bench`. The hand-written
# sections of the document live in bench/PERFORMANCE.others.md and are
# appended as they are.
#
# BENCH_RUNS (default 3): complete runs of every benchmark, one after the
# other; the targets table shows each run, the tables and plots below it
# the last. Each run's output is kept in BENCH_KEEP (default
# build/bench-runs/<date>), with the load average before and after it.
# BENCH_FROM=<a kept directory>: write the document from those runs,
# running nothing.
set -eu
B=${BUILD:-build/release}
OUT=docs/PERFORMANCE.md
ROUNDS=${ROUNDS:-11}
RUNS=${BENCH_RUNS:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One complete run into directory $1.
run_all() {
	d=$1
	mkdir -p "$d"
	cut -d' ' -f1-3 /proc/loadavg >"$d/load-start"
	date -u '+%Y-%m-%d %H:%M UTC' >"$d/date"
	echo "bench-core ($((ROUNDS * 2 - 1)) rounds)..." >&2
	"$B/bench/bench-core" $((ROUNDS * 2 - 1)) >"$d/core.txt"
	echo "bench-peers bulk ($ROUNDS rounds)..." >&2
	"$B/bench/bench-peers" bulk "$ROUNDS" "$d/bulk.dat" >"$d/bulk.md"
	echo "bench-peers frees ($ROUNDS rounds)..." >&2
	"$B/bench/bench-peers" frees "$ROUNDS" "$d/frees.dat" >"$d/frees.md"
	"$B/bench/bench-peers" bytes >"$d/bytes.md"
	echo "bench-groups size ($ROUNDS rounds)..." >&2
	"$B/bench/bench-groups" size "$ROUNDS" "$d/gsize.dat" >"$d/gsize.md"
	echo "bench-groups depth ($ROUNDS rounds)..." >&2
	"$B/bench/bench-groups" depth "$ROUNDS" "$d/gdepth.dat" \
		>"$d/gdepth.md"
	echo "bench-bind ($ROUNDS rounds)..." >&2
	"$B/bench/bench-bind" "$ROUNDS" "$d/bind.dat" >"$d/bind.md"
	echo "bench-irq (10 rounds, pinned, not, apart)..." >&2
	"$B/bench/bench-irq" >"$d/irq.txt"
	"$B/bench/bench-irq" 10 --unpinned >"$d/irq-unpinned.txt"
	"$B/bench/bench-irq" 10 --apart >"$d/irq-apart.txt"
	echo "bench-contention (3 runs of 19 cases, 500 ms each)..." >&2
	"$B/bench/bench-contention" 500 "$d/cont.dat" >"$d/cont.md"
	echo "bench-alternate (3 runs of 2, 4, 8 threads, pinned and not)..." >&2
	"$B/bench/bench-alternate" 500 10 >"$d/alt.md"
	BENCH_PINNED=1 "$B/bench/bench-alternate" 500 10 >"$d/alt-pinned.md"
	cut -d' ' -f1-3 /proc/loadavg >"$d/load-end"
	# The commit the benchmarks were built from (make bench writes it
	# before the build): HEAD may have moved since.
	if [ -f "$B/bench-commit" ]; then
		cp "$B/bench-commit" "$d/commit"
	else
		git rev-parse --short HEAD >"$d/commit" 2>/dev/null ||
			echo '?' >"$d/commit"
	fi
}

if [ -n "${BENCH_FROM:-}" ]; then
	K=$BENCH_FROM
else
	K=${BENCH_KEEP:-build/bench-runs/$(date -u +%Y%m%d-%H%M%S)}
	i=1
	while [ "$i" -le "$RUNS" ]; do
		echo "run $i of $RUNS" >&2
		run_all "$K/run$i"
		i=$((i + 1))
	done
	echo "kept in $K" >&2
fi
RUNDIRS=$(ls -d "$K"/run* | sort -V)
N=$(echo "$RUNDIRS" | wc -l)
R=$(echo "$RUNDIRS" | tail -n 1)
cp "$R"/*.dat "$TMP/"

# The targets, one column a run. $1: a regular expression for the line
# of bench-core's "targets" block; prints "ratio (IQR) verdict".
core_target() {
	for d in $RUNDIRS; do
		printf ' | '
		sed -n '/^targets/,$p' "$d/core.txt" | grep -E "$1" |
			head -n 1 | sed -E 's/^.* ([0-9.]+x) \(IQR ([0-9.-]+),.*: ([A-Z]+)( \(within the spread\))?$/\1 (\2) \3\4/' |
			tr -d '\n'
	done
}
# Contention, one device: ratio range and fairness of $1 threads,
# pinned $2 (yes/no).
cont_ratio() {
	for d in $RUNDIRS; do
		awk -F'|' -v n="$1" -v p="$2" '$2 ~ /^ one $/ && $3 ~ p &&
			$4 + 0 == n { gsub(/ /, "", $7); printf " | %sx", $7 }' \
			"$d/cont.md"
	done
}
# The same, of the CPU an operation took, all threads' (last column).
cont_cpu() {
	for d in $RUNDIRS; do
		awk -F'|' -v n="$1" -v p="$2" '$2 ~ /^ one $/ && $3 ~ p &&
			$4 + 0 == n { v = $(NF - 1); gsub(/ /, "", v)
			printf " | %sx", v }' "$d/cont.md"
	done
}
# bench-alternate file $1: the ratio's range at 2 / 4 / 8 threads, and
# (with $2 = cpu) the CPU's.
alt_ratio() {
	for d in $RUNDIRS; do
		awk -F'|' -v c="${2:-}" '$2 + 0 > 0 { v = c == "cpu" ? $6 : $5
			gsub(/ /, "", v); printf "%s%sx", s, v; s = " / " }
			END { printf "\n" }' "$d/$1" | sed 's/^/ | /' | tr -d '\n'
	done
}
cont_fair() {
	for d in $RUNDIRS; do
		awk -F'|' -v n="$1" '$2 ~ /^ one $/ && $3 ~ /no/ &&
			$4 + 0 == n { gsub(/ /, "", $8); gsub(/ /, "", $9)
			printf " | %s (by hand %s)", $8, $9 }' "$d/cont.md"
	done
}
# bench-irq: the latency ratio (median) of file $1.
irq_ratio() {
	for d in $RUNDIRS; do
		awk '/^  ratio/ { printf " | %s", $2; exit }' "$d/$1"
	done
}
each() {
	for d in $RUNDIRS; do
		printf ' | %s' "$(cat "$d/$1")"
	done
}
{
	printf '| | run %s' "$(seq -s ' | run ' 1 "$N")"
	printf ' |\n|---'
	for d in $RUNDIRS; do printf '|---'; done
	printf '|\n'
	echo "| started$(each date) |"
	echo "| load average before$(each load-start) |"
	echo "| load average after$(each load-end) |"
	echo "| \`devm_kmalloc(32)\` + release ≤ 0.75 × malloc + free$(core_target 'kmalloc\(32\)') |"
	echo "| the same, 64 B$(core_target 'kmalloc\(64\)') |"
	echo "| the same, 128 B$(core_target 'kmalloc\(128\)') |"
	echo "| the same, sizes interleaved, 32 B$(core_target '32 B, sizes') |"
	echo "| the same, sizes interleaved, 64 B$(core_target '64 B, sizes') |"
	echo "| the same, sizes interleaved, 128 B$(core_target '128 B, sizes') |"
	echo "| \`devres_alloc\` + \`devres_add\` ≤ 1.0 ×$(core_target 'devres_alloc') |"
	echo "| \`devm_kfree\` oldest / newest first ≤ 2, n = 100 000$(core_target 'n = 100000') |"
	echo "| one device, 2 threads, unpinned ≤ 2 × by hand (min-max of 3)$(cont_ratio 2 no) |"
	echo "| the same, 4 threads$(cont_ratio 4 no) |"
	echo "| the same, 8 threads$(cont_ratio 8 no) |"
	echo "| the same, 16 threads (no target)$(cont_ratio 16 no) |"
	echo "| the CPU an operation took, 2 / 4 / 8 threads unpinned (no target)$(for d in $RUNDIRS; do printf ' | '; for n in 2 4 8; do RUNDIRS=$d cont_cpu $n no | sed 's/^ | //'; [ $n = 8 ] || printf ' / '; done; done) |"
	echo "| one device, 2 / 4 / 8 threads pinned$(for d in $RUNDIRS; do printf ' | '; for n in 2 4 8; do RUNDIRS=$d cont_ratio $n yes | sed 's/^ | //'; [ $n = 8 ] || printf ' / '; done; done) |"
	echo "| 8 threads: slowest thread's share ≥ 0.5 (min-max of 3)$(cont_fair 8) |"
	echo "| one device, 2 / 4 / 8 threads, sides alternated every 10 ms, unpinned$(alt_ratio alt.md) |"
	echo "| the same, pinned$(alt_ratio alt-pinned.md) |"
	echo "| the CPU an operation took, alternated, unpinned (no target)$(alt_ratio alt.md cpu) |"
	echo "| interrupt latency, pinned, median ≤ 1.2 × bare$(irq_ratio irq.txt) |"
	echo "| the same, unpinned, ≤ 1.5 ×$(irq_ratio irq-unpinned.txt) |"
	echo "| the same, raiser and dispatcher on different CPUs (no target)$(irq_ratio irq-apart.txt) |"
} >"$TMP/targets.md"
for f in core.txt bulk.md frees.md bytes.md gsize.md gdepth.md bind.md \
	irq.txt irq-unpinned.txt irq-apart.txt cont.md alt.md alt-pinned.md; do
	cp "$R/$f" "$TMP/$f"
done

# Contention: ns per op against threads, median and extremes of the three
# runs, for each of (devices, pinned): n, libdevres, by hand.
for m in 0 1; do
	for p in 0 1; do
		awk -v m=$m -v p=$p '$1 == m && $2 == p {
			k = $3; i = c[k]++; a[k, i] = $5; b[k, i] = $6
		}
		function med(x, k,   s, t, u) {
			s = x[k, 0]; t = x[k, 1]; u = x[k, 2]
			if (s > t) { v = s; s = t; t = v }
			if (t > u) { v = t; t = u; u = v }
			if (s > t) { v = s; s = t; t = v }
			return s " " t " " u
		}
		END { for (k in c) print k, med(a, k), med(b, k) }' \
			"$TMP/cont.dat" | sort -n >"$TMP/cont-$m-$p.dat"
	done
done

# Plots: ns per object against N (64 B), and per free against n.
for c in 0 1 2 3 4 5 6 7; do
	awk -v c=$c '$2 == 64 && $3 == c { print $1, $4 }' "$TMP/bulk.dat" \
		>"$TMP/bulk-$c.dat"
done
for o in 0 1 2; do
	awk -v o=$o '$2 == o { print $1, $3, $4, $5 }' "$TMP/frees.dat" \
		>"$TMP/frees-$o.dat"
done
# Groups: release (and remove) per group against k, k >= 1 (log axes);
# each case of the depth table against d, with lines of slope 1 and 2
# through the d = 1 point of "close each, outermost first" (case 5).
for a in 0 100000; do
	awk -v a=$a '$1 > 0 && $2 == a { print $1, $3, $4, $5, $6 }' \
		"$TMP/gsize.dat" >"$TMP/gsize-$a.dat"
done
for c in 0 1 2 3 4 5 6 7; do
	awk -v c=$c '$1 == c { print $2, $3, $4, $5 }' "$TMP/gdepth.dat" \
		>"$TMP/gdepth-$c.dat"
done
c1=$(awk '$1 == 5 && $2 == 1 { print $3 }' "$TMP/gdepth.dat")
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
set key inside top left
set xlabel "k resources in the group (devm_kmalloc, 64 B)"
set ylabel "ns per group (median, IQR bars)"
set output "docs/perf-groups-size.png"
plot "$TMP/gsize-0.dat" u 1:2:3:4 w yerrorlines lw 2 \
	t "devres_release_group, nothing around", \
     "$TMP/gsize-100000.dat" u 1:2:3:4 w yerrorlines lw 2 \
	t "devres_release_group, 100 000 older + 100 000 newer", \
     "$TMP/gsize-0.dat" u 1:5 w lp t "devres_remove_group, nothing around", \
     "$TMP/gsize-100000.dat" u 1:5 w lp \
	t "devres_remove_group, 100 000 older + 100 000 newer"
set logscale x 2
set xlabel "d, groups nested (one resource in each)"
set ylabel "ns per nest of d groups (median, IQR bars)"
set output "docs/perf-groups-depth.png"
plot "$TMP/gdepth-1.dat" u 1:2:3:4 w yerrorlines lw 2 t "release the outermost", \
     "$TMP/gdepth-2.dat" u 1:2:3:4 w yerrorlines lw 2 t "release each, innermost first", \
     "$TMP/gdepth-3.dat" u 1:2:3:4 w yerrorlines t "release the outermost (open)", \
     "$TMP/gdepth-0.dat" u 1:2:3:4 w yerrorlines t "open + add + close", \
     "$TMP/gdepth-4.dat" u 1:2:3:4 w yerrorlines t "close each, innermost first", \
     "$TMP/gdepth-5.dat" u 1:2:3:4 w yerrorlines lw 2 t "close each, outermost first", \
     "$TMP/gdepth-6.dat" u 1:2:3:4 w yerrorlines t "remove each (open), innermost first", \
     "$TMP/gdepth-7.dat" u 1:2:3:4 w yerrorlines lw 2 t "remove each (open), outermost first", \
     $c1 * x w l dt 2 lw 1.5 lc rgb "dark-gray" t "slope 1 (linear)", \
     $c1 * x**2 w l dt 3 lw 1.5 lc rgb "dark-gray" t "slope 2 (quadratic)"
set logscale xy 2
set key inside top left
set xlabel "threads on 2 CPUs"
set ylabel "ns per op, one thread's view (median, min-max of 3 runs)"
set output "docs/perf-contention.png"
plot "$TMP/cont-0-0.dat" u 1:3:2:4 w yerrorlines lw 2 \
	t "libdevres, one device, unpinned", \
     "$TMP/cont-0-0.dat" u 1:6:5:7 w yerrorlines \
	t "by hand (shared list + mutex), unpinned", \
     "$TMP/cont-0-1.dat" u 1:3:2:4 w yerrorlines lw 2 dt 2 \
	t "libdevres, one device, pinned", \
     "$TMP/cont-0-1.dat" u 1:6:5:7 w yerrorlines dt 2 \
	t "by hand, pinned", \
     "$TMP/cont-1-0.dat" u 1:3:2:4 w yerrorlines lw 2 dt 3 \
	t "libdevres, one device per thread, unpinned", \
     "$TMP/cont-1-0.dat" u 1:6:5:7 w yerrorlines dt 3 \
	t "by hand, one list per thread, unpinned"
EOF

model=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
{
	sed -n '1,/^<!-- generated -->$/p' bench/PERFORMANCE.head.md
	echo
	echo "$N complete runs of \`make bench\`, one after the other, from" \
		"$(cat "$(echo "$RUNDIRS" | head -n 1)/date"), commit" \
		"$(cat "$R/commit"): $(nproc) CPUs ($model), $(uname -sr)," \
		"$(gcc --version | head -n 1). The machine is shared with" \
		"other builds: the load averages below are part of the result," \
		"and no figure here was measured on a quiet machine."
	echo
	echo "### The targets in each run"
	echo
	echo "bench-core: the median per-round ratio to \`malloc\` + \`free\`"
	echo "(its interquartile range) and bench-core's verdict;"
	echo "bench-contention: the range of the ratio to the hand-written"
	echo "baseline over its three runs of 500 ms, and of the slowest"
	echo "thread's share; bench-irq: the median latency ratio to the"
	echo "bare loop."
	echo
	cat "$TMP/targets.md"
	echo
	echo "The tables below are those of run $N."
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
	echo "### Groups against their size"
	echo
	echo "ns per group, median (IQR) of $ROUNDS interleaved rounds. A"
	echo "round of a case: N older resources, G groups of k resources"
	echo "each opened, filled and closed one after the other, N newer"
	echo "resources; the groups released one by one by id, oldest first;"
	echo "then the same again with \`devres_remove_group\`. Every resource"
	echo "is a \`devm_kmalloc\` of 64 B; G = 10 000 / k (10 000 empty"
	echo "groups; 10 groups at k = 1000 and 10 000). \"open + close\" is"
	echo "the build minus the same adds on a device without groups; at"
	echo "k >= 1000 it is inside the noise of the adds (\"noise\": the IQR"
	echo "reaches below 0). Release and remove are timed after the index"
	echo "(groups by id) is built; its one-time cost is the line under"
	echo "the table. A remove is O(1): what it gains at k >= 1000 is cache"
	echo "misses, as the groups' records lie 64 KB and more apart."
	echo
	cat "$TMP/gsize.md"
	echo
	echo "![group release against k](perf-groups-size.png)"
	echo
	echo "### Groups against their depth"
	echo
	echo "Nests of d groups with one resource (\`devm_kmalloc\`, 64 B) in"
	echo "each level, 4096 levels a batch (4096 / d nests), built untimed;"
	echo "the case's operations alone are timed (\"open + add + close\":"
	echo "the build). Open nests are taken newest nest first, so that"
	echo "the stack of open groups above the nest at hand is empty."
	echo "\"nest / (d x depth 1)\" is the per-round ratio of the batch at"
	echo "depth d to the batch at depth 1 (the same number of groups):"
	echo "1 when a nest of depth d costs d nests of depth 1, up to d when"
	echo "it costs d squared (in bold above 2 at d = 64)."
	echo
	cat "$TMP/gdepth.md"
	echo
	echo "![nest cost against depth](perf-groups-depth.png)"
	echo
	echo "### Bind/unbind cycles on the platform bus"
	echo
	echo "ns per cycle, median (IQR) of $ROUNDS interleaved rounds of 1000"
	echo "cycles. The driver's probe takes k resources: k/2"
	echo "\`devm_kmalloc(64)\` inside a group it opens and closes"
	echo "(\`devres_close_group(dev, NULL)\`), then k/2 \`devm_add_action\`;"
	echo "the resources go with the binding. \"register + unregister the"
	echo "device\": \`platform_device_register_simple\` (match, probe) +"
	echo "\`platform_device_unregister\` (unbind, release, free);"
	echo "\"device_release_driver + device_attach\": a device that stays"
	echo "registered; \"register + unregister the driver\": the driver binds"
	echo "the waiting device and unbinds it. By hand: \`calloc\` of an"
	echo "object the size of a platform device, k/2 \`malloc(64)\`, k/2"
	echo "clean-up records (a \`malloc\` each), the clean-ups called newest"
	echo "first, everything freed. The ratio is taken within each round;"
	echo "the last column is (cycle at k - cycle at 0) / k."
	echo
	cat "$TMP/bind.md"
	echo
	echo "### One device shared by threads (bench-contention)"
	echo
	echo "N threads each loop on \`devm_kmalloc(64)\`, a little work,"
	echo "\`devm_kfree()\`, on one device or on one device each, against"
	echo "the same done by hand: \`malloc\` of a node with a 16-byte"
	echo "header linked on one list under one \`pthread_mutex\`, the work,"
	echo "unlinked under the mutex, \`free\`. Wall-clock time over the"
	echo "operations of an average thread (what one thread sees of an"
	echo "operation while the others run); three runs of each case, and"
	echo "\"fair\": the slowest thread's operations over the average, the"
	echo "range of the three runs. Pinned: thread i on CPU i mod 2. The"
	echo "\"cpu share\" is the slowest thread's CPU time over the average"
	echo "thread's: low with \"fair\" low, the thread did not run; high,"
	echo "it ran and did not get the lock. Then what the slowest thread"
	echo "was short of, if below half; \"fair per CPU\" is the lowest"
	echo "operations a second of CPU a thread got over the whole"
	echo "process's: the lock's fairness apart from the scheduler's (the"
	echo "goal stays \"fair\"); the last column is the CPU an operation"
	echo "took, all threads' together, over the baseline's: the cost of"
	echo "the bookkeeping whatever share of the CPUs the process got."
	echo
	cat "$TMP/cont.md"
	echo
	echo "![ns per op against threads](perf-contention.png)"
	echo
	echo "### The same, the two sides alternated (bench-alternate)"
	echo
	echo "One device shared by the same N threads, which switch between"
	echo "the library and the hand-written baseline every 10 ms (in the"
	echo "order ABBA, so that each side comes first as often): a change in"
	echo "the machine's load falls on both sides within a slice of each"
	echo "other, where bench-contention's windows, one after the other,"
	echo "each get whatever load their half-second had. The same ns per"
	echo "op, the process's CPU an operation, \"fair\" of each side, the"
	echo "slowest thread's share of the CPU, and what a thread below half"
	echo "its share of the operations was short of: the lock (it had half"
	echo "its CPU share, or slept longer than it waited for a CPU) or a CPU."
	echo
	echo "Unpinned:"
	echo
	cat "$TMP/alt.md"
	echo
	echo "Pinned, thread i on CPU i mod 2:"
	echo
	cat "$TMP/alt-pinned.md"
	echo
	echo "### Interrupt latency and rate (bench-irq)"
	echo
	echo "From \`irq_line_raise()\` to the handler's first instruction,"
	echo "against a bare eventfd + epoll loop in the same process (the"
	echo "method is in \"Interrupts\", below; wall-clock time, as a wake-up"
	echo "is what is measured). Pinned to one CPU, as every benchmark here,"
	echo "then not pinned (see \"Interrupts\" for what the difference is)."
	echo
	echo '```'
	cat "$TMP/irq.txt"
	echo
	cat "$TMP/irq-unpinned.txt"
	echo
	cat "$TMP/irq-apart.txt"
	echo '```'
	echo
	sed -n '/^<!-- generated -->$/,$p' bench/PERFORMANCE.head.md | sed 1d
	echo
	sed 1,3d bench/PERFORMANCE.others.md
} >"$OUT"
echo "wrote $OUT, docs/perf-bulk.png, docs/perf-frees.png," \
	"docs/perf-groups-size.png, docs/perf-groups-depth.png," \
	"docs/perf-contention.png" >&2
