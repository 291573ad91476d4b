#!/bin/sh
# SPDX-License-Identifier: MIT
# Boots a Debian kernel under QEMU with an IOMMU, two of QEMU's `edu`
# PCI devices and two pci-testdev sharing an IOMMU group behind a PCI
# bridge, and QEMU's NVMe controller (tests/vm/nvme.sh), binds the edus
# and the controller to vfio-pci, and runs the VFIO tests inside: the
# only place where the library opens /dev/vfio. Each test's result comes
# back on the VM's second serial port, apart from the kernel's console.
# Usage: run.sh BUILD_DIR   (a dev build: build/dev)
# Environment: VM_TIMEOUT (seconds of QEMU's CPU time for one boot, default
# 240; four times as many of wall time at most), VM_KEEP=1 keeps the
# initramfs tree, VM_ONLY="NAME ..." runs those tests; VM_NVME_IOS (nvme.sh).
set -eu
build=${1:?usage: run.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$build" && pwd)
out=$build/vm
timeout_s=${VM_TIMEOUT:-240}
start=$(date +%s)
mkdir -p "$out"

die() {
	echo "vm: $*" >&2
	exit 1
}

# The tests, one per line: a name, then the program (relative to the build
# directory) and its arguments.
tests() {
	# edu-quiesce first: the kernel rate-limits its IOMMU fault messages,
	# and that test reads them.
	cat <<'LIST'
edu-quiesce examples/edu/edu --quiesce
edu examples/edu/edu --factorials 1000 --dma 20
edu-sweep examples/edu/edu --sweep
edu-two examples/edu/edu --two
edu-intx examples/edu/edu --intx --factorials 200 --dma 5
edu-memlock examples/edu/edu --memlock
edu-crash examples/edu/edu --crash
vfio-states tests/vfio-states
vfio-reset tests/vfio-states --reset
lspci-lite /bin/sh /tests/lspci-compare.sh BUILD/examples/lspci-lite
viable /bin/sh /tests/viable.sh BUILD/examples/edu/edu
uio /bin/sh /tests/uio.sh BUILD/examples/edu/edu
LIST
	nvme_tests
}

command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 not found: apt-get install -y qemu-system-x86 (make deps-vm as root)"
command -v cpio >/dev/null || die "cpio not found: apt-get install -y cpio"
busybox=
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] || die "no static busybox: apt-get install -y busybox-static"

# The kernel of linux-image-amd64 with its VFIO modules: the newest
# /boot/vmlinuz-V that has /lib/modules/V/kernel/drivers/vfio. The running
# kernel does not matter: it is never used.
kver=
for k in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V); do
	[ -d "/lib/modules/$k/kernel/drivers/vfio" ] && kver=$k
done
[ -n "$kver" ] || die "no kernel with VFIO modules in /boot: apt-get install -y linux-image-amd64"
mods=/lib/modules/$kver/kernel

# The uncompressed ELF kernel boots by PVH in seconds where QEMU would
# spend several under TCG decompressing the bzImage: extract it once.
kernel=/boot/vmlinuz-$kver
vmlinux=$out/vmlinux-$kver
if [ ! -s "$vmlinux" ]; then
	off=$(LC_ALL=C grep -aboP '\xFD7zXZ\x00' "$kernel" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
	if [ -n "$off" ]; then
		tail -c +$((off + 1)) "$kernel" | xz -dc >"$vmlinux.tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			mv "$vmlinux.tmp" "$vmlinux"
		fi
		rm -f "$vmlinux.tmp"
	fi
fi
[ -s "$vmlinux" ] && kernel=$vmlinux

# The initramfs: busybox, the modules, the programs and their libraries.
root=$out/root
rm -rf "$root"
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" \
	"$root/modules" "$root/etc"
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
for m in irqbypass vfio vfio_iommu_type1 vfio_virqfd vfio-pci-core vfio-pci uio uio_pci_generic; do
	f=$(find "$mods" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -n 1)
	[ -n "$f" ] || continue # built in, or merged into another module
	case $f in
	*.xz) xz -dc "$f" >"$root/modules/$m.ko" ;;
	*.zst) zstd -qdc "$f" >"$root/modules/$m.ko" ;;
	*) cp "$f" "$root/modules/$m.ko" ;;
	esac
	echo "$m" >>"$root/modules/order"
