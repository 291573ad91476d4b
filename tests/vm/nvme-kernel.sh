#!/bin/sh
# SPDX-License-Identifier: MIT
# In the VM only, after the userspace driver's tests: hands QEMU's NVMe
# controller from vfio-pci to the guest kernel's nvme driver, checks
# through it that blocks [0, 8192) hold exactly the final pattern the
# userspace driver wrote (nothing lost, nothing stray), then runs the
# same load through /dev/nvme0n1 with O_DIRECT at queue depth 1 and 32
# on blocks [8192, 16384), for the side-by-side ratio.
# Usage: nvme-kernel.sh NVME_PROGRAM IOS
set -eu
prog=$1
ios=$2
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
"$prog" --kernel /dev/nvme0n1 --first 8192 --blocks 8192 --qd 1 --ios "$ios"
"$prog" --kernel /dev/nvme0n1 --first 8192 --blocks 8192 --qd 32 --ios "$ios"
