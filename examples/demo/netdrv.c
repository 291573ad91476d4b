// SPDX-License-Identifier: MIT
/*
 * The SN-2 driver, whose every resource is managed.
 *
 * The bus glue (the platform driver at the end of this file; the PCI one
 * in netdrv-pci.c) maps the registers and finds the interrupt; then
 * netdrv_setup() resets the device, creates a DMA pool for frame buffers,
 * has the port mid-layer (netport.c) set the ports up in a devres group,
 * requests a threaded interrupt and starts the device, and records the
 * device's reset as an action. The error path is "return"; remove prints
 * a line. At unbind the library undoes it all, newest first:
 * the device is reset before the interrupt is freed, the interrupt before
 * the buffers, the buffers before the pool and the rings, the rings before
 * the registers are unmapped.
 */
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include "netdrv-priv.h"

#define RESET_TIMEOUT_NS 3000000000L /* generous: the device is a thread */
#define WATCHDOG_TICKS 2 /* waits with no transmit progress before a reset */

static void nd_mutex_destroy(void *lock)
{
	pthread_mutex_destroy(lock);
}

/* The kernel's devm_mutex_init(), for a pthread mutex. */
static int devm_pthread_mutex_init(struct device *dev, pthread_mutex_t *lock)
{
	int ret = pthread_mutex_init(lock, NULL);

	if (ret)
		return -ret;
	return devm_add_action_or_reset(dev, nd_mutex_destroy, lock);
}

static long elapsed_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + t.tv_nsec - t0->tv_nsec;
}

/**
 * netdrv_hw_reset() - reset the device and wait until it is done
 * @nd: the driver's state
 *
 * After this the device is disabled, its interrupt masked, its event
 * count back to 0, and it no longer touches DMA memory.
 *
 * Context: may sleep.
 * Return: 0, or -ETIMEDOUT when the device does not answer.
 */
static int netdrv_hw_reset(struct netdrv *nd)
{
	uint32_t token = readl(nd->regs + SN_RESET_DONE) + 1;
	const struct timespec pause = { 0, 10000 };
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	writel(token, nd->regs + SN_RESET);
	while (readl(nd->regs + SN_RESET_DONE) != token) {
		if (elapsed_ns(&t0) > RESET_TIMEOUT_NS)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
	return 0;
}

/* Programs the rings, enables the device and its interrupt. */
static void netdrv_hw_start(struct netdrv *nd)
{
	for (unsigned int i = 0; i < nd->nports; i++)
		nd_port_program(nd->port[i]);
	writel(SN_CTRL_ENABLE, nd->regs + SN_CTRL);
	writel(1, nd->regs + SN_INT_MASK);
}

/**
 * netdrv_disable() - stop the device (a managed action)
 * @data: the driver's state
 *
 * Recorded last by probe, so it runs first at unbind: the device stops
 * using DMA memory and raising its line before anything it uses is freed.
 *
 * Context: the thread releasing the device's resources.
 */
static void netdrv_disable(void *data)
{
	struct netdrv *nd = data;

	writel(0, nd->regs + SN_INT_MASK);
	if (netdrv_hw_reset(nd))
		dev_err(nd->dev, "the device does not reset\n");
}

static void netdrv_wake(struct netdrv *nd)
{
	uint64_t one = 1;

	/* Only a counter overflow could fail, and a wake is then pending. */
	if (write(nd->wake_fd, &one, sizeof(one)) < 0)
		return;
}

static unsigned int netdrv_poll(struct netdrv *nd)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nd->nports; i++)
		n += nd_port_poll(nd->port[i]);
	return n;
}

/**
 * netdrv_irq() - the primary interrupt handler
 * @irq: the line
 * @dev_id: the driver's state
 *
 * Acknowledges the events counted so far and wakes the thread. Events
 * after the read are not acknowledged, so the device raises again for them.
 * @nd->int_acked is this handler's: others touch it only with the line
 * disabled.
 *
 * Context: the interrupt dispatcher thread.
 * Return: IRQ_NONE when no event is new, else IRQ_WAKE_THREAD.
 */
static irqreturn_t netdrv_irq(int irq, void *dev_id)
{
	struct netdrv *nd = dev_id;
	uint32_t status = readl(nd->regs + SN_INT_STATUS);

	(void)irq;
	if (status == nd->int_acked)
		return IRQ_NONE;
	writel(status, nd->regs + SN_INT_ACK);
	nd->int_acked = status;
	return IRQ_WAKE_THREAD;
}

