# SPDX-License-Identifier: MIT
# Sourced by run.sh: QEMU's NVMe controller for the VM. A raw image file
# of 64 MiB, zeroed at every boot, behind `-device nvme`, and the guest
# kernel's own nvme driver (with the modules it needs, in the order
# `modprobe --show-depends nvme` gives, plus the generic CRC algorithms
# that crc-t10dif and crc64-rocksoft look up) kept aside in
# /modules/nvme/: /init binds the controller to vfio-pci, and only
# nvme-kernel.sh loads the kernel's driver, for the side-by-side run.
# Environment: VM_NVME_IOS (I/Os per load test, default 5000);
# VM_NVME_KERNEL_S (seconds of load per depth that nvme-kernel fits its
# I/Os in, at most VM_NVME_IOS of them; default 20).
nvme_img=$out/nvme.img
nvme_ios=${VM_NVME_IOS:-5000}
nvme_kernel_s=${VM_NVME_KERNEL_S:-20}
rm -f "$nvme_img"
truncate -s 64M "$nvme_img"
nvme_args="-drive file=$nvme_img,if=none,id=d0,format=raw,cache=writeback \
-device nvme,drive=d0,serial=devres-nvme0"

nvme_modules() {
	mkdir -p "$root/modules/nvme"
	: >"$root/modules/nvme/order"
	for m in crct10dif_common crct10dif_generic crc-t10dif crc64 \
		crc64_rocksoft_generic crc64-rocksoft t10-pi nvme-core nvme; do
		f=$(find "$mods" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -n 1)
		[ -n "$f" ] || continue
		case $f in
		*.xz) xz -dc "$f" >"$root/modules/nvme/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$root/modules/nvme/$m.ko" ;;
		*) cp "$f" "$root/modules/nvme/$m.ko" ;;
		esac
		echo "$m" >>"$root/modules/nvme/order"
	done
	cp "$src/tests/vm/nvme-kernel.sh" "$root/tests/"
}

# The NVMe tests, in the format of run.sh's list. nvme-final writes the
# pattern that nvme-kernel then reads through the kernel's driver.
nvme_tests() {
	n=$nvme_ios
	cat <<LIST
nvme examples/nvme/nvme --qd 1 --ios $n
nvme-poll1 examples/nvme/nvme --poll --qd 1 --ios $n
nvme-qd32 examples/nvme/nvme --qd 32 --ios $n
nvme-queues examples/nvme/nvme --qd 8 --ios $n --queues 4 --threads 4
nvme-poll examples/nvme/nvme --poll --qd 8 --reads 50 --ios $((n / 2))
nvme-seq examples/nvme/nvme --seq --qd 4 --ios $((n / 2))
nvme-prp examples/nvme/nvme --prp
nvme-sweep examples/nvme/nvme --sweep
nvme-unbind examples/nvme/nvme --unbind --qd 16 --queues 2 --threads 2
nvme-timeout examples/nvme/nvme --timeout
nvme-final examples/nvme/nvme --final 8192
nvme-kernel /bin/sh /tests/nvme-kernel.sh BUILD/examples/nvme/nvme $n $nvme_kernel_s
LIST
}
