/* SPDX-License-Identifier: MIT */
/*
 * The kernel's fixed-width and endian-annotated types, for drivers built
 * against libdevres (docs/kcompat.md).
 */
#ifndef KCOMPAT_LINUX_TYPES_H
#define KCOMPAT_LINUX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <devres/types.h>
/*
 * The system's <linux/types.h> (__u32, __le32...), which C library headers
 * include by this name too, then the kernel's own names over it.
 */
#include_next <linux/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned long ulong;
typedef unsigned int uint;
typedef unsigned long kernel_ulong_t;
typedef unsigned short umode_t;

#endif /* KCOMPAT_LINUX_TYPES_H */
