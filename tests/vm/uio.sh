#!/bin/sh
# SPDX-License-Identifier: MIT
# In the VM only: the first edu moves from vfio-pci to uio_pci_generic and
# the edu driver binds it through UIO three times: INTx with DMA refused;
# physical DMA addresses under the translating IOMMU (no round trip may
# land); and physical addresses with the device's IOMMU group in
# passthrough (every round trip right). The device goes back to vfio-pci.
# Usage: uio.sh EDU_PROGRAM
set -u
edu=$1
[ -e /devres-vm ] || { echo "uio.sh: only in the test VM"; exit 77; }
dev=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat $d/vendor):$(cat $d/device)" = "0x1234:0x11e8" ]; then
		dev=$d
		break
	fi
done
[ -n "$dev" ] || { echo "uio.sh: no edu device"; exit 1; }
a=$(basename $dev)
g=/sys/kernel/iommu_groups/$(basename "$(readlink $dev/iommu_group)")
type0=$(cat $g/type)
status=0

# Binds $a to driver $1 with its group's domain of type $2.
bind() {
	[ -e $dev/driver ] && echo $a >$dev/driver/unbind
	if [ "$(cat $g/type)" != "$2" ] && ! echo "$2" >$g/type; then
		echo "uio.sh: group $(basename $g) cannot be made $2"
		return 1
	fi
	echo "$1" >$dev/driver_override
	echo $a >/sys/bus/pci/drivers_probe
	echo "uio.sh: $a bound to $(basename "$(readlink $dev/driver)"), IOMMU domain $(cat $g/type)"
	[ "$(basename "$(readlink $dev/driver)")" = "$1" ]
}

run() {
	echo "uio.sh: edu $*"
	"$edu" "$@" || status=1
}

if bind uio_pci_generic "$type0"; then
	run --uio --factorials 200
	run --uio-phys-blocked --factorials 10 --dma 3
else
	status=1
fi
if bind uio_pci_generic identity; then
	run --uio-phys --factorials 10 --dma 10
else
	status=1
fi
bind vfio-pci "$type0" || status=1
echo >$dev/driver_override
exit $status
