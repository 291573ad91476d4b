/* SPDX-License-Identifier: MIT */
/*
 * Interrupts: lines backed by an eventfd (as VFIO signals them) or a UIO
 * fd, a dispatcher thread that calls their handlers, and request_irq() and
 * its managed forms with the kernel's semantics.
 *
 * A line is what a simulated device (irq_line_raise()) or a real one (an
 * attached fd) asserts. Handlers run in the library's dispatcher thread (the
 * "hard" interrupt context) or, for threaded handlers, in one thread per
 * handler. The dispatcher starts with the first request and is stopped, and
 * joined, when the last handler is freed. See docs/irq.md.
 */
#ifndef DEVRES_IRQ_H
#define DEVRES_IRQ_H

#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;

/**
 * enum irqreturn - what a handler did
 * @IRQ_NONE: the interrupt was not from this handler's device
 * @IRQ_HANDLED: the interrupt was handled
 * @IRQ_WAKE_THREAD: wake the handler's thread function
 */
enum irqreturn {
	IRQ_NONE = 0,
	IRQ_HANDLED = 1 << 0,
	IRQ_WAKE_THREAD = 1 << 1,
};

typedef enum irqreturn irqreturn_t;

/**
 * typedef irq_handler_t - an interrupt handler or thread function
 * @irq: the line's number
 * @dev_id: the cookie given to request_irq()
 */
typedef irqreturn_t (*irq_handler_t)(int irq, void *dev_id);

/* Request flags, with the kernel's values. */
#define IRQF_SHARED 0x00000080ul
#define IRQF_ONESHOT 0x00002000ul
#define IRQF_NO_AUTOEN 0x00080000ul

/* What devm_request_any_context_irq() returns on success. */
enum {
	IRQC_IS_HARDIRQ = 0,
	IRQC_IS_NESTED,
};

/**
 * irq_line_create() - make a new interrupt line backed by an eventfd
 * @name: a name for messages (copied), or NULL
 *
 * The line is what a simulated device asserts with irq_line_raise(). Its
 * number goes into a device's IORESOURCE_IRQ resource, where
 * platform_get_irq() finds it. Numbers are not reused until the number
 * space wraps, so a stale number reads as a destroyed line.
 *
 * Context: any thread. The eventfd and the line's record are
 * fault-injection points; the eventfd counts as an fd in the ledger until
 * irq_line_destroy().
 * Return: the line's number (> 0); -ENOMEM, -EMFILE or another error of
 * eventfd(2); -ENOSPC when every number is in use.
 */
DEVRES_API int irq_line_create(const char *name);

/**
 * irq_line_attach_fd() - make an interrupt line of an existing fd
 * @fd: an eventfd (VFIO's interrupt eventfd) or a UIO fd (/dev/uioN)
 * @name: a name for messages (copied), or NULL
 *
 * The fd is duplicated (close-on-exec); the caller keeps its own. An
 * eventfd is read as an 8-byte count. Any other fd is driven as UIO: each
 * interrupt is a readable 4-byte count, and the line is re-enabled by
 * writing a 4-byte 1 once the interrupt has been handled (and the line is
 * not disabled or masked by a oneshot thread).
 *
 * Context: any thread. The duplication is a fault-injection point.
 * Return: the line's number (> 0); -EBADF for a negative or closed @fd;
 * -EMFILE; -ENOMEM; -ENOSPC when every number is in use.
 */
DEVRES_API int irq_line_attach_fd(int fd, const char *name);

/**
 * irq_line_attach_level() - make a level-triggered line of two eventfds
 * @fd: the eventfd the source signals at each interrupt (VFIO's INTx
 *      trigger eventfd)
 * @unmask_fd: an eventfd that unmasks the source when written (VFIO's
 *             INTx unmask eventfd)
 * @name: a name for messages (copied), or NULL
 *
 * For a source that masks itself at each interrupt, as VFIO does with
 * INTx: once the interrupt has been handled (and the line is neither
 * disabled nor masked by a oneshot thread), the line writes an 8-byte 1
 * to @unmask_fd, as the kernel's level-triggered flow unmasks after the
 * handlers. Both fds are duplicated (close-on-exec); the caller keeps
 * its own.
 *
 * Context: any thread. Each duplication is a fault-injection point.
 * Return: the line's number (> 0); -EBADF when @fd or @unmask_fd is not
 * an eventfd; -EMFILE; -ENOMEM; -ENOSPC when every number is in use.
 */
DEVRES_API int irq_line_attach_level(int fd, int unmask_fd, const char *name);

/**
 * typedef irq_unmask_t - unmask the source of a masked line
 * @ctx: what was given with it to irq_line_attach_masked()
 */
typedef void (*irq_unmask_t)(void *ctx);

