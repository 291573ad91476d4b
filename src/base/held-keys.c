// SPDX-License-Identifier: MIT
/*
 * The device locks a thread holds, as its stack of keys in the record of
 * waits (waits.h): published once, at the thread's first device lock,
 * then changed with relaxed stores and no lock (frame.h:
 * devres__held_key_push()), so that taking and letting go of a device's
 * lock costs two stores, not two turns of the record's lock. The stack
 * is part of the thread's driver-model state (devres__dmt), reached once
 * per call with the rest. A thread's end withdraws it (a key's
 * destructor), so that the record never reads a gone thread's storage.
 *
 * A thread holds a few device locks at most (a probe that adds a child
 * that a driver binds holds two): the first DEVRES_HELD_KEYS here; a
 * deeper one, or one on a thread with no key to withdraw the stack by, is
 * recorded by the caller as a membership of its own (devres__wait_join()).
 */
#include <pthread.h>
#include "base.h"
#include "frame.h"
#include "waits.h"

static pthread_key_t exit_key;
static bool have_key;

static void thread_end(void *arg)
{
	struct devres__held_keys *h = &devres__dmt.keys;

	(void)arg;
	h->armed = false;
	devres__wait_keys_withdraw(&h->stack);
}

__attribute__((constructor)) static void held_keys_init(void)
{
	have_key = !pthread_key_create(&exit_key, thread_end);
}

bool devres__held_keys_arm(struct devres__held_keys *h)
{
	if (h->armed)
		return true;
	if (!have_key || pthread_setspecific(exit_key, &exit_key))
		return false;
	h->stack.thread = devres__wait_self();
	h->stack.any = 0;
	h->stack.keys = h->key;
	h->stack.depth = &h->n;
	devres__wait_keys_publish(&h->stack);
	h->armed = true;
	return true;
}
