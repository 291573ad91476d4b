// SPDX-License-Identifier: MIT
/*
 * service: a small long-running program, outside the driver model, that
 * uses a device only as the owner of what it holds.
 *
 * Its main creates one device (never added to a bus) and acquires through
 * it: a signalfd for SIGTERM and SIGINT, a timer ticking every 50 ms, an
 * eventfd the main loop uses to hand work to a worker thread, a status
 * page (a memfd mapped shared) the worker writes, and the worker itself.
 * None of them has a cleanup of its own: setting up releases the owner
 * when it fails half way, and shutting down on SIGTERM is one call,
 * devres_release_all(), which stops and joins the worker first (it was
 * started last), then unmaps and closes the rest, newest first.
 *
 * Build against the installed library:  cc service.c $(pkg-config
 * --cflags --libs devres)
 *
 *   service           runs until SIGTERM or SIGINT (kill it, or ^C)
 *   service --once    sends itself SIGTERM after a few ticks
 *   service --sweep   makes each acquisition of the setup fail in turn and
 *                     checks that nothing leaks, then runs as --once and
 *                     checks the ledger is back where it started
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>

/* What the worker publishes: read by anyone who maps the memfd. */
struct status {
	unsigned long jobs;
};

struct service {
	struct device dev; /* the owner of everything below */
	int sfd, tfd, efd;
	struct status *status;
	unsigned long ticks;
};

static void service_release(struct device *dev)
{
	free(container_of(dev, struct service, dev));
}

/* Takes the work the main loop posts until it is asked to stop. */
static int worker(void *arg)
{
	struct service *svc = arg;
	uint64_t n;
	int ret;

	while ((ret = devres_thread_wait_fd(svc->efd, POLLIN, -1)) > 0)
		if (read(svc->efd, &n, sizeof(n)) == sizeof(n))
			__atomic_add_fetch(&svc->status->jobs, n,
					   __ATOMIC_RELAXED);
	/* -EINTR is the stop the release asked for. */
	return ret == -EINTR ? 0 : ret;
}

static int acquire(struct service *svc)
{
	static const struct itimerspec every_50ms = { { 0, 50000000 },
						      { 0, 50000000 } };
	struct device *dev = &svc->dev;
	struct devres_thread *t;
	sigset_t mask;
	int mfd, ret;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	/* Adopted: closed with the rest, or at once if recording fails. */
	svc->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ret = devm_add_fd(dev, svc->sfd);
	if (ret)
		return ret;

	svc->tfd = devm_timerfd_create(dev, CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (svc->tfd < 0)
		return svc->tfd;
	if (timerfd_settime(svc->tfd, 0, &every_50ms, NULL))
		return -errno;

	svc->efd = devm_eventfd(dev, 0, EFD_NONBLOCK);
	if (svc->efd < 0)
		return svc->efd;

	mfd = devm_memfd_create(dev, "service-status", 0);
	if (mfd < 0)
		return mfd;
	if (ftruncate(mfd, sizeof(*svc->status)))
		return -errno;
	svc->status = devm_mmap(dev, NULL, sizeof(*svc->status),
				PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (IS_ERR(svc->status))
		return (int)PTR_ERR(svc->status);

	/* Last: its release runs first, while what it uses is still there. */
	t = devm_thread_run(dev, worker, svc, "service-worker");
	return IS_ERR(t) ? (int)PTR_ERR(t) : 0;
}

/* Sets the service up, or leaves nothing behind. */
static int service_start(void *arg)
{
	struct service *svc = arg;
	int ret = acquire(svc);

	if (ret)
		devres_release_all(&svc->dev);
	return ret;
}

static void service_stop(void *arg)
{
	struct service *svc = arg;

	devres_release_all(&svc->dev);
}

/* Ticks, posts work, and returns on SIGTERM or SIGINT. */
static int service_run(struct service *svc, bool once)
{
	struct pollfd p[2] = { { .fd = svc->sfd, .events = POLLIN },
			       { .fd = svc->tfd, .events = POLLIN } };
	struct signalfd_siginfo si;
	uint64_t n, one = 1;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents & POLLIN &&
		    read(svc->sfd, &si, sizeof(si)) == sizeof(si)) {
			dev_info(&svc->dev, "%s after %lu ticks\n",
				 strsignal((int)si.ssi_signo), svc->ticks);
			return 0;
		}
		if (p[1].revents & POLLIN &&
		    read(svc->tfd, &n, sizeof(n)) == sizeof(n)) {
			svc->ticks += n;
			if (write(svc->efd, &one, sizeof(one)) != sizeof(one))
				return -errno;
			if (once && svc->ticks >= 3)
				kill(getpid(), SIGTERM);
		}
	}
}

static struct service *service_new(void)
{
	struct service *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->dev.release = service_release;
	device_initialize(&svc->dev);
	if (dev_set_name(&svc->dev, "service")) {
		put_device(&svc->dev);
		return NULL;
	}
	return svc;
}

/* Every failure point of the setup, and the shutdown after success. */
static int sweep(struct service *svc)
{
	struct devres_sweep_result r;
	int ret = devres_sweep(service_start, service_stop, svc, &r);

	printf("setup swept: %u failure points, %u leaks\n", r.points, r.leaks);
	return ret;
}

int main(int argc, char **argv)
{
	bool do_sweep = argc > 1 && strcmp(argv[1], "--sweep") == 0;
	bool once = do_sweep || (argc > 1 && strcmp(argv[1], "--once") == 0);
	struct devres_ledger before, after;
	struct service *svc;
	sigset_t mask;
	int ret;

	/* Blocked in every thread (the worker inherits it): only read. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);

	devres_ledger_snapshot(&before);
	svc = service_new();
	if (!svc)
		return 1;
	if (do_sweep && sweep(svc)) {
		put_device(&svc->dev);
		return 1;
	}

	ret = service_start(svc);
	if (ret) {
		fprintf(stderr, "service: cannot start: %s\n", strerror(-ret));
		put_device(&svc->dev);
		return 1;
	}
	ret = service_run(svc, once);
	printf("service: %lu ticks, %lu jobs done\n", svc->ticks,
	       __atomic_load_n(&svc->status->jobs, __ATOMIC_RELAXED));

	/* The whole shutdown: one owner released, then dropped. */
	printf("service: %d resources released\n",
	       devres_release_all(&svc->dev));
	put_device(&svc->dev);

	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr)) {
		fprintf(stderr, "service: resources left behind\n");
		return 1;
	}
	printf("service: clean shutdown\n");
	return ret ? 1 : 0;
}
