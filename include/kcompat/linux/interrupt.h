/* SPDX-License-Identifier: MIT */
/* Interrupt handlers on libdevres's interrupt lines. */
#ifndef KCOMPAT_LINUX_INTERRUPT_H
#define KCOMPAT_LINUX_INTERRUPT_H

#include <linux/kcompat_site.h>
#include <devres/irq.h>
#include <linux/device.h>

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

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define request_irq(...) KCOMPAT_AT(request_irq, request_irq(__VA_ARGS__))
#define request_threaded_irq(...)                                              \
	KCOMPAT_AT(request_threaded_irq, request_threaded_irq(__VA_ARGS__))
#define devm_request_irq(...)                                                  \
	KCOMPAT_AT(devm_request_irq, devm_request_irq(__VA_ARGS__))
#define devm_request_threaded_irq(...)                                         \
	KCOMPAT_AT(devm_request_threaded_irq,                                  \
		   devm_request_threaded_irq(__VA_ARGS__))
#define devm_request_any_context_irq(...)                                      \
	KCOMPAT_AT(devm_request_any_context_irq,                               \
		   devm_request_any_context_irq(__VA_ARGS__))

#endif /* KCOMPAT_LINUX_INTERRUPT_H */
