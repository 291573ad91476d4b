// SPDX-License-Identifier: MIT
/*
 * The demo: a simulated two-port network controller (the SN-2, simdev.c)
 * and its driver (netdrv.c, netport.c), whose every resource is managed.
 *
 * The board declares the device (a register window, an interrupt line),
 * the driver binds, and the program, as a network stack would, moves
 * frames through both ports, each way, checking every checksum. Then it
 * shows what the bound device holds and what that costs, unbinds and
 * checks that nothing is left, and sweeps the driver's probe: fails it at
 * every acquisition in turn, checking each time that nothing leaked. The
 * device can be told to misbehave; the driver's answer shows in the log.
 * It exits 0 only when every check held.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/fault.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "board.h"
#include "hw.h"
#include "netdrv.h"
#include "simdev.h"

#define WAIT_MS 100
#define TRAFFIC_TIMEOUT_S 50

/*
 * The devres core's bookkeeping (src/base/internal.h, measured in
 * docs/PERFORMANCE.md): a node header is a pointer and two 32-bit words,
 * a group two headers and an id.
 */
#define NODE_HDR(ptr) ((ptr) + 8)
#define GROUP_HDR(ptr) (2 * NODE_HDR(ptr) + (ptr))

struct opts {
	unsigned long packets;
	unsigned int fail;
	bool drop_irq, corrupt, stall, pci;
};

/* The stack's receive side: in the driver's interrupt thread. */
struct rx_side {
	uint32_t next[SN_MAX_PORTS];
	unsigned long good, bad, gaps;
};

static bool tty;
static bool log_quiet;
static unsigned long log_hidden;
static struct timespec t_start;

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void log_line(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	/* A sweep fails the probe a few hundred times: keep its verdict. */
	if (__atomic_load_n(&log_quiet, __ATOMIC_RELAXED) &&
	    strncmp(line, "probe sweep", 11) != 0) {
		__atomic_fetch_add(&log_hidden, 1, __ATOMIC_RELAXED);
		return;
	}
	printf("%s    %s\n", tty ? "\r\033[K" : "", line);
}

static void rx_frame(void *ctx, unsigned int port, const void *frame,
		     size_t len)
{
	struct rx_side *rx = ctx;
	uint32_t seq;

	if (sn_frame_check(frame, len, port, rx->next[port])) {
		rx->next[port]++;
		__atomic_fetch_add(&rx->good, 1, __ATOMIC_RELAXED);
		return;
	}
	/* A frame the driver dropped leaves a gap; anything else is bad. */
	seq = len >= 8 ? sn_frame_seq(frame) : 0;
	if (seq > rx->next[port] && sn_frame_check(frame, len, port, seq)) {
		__atomic_fetch_add(&rx->gaps, seq - rx->next[port],
				   __ATOMIC_RELAXED);
		__atomic_fetch_add(&rx->good, 1, __ATOMIC_RELAXED);
		rx->next[port] = seq + 1;
		return;
	}
	__atomic_fetch_add(&rx->bad, 1, __ATOMIC_RELAXED);
}

static unsigned long rx_count(struct rx_side *rx, unsigned long *ret_gaps)
{
	*ret_gaps = __atomic_load_n(&rx->gaps, __ATOMIC_RELAXED);
	return __atomic_load_n(&rx->good, __ATOMIC_RELAXED) +
	       __atomic_load_n(&rx->bad, __ATOMIC_RELAXED);
}

static void progress(unsigned long tx, unsigned long rx, unsigned long total,
		     double t, bool last)
{
	static int quarter;
	int q = (int)(4 * (tx + rx) / (2 * total));

	if (tty) {
		printf("\r  tx %7lu/%lu  rx %7lu/%lu  %3d%%  %.1f s%s", tx,
		       total, rx, total, (int)(100 * (tx + rx) / (2 * total)),
		       t, last ? "\n" : "");
		fflush(stdout);
	} else if (q > quarter || last) {
		quarter = q;
		printf("  tx %lu/%lu  rx %lu/%lu  %.1f s\n", tx, total, rx,
		       total, t);
	}
}

