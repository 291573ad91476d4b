/* SPDX-License-Identifier: MIT */
/*
 * A fake uio_pci_generic device for the UIO tests: a fake PCI function
 * whose `driver` link names uio_pci_generic, with a uio/uioN directory,
 * and for its /dev/uioN a pseudo-terminal in raw mode. The library opens
 * the terminal's slave by the node's name (a symlink in a directory of
 * the test) and checks its device number against uio/uioN/dev; the test
 * holds the master: 4 bytes written there are an interrupt the library
 * reads, and the library's 4-byte unmask (1) and mask (0) writes are read
 * back from it. Include after pcitest.h.
 */
#ifndef DEVRES_TESTS_UIOTEST_H
#define DEVRES_TESTS_UIOTEST_H

#include <poll.h>
#include <stdint.h>
#include <termios.h>
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

/* An interrupt: what uio_pci_generic makes readable at each one. */
static inline int uio_fire(struct fake_uio *u, uint32_t count)
{
	return write(u->master, &count, sizeof(count)) == sizeof(count) ? 0
									: -1;
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

#endif /* DEVRES_TESTS_UIOTEST_H */
