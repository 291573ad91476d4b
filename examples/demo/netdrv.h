/* SPDX-License-Identifier: MIT */
/*
 * The SN-2 driver's face to the network stack (here, the demo program):
 * a platform driver, a transmit call, a receive callback, a wait.
 */
#ifndef NETDRV_H
#define NETDRV_H

#include <stddef.h>

struct netdrv;
struct pci_driver;
struct platform_driver;

/* Called for each good received frame, in the driver's interrupt thread. */
typedef void (*netdrv_rx_t)(void *ctx, unsigned int port, const void *frame,
			    size_t len);

/**
 * struct netdrv_stats - what the driver counted
 * @tx_packets: frames the device took
 * @tx_errors: frames the device refused (bad checksum, unreachable)
 * @rx_packets: frames received and passed on
 * @rx_crc_errors: received frames whose checksum was wrong (dropped)
 * @rx_length_errors: received frames with an impossible length (dropped)
 * @missed_irqs: completions found by the watchdog with no interrupt
 * @resets: device resets after a transmit timeout
 */
struct netdrv_stats {
	unsigned long tx_packets, tx_errors;
	unsigned long rx_packets, rx_crc_errors, rx_length_errors;
	unsigned long missed_irqs, resets;
};

extern struct platform_driver netdrv_driver;
extern struct pci_driver netdrv_pci_driver;

void netdrv_set_rx_handler(struct netdrv *nd, netdrv_rx_t fn, void *ctx);
int netdrv_xmit(struct netdrv *nd, unsigned int port, const void *frame,
		size_t len);
int netdrv_wait(struct netdrv *nd, int timeout_ms);
void netdrv_get_stats(struct netdrv *nd, struct netdrv_stats *ret_stats);

#endif /* NETDRV_H */
