// SPDX-License-Identifier: MIT
/*
 * The program test-sec-setuid.c runs, once as a plain copy and once as a
 * setuid-root copy, from an unprivileged user with every DEVRES_* knob set.
 * Linked with the static library, so that a copy of it anywhere loads no
 * library from the build tree (a setuid program ignores LD_LIBRARY_PATH and
 * $ORIGIN).
 *
 * stdout: one line of facts. stderr: what the library printed before the
 * program asked for anything, a "-- api" line, and what it printed once the
 * program turned logging on with devres_set_log(true).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>

static void dev_release(struct device *dev)
{
	(void)dev;
}

int main(void)
{
	struct device dev = { .release = dev_release };
	unsigned int armed = devres_fail_nth_get();
	void *first, *second;
	int warns;

	device_initialize(&dev);
	/* DEVRES_FAIL_NTH=1, if honoured, fails this one. */
	first = devm_kmalloc(&dev, 16, GFP_KERNEL);
	/* DEVRES_LOG=1, if honoured, prints a DEVRES ADD line with an address. */
	second = devm_kmalloc(&dev, 16, GFP_KERNEL);
	dev_set_name(&dev, "setuid-dev");
	/* DEVRES_DEBUG=1, if honoured, prints this. */
	dev_dbg(&dev, "a debug line");
	/* A misuse: one WARN, counted always, printed only where allowed. */
	devm_kfree(&dev, &armed);
	warns = devres_warn_count();
	printf("secure=%lu ruid=%d euid=%d armed=%u first=%s second=%s "
	       "warns=%d\n",
	       getauxval(AT_SECURE), (int)getuid(), (int)geteuid(), armed,
	       first ? "ok" : "failed", second ? "ok" : "failed", warns);
	fflush(stdout);
	fprintf(stderr, "-- api\n");
	fflush(stderr);
	devres_set_log(true);
	devm_kfree(&dev, &armed);
	second = devm_kmalloc(&dev, 16, GFP_KERNEL);
	devres_release_all(&dev);
	put_device(&dev);
	return second ? 0 : 1;
}
