#!/bin/sh
# SPDX-License-Identifier: MIT
# In the VM only, after the userspace driver's tests: hands QEMU's NVMe
# controller from vfio-pci to the guest kernel's nvme driver, checks
# through it that blocks [0, 8192) hold exactly the final pattern the
# userspace driver wrote (nothing lost, nothing stray), then runs the
# same load through /dev/nvme0n1 with O_DIRECT at queue depth 1 and 32
# on blocks [8192, 16384), for the side-by-side ratio.
# Usage: nvme-kernel.sh NVME_PROGRAM IOS [BUDGET_S]
set -eu
prog=$1
ios=$2
budget_s=${3:-20}
[ -e /devres-vm ] || { echo "nvme-kernel.sh: only in the test VM"; exit 77; }
dev=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor):$(cat $d/device)" = "0x1b36:0x0010" ] && dev=$(basename $d)
done
[ -n "$dev" ] || { echo "nvme-kernel.sh: no NVMe controller"; exit 1; }
echo "$dev" >/sys/bus/pci/devices/$dev/driver/unbind
echo nvme >/sys/bus/pci/devices/$dev/driver_override
while read -r m; do
	insmod /modules/nvme/$m.ko 2>/dev/null || echo "nvme-kernel.sh: insmod $m failed"
done </modules/nvme/order
echo "$dev" >/sys/bus/pci/drivers_probe 2>/dev/null || true
n=0
while [ ! -b /dev/nvme0n1 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -b /dev/nvme0n1 ] || { echo "nvme-kernel.sh: no /dev/nvme0n1"; exit 1; }
echo "nvme-kernel.sh: $dev bound to $(basename "$(readlink /sys/bus/pci/devices/$dev/driver)")"
"$prog" --check-dev /dev/nvme0n1 --blocks 8192
# The load at each depth: first a probe of 8 I/Os a slot (4 writes, each
# read back), 64 at least (the first few after the bind are slow); then as
# many as the probe's rate fits in BUDGET_S seconds, at most IOS and at
# least the probe's. Every I/O is checked in both. Under TCG the guest
# runs at whatever share of a CPU the host gives QEMU: on a loaded host
# qd 32 fell to 9 IOPS, where 5000 I/Os would have taken nine minutes.
load() {
	qd=$1
	probe=$((qd * 8))
	[ "$probe" -ge 64 ] || probe=64
	r=$("$prog" --kernel /dev/nvme0n1 --first 8192 --blocks 8192 --qd "$qd" --ios "$probe")
	echo "$r"
	rate=$(echo "$r" | sed -n 's/.* s: \([0-9][0-9]*\) IOPS;.*/\1/p')
	[ -n "$rate" ] || { echo "nvme-kernel.sh: no IOPS in the probe's report"; exit 1; }
	n=$((rate * budget_s))
	[ "$n" -le "$ios" ] || n=$ios
	[ "$n" -ge "$probe" ] || n=$probe
	[ "$n" = "$ios" ] || echo "nvme-kernel.sh: qd $qd: $n I/Os of $ios, $rate IOPS in the probe"
	"$prog" --kernel /dev/nvme0n1 --first 8192 --blocks 8192 --qd "$qd" --ios "$n"
}
load 1
load 32