/* Sends per_port frames on each port and waits for as many from each. */
static bool traffic(struct netdrv *nd, struct simdev *sd, unsigned long total)
{
	static uint8_t frame[SN_MAX_PORTS][SN_BUF_SIZE];
	unsigned long per_port = total / SN_MAX_PORTS, gaps;
	size_t len[SN_MAX_PORTS] = { 0 };
	uint32_t seq[SN_MAX_PORTS] = { 0 };
	struct rx_side rx = { { 0 }, 0, 0, 0 };
	struct netdrv_stats s;
	struct timespec t0;
	double last = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	netdrv_set_rx_handler(nd, rx_frame, &rx);
	simdev_feed(sd, per_port);
	for (;;) {
		unsigned long tx_done, rx_done;

		for (unsigned int p = 0; p < SN_MAX_PORTS; p++) {
			while (seq[p] < per_port) {
				int ret;

				if (!len[p])
					len[p] = sn_frame_fill(frame[p], p,
							       seq[p]);
				ret = netdrv_xmit(nd, p, frame[p], len[p]);
				if (ret == -EBUSY)
					break;
				if (ret) {
					printf("  transmit: error %d\n", ret);
					return false;
				}
				len[p] = 0;
				seq[p]++;
			}
		}
		netdrv_get_stats(nd, &s);
		tx_done = s.tx_packets + s.tx_errors;
		rx_done = rx_count(&rx, &gaps) + s.rx_crc_errors +
			  s.rx_length_errors;
		if (tx_done == total && rx_done == total)
			break;
		if (since(&t0) > TRAFFIC_TIMEOUT_S) {
			printf("\n  stuck: %lu sent, %lu received\n", tx_done,
			       rx_done);
			return false;
		}
		if (since(&t0) - last >= 0.1) {
			last = since(&t0);
			progress(tx_done, rx_done, total, last, false);
		}
		netdrv_wait(nd, WAIT_MS);
	}
	progress(total, total, total, since(&t0), true);
	netdrv_set_rx_handler(nd, NULL, NULL);
	rx_count(&rx, &gaps);
	printf("  %.0f frames/s each way, %lu good, %lu bad, %lu missing\n",
	       (double)total / since(&t0), rx.good, rx.bad, gaps);
	return rx.bad == 0 && rx.good + gaps == total;
}

/* Compares what the driver, the device and the stack counted. */
static bool verdict(struct netdrv *nd, struct simdev *sd, unsigned long total,
		    const struct opts *o)
{
	struct simdev_stats d;
	struct netdrv_stats s;
	bool ok = true;

	netdrv_get_stats(nd, &s);
	simdev_get_stats(sd, &d);
	printf("  device: %lu frames taken in sequence with good checksums,"
	       " %lu bad, %lu out of sequence; %lu sent\n",
	       d.tx_ok, d.tx_bad_csum, d.tx_bad_seq, d.rx_frames);
	printf("  driver: %lu sent, %lu received; dropped: %lu bad checksums, "
	       "%lu bad lengths; missed interrupts: %lu; resets: %lu\n",
	       s.tx_packets, s.rx_packets, s.rx_crc_errors, s.rx_length_errors,
	       s.missed_irqs, s.resets);
	ok &= d.tx_ok == total && !d.tx_bad_csum && !d.tx_bad_seq;
	ok &= s.tx_packets == total && !s.tx_errors && !d.dma_errors;
	ok &= s.rx_crc_errors + s.rx_length_errors == d.corrupted;
	ok &= s.rx_packets + d.corrupted == total;
	if (o->drop_irq && !(d.dropped_irqs == 1 && s.missed_irqs)) {
		printf("  the dropped interrupt went unnoticed\n");
		ok = false;
	}
	if (o->corrupt && d.corrupted != SN_MAX_PORTS) {
		printf("  %lu frames corrupted, not %d\n", d.corrupted,
		       SN_MAX_PORTS);
		ok = false;
	}
	if (o->stall && !(d.stalls == 1 && s.resets)) {
		printf("  the stall went unnoticed\n");
		ok = false;
	}
	return ok;
}

