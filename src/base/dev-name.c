// SPDX-License-Identifier: MIT
/*
 * A device's names. Every name dev_set_name() replaces stays allocated,
 * chained behind the name that replaced it, until the device's release.
 *
 * Another thread may read the name as it is replaced, with no lock:
 * dev_name(), dev_err() and the rest, a WARN or a log line naming the
 * device, a bus's check that names are unique. The name is published by
 * one atomic store and read by one load, and the string a reader got
 * stays valid until the device is released, which no lawful reader
 * outlives. The cost is bounded: one small allocation per rename, made
 * already, kept a little longer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"

struct name {
	char *prev; /* the name this one replaced, or NULL */
	char str[];
};

static struct name *name_of(char *str)
{
	return (struct name *)(void *)(str - offsetof(struct name, str));
}

char *devres__name_format(const char *fmt, va_list ap)
{
	struct name *n;
	char *str;
	int len;

	/* Formatted once: a conversion of the caller's may have effects. */
	len = vasprintf(&str, fmt, ap);
	if (len < 0)
		return NULL;
	n = malloc(sizeof(*n) + (size_t)len + 1);
	if (n) {
		n->prev = NULL;
		memcpy(n->str, str, (size_t)len + 1);
	}
	free(str);
	if (!n)
		return NULL;
	/* A name is one path component, as the kernel makes it: '/' -> '!'. */
	for (char *c = n->str; (c = strchr(c, '/')) != NULL;)
		*c = '!';
	return n->str;
}

void devres__name_replaces(char *name, char *old)
{
	name_of(name)->prev = old;
}

void devres__names_free(char *name)
{
	while (name) {
		struct name *n = name_of(name);

		name = n->prev;
		free(n);
	}
}