/**
 * netdrv_irq_thread() - the threaded interrupt handler
 * @irq: the line
 * @dev_id: the driver's state
 *
 * Takes back transmitted buffers, passes received frames on, refills the
 * receive rings, and wakes the stack.
 *
 * Context: the handler's thread; the line is masked until it returns.
 * Return: IRQ_HANDLED.
 */
static irqreturn_t netdrv_irq_thread(int irq, void *dev_id)
{
	struct netdrv *nd = dev_id;
	unsigned int n;

	(void)irq;
	pthread_mutex_lock(&nd->lock);
	n = netdrv_poll(nd);
	pthread_mutex_unlock(&nd->lock);
	if (n)
		netdrv_wake(nd);
	return IRQ_HANDLED;
}

/**
 * netdrv_setup() - bring an SN-2 up, whatever bus it sits on
 * @dev: the device
 * @regs: its registers, mapped (managed) by the bus glue
 * @irq: its interrupt line
 *
 * The body of every probe. Every acquisition is managed, so every failure
 * is a plain return: the driver core releases what was taken, newest
 * first. The order is the teardown's, reversed: what the device uses is
 * taken before the device is started, and the action that stops it is
 * recorded last.
 *
 * Context: a probe.
 * Return: 0, or a negative errno.
 */
int netdrv_setup(struct device *dev, void __iomem *regs, int irq)
{
	struct netdrv *nd;
	int ret;

	nd = devm_kzalloc(dev, sizeof(*nd), GFP_KERNEL);
	if (!nd)
		return -ENOMEM;
	nd->dev = dev;
	nd->regs = regs;
	nd->irq = irq;
	ret = devm_pthread_mutex_init(dev, &nd->lock);
	if (ret)
		return ret;

	if (readl(nd->regs + SN_ID) != SN_ID_VALUE)
		return dev_err_probe(dev, -ENODEV, "not an SN-2\n");
	nd->nports = readl(nd->regs + SN_NPORTS);
	if (!nd->nports || nd->nports > SN_MAX_PORTS)
		return dev_err_probe(dev, -ENODEV, "%u ports?\n", nd->nports);
	ret = netdrv_hw_reset(nd);
	if (ret)
		return dev_err_probe(dev, ret, "the device does not reset\n");

	/* The device's DMA engine has 64-bit addresses. */
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	nd->pool = dmam_pool_create("sn2-frames", dev, SN_BUF_SIZE, 64, 0);
	if (!nd->pool)
		return -ENOMEM;
	ret = nd_ports_init(nd);
	if (ret)
		return dev_err_probe(dev, ret, "cannot set the ports up\n");

	nd->wake_fd = devm_eventfd(dev, 0, EFD_NONBLOCK);
	if (nd->wake_fd < 0)
		return nd->wake_fd;
	ret = devm_request_threaded_irq(dev, nd->irq, netdrv_irq,
					netdrv_irq_thread, IRQF_ONESHOT, NULL,
					nd);
	if (ret)
		return dev_err_probe(dev, ret, "cannot have irq %d\n", nd->irq);

	netdrv_hw_start(nd);
	ret = devm_add_action_or_reset(dev, netdrv_disable, nd);
	if (ret)
		return ret;
	dev_set_drvdata(dev, nd);
	dev_info(dev, "SN-2, %u ports, rings of %u, irq %d\n", nd->nports,
		 ND_RING_SIZE, nd->irq);
	return 0;
}

/**
 * netdrv_goodbye() - what every remove does
 * @dev: the device
 *
 * Nothing to undo: the library does it after remove returns.
 *
 * Context: a remove.
 */
void netdrv_goodbye(struct device *dev)
{
	struct netdrv_stats s;

	netdrv_get_stats(dev_get_drvdata(dev), &s);
	dev_info(dev, "%lu frames out, %lu in\n", s.tx_packets, s.rx_packets);
}

/**
 * netdrv_probe() - bind to an SN-2 on the platform bus
 * @pdev: the device: a register window (resource 0) and an interrupt
 *
 * Context: the driver core, from a bind.
 * Return: 0, or a negative errno.
 */
static int netdrv_probe(struct platform_device *pdev)
{
	void __iomem *regs;
	int irq;

	regs = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(regs))
		return dev_err_probe(&pdev->dev, (int)PTR_ERR(regs),
				     "cannot map the registers\n");
	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
		return irq;
	return netdrv_setup(&pdev->dev, regs, irq);
}

static void netdrv_remove(struct platform_device *pdev)
{
	netdrv_goodbye(&pdev->dev);
}

struct platform_driver netdrv_driver = {
	.probe = netdrv_probe,
	.remove = netdrv_remove,
	.driver = { .name = "sn2" },
};

/* ---- the stack's side ------------------------------------------------- */

