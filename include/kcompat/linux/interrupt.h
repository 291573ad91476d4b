/* SPDX-License-Identifier: MIT */
/* Interrupt handlers on libdevres's interrupt lines. */
#ifndef KCOMPAT_LINUX_INTERRUPT_H
#define KCOMPAT_LINUX_INTERRUPT_H

#include <linux/kcompat_site.h>
#include <devres/irq.h>
#include <linux/device.h>
#include <linux/kcompat_held.h>

/* Triggers are the line's business (the board's), not the handler's. */
#define IRQF_TRIGGER_NONE 0
#define IRQF_TRIGGER_RISING 0
#define IRQF_TRIGGER_FALLING 0
#define IRQF_TRIGGER_HIGH 0
#define IRQF_TRIGGER_LOW 0
#define IRQF_NO_SUSPEND 0
#define IRQF_NO_THREAD 0
#define IRQF_IRQPOLL 0
#define IRQF_NOBALANCING 0
#define IRQF_COND_SUSPEND 0
#define enable_irq_wake(irq) ((void)(irq), 0)
#define disable_irq_wake(irq) ((void)(irq), 0)

/*
 * Each call names its line for the sweep (<linux/kcompat_site.h>). Those
 * that may sleep in the kernel (a request allocates, a free and a
 * disable wait for the handlers) are checked first: made in atomic
 * context, they WARN (<linux/kcompat_held.h>). A request also has the
 * library tell of each primary handler's call (kcompat_hardirq()), so
 * that a sleeping call made there WARNs as in the kernel's hard-irq
 * context.
 */
#define KCOMPAT_IRQ_SLEEPS(name, call)                                         \
	(kcompat_might_sleep(KCOMPAT_SLEEP_##name), call)
#define KCOMPAT_IRQ_REQUEST(name, call)                                        \
	((void)devres_atomic_hook_set(kcompat_hardirq),                        \
	 KCOMPAT_IRQ_SLEEPS(name, call))
#define request_irq(...)                                                       \
	KCOMPAT_AT(request_irq,                                                \
		   KCOMPAT_IRQ_REQUEST(request_irq, request_irq(__VA_ARGS__)))
#define request_threaded_irq(...)                                              \
	KCOMPAT_AT(request_threaded_irq,                                       \
		   KCOMPAT_IRQ_REQUEST(request_threaded_irq,                   \
				       request_threaded_irq(__VA_ARGS__)))
#define devm_request_irq(...)                                                  \
	KCOMPAT_AT(devm_request_irq,                                           \
		   KCOMPAT_IRQ_REQUEST(devm_request_irq,                       \
				       devm_request_irq(__VA_ARGS__)))
#define devm_request_threaded_irq(...)                                         \
	KCOMPAT_AT(                                                            \
		devm_request_threaded_irq,                                     \
		KCOMPAT_IRQ_REQUEST(devm_request_threaded_irq,                 \
				    devm_request_threaded_irq(__VA_ARGS__)))
#define devm_request_any_context_irq(...)                                      \
	KCOMPAT_AT(devm_request_any_context_irq,                               \
		   ((void)devres_atomic_hook_set(kcompat_hardirq),             \
		    devm_request_any_context_irq(__VA_ARGS__)))
#define free_irq(...) KCOMPAT_IRQ_SLEEPS(free_irq, free_irq(__VA_ARGS__))
#define devm_free_irq(...)                                                     \
	KCOMPAT_IRQ_SLEEPS(devm_free_irq, devm_free_irq(__VA_ARGS__))
#define synchronize_irq(...)                                                   \
	KCOMPAT_IRQ_SLEEPS(synchronize_irq, synchronize_irq(__VA_ARGS__))
#define disable_irq(...)                                                       \
	KCOMPAT_IRQ_SLEEPS(disable_irq, disable_irq(__VA_ARGS__))

#endif /* KCOMPAT_LINUX_INTERRUPT_H */