/**
 * irq_line_attach_masked() - make a line of an fd whose source masks itself
 * @fd: an eventfd or a UIO fd, as for irq_line_attach_fd()
 * @unmask: unmasks the source (uio_pci_generic's INTx: clears the command
 *          register's INTx disable bit, which the kernel set)
 * @ctx: given to @unmask
 * @name: a name for messages (copied), or NULL
 *
 * irq_line_attach_fd(), for a source that masks itself at each interrupt
 * and is unmasked by something other than a write to @fd: once the
 * interrupt has been handled (and the line is neither disabled nor masked
 * by a oneshot thread), and when the first handler is requested, the line
 * calls @unmask, as the kernel's level-triggered flow unmasks after the
 * handlers. @unmask runs on the dispatcher's thread, on the thread that
 * requests the first handler, or on a oneshot handler's thread after its
 * thread function (its calls are then that function's), without the
 * line's lock: it may call the interrupt calls, also on its own line,
 * except irq_line_raise_wait() (refused with a WARN, -EDEADLK: it may be
 * on the thread that call would wait for). Waiting for the line (synchronize_irq(), disable_irq(),
 * free_irq(), irq_line_raise_wait()) waits for a running @unmask too. An
 * @unmask that ends its thread gets one WARN; the line goes on (the
 * dispatcher in a new thread).
 *
 * Context: any thread. The duplication of @fd is a fault-injection point.
 * Return: the line's number (> 0); -EINVAL when @unmask is NULL; -EBADF
 * for a negative or closed @fd; -EMFILE; -ENOMEM; -ENOSPC when every
 * number is in use.
 */
DEVRES_API int irq_line_attach_masked(int fd, irq_unmask_t unmask, void *ctx,
				      const char *name);

/**
 * irq_line_raise() - assert an interrupt line
 * @irq: a line's number
 *
 * What a simulated device does. Raises that arrive before the dispatcher
 * has taken the previous one coalesce into one handler call, as edges do.
 * A raise while the line is disabled (or masked by a oneshot thread) is
 * delivered once the line is enabled (unmasked) again. A raise on a line
 * with no handler is dropped when the first handler is requested.
 *
 * Context: any thread, also from a handler.
 * Return: 0; -EINVAL when @irq is not a line; -EOPNOTSUPP for a UIO line
 * (only its device raises it). The line's eventfd is not checked here (a
 * check would cost a system call, the raise's own cost again): after a raw
 * system call closed it behind the library's back and the number went to
 * another file, the raise writes its eight bytes there.
 * irq_line_raise_wait() checks.
 */
DEVRES_API int irq_line_raise(int irq);

/**
 * irq_line_raise_wait() - assert an interrupt line and wait until handled
 * @irq: a line's number
 *
 * irq_line_raise(), then waits until the dispatcher has taken this
 * assertion and its primary handlers have returned, and until no thread
 * function of the line is running or woken (so the ones this interrupt
 * woke have finished). What a handler wrote before it returned is then
 * visible to the caller without further synchronization: a test can read
 * a plain counter after it, and ThreadSanitizer agrees. An assertion that
 * cannot be delivered now (the line is disabled, or has no handler) is
 * left pending, as irq_line_raise() leaves it, and the call returns
 * without waiting. Once the dispatcher has taken this assertion, its
 * delivery is waited for even when it makes the line undeliverable (a
 * handler that disables its line with disable_irq_nosync() or releases
 * its own device goes on running): the call does not return while a
 * handler it raised still runs.
 *
 * Context: a thread that is not the line's dispatcher: not from a primary
 * handler (any line's) nor from a thread function of @irq (WARN,
 * -EDEADLK).
 * Return: 0 once handled; -EAGAIN when the line is disabled or has no
 * handler and this assertion is not being delivered, so that nothing
 * will handle it now; -EINVAL when @irq is not
 * a line; -EOPNOTSUPP for a UIO line; -EDEADLK from a handler that the
 * wait would wait for, or when a handler of the line (or the dispatcher)
 * waits, through the library's record of waits, for the caller (WARNed;
 * nothing raised); -EBADF (with one WARN, the first time)
 * when the line's eventfd was closed behind the library's back by a raw
 * system call: nothing is written to what the number holds by then.
 */
DEVRES_API int irq_line_raise_wait(int irq);

/**
 * irq_line_destroy() - remove an interrupt line
 * @irq: a line's number
 *
 * Closes the line's fd. A line with handlers attached is not removed, nor
 * is a line the library made for a PCI device's interrupt vectors
 * (pci_alloc_irq_vectors() on UIO or VFIO): that one is the device's
 * binding's, and goes with it. A call in progress on a line with no
 * handler does not keep it: its number is forgotten now and its fd closed
 * when that call returns; a request_irq() in progress then fails with
 * -EINVAL, as it would had the line been destroyed first.
 *
 * Context: any thread.
 * Return: 0; -EINVAL (with a WARN) when @irq is not a line; -EBUSY (with a
 * WARN) while handlers are attached; -EPERM (with a WARN) for a line of a
 * PCI device's vectors.
 */
