// SPDX-License-Identifier: MIT
/*
 * A child of vfork() runs on its parent's thread: the same memory, the
 * same stack, the same thread-local storage, and no fork handler. Every
 * lock, list and record of the library there is the parent's, in use by
 * the parent's other threads; a call that took a lock or the heap could
 * wait for ever or leave the parent's state half changed.
 *
 * So the library defines vfork(): it marks the calling thread, then goes
 * on to libc's, by a jump, so that the child returns from libc's straight
 * to the caller (a frame of a wrapper would be the child's to return
 * from, then the parent's). The mark is thread-local: in the child it is
 * the parent's thread's, which the child shares; the parent's other
 * threads never see it. A call that takes a device, and every log line
 * and WARN, load it; when it is set, one getpid() tells the child (a
 * process id that is not the one recorded, with no fork handler run)
 * from the parent back from its vfork() (the same id: the mark is
 * cleared, once). The calls' fast path loads a count of the marked
 * threads, not the mark: the library's own data, not thread-local
 * storage, whose look-up in a shared library is a call. The child's
 * call is refused before any lock or allocation, with a WARN written by
 * one writev() to stderr's descriptor; it is not counted, the counter
 * being the parent's.
 */
#include <unistd.h>
#include "subsys.h"

TLS_FAST bool devres__vforked;
unsigned int devres__vfork_armed;

/* Called by vfork() below, on the parent's thread, before the call. */
HIDDEN void devres__vfork_mark(void);

void devres__vfork_mark(void)
{
	if (devres__vforked)
		return;
	devres__vforked = true;
	__atomic_add_fetch(&devres__vfork_armed, 1, __ATOMIC_RELAXED);
}

/*
 * Another thread's mark: not a child of this one's vfork(). A thread that
 * made a vfork() and never calls the library again leaves the count up:
 * every call then asks this thread's mark, a few nanoseconds more.
 */
bool devres__vfork_child(void)
{
	if (!devres__vforked)
		return false;
	if (getpid() != devres__pid_now())
		return true;
	devres__vforked = false;
	__atomic_sub_fetch(&devres__vfork_armed, 1, __ATOMIC_RELAXED);
	return false;
}

bool devres__vfork_refused(const struct device *dev, const char *func)
{
	char line[320], buf[40];

	if (!devres__vfork_child())
		return false;
	if (devres__secure() && !devres__logging())
		return true;
	snprintf(line, sizeof(line),
		 "WARNING: %s: %s: called in a child of vfork(), which shares "
		 "the parent's memory: refused, nothing touched",
		 devres__dev_label(dev, buf, sizeof(buf)), func);
	devres__log_raw(line);
	return true;
}

/*
 * Where the target has it: x86-64 and AArch64. The mark is set by a call
 * made before the jump, whose frame is gone when libc's vfork() runs.
 * Elsewhere vfork() is libc's alone and a child's call is not told.
 */
#if defined(__x86_64__)
#ifdef __CET__
#define DEVRES_VFORK_LANDING "endbr64\n\t"
#else
#define DEVRES_VFORK_LANDING ""
#endif
__asm__(".text\n\t"
	".globl vfork\n\t"
	".type vfork, @function\n"
	"vfork:\n\t" DEVRES_VFORK_LANDING "subq $8, %rsp\n\t"
	"call devres__vfork_mark\n\t"
	"addq $8, %rsp\n\t"
	"jmp __vfork@PLT\n\t"
	".size vfork, .-vfork\n\t");
#elif defined(__aarch64__)
#ifdef __ARM_FEATURE_BTI_DEFAULT
#define DEVRES_VFORK_LANDING "bti c\n\t"
#else
#define DEVRES_VFORK_LANDING ""
#endif
__asm__(".text\n\t"
	".globl vfork\n\t"
	".type vfork, %function\n"
	"vfork:\n\t" DEVRES_VFORK_LANDING "stp x29, x30, [sp, #-16]!\n\t"
	"mov x29, sp\n\t"
	"bl devres__vfork_mark\n\t"
	"ldp x29, x30, [sp], #16\n\t"
	"b __vfork\n\t"
	".size vfork, .-vfork\n\t");
#endif
