#!/bin/sh
# SPDX-License-Identifier: MIT
# The userspace NVMe driver (examples/nvme) against the guest kernel's
# nvme driver, side by side in the same VM run (tests/vm/run.sh): random
# 4 KiB writes, each read back and checked, at queue depth 1 (completion
# by interrupt, and by polling) and 32, on
# the same emulated controller. Three VM runs; prints a Markdown table of
# IOPS and p50 latency per run and the ratio userspace : kernel, with the
# host's load before each run. Under TCG both sides are slowed by the
# emulation: the ratio is the figure, not the IOPS.
# Usage: bench/nvme-vm.sh [BUILD_DIR [IOS [RUNS]]]   (default build/dev 5000 3)
set -eu
build=${1:-build/dev}
ios=${2:-5000}
runs=${3:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
res=$build/vm/results.txt

field() { # field LINE-PREFIX WORD-AFTER: the number before WORD in the line
	grep "^$1" "$res" | head -n 1 | sed -n "s/.* \([0-9.]*\) $2.*/\1/p"
}
p50() {
	grep "^$1" "$res" | head -n 1 | sed -n 's/.*latency p50 \([0-9]*\) us.*/\1/p'
}

echo "| run | load before | qd | userspace IOPS | kernel IOPS | userspace : kernel | p50 userspace | p50 kernel |"
echo "|---|---|---|---|---|---|---|---|"
# One table row: RUN LOAD LABEL USERSPACE_LINE KERNEL_QD.
row() {
	u=$(field "$4" IOPS)
	k=$(field "kernel nvme: random 4 KiB, qd $5 x 1" IOPS)
	lu=$(p50 "$4")
	lk=$(p50 "kernel nvme: random 4 KiB, qd $5 x 1")
	ratio=$(awk -v u="$u" -v k="$k" 'BEGIN { printf "%.2f", u / k }')
	echo "| $1 | $2 | $3 | $u | $k | $ratio | $lu us | $lk us |"
}

for r in $(seq 1 "$runs"); do
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	VM_ONLY="nvme nvme-poll1 nvme-qd32 nvme-final nvme-kernel" VM_NVME_IOS=$ios \
		sh "$src/tests/vm/run.sh" "$build" >"$build/vm/bench-$r.log" 2>&1 ||
		{ echo "run $r failed: $build/vm/bench-$r.log" >&2; exit 1; }
	row "$r" "$load" 1 "nvme userspace: random 4 KiB, qd 1 x 1" 1
	row "$r" "$load" 32 "nvme userspace: random 4 KiB, qd 32 x 1" 32
	row "$r" "$load" "1, polled" "nvme userspace polled: random 4 KiB, qd 1 x 1" 1
done