DEVRES_API int irq_line_destroy(int irq);

/**
 * request_threaded_irq() - attach a handler to an interrupt line
 * @irq: the line's number
 * @handler: the primary handler, called in the dispatcher thread; it
 *           returns IRQ_WAKE_THREAD to run @thread_fn. NULL means a handler
 *           that only wakes the thread, and requires IRQF_ONESHOT
 * @thread_fn: run in a thread of its own when @handler asks, or NULL
 * @flags: IRQF_SHARED, IRQF_ONESHOT, IRQF_NO_AUTOEN
 * @name: who holds the line, for messages and thread names (not copied)
 * @dev_id: the cookie passed to the handlers, and the key of free_irq();
 *          required for a shared line
 *
 * Every handler of a shared line must request it with IRQF_SHARED and
 * agree on IRQF_ONESHOT. With IRQF_ONESHOT the line stays masked from the
 * primary handler until the thread function returns: interrupts in
 * between are delivered after. With IRQF_NO_AUTOEN (not on a shared line)
 * the line starts disabled (depth 1) until enable_irq(). The first
 * request starts the dispatcher thread; interrupts raised on the line
 * before the first request are dropped. A handler requested from a
 * handler of the same line is called from the line's next interrupt on,
 * not in the delivery that requested it.
 *
 * Context: any thread, also from a handler (of this line or another).
 * Allocation, the dispatcher's start (epoll, eventfd, thread) and the
 * handler's thread are fault-injection points. A handler counts in the
 * ledger's irq_handlers; the library's threads do not count as threads.
 * Return: 0; -EINVAL when @irq is not a line (no WARN: a driver may ask
 * for an optional interrupt), or with one WARN naming the call when both
 * handlers are NULL, @handler is NULL without IRQF_ONESHOT, a shared
 * request has no @dev_id, or IRQF_NO_AUTOEN is asked with IRQF_SHARED
 * (whatever the line: the arguments are checked first); -EBUSY when the
 * line is held by a handler the flags do not agree with (not a misuse:
 * one error line, "Flags mismatch irq <n>. <flags> (<name>) vs. <flags>
 * (<holder>)", as the kernel's, not counted as a WARN); -ENOMEM or
 * -EAGAIN when memory or a thread could not be had.
 */
DEVRES_API int request_threaded_irq(unsigned int irq, irq_handler_t handler,
				    irq_handler_t thread_fn,
				    unsigned long flags, const char *name,
				    void *dev_id) DEVRES_MUST_CHECK;

/**
 * request_irq() - attach a handler to an interrupt line
 * @irq: the line's number
 * @handler: the handler, called in the dispatcher thread
 * @flags: IRQF_SHARED, IRQF_ONESHOT, IRQF_NO_AUTOEN
 * @name: who holds the line (not copied)
 * @dev_id: the cookie passed to @handler; required for a shared line
 *
 * request_threaded_irq() with no thread function.
 *
 * Context: as request_threaded_irq().
 * Return: as request_threaded_irq().
 */
DEVRES_API int request_irq(unsigned int irq, irq_handler_t handler,
			   unsigned long flags, const char *name,
			   void *dev_id) DEVRES_MUST_CHECK;

/**
 * free_irq() - detach a handler from an interrupt line
 * @irq: the line's number
 * @dev_id: the cookie the handler was requested with
 *
 * Detaches the first handler of @irq requested with @dev_id. When this
 * returns, that handler and its thread function are not running and never
 * run again; its thread is joined. When it was the line's last handler,
 * interrupts still pending on the line are dropped; when it was the last
 * handler of the process, the dispatcher thread is stopped and joined.
 * Freeing a handler that is not attached is a misuse (WARN). Called from a
 * handler or thread function of @irq itself, it would wait for itself: it
 * WARNs and fails instead.
 *
 * Context: any thread; from a handler, only for another line.
 * Return: the @name the handler was requested with; NULL when nothing was
 * freed.
 */
DEVRES_API const void *free_irq(unsigned int irq, void *dev_id);

/**
 * enable_irq() - undo one disable_irq()
 * @irq: the line's number
 *
 * Decrements the line's disable depth; at 0 the line delivers again,
 * starting with an interrupt raised while it was disabled. An enable with
 * no disable to undo is a misuse (WARN, no effect).
 *
 * Context: any thread, also from a handler.
 */
DEVRES_API void enable_irq(unsigned int irq);

/**
 * disable_irq_nosync() - disable a line without waiting
 * @irq: the line's number
 *
 * Increments the line's disable depth: no handler of the line is called
 * until as many enable_irq(). A handler already running carries on. The
 * depth stops at 2^20: one more disable is refused with a WARN (a missing
 * enable_irq() in a loop), never wrapped to enabled.
 *
 * Context: any thread, also from the line's own handler.
 */
