/* SPDX-License-Identifier: MIT */
/*
 * A call parked inside a fake backend until the test lets it go, once:
 * the tests of a vector call in progress on another thread. The backend
 * parks at park_if() when its hold is set; park_wait() waits until it
 * is there; park_releaser_start() starts a thread that lets it go once
 * the calling thread sleeps (it waits for the parked call) or the test
 * says its own call is done (park_releaser_join()). And the attach and
 * detach of such a backend, which takes every function.
 */
#ifndef DEVRES_TESTS_PCI_PARK_HOLD_H
#define DEVRES_TESTS_PCI_PARK_HOLD_H

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>
#include "testlib.h"

struct pci_dev;

struct park_hold {
	sem_t parked, go;
	int released, call_done, main_tid;
	pthread_t releaser;
};

static inline int park_init(struct park_hold *p)
{
	return sem_init(&p->parked, 0, 0) || sem_init(&p->go, 0, 0) ? -1 : 0;
}

/* In the backend: parks when *@hold was set, clearing it. */
static inline bool park_if(struct park_hold *p, int *hold)
{
	if (!__atomic_exchange_n(hold, 0, __ATOMIC_ACQ_REL))
		return false;
	sem_post(&p->parked);
	while (sem_wait(&p->go) < 0)
		;
	return true;
}

static inline void park_wait(struct park_hold *p)
{
	while (sem_wait(&p->parked) < 0)
		;
}

/* Lets the parked call go, once. */
static inline void park_release(struct park_hold *p)
{
	if (!__atomic_exchange_n(&p->released, 1, __ATOMIC_ACQ_REL))
		sem_post(&p->go);
}

static inline void *park_release_when_asleep(void *arg)
{
	struct park_hold *p = arg;

	while (!__atomic_load_n(&p->call_done, __ATOMIC_ACQUIRE) &&
	       !tid_asleep(p->main_tid))
		poll(NULL, 0, 1);
	park_release(p);
	return NULL;
}

/* Before the hold is set: this thread's sleep lets the parked call go. */
static inline void park_arm(struct park_hold *p)
{
	p->released = p->call_done = 0;
	p->main_tid = (int)gettid();
}

static inline int park_releaser_start(struct park_hold *p)
{
	return pthread_create(&p->releaser, NULL, park_release_when_asleep, p);
}

/* The test's call is done: the releaser joined, the parked call let go. */
static inline int park_releaser_join(struct park_hold *p)
{
	int ret;

	__atomic_store_n(&p->call_done, 1, __ATOMIC_RELEASE);
	ret = pthread_join(p->releaser, NULL);
	park_release(p);
	return ret;
}

/* A fake backend's attach and detach: it takes every function, no data. */
static inline int park_bk_attach(struct pci_dev *pdev, void **ret_data)
{
	(void)pdev;
	*ret_data = NULL;
	return 0;
}

static inline void park_bk_detach(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
}

#endif /* DEVRES_TESTS_PCI_PARK_HOLD_H */