/* Prints the dump; returns the number of groups in it. */
static int dump(struct device *dev)
{
	char *text = NULL, *line, *save = NULL;
	size_t size = 0;
	int groups = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return -1;
	devres_dump(dev, f);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		groups += strncmp(line, "  group ", 8) == 0;
		printf("  %s\n", line);
	}
	free(text);
	return groups;
}

static void bookkeeping(struct device *dev, int groups)
{
	struct devres_stats st;
	size_t p = sizeof(void *), nodes, nr_groups = (size_t)groups;

	devres_get_stats(dev, &st);
	nodes = (size_t)st.allocs;
	printf("  bookkeeping: %d nodes x %zu B + %d group x %zu B = %zu B on "
	       "this %zu-bit build (%zu B on 32-bit)\n",
	       st.allocs, NODE_HDR(p), groups, GROUP_HDR(p),
	       nodes * NODE_HDR(p) + nr_groups * GROUP_HDR(p), 8 * p,
	       nodes * NODE_HDR(4) + nr_groups * GROUP_HDR(4));
	printf("  the seed's figure, ahci with two ports: 300 to 400 B on "
	       "32-bit; the data itself: %d B\n",
	       st.total_size);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: demo [options]\n"
		   "  -n, --packets N   frames each way, over two ports "
		   "(default 100000)\n"
		   "      --drop-irq    the device drops an interrupt\n"
		   "      --corrupt     the device corrupts two completions "
		   "(a checksum, a length)\n"
		   "      --stall       the device hangs until it is reset\n"
		   "      --fail N      fail the first bind at its N-th "
		   "acquisition, logged\n"
		   "                    (250, say: in the second port)\n"
		   "      --pci         the device on PCI (a fake sysfs tree), "
		   "not the platform bus\n"
		   "  -h, --help        this text\n"
		   "DEVRES_LOG=1 shows every managed acquisition and "
		   "release.\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "packets", required_argument, NULL, 'n' },
		{ "drop-irq", no_argument, NULL, 'd' },
		{ "corrupt", no_argument, NULL, 'c' },
		{ "stall", no_argument, NULL, 's' },
		{ "fail", required_argument, NULL, 'f' },
		{ "pci", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	*o = (struct opts){ .packets = 100000 };
	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			errno = 0;
			o->packets = strtoul(optarg, &end, 10);
			if (errno || *end || o->packets < 100 ||
			    o->packets > 100000000) {
				fprintf(stderr, "--packets: 100 to 10^8\n");
				return 2;
			}
			break;
		case 'd':
			o->drop_irq = true;
			break;
		case 'c':
			o->corrupt = true;
			break;
		case 's':
			o->stall = true;
			break;
		case 'p':
			o->pci = true;
			break;
		case 'f':
			errno = 0;
			o->fail = (unsigned int)strtoul(optarg, &end, 10);
			if (errno || *end || !o->fail || o->fail > 100000) {
				fprintf(stderr, "--fail: 1 to 100000\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Prints what differs from @before; true when that is as wanted. */
static bool ledger(const struct devres_ledger *before, bool want_empty)
{
	struct devres_ledger now;
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	int n;

	if (!f)
		return false;
	devres_ledger_snapshot(&now);
	n = devres_ledger_diff(before, &now, f);
	fclose(f);
	printf("%s", n ? "" : "    nothing\n");
	for (char *line = text, *nl; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		printf("  %.*s\n", (int)(nl - line), line);
	}
	free(text);
	return want_empty ? n == 0 : n > 0;
}

/*
 * Registers the driver with the n-th fault-injectable call failing and the
 * log on: a failure inside the port mid-layer shows its group released
 * first, then the probe's error, then the rest released by the driver
 * core. Returns whether the driver is registered.
 */
static bool register_failing(struct board *b, unsigned int n, bool log_on)
{
	bool reached;
	int ret;

	devres_set_log(true);
	devres_fail_nth(n);
	ret = b->driver_register();
	reached = devres_fail_nth_get() == 0;
	devres_fail_nth(0);
	devres_set_log(log_on);
	if (!reached)
		printf("  (no acquisition %u: the bind has fewer)\n", n);
	else if (ret)
		printf("  the registration failed (%d); again:\n", ret);
	else
		printf("  the probe failed; again:\n");
	return ret == 0;
}

int main(int argc, char **argv)
{
	struct devres_ledger at_start, unbound;
	struct devres_sweep_result r = { 0 };
	struct simdev_config cfg;
	struct netdrv *nd;
	struct board b;
	const char *log_env;
	bool ok = true, log_on;
	struct opts o;
	int ret, groups;

	ret = parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	o.packets -= o.packets % SN_MAX_PORTS;
	setvbuf(stdout, NULL, _IOLBF, 0);
	tty = isatty(STDOUT_FILENO);
	devres_set_log_sink(log_line, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	devres_ledger_snapshot(&at_start);

	cfg = (struct simdev_config){
		.drop_irq_at = o.drop_irq ? o.packets : 0,
		.corrupt_at = o.corrupt ? o.packets / 4 : 0,
		.stall_at = o.stall ? o.packets / 3 : 0,
	};
	ret = o.pci ? board_pci_create(&b, &cfg)
		    : board_platform_create(&b, &cfg);
	if (ret) {
		printf("demo: cannot set the %s board up: %s\n", b.bus,
		       strerror(-ret));
		b.destroy(&b);
		return 1;
	}
	printf("1. the board: an SN-2 on the %s bus (%s; irq %d); its "
	       "model runs in a thread\n",
	       b.bus, b.where, simdev_irq(b.sd));
	devres_ledger_snapshot(&unbound);

	log_env = secure_getenv("DEVRES_LOG");
	log_on = log_env && strcmp(log_env, "1") == 0;
	printf("\n2. the driver binds:\n");
	if (o.fail && register_failing(&b, o.fail, log_on))
		ret = device_is_bound(b.dev) ? 0 : device_attach(b.dev) - 1;
	else
		ret = b.driver_register();
	if (ret || !device_is_bound(b.dev)) {
		printf("  the driver did not bind\n");
		return 1;
	}
	nd = dev_get_drvdata(b.dev);
	if (!log_on)
		printf("  (DEVRES_LOG=1 shows each acquisition and release)\n");

	printf("\n3. %lu frames each way over two ports, every checksum "
	       "checked%s%s%s:\n",
	       o.packets, o.drop_irq ? "; an interrupt will be lost" : "",
	       o.corrupt ? "; two completions will be corrupted" : "",
	       o.stall ? "; the device will hang" : "");
	ok &= traffic(nd, b.sd, o.packets);
	ok &= verdict(nd, b.sd, o.packets, &o);

	printf("\n4. what the bound device holds (devres_dump):\n");
	groups = dump(b.dev);
	bookkeeping(b.dev, groups);
	printf("  the ledger, against before the bind:\n");
	ok &= ledger(&unbound, false);

	printf("\n5. unbind: remove, then every resource, newest first\n");
	device_release_driver(b.dev);
	printf("  the ledger, against before the bind:\n");
	ok &= ledger(&unbound, true);

	printf("\n6. the probe, failed at each acquisition in turn:\n");
	__atomic_store_n(&log_quiet, true, __ATOMIC_RELAXED);
	ret = driver_probe_sweep(b.drv, b.dev, &r);
	__atomic_store_n(&log_quiet, false, __ATOMIC_RELAXED);
	printf("  (%lu lines of the probes' own errors not shown)\n",
	       log_hidden);
	ok &= ret == 0 && r.leaks == 0 && r.points > 0;

	b.driver_unregister();
	b.destroy(&b);
	printf("\n7. the device gone too; the ledger, against the start:\n");
	ok &= ledger(&at_start, true);

	printf("\ndemo: %s in %.1f s\n",
	       ok ? "every check held" : "A CHECK FAILED", since(&t_start));
	return ok ? 0 : 1;
}
