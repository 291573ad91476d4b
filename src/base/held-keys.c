// SPDX-License-Identifier: MIT
/*
 * The device locks a thread holds, as its stack of keys in the record of
 * waits (waits.h): published once, at the thread's first device lock,
 * then changed with relaxed stores and no lock, so that taking and
 * letting go of a device's lock costs two stores, not two turns of the
 * record's lock. A thread's end withdraws it (a key's destructor), so
 * that the record never reads a gone thread's storage.
 *
 * A thread holds a few device locks at most (a probe that adds a child
 * that a driver binds holds two): the first HELD_KEYS_MAX here; a deeper
 * one, or one on a thread with no key to withdraw the stack by, is
 * recorded by the caller as a membership of its own (devres__wait_join()).
 */
#include <pthread.h>
#include "base.h"
#include "waits.h"

#define HELD_KEYS_MAX 8

struct held_keys {
	void *key[HELD_KEYS_MAX]; /* newest last */
	unsigned int n;
	bool armed;
	struct devres__wait_keys stack;
};

static TLS_FAST struct held_keys held;

static pthread_key_t exit_key;
static bool have_key;

static void thread_end(void *arg)
{
	(void)arg;
	held.armed = false;
	devres__wait_keys_withdraw(&held.stack);
}

__attribute__((constructor)) static void held_keys_init(void)
{
	have_key = !pthread_key_create(&exit_key, thread_end);
}

static bool arm(struct held_keys *h)
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

bool devres__held_key_push(void *key)
{
	struct held_keys *h = &held;

	if (h->n >= HELD_KEYS_MAX || !arm(h))
		return false;
	__atomic_store_n(&h->key[h->n], key, __ATOMIC_RELAXED);
	__atomic_store_n(&h->n, h->n + 1, __ATOMIC_RELAXED);
	return true;
}

void devres__held_key_pop(void)
{
	struct held_keys *h = &held;

	if (h->n)
		__atomic_store_n(&h->n, h->n - 1, __ATOMIC_RELAXED);
}
