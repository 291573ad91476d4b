/* SPDX-License-Identifier: MIT */
/*
 * Call sites: each acquisition a driver calls through these headers names
 * its source line to the library (devres_call_site_enter()), so that a
 * sweep's report says where an acquisition failed, where the probe went
 * on after it, and from which line dev_err_probe() returned. The wrappers
 * are macros of the functions' own names, defined in each header after
 * the function; a call made through a function pointer names no line.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_SITE_H
#define KCOMPAT_LINUX_KCOMPAT_SITE_H

#include <devres/fault.h>

/*
 * KCOMPAT_AT(name, call): @call, with its line named as a call of @name.
 * The value is @call's, of its type; __COUNTER__ keeps the temporaries of
 * nested calls apart.
 */
#define KCOMPAT_AT(name, call) KCOMPAT_AT_(name, call, __COUNTER__)
#define KCOMPAT_AT_(name, call, n) KCOMPAT_AT__(name, call, n)
#define KCOMPAT_AT__(name, call, n)                                            \
	({                                                                     \
		devres_call_site_enter(__FILE__, __LINE__, #name);             \
		__typeof__(call) kc_site_##n = (call);                         \
		devres_call_site_leave();                                      \
		kc_site_##n;                                                   \
	})

#endif /* KCOMPAT_LINUX_KCOMPAT_SITE_H */
