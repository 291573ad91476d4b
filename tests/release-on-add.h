/* SPDX-License-Identifier: MIT */
/*
 * A log sink that releases a device's resources on each ADD line, in the
 * sink, on the thread that made the line: right after a node is on a
 * device, before the call that added it goes on. Set with
 * devres_set_log_sink(release_on_add, dev) and devres_set_log(true);
 * release_on_add_count counts the releases it made.
 */
#ifndef DEVRES_TESTS_RELEASE_ON_ADD_H
#define DEVRES_TESTS_RELEASE_ON_ADD_H

#include <string.h>
#include <devres/devres.h>

static int release_on_add_count;

static inline void release_on_add(void *ctx, int level, const char *text)
{
	(void)level;
	if (strstr(text, " ADD ")) {
		release_on_add_count++;
		(void)devres_release_all((struct device *)ctx);
	}
}

#endif /* DEVRES_TESTS_RELEASE_ON_ADD_H */
