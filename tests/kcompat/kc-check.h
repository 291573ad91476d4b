/* SPDX-License-Identifier: MIT */
/*
 * What a compat cell (kc-cell.h) heard: listen() starts capturing the
 * log, heard() then asserts what came, ending the child as CHECK() does: no
 * WARN, or exactly one of @func (the compat layer's WARNs name no
 * device) saying @why, counted once.
 */
#ifndef TESTS_KCOMPAT_KC_CHECK_H
#define TESTS_KCOMPAT_KC_CHECK_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "testlib.h"
#include "kcompat/kc-cell.h"

static int kc_warns_before;

static inline void listen(void)
{
	start_capture();
	kc_warns_before = devres_warn_count();
}

static inline void heard(const char *func, const char *why)
{
	char head[96];

	devres_set_log_sink(NULL, NULL);
	if (!func) {
		CHECK(!count_prefix("WARNING: "));
		CHECK(devres_warn_count() == kc_warns_before);
		return;
	}
	/* A debug build adds the backtrace's lines. */
	snprintf(head, sizeof(head), "WARNING: (no device): %s: ", func);
	if (count_prefix("WARNING: ") != 1 ||
	    strncmp(cap.line[0], head, strlen(head)) != 0 ||
	    !strstr(cap.line[0], why))
		fprintf(stderr, "heard %d line(s): %s\n", cap.n, cap.line[0]);
	CHECK(count_prefix("WARNING: ") == 1);
	CHECK(!strncmp(cap.line[0], head, strlen(head)));
	CHECK(strstr(cap.line[0], why));
	CHECK(devres_warn_count() == kc_warns_before + 1);
}

#endif /* TESTS_KCOMPAT_KC_CHECK_H */
