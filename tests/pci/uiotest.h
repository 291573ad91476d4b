/* SPDX-License-Identifier: MIT */
/*
 * A fake uio_pci_generic device for the UIO tests: a fake PCI function
 * whose `driver` link names uio_pci_generic, with a uio/uioN directory,
 * and for its /dev/uioN a pseudo-terminal in raw mode. The library opens
 * the terminal's slave by the node's name (a symlink in a directory of
 * the test) and checks its device number against uio/uioN/dev; the test
 * holds the master: 4 bytes written there are an interrupt the library
 * reads. As uio_pci_generic does, an interrupt first sets the INTx disable
 * bit in config space; the library unmasks by clearing it, and writes
 * nothing to the node (uio_next_write() sees that). Include after
 * pcitest.h.
 */
#ifndef DEVRES_TESTS_UIOTEST_H
#define DEVRES_TESTS_UIOTEST_H

#include <poll.h>
#include <stdint.h>
#include <termios.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <devres/uio.h>

struct fake_uio {
	int master; /* the device's side */
	int slave;  /* held open so that the terminal stays raw and alive */
};

static char uio_dir[4096];

static inline int uio_dir_make(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(uio_dir, sizeof(uio_dir), "%s/devres-uio-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(uio_dir) ? 0 : -1;
}

static inline void uio_dir_remove(void)
{
	char path[4200];

	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/uio%d", uio_dir, i);
		unlink(path);
	}
	rmdir(uio_dir);
}

/* Makes @name a uio_pci_generic device, uio@num, its node a terminal. */
static inline int fake_uio_add(const char *name, int num, struct fake_uio *u)
{
	char path[4096], node[4200], buf[32];
	struct termios t;
	struct stat st;

	u->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (u->master < 0 || grantpt(u->master) || unlockpt(u->master) ||
	    !ptsname(u->master))
		return -1;
	u->slave = open(ptsname(u->master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (u->slave < 0 || tcgetattr(u->slave, &t) || fstat(u->slave, &st))
		return -1;
	cfmakeraw(&t);
	if (tcsetattr(u->slave, TCSANOW, &t))
		return -1;
	snprintf(node, sizeof(node), "%s/uio%d", uio_dir, num);
	if (symlink(ptsname(u->master), node))
		return -1;
	if (pci_fake_path(ft, name, "driver", path, sizeof(path)) ||
	    symlink("../../../bus/pci/drivers/uio_pci_generic", path))
		return -1;
	if (pci_fake_path(ft, name, "uio", path, sizeof(path)) ||
	    mkdir(path, 0755))
		return -1;
	snprintf(node, sizeof(node), "%s/uio%d", path, num);
	if (mkdir(node, 0755))
		return -1;
	snprintf(buf, sizeof(buf), "%u:%u\n", major(st.st_rdev),
		 minor(st.st_rdev));
	snprintf(node, sizeof(node), "uio/uio%d/dev", num);
	return fake_write(name, node, buf, strlen(buf));
}

static inline void fake_uio_close(struct fake_uio *u)
{
	if (u->master >= 0)
		close(u->master);
	if (u->slave >= 0)
		close(u->slave);
	u->master = u->slave = -1;
}

/* The command register of fake device @name, read or written in place. */
static inline int fake_cmd(const char *name, uint16_t *cmd, bool write)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(ft, name, "config", path, sizeof(path)))
		return -1;
	fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write ? pwrite(fd, cmd, 2, PCI_COMMAND)
		  : pread(fd, cmd, 2, PCI_COMMAND);
	close(fd);
	return n == 2 ? 0 : -1;
}

/*
 * An interrupt, as uio_pci_generic's handler makes one: INTx masked in
 * config space, then the event count readable on the node.
 */
static inline int uio_fire(const char *name, struct fake_uio *u, uint32_t count)
{
	uint16_t cmd;

	if (fake_cmd(name, &cmd, false))
		return -1;
	cmd |= PCI_COMMAND_INTX_DISABLE;
	if (fake_cmd(name, &cmd, true))
		return -1;
	return write(u->master, &count, sizeof(count)) == sizeof(count) ? 0
									: -1;
}

/* Whether INTx of @name is masked; -1 when config cannot be read. */
static inline int uio_masked(const char *name)
{
	uint16_t cmd;

	if (fake_cmd(name, &cmd, false))
		return -1;
	return (cmd & PCI_COMMAND_INTX_DISABLE) != 0;
}

/* Waits up to @ms for INTx of @name to be unmasked; whether it was. */
static inline bool uio_wait_unmasked(const char *name, int ms)
{
	struct timespec tick = { 0, 1000 * 1000 };

	for (int i = 0; i <= ms; i++) {
		if (uio_masked(name) == 0)
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

/*
 * The next 4-byte write of the library to the device (1 unmasks INTx, 0
 * masks it), waiting up to @ms; -1 when none came.
 */
static inline long uio_next_write(struct fake_uio *u, int ms)
{
	struct pollfd p = { .fd = u->master, .events = POLLIN };
	uint32_t v;

	if (poll(&p, 1, ms) != 1 || read(u->master, &v, sizeof(v)) != sizeof(v))
		return -1;
	return (long)v;
}

/*
 * A probe's INTx vector through the UIO backend: the device enabled
 * (managed), its one vector allocated; the vector's irq, or an error.
 */
static inline int uio_probe_vector(struct pci_dev *pdev)
{
	int ret = pcim_enable_device(pdev);

	if (!ret)
		ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
	return ret < 0 ? ret : pci_irq_vector(pdev, 0);
}

#endif /* DEVRES_TESTS_UIOTEST_H */