/**
 * netdrv_set_rx_handler() - say where received frames go
 * @nd: the driver's state (platform_get_drvdata())
 * @fn: called for each good frame, or NULL to drop them
 * @ctx: passed to @fn
 *
 * Context: any thread; @fn runs in the interrupt thread.
 */
void netdrv_set_rx_handler(struct netdrv *nd, netdrv_rx_t fn, void *ctx)
{
	pthread_mutex_lock(&nd->lock);
	nd->rx = fn;
	nd->rx_ctx = ctx;
	pthread_mutex_unlock(&nd->lock);
}

/**
 * netdrv_xmit() - transmit a frame
 * @nd: the driver's state
 * @port: the port
 * @frame: the frame, copied
 * @len: its bytes
 *
 * Context: any thread.
 * Return: 0; -EBUSY when the port's ring is full (wait, then retry);
 * -EINVAL for a bad port or length; -ENOMEM.
 */
int netdrv_xmit(struct netdrv *nd, unsigned int port, const void *frame,
		size_t len)
{
	int ret;

	if (port >= nd->nports)
		return -EINVAL;
	pthread_mutex_lock(&nd->lock);
	ret = nd_port_xmit(nd->port[port], frame, len);
	pthread_mutex_unlock(&nd->lock);
	return ret;
}

/* Resets a device that stopped working and carries on where it stopped. */
static void netdrv_restart(struct netdrv *nd)
{
	nd->stats.resets++;
	dev_err(nd->dev, "transmit timed out: resetting the device\n");
	if (netdrv_hw_reset(nd)) {
		dev_err(nd->dev, "the device does not reset\n");
		return;
	}
	/* The line is disabled, so its handler is not running. */
	nd->int_acked = 0;
	netdrv_poll(nd); /* what it finished before it hung */
	netdrv_hw_start(nd);
}

/**
 * netdrv_watchdog() - look for a lost interrupt or a hung device
 * @nd: the driver's state
 *
 * What the kernel's transmit watchdog timer does, run when the stack
 * waited a while for nothing. Events the device counted but nobody
 * acknowledged mean a lost interrupt: they are handled here. Transmit
 * descriptors that stay out for WATCHDOG_TICKS looks mean a hung device:
 * it is reset and given back what it had not done, so no frame is lost.
 *
 * Context: the stack's thread; takes the line and the lock.
 */
static void netdrv_watchdog(struct netdrv *nd)
{
	uint32_t status, tx_head = 0;
	bool tx_pending = false;

	disable_irq(nd->irq);
	pthread_mutex_lock(&nd->lock);
	status = readl(nd->regs + SN_INT_STATUS);
	if (status != nd->int_acked) {
		nd->stats.missed_irqs++;
		dev_warn(nd->dev, "missed interrupt (events %u, acked %u)\n",
			 status, nd->int_acked);
		writel(status, nd->regs + SN_INT_ACK);
		nd->int_acked = status;
		netdrv_poll(nd);
	}
	for (unsigned int i = 0; i < nd->nports; i++) {
		tx_pending |= nd->port[i]->tx.tail != nd->port[i]->tx.head;
		tx_head += nd->port[i]->tx.head;
	}
	if (!tx_pending || tx_head != nd->wd_tx_head)
		nd->wd_ticks = 0;
	else if (++nd->wd_ticks >= WATCHDOG_TICKS) {
		nd->wd_ticks = 0;
		netdrv_restart(nd);
	}
	nd->wd_tx_head = tx_head;
	pthread_mutex_unlock(&nd->lock);
	enable_irq(nd->irq);
}

/**
 * netdrv_wait() - wait for the device to finish something
 * @nd: the driver's state
 * @timeout_ms: how long
 *
 * Runs the watchdog when nothing came in @timeout_ms.
 *
 * Context: the stack's thread.
 * Return: 0 when something was finished, -ETIMEDOUT, or -errno of poll().
 */
int netdrv_wait(struct netdrv *nd, int timeout_ms)
{
	struct pollfd pfd = { .fd = nd->wake_fd, .events = POLLIN };
	uint64_t count;
	int ret = poll(&pfd, 1, timeout_ms);

	if (ret < 0)
		return -errno;
	if (ret == 0) {
		netdrv_watchdog(nd);
		return -ETIMEDOUT;
	}
	if (read(nd->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/**
 * netdrv_get_stats() - read the driver's counters
 * @nd: the driver's state
 * @ret_stats: filled in
 *
 * Context: any thread.
 */
void netdrv_get_stats(struct netdrv *nd, struct netdrv_stats *ret_stats)
{
	pthread_mutex_lock(&nd->lock);
	*ret_stats = nd->stats;
	pthread_mutex_unlock(&nd->lock);
}
