/* SPDX-License-Identifier: MIT */
/*
 * Basic types and pointer-error helpers shared by every libdevres header.
 *
 * These are the kernel's names, so that driver code moves between the kernel
 * and userspace with little change.
 */
#ifndef DEVRES_TYPES_H
#define DEVRES_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Export marker for the public API; everything else is hidden. */
#if defined(__GNUC__) && defined(DEVRES_BUILDING)
#define DEVRES_API __attribute__((visibility("default")))
#else
#define DEVRES_API
#endif

#if defined(__GNUC__)
#define DEVRES_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define DEVRES_PRINTF(fmt, args)
#endif

/*
 * For a pointer argument whose memory the call never reads or writes (only
 * its address matters): uninitialized memory may be passed without
 * GCC's -Wmaybe-uninitialized.
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define DEVRES_ADDRESS_ONLY(arg) __attribute__((access(none, arg)))
#else
#define DEVRES_ADDRESS_ONLY(arg)
#endif

/* The kernel's __must_check: a result that is an error must be looked at. */
#if defined(__GNUC__)
#define DEVRES_MUST_CHECK __attribute__((warn_unused_result))
#else
#define DEVRES_MUST_CHECK
#endif

/* A branch taken only on a misuse: the compiler lays it out of the way. */
#if defined(__GNUC__)
#define DEVRES_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define DEVRES_UNLIKELY(x) (x)
#endif

/* Allocation flags. Only __GFP_ZERO changes behaviour in userspace. */
typedef unsigned int gfp_t;
#define __GFP_ZERO 0x100u
#define GFP_KERNEL 0x0cc0u
#define GFP_ATOMIC 0x0820u

typedef uint64_t resource_size_t;
typedef uint64_t dma_addr_t;
typedef uint64_t phys_addr_t;

/* Address-space annotation for register windows; empty in userspace. */
#define __iomem

/* The last 4095 addresses encode negative errno values. */
#define MAX_ERRNO 4095

static inline void *ERR_PTR(long error)
{
	return (void *)(intptr_t)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)(intptr_t)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return (uintptr_t)ptr >= (uintptr_t)-MAX_ERRNO;
}

static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return !ptr || IS_ERR(ptr);
}

/*
 * Whether @p cannot point at an object: NULL, the first page (a small
 * integer cast, a member of a NULL struct) or the last 4095 bytes (an
 * ERR_PTR()). One subtraction and one compare: what the headers' inline
 * functions that take an object pay before they use it; the WARN is out
 * of line (devres_warn_bad_arg()).
 */
static inline bool devres_ptr_bad(const void *p)
{
	return DEVRES_UNLIKELY((uintptr_t)p - 4096u >=
			       (uintptr_t)0 - 4096u - MAX_ERRNO);
}

/**
 * devres_warn_bad_arg() - report a bad object pointer given to an inline call
 * @func: the inline function that was called
 * @what: what the argument is ("device", "resource")
 * @p: the argument: NULL, a small integer or an ERR_PTR()
 *
 * The cold half of the headers' inline functions that take an object:
 * they test their argument with devres_ptr_bad() (one compare) and, when
 * it is bad, call this and return what they would for nothing (NULL, 0,
 * false, ""). One WARN, "(no device): <func>: NULL <what>", counted by
 * devres_warn_count(). A bad @func or @what is named "(bad name)".
 *
 * Context: any thread.
 */
DEVRES_API void devres_warn_bad_arg(const char *func, const char *what,
				    const void *p);

/* What a zero-byte allocation returns: not NULL, never dereferenceable. */
#define ZERO_SIZE_PTR ((void *)16)
#define ZERO_OR_NULL_PTR(x) ((uintptr_t)(x) <= (uintptr_t)ZERO_SIZE_PTR)

#if defined(__GNUC__) && !defined(__cplusplus)
#define container_of(ptr, type, member)                                        \
	((type *)(((char *)(__typeof__(((type *)0)->member) *)(ptr)) -         \
		  offsetof(type, member)))
#else
#define container_of(ptr, type, member)                                        \
	((type *)(((char *)(ptr)) - offsetof(type, member)))
#endif

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_TYPES_H */
