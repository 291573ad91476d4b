// SPDX-License-Identifier: MIT
/*
 * revocable-chardev: a character device whose open file outlives its
 * driver, without a use-after-free.
 *
 * The driver's state (its "registers" and a message) is a revocable
 * resource of the binding. The character device node hands each open file
 * a reference on the handle, not a pointer to the state. A read begins an
 * access: while the driver is bound it reads the state; once the driver
 * is unbound (rmmod, hot unplug) the access fails and the read returns
 * -ENODEV, exactly what the kernel's file operations should do. The open
 * file itself stays valid until it is closed.
 *
 * Compare with the "devm_kzalloc() considered harmful" bug: had the state
 * been devm_kzalloc()'d and the file kept a plain pointer, every read
 * after unbind would touch freed memory.
 *
 * Run it with DEVRES_LOG=1 to see the resources come and go, and with
 * --sweep to test every error path of the probe as well.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include <devres/revocable.h>

/* The driver's state: everything that goes away at unbind. */
struct chardev_state {
	struct device *dev;
	char msg[64];
	unsigned long reads;
};

/* The character device node: what an open() finds. */
static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;
static struct revocable *node;

/* An open file: a reference on the handle, and a position. */
struct file {
	struct revocable *h;
	size_t pos;
};

static struct file *chardev_open(void)
{
	struct file *f;

	pthread_mutex_lock(&node_lock);
	f = node ? calloc(1, sizeof(*f)) : NULL;
	if (f)
		f->h = revocable_get(node);
	pthread_mutex_unlock(&node_lock);
	return f;
}

/* read(2): bytes copied, 0 at the end, -ENODEV once the driver is gone. */
static ssize_t chardev_read(struct file *f, char *buf, size_t len)
{
	struct chardev_state *st = revocable_try_access(f->h);
	size_t n;

	if (!st)
		return -ENODEV;
	/* Inside the access: st cannot be freed. Keep it short. */
	n = strlen(st->msg);
	n = f->pos < n ? n - f->pos : 0;
	if (n > len)
		n = len;
	memcpy(buf, st->msg + f->pos, n);
	f->pos += n;
	__atomic_add_fetch(&st->reads, 1, __ATOMIC_RELAXED);
	revocable_access_end(f->h);
	return (ssize_t)n;
}

static void chardev_close(struct file *f)
{
	revocable_put(f->h);
	free(f);
}

/* Released once no read is in progress: the state can go. */
static void chardev_state_free(void *res)
{
	struct chardev_state *st = res;

	dev_info(st->dev, "state freed after %lu reads\n", st->reads);
	free(st);
}

/* Undone first at unbind: no new open finds the device. */
static void chardev_node_remove(void *data)
{
	(void)data;
	pthread_mutex_lock(&node_lock);
	revocable_put(node);
	node = NULL;
	pthread_mutex_unlock(&node_lock);
}

static int chardev_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct chardev_state *st;
	struct revocable *h;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->dev = dev;
	snprintf(st->msg, sizeof(st->msg), "hello from %s\n", dev_name(dev));
	/* From here the binding owns st; on failure it is freed at once. */
	h = devm_revocable_create(dev, st, chardev_state_free);
	if (!h) {
		free(st);
		return -ENOMEM;
	}
	pthread_mutex_lock(&node_lock);
	node = revocable_get(h);
	pthread_mutex_unlock(&node_lock);
	return devm_add_action_or_reset(dev, chardev_node_remove, NULL);
}

static struct platform_driver chardev_driver = {
	.probe = chardev_probe,
	.driver = { .name = "chardev" },
};

/* A process reading the open file until the device goes away. */
static int reading;

static void *reader(void *arg)
{
	struct file *f = arg;
	char buf[64];
	ssize_t n;
	unsigned long ok = 0;

	while ((n = chardev_read(f, buf, sizeof(buf))) >= 0) {
		f->pos = 0; /* rewind, read again */
		ok++;
		__atomic_add_fetch(&reading, 1, __ATOMIC_RELAXED);
		sched_yield();
	}
	printf("reader: %lu reads, then %s\n", ok, strerror((int)-n));
	return NULL;
}

static int demo(void)
{
	struct file *f1, *f2;
	struct platform_device *pdev;
	pthread_t t;
	char buf[64];
	ssize_t n;

	if (platform_driver_register(&chardev_driver))
		return 1;
	pdev = platform_device_register_simple("chardev", 0, NULL, 0);
	if (IS_ERR(pdev))
		return 1;
	f1 = chardev_open();
	f2 = chardev_open();
	if (!f1 || !f2)
		return 1;
	n = chardev_read(f1, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	printf("read %zd bytes: %s", n, buf);
	if (pthread_create(&t, NULL, reader, f2))
		return 1;
	/* Hot unplug while a file is open and another is being read. */
	while (__atomic_load_n(&reading, __ATOMIC_RELAXED) < 100)
		sched_yield();
	platform_device_unregister(pdev);
	pthread_join(t, NULL);
	n = chardev_read(f1, buf, sizeof(buf));
	printf("read after unbind: %zd (%s)\n", n, strerror((int)-n));
	printf("open after unbind: %s\n", chardev_open() ? "found" : "none");
	chardev_close(f1);
	chardev_close(f2);
	platform_driver_unregister(&chardev_driver);
	return n == -ENODEV ? 0 : 1;
}

/* Fails each acquisition of the probe in turn; 0 when nothing leaked. */
static int sweep(void)
{
	struct platform_device *pdev;
	struct devres_sweep_result r;
	int ret;

	pdev = platform_device_register_simple("chardev", 0, NULL, 0);
	if (IS_ERR(pdev))
		return 1;
	ret = driver_probe_sweep(&chardev_driver.driver, &pdev->dev, &r);
	platform_device_unregister(pdev);
	return ret != 0;
}

int main(int argc, char **argv)
{
	/* make check runs --sweep: the show, then the sweep. */
	if (argc > 1 && strcmp(argv[1], "--sweep") == 0)
		return demo() || sweep();
	return demo();
}
