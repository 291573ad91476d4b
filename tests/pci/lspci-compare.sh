#!/bin/sh
# SPDX-License-Identifier: MIT
# lspci-lite agrees with `lspci -n` on this machine's real PCI devices
# (read-only). Skips (77) without pciutils or without /sys/bus/pci.
# Usage: lspci-compare.sh LSPCI_LITE
set -eu
lite=$1
command -v lspci >/dev/null 2>&1 || { echo "lspci not installed: skipped"; exit 77; }
[ -d /sys/bus/pci/devices ] || { echo "no /sys/bus/pci: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lspci -n >"$tmp/lspci"
env -u DEVRES_SYSFS_ROOT "$lite" >"$tmp/lite"
[ -s "$tmp/lspci" ] || { echo "lspci lists nothing: skipped"; exit 77; }
diff -u "$tmp/lspci" "$tmp/lite"
"$lite" -v >"$tmp/lite-v"
echo "lspci-lite agrees with lspci -n on $(wc -l <"$tmp/lite") devices"
