#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""After the VM: the NVMe image's blocks [8192, 16384), which only the
kernel's side of the load writes, each through /dev/nvme0n1 at its own
block, must each be zero or start with the load's tag of that block
(examples/nvme/load.c: MAGIC ^ lba). The userspace driver writes blocks
[0, 8192) only (checked in the VM through the kernel's driver): any of its
data here, or anything else, is a write that landed where it should not.
Usage: nvme-image.py IMAGE"""
import struct
import sys

MAGIC = 0x4E564D65424C4B00
BLOCK = 4096

bad = []
with open(sys.argv[1], "rb") as f:
    f.seek(8192 * BLOCK)
    for lba in range(8192, 16384):
        b = f.read(BLOCK)
        if len(b) != BLOCK:
            bad.append((lba, "short"))
            break
        if not any(b):
            continue
        if struct.unpack_from("<Q", b)[0] != MAGIC ^ lba:
            bad.append((lba, b[:8].hex()))
if bad:
    print(f"nvme image: FAIL: {len(bad)} blocks past 8191 hold data that is "
          f"not their own, first {bad[:4]}")
    sys.exit(1)
print("nvme image: blocks 8192-16383 hold zeros or their own data")
