#!/bin/sh
# SPDX-License-Identifier: MIT
# In the VM only: two pci-testdev functions behind a conventional PCI
# bridge share one IOMMU group. With one bound to vfio-pci and the other
# to uio_pci_generic (a kernel driver that owns its DMA) the group is not
# viable: the scan must refuse the first and name the second.
# Usage: viable.sh EDU_PROGRAM
set -eu
edu=$1
[ -e /devres-vm ] || { echo "viable.sh: only in the test VM"; exit 77; }
set -- $(for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor):$(cat $d/device)" = "0x1b36:0x0005" ] && basename $d
done | sort)
[ $# = 2 ] || { echo "viable.sh: want 2 pci-testdev, found $#"; exit 1; }
a=$1 b=$2
bind() {
	echo "$2" >/sys/bus/pci/devices/$1/driver_override
	echo "$1" >/sys/bus/pci/drivers_probe
	echo "viable.sh: $1 bound to $(basename "$(readlink /sys/bus/pci/devices/$1/driver)")"
}
bind "$a" vfio-pci
bind "$b" uio_pci_generic
ga=$(basename "$(readlink /sys/bus/pci/devices/$a/iommu_group)")
gb=$(basename "$(readlink /sys/bus/pci/devices/$b/iommu_group)")
[ "$ga" = "$gb" ] || { echo "viable.sh: groups $ga and $gb differ"; exit 1; }
out=$("$edu" --scan "$a" 2>&1 || true)
echo "$out"
echo "$out" | grep -q "$b is bound to uio_pci_generic, not vfio-pci"
echo "$out" | grep -q "cannot be taken through VFIO: Device or resource busy"
# Once the offender lets go, the same device is taken.
echo "$b" >/sys/bus/pci/devices/$b/driver/unbind
out=$("$edu" --scan "$a" 2>&1)
echo "$out"
echo "$out" | grep -q "taken through VFIO"
echo "viable.sh: group $ga refused while $b had a kernel driver, taken once it had none"