done
copy_with_libs() {
	mkdir -p "$root$(dirname "$1")"
	cp -L "$1" "$root$1"
	ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
		while read -r lib; do
			[ -e "$root$lib" ] && continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
}
: >"$root/etc/tests"
# lspci-lite against pciutils' lspci -n, over the guest's real /sys.
mkdir -p "$root/tests"
cp "$src/tests/pci/lspci-compare.sh" "$src/tests/vm/viable.sh" "$root/tests/"
cp "$src/tests/vm/uio.sh" "$root/tests/"
lspci=$(command -v lspci || true)
[ -n "$lspci" ] && copy_with_libs "$lspci" && ln -sf "$lspci" "$root/bin/lspci"
. "$src/tests/vm/nvme.sh"
nvme_modules
tests | while read -r name prog args; do
	# VM_ONLY: one name, or several separated by spaces.
	case " ${VM_ONLY:-$name} " in *" $name "*) ;; *) continue ;; esac
	args=$(echo "$args" | sed "s|BUILD/|$build/|g")
	case $prog in
	/*) # a program of the VM itself; its arguments name what to copy
		for a in $args; do
			case $a in "$build"/*) copy_with_libs "$a" ;; esac
		done
		echo "$name $prog $args" >>"$root/etc/tests"
		continue
		;;
	esac
	[ -x "$build/$prog" ] || die "$build/$prog not built"
	copy_with_libs "$build/$prog"
	echo "$name $build/$prog $args" >>"$root/etc/tests"
done
[ -s "$root/etc/tests" ] || die "no test to run"
cp "$root/etc/tests" "$out/tests"
# Tests that open /dev/vfio refuse to run anywhere this file is missing.
echo "libdevres test VM" >"$root/devres-vm"
cp "$src/tests/vm/init" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$out/initrd.cpio"
[ -n "${VM_KEEP:-}" ] || rm -rf "$root"
prep=$(($(date +%s) - start))

echo "vm: kernel $kver ($(basename "$kernel")), initramfs $(($(wc -c <"$out/initrd.cpio") / 1024)) KiB, ready in ${prep} s"
# no_timer_check: under a loaded host the kernel's check of the timer
# through the remapped IO-APIC can time out under TCG and panic at boot.
# The limit is on QEMU's CPU time (RLIMIT_CPU: SIGXCPU), the boot's work,
# which a loaded host does not stretch as it stretches the wall time; a
# guest that waits for ever costs little CPU, so the wall time is limited
# too, to four times as much.
boot() {
	rm -f "$out/console.log" "$out/results.log"
	rc=0
	(ulimit -St "$timeout_s" && exec timeout "$((timeout_s * 4))" \
	qemu-system-x86_64 -machine q35 -accel tcg -m 512 -smp 1 \
		-nodefaults -display none -no-reboot \
		-kernel "$kernel" -initrd "$out/initrd.cpio" \
		-append "console=ttyS0 intel_iommu=on quiet panic=-1 no_timer_check" \
		-device intel-iommu,intremap=on -device edu -device edu \
		-device pci-bridge,id=br1,chassis_nr=1 \
		-device pci-testdev,bus=br1,addr=1 -device pci-testdev,bus=br1,addr=2 \
		$nvme_args \
		-chardev file,id=con,path="$out/console.log" -serial chardev:con \
		-chardev file,id=out,path="$out/results.log" -serial chardev:out \
		2>"$out/qemu.log") ||
		rc=$?
}
boot
# A kernel that died before /init wrote a line is booted once more.
if ! grep -q vm- "$out/results.log" 2>/dev/null; then
	echo "vm: the kernel did not reach /init (exit $rc); booting again"
	cp "$out/console.log" "$out/console-1.log" 2>/dev/null || true
	boot
fi
[ "$rc" = 124 ] && echo "vm: QEMU did not finish in $((timeout_s * 4)) s"
[ "$rc" = $((128 + 24)) ] && echo "vm: QEMU used its $timeout_s s of CPU time"

# The report: every line the tests wrote, then one line per test.
touch "$out/results.log"
tr -d '\r' <"$out/results.log" >"$out/results.txt"
sed 's/^/  | /' "$out/results.txt"
pass=$(grep -c '^vm-test: PASS ' "$out/results.txt" || true)
fail=$(grep -c '^vm-test: FAIL ' "$out/results.txt" || true)
skip=$(grep -c '^vm-test: SKIP ' "$out/results.txt" || true)
want=$(grep -c . "$out/tests")
grep -E '^vm-test: (PASS|FAIL|SKIP) ' "$out/results.txt" | sed 's/^vm-test: /vm /' || true
total=$(($(date +%s) - start))
# No stray DMA: the userspace driver writes blocks 0-8191 only (the
# guest kernel's driver read them back in nvme-kernel); the upper half
# holds zeros or the kernel side's own blocks, each tagged with its LBA.
if grep -q '^vm-test: PASS nvme-final ' "$out/results.txt"; then
	if ! python3 "$src/tests/vm/nvme-image.py" "$nvme_img" >"$out/image.txt"; then
		fail=$((fail + 1))
	fi
	sed 's/^/vm: /' "$out/image.txt"
fi
echo "vm: $pass of $want tests passed, $fail failed, $skip skipped ($total s; console: $out/console.log)"
# A skipped test proved nothing: the stage passes only when all passed.
if [ "$pass" != "$want" ] || [ "$fail" != 0 ] || ! grep -q '^vm-test: END' "$out/results.txt"; then
	echo "vm: the last lines of the kernel's console:"
	tail -n 30 "$out/console.log" 2>/dev/null | tr -d '\r' | sed 's/^/  > /'
	echo "vm: QEMU's messages:"
	tail -n 10 "$out/qemu.log" | sed 's/^/  > /'
	exit 1
fi
