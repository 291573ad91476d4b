/* SPDX-License-Identifier: MIT */
/*
 * The SN-2's device model: the hardware side of hw.h, run in a thread of
 * its own, as a vfio-user server would run it in a process of its own.
 *
 * It owns a file that holds its registers (a memfd behind a register
 * window on the platform bus, a BAR's resource0 on PCI), raises an
 * interrupt line, and reaches DMA memory only through the bus addresses
 * the driver gives it, translated by dma_iova_to_virt() as an IOMMU would.
 * It is also the wire: it checks the frames the driver transmits and
 * generates the frames the driver receives (sn_frame_fill()).
 */
#ifndef SIMDEV_H
#define SIMDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct device;
struct simdev;

/**
 * struct simdev_config - how the device misbehaves, when told to
 * @drop_irq_at: drop the first interrupt raised once this many frames were
 *               completed (0: never)
 * @corrupt_at: corrupt the received frame of this sequence number: its
 *              checksum on port 0, its length on port 1 (0: never)
 * @stall_at: stop working, until reset, before transmitting the frame
 *            after this many (0: never)
 */
struct simdev_config {
	unsigned long drop_irq_at;
	unsigned long corrupt_at;
	unsigned long stall_at;
};

/**
 * struct simdev_stats - what the device saw and did
 * @tx_ok: transmitted frames with a good checksum, in sequence
 * @tx_bad_csum: transmitted frames whose checksum was wrong
 * @tx_bad_seq: transmitted frames out of sequence (lost or repeated)
 * @rx_frames: frames handed to the driver
 * @corrupted: frames corrupted on purpose
 * @dropped_irqs: interrupts dropped on purpose
 * @stalls: stalls on purpose
 * @resets: resets done
 * @dma_errors: descriptors or rings it could not reach
 */
struct simdev_stats {
	unsigned long tx_ok, tx_bad_csum, tx_bad_seq, rx_frames;
	unsigned long corrupted, dropped_irqs, stalls, resets, dma_errors;
};

/**
 * simdev_create() - make the device: its registers and its interrupt line
 * @fd: a file of at least SN_REGS_SIZE bytes that holds the registers,
 *      which the bus maps for the driver: a memfd behind a register window
 *      (platform), a fake sysfs resource0 (PCI); the caller keeps it
 * @cfg: how it misbehaves
 *
 * Return: the device, or NULL with errno set.
 */
struct simdev *simdev_create(int fd, const struct simdev_config *cfg);

/**
 * simdev_irq() - the device's interrupt line
 * @sd: the device
 *
 * Return: the line's number, for the device's IORESOURCE_IRQ resource.
 */
int simdev_irq(const struct simdev *sd);

/**
 * simdev_start() - power the device on
 * @sd: the device
 * @dev: the struct device the driver binds to: whose bus addresses the
 *       device is given (its IOMMU context)
 *
 * Starts the device's thread. It does nothing until a driver enables it.
 *
 * Return: 0, or -EAGAIN.
 */
int simdev_start(struct simdev *sd, struct device *dev);

/**
 * simdev_feed() - frames arrive on the wire
 * @sd: the device
 * @frames_per_port: how many will arrive on each port, from now
 */
void simdev_feed(struct simdev *sd, unsigned long frames_per_port);

/**
 * simdev_get_stats() - read the device's counters
 * @sd: the device
 * @ret_stats: filled in
 */
void simdev_get_stats(struct simdev *sd, struct simdev_stats *ret_stats);

/**
 * simdev_destroy() - power the device off and remove it
 * @sd: the device, or NULL
 *
 * Stops its thread, unmaps its registers, destroys its line. No driver may
 * be bound to it any more.
 */
void simdev_destroy(struct simdev *sd);

/* The wire: frame @seq of @port, 60 to 1514 bytes, and its check. */
size_t sn_frame_fill(void *buf, unsigned int port, uint32_t seq);
bool sn_frame_check(const void *buf, size_t len, unsigned int port,
		    uint32_t seq);
uint32_t sn_frame_seq(const void *buf);

#endif /* SIMDEV_H */