DEVRES_API void disable_irq_nosync(unsigned int irq);

/**
 * disable_irq() - disable a line and wait for its handlers
 * @irq: the line's number
 *
 * disable_irq_nosync(), then synchronize_irq(). Called from a handler or
 * thread function of @irq, it would wait for itself: it WARNs and does
 * nothing.
 *
 * Context: any thread; from a handler, only for another line.
 */
DEVRES_API void disable_irq(unsigned int irq);

/**
 * synchronize_irq() - wait for a line's handlers to finish
 * @irq: the line's number
 *
 * Returns once no primary handler of @irq is running and no thread
 * function of it is woken or running. Called from a handler or thread
 * function of @irq it WARNs and returns at once.
 *
 * Context: any thread; from a handler, only for another line.
 */
DEVRES_API void synchronize_irq(unsigned int irq);

/**
 * devm_request_threaded_irq() - managed request_threaded_irq()
 * @dev: the device the handler belongs to
 * @irq: the line's number
 * @handler: the primary handler, or NULL (see request_threaded_irq())
 * @thread_fn: the thread function, or NULL
 * @irqflags: IRQF_SHARED, IRQF_ONESHOT, IRQF_NO_AUTOEN
 * @devname: who holds the line, or NULL for dev_name(@dev)
 * @dev_id: the handlers' cookie
 *
 * The handler is freed when @dev's resources are released (unbind, probe
 * failure), as by free_irq(). A release that runs inside the handler
 * itself (a handler that unbinds its own device) detaches it without
 * waiting for the call in progress: it never runs again once that call
 * returns.
 *
 * Context: any thread, also from a handler. A fault-injection point (the
 * devres node), besides those of request_threaded_irq().
 * Return: 0, or as request_threaded_irq(); -EINVAL (WARNed) for a NULL or
 * uninitialized @dev; -ENODEV (WARNed, the handler freed) when @dev was
 * released meanwhile by a last put_device() on another thread.
 */
DEVRES_API int devm_request_threaded_irq(struct device *dev, unsigned int irq,
					 irq_handler_t handler,
					 irq_handler_t thread_fn,
					 unsigned long irqflags,
					 const char *devname,
					 void *dev_id) DEVRES_MUST_CHECK;

/**
 * devm_request_irq() - managed request_irq()
 * @dev: the device the handler belongs to
 * @irq: the line's number
 * @handler: the handler
 * @irqflags: IRQF_SHARED, IRQF_ONESHOT, IRQF_NO_AUTOEN
 * @devname: who holds the line, or NULL for dev_name(@dev)
 * @dev_id: the handler's cookie
 *
 * devm_request_threaded_irq() with no thread function: @handler runs in the
 * dispatcher for each interrupt of line @irq, and is freed with @dev's
 * resources or with devm_free_irq().
 *
 * Context: as devm_request_threaded_irq().
 * Return: as devm_request_threaded_irq().
 */
DEVRES_API int devm_request_irq(struct device *dev, unsigned int irq,
				irq_handler_t handler, unsigned long irqflags,
				const char *devname,
				void *dev_id) DEVRES_MUST_CHECK;

/**
 * devm_request_any_context_irq() - managed request in whatever context fits
 * @dev: the device the handler belongs to
 * @irq: the line's number
 * @handler: the handler
 * @irqflags: IRQF_SHARED, IRQF_ONESHOT, IRQF_NO_AUTOEN
 * @devname: who holds the line, or NULL for dev_name(@dev)
 * @dev_id: the handler's cookie
 *
 * Every line here is dispatched the same way, so this is
 * devm_request_irq() and the handler runs in the dispatcher thread.
 *
 * Context: as devm_request_threaded_irq().
 * Return: IRQC_IS_HARDIRQ on success, else as devm_request_irq().
 */
DEVRES_API int devm_request_any_context_irq(struct device *dev,
					    unsigned int irq,
					    irq_handler_t handler,
					    unsigned long irqflags,
					    const char *devname,
					    void *dev_id) DEVRES_MUST_CHECK;

/**
 * devm_free_irq() - free a managed handler now
 * @dev: the device the handler was requested for
 * @irq: the line's number
 * @dev_id: the handler's cookie
 *
 * Releases the managed handler of (@irq, @dev_id) on @dev through
 * devres_release(), so a handler requested with plain request_irq() is
 * never freed by it: when @dev has no such managed handler, it WARNs and
 * frees nothing. Called from a handler of @irq it WARNs and fails, as
 * free_irq().
 *
 * Context: any thread; from a handler, only for another line.
 */
DEVRES_API void devm_free_irq(struct device *dev, unsigned int irq,
			      void *dev_id);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_IRQ_H */
