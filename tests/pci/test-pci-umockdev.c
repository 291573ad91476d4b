// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * An unmodified driver against the default sysfs path, /sys, under
 * umockdev-run (Debian's umockdev), which redirects /sys to a tree it
 * builds from a description. This proves the default path works end to
 * end: scan, enable, config, regions and mapped registers. Skips (77)
 * where umockdev-run is absent.
 *
 * Safety: this VM's PCI devices are its own disk and network. Before
 * anything may write, the child proves the redirect twice, with reads
 * only: a marker only the fake tree holds, read through the very call the
 * library makes (open("/sys") then a path beneath it), and a read-only
 * scan that must see exactly the fake device with the marker in its config
 * space. If either fails, it skips without writing. The driver's id table
 * matches only the fake device's ids, which no real device here has.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/pci.h>

#define ADDR "0000:00:04.0"
#define VENDOR 0x1234
#define DEVICE 0xfe11
#define DEVDIR "/sys/bus/pci/devices/" ADDR

static uint32_t token;

static int probes;

static int fake_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	void __iomem *regs;
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, 1, "umockdev-test");
	if (ret)
		return ret;
	regs = pcim_iomap_table(pdev)[0];
	writel(token, (char *)regs + 8);
	pci_set_master(pdev);
	probes++;
	return 0;
}

static const struct pci_device_id fake_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver fake_drv = {
	.name = "umockdev-test",
	.id_table = fake_ids,
	.probe = fake_probe,
};

static ssize_t read_sys(const char *file, void *buf, size_t len, off_t off)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), DEVDIR "/%s", file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, off);
	close(fd);
	return n;
}

/* The redirect, checked the way the library opens: "/sys", then beneath. */
static bool redirected(void)
{
	char buf[32] = "", want[32];
	ssize_t n;
	int root, fd;

	if (!getenv("UMOCKDEV_DIR"))
		return false;
	root = open("/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return false;
	fd = openat(root, "bus/pci/devices/" ADDR "/devres_marker",
		    O_RDONLY | O_CLOEXEC);
	close(root);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	snprintf(want, sizeof(want), "%08x", token);
	return n >= 8 && strncmp(buf, want, 8) == 0;
}

/* A read-only scan of /sys sees exactly the fake device. */
static bool library_redirected(void)
{
	struct pci_dev *p;
	uint32_t v = 0;
	bool ok;

	pci_sysfs_set_readonly(true);
	ok = pci_bus_scan() == 1;
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	ok = ok && p && p->vendor == VENDOR && p->device == DEVICE &&
	     strcmp(pci_name(p), ADDR) == 0 &&
	     pci_read_config_dword(p, 0x40, &v) == 0 && v == token;
	pci_dev_put(p);
	pci_bus_remove_all();
	pci_sysfs_set_readonly(false);
	return ok;
}

static void test_default_root(void **state)
{
	char buf[8];
	uint32_t reg = 0;
	uint16_t cmd;
	struct pci_dev *p;

	(void)state;
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(p);
	assert_int_equal(pci_register_driver(&fake_drv), 0);
	assert_int_equal(probes, 1);
	assert_true(device_is_bound(&p->dev));
	assert_int_equal(read_sys("enable", buf, 1, 0), 1);
	assert_int_equal(buf[0], '1');
	assert_int_equal(read_sys("resource0", &reg, 4, 8), 4);
	assert_int_equal(reg, token);
	assert_int_equal(read_sys("config", &cmd, 2, PCI_COMMAND), 2);
	assert_true(cmd & PCI_COMMAND_MASTER);
	pci_unregister_driver(&fake_drv);
	assert_int_equal(read_sys("enable", buf, 1, 0), 1);
	assert_int_equal(buf[0], '0');
	pci_dev_put(p);
	pci_bus_remove_all();
}

static int child(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_root),
	};
	const char *t = getenv("DEVRES_UMOCKDEV_TOKEN");

	if (!t)
		return 77;
	token = (uint32_t)strtoul(t, NULL, 16);
	/* Never the real /sys: the default root, proved fake, or nothing. */
	unsetenv("DEVRES_SYSFS_ROOT");
	if (!redirected() || !library_redirected()) {
		printf("umockdev did not redirect /sys: skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

static void hex(FILE *f, const void *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", ((const uint8_t *)data)[i]);
}

/* The device, in umockdev's description format. */
static int describe(const char *path)
{
	uint8_t cfg[256] = { 0 }, bar[4096] = { 0 };
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	cfg[0] = VENDOR & 0xff;
	cfg[1] = VENDOR >> 8;
	cfg[2] = DEVICE & 0xff;
	cfg[3] = DEVICE >> 8;
	cfg[0x0b] = 0xff;
	memcpy(cfg + 0x40, &token, 4);
	fprintf(f, "P: /devices/pci0000:00/" ADDR "\n");
	fprintf(f, "E: SUBSYSTEM=pci\n");
	fprintf(f, "A: enable=0\n");
	fprintf(f, "A: devres_marker=%08x\n", token);
	fprintf(f, "A: resource=0x00000000fe000000 0x00000000fe000fff "
		   "0x0000000000040200\\n\n");
	fprintf(f, "H: config=");
	hex(f, cfg, sizeof(cfg));
	fprintf(f, "\nH: resource0=");
	hex(f, bar, sizeof(bar));
	fprintf(f, "\n");
	return fclose(f);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/devres-umockdev-XXXXXX", desc[64], tok[16];
	char asan[512], self[4096];
	const char *old;
	ssize_t n;
	int status;
	pid_t pid;

	if (argc == 2 && strcmp(argv[1], "--in-umockdev") == 0)
		return child();
	if (system("command -v umockdev-run >/dev/null 2>&1") != 0) {
		printf("umockdev-run not installed: skipped\n");
		return 77;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	token = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
	snprintf(tok, sizeof(tok), "%08x", token);
	if (!mkdtemp(dir))
		return 1;
	snprintf(desc, sizeof(desc), "%s/edu.umockdev", dir);
	if (describe(desc))
		return 1;
	/* umockdev preloads itself: ASan must not insist on coming first. */
	old = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0",
		 old ? old : "", old ? ":" : "");
	pid = fork();
	if (pid == 0) {
		setenv("DEVRES_UMOCKDEV_TOKEN", tok, 1);
		setenv("ASAN_OPTIONS", asan, 1);
		execlp("umockdev-run", "umockdev-run", "-d", desc, "--", self,
		       "--in-umockdev", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = 1 << 8;
	unlink(desc);
	rmdir(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
