// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The resource tree: the kernel's conflict rules for requests (overlap at
 * either end, containment, adjacency, zero size, end overflow, nesting in
 * a busy or a describing range), insertion above and below, release and
 * removal, the /proc/iomem dump, platform devices' resources in the tree,
 * the managed forms, and the regions count of the ledger.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "testlib.h"

/* Each test uses its own part of the address space, below this. */
#define BASE 0x40000000ull

static long regions_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.regions;
}

static char *tree_dump(const struct resource *root)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_true(resource_dump(root, f) >= 0);
	fclose(f);
	return buf;
}

static void roots(void **state)
{
	(void)state;
	assert_int_equal(iomem_resource.start, 0);
	assert_true(iomem_resource.end == ~(resource_size_t)0);
	assert_string_equal(iomem_resource.name, "PCI mem");
	assert_int_equal(resource_type(&iomem_resource), IORESOURCE_MEM);
	assert_int_equal(ioport_resource.end, 0xffff);
	assert_string_equal(ioport_resource.name, "PCI IO");
	assert_ptr_equal(&iomem_resource, devres_iomem_resource());
}

static void request_and_release(void **state)
{
	long before = regions_now();
	struct resource *r;
	char name[16] = "uart";

	(void)state;
	r = request_mem_region(BASE, 0x100, name);
	assert_non_null(r);
	/* The name is copied: the caller's buffer may go. */
	strcpy(name, "xxxx");
	assert_string_equal(r->name, "uart");
	assert_int_equal(r->start, BASE);
	assert_int_equal(r->end, BASE + 0xff);
	assert_int_equal(r->flags, IORESOURCE_MEM | IORESOURCE_BUSY);
	assert_ptr_equal(r->parent, &iomem_resource);
	assert_int_equal(regions_now(), before + 1);
	release_mem_region(BASE, 0x100);
	assert_int_equal(regions_now(), before);
	/* Released, the range can be claimed again. */
	assert_non_null(request_mem_region(BASE, 0x100, NULL));
	release_mem_region(BASE, 0x100);
}

static void conflicts(void **state)
{
	const resource_size_t s = BASE + 0x10000;

	(void)state;
	assert_non_null(request_mem_region(s, 0x100, "a"));
	/* Overlap at the start, at the end, by one unit each. */
	assert_null(request_mem_region(s - 0x10, 0x11, "b"));
	assert_null(request_mem_region(s + 0xff, 0x10, "b"));
	/* Containment either way, and the same range again. */
	assert_null(request_mem_region(s + 0x10, 0x10, "b"));
	assert_null(request_mem_region(s - 0x10, 0x200, "b"));
	assert_null(request_mem_region(s, 0x100, "b"));
	/* Adjacent ranges on both sides are fine. */
	assert_non_null(request_mem_region(s - 0x10, 0x10, "before"));
	assert_non_null(request_mem_region(s + 0x100, 0x10, "after"));
	release_mem_region(s - 0x10, 0x10);
	release_mem_region(s + 0x100, 0x10);
	release_mem_region(s, 0x100);
}

static void empty_and_wrapping(void **state)
{
	long before = regions_now();

	(void)state;
	assert_null(request_mem_region(BASE, 0, "zero"));
	assert_null(request_mem_region(0, 0, "zero at 0"));
	/* end = start + n - 1 past the top of the space. */
	assert_null(request_mem_region(~(resource_size_t)0 - 1, 4, "wrap"));
	assert_null(request_mem_region(BASE, ~(resource_size_t)0, "wrap"));
	/* The last address alone is fine. */
	assert_non_null(request_mem_region(~(resource_size_t)0, 1, "last"));
	release_mem_region(~(resource_size_t)0, 1);
	/* Ports end at 0xffff. */
	assert_null(request_region(0xfff0, 0x20, "ports"));
	assert_non_null(request_region(0xfff0, 0x10, "ports"));
	assert_int_equal(regions_now(), before + 1);
	release_region(0xfff0, 0x10);
	assert_int_equal(regions_now(), before);
}

static void release_unrequested(void **state)
{
	const resource_size_t s = BASE + 0x20000;
	long before = regions_now();

	(void)state;
	start_capture();
	release_mem_region(s, 0x100);
	expect_warn_on("(no device)", "release_mem_region",
		       "no busy region [0x40020000-0x400200ff] to release");

	/* A different size or start is not the requested range. */
	assert_non_null(request_mem_region(s, 0x100, "a"));
	start_capture();
	release_mem_region(s, 0x80);
	expect_warn_on("(no device)", "release_mem_region", "no busy region");
	start_capture();
	release_mem_region(s + 0x10, 0xf0);
	expect_warn_on("(no device)", "release_mem_region", "no busy region");
	/* Nor is the same range in the other tree. */
	start_capture();
	release_region(0x100, 0x10);
	expect_warn_on("(no device)", "release_region", "no busy region");
	assert_int_equal(regions_now(), before + 1);
	release_mem_region(s, 0x100);
	assert_int_equal(regions_now(), before);
}

static void caller_busy_range_never_freed(void **state)
{
	/* A caller's own busy range, inserted by hand: not ours to free. */
	struct resource mine =
		DEFINE_RES_NAMED(BASE + 0x28000, 0x100, "mine",
				 IORESOURCE_MEM | IORESOURCE_BUSY);

	(void)state;
	assert_int_equal(request_resource(&iomem_resource, &mine), 0);
	start_capture();
	release_mem_region(BASE + 0x28000, 0x100);
	expect_warn_on("(no device)", "release_mem_region", "no busy region");
	assert_ptr_equal(mine.parent, &iomem_resource);
	assert_int_equal(release_resource(&mine), 0);
}

static void nested_requests(void **state)
{
	const resource_size_t s = BASE + 0x30000;
	struct resource bus = DEFINE_RES_MEM_NAMED(s, 0x1000, "bus");
	struct resource *r, *inner;

	(void)state;
	/* Inside a busy region: refused. */
	r = request_mem_region(s, 0x1000, "driver");
	assert_non_null(r);
	assert_null(request_mem_region(s + 0x100, 0x10, "nested"));
	release_mem_region(s, 0x1000);

	/* Inside a range that only describes: nested under it. */
	assert_int_equal(insert_resource(&iomem_resource, &bus), 0);
	r = request_mem_region(s + 0x100, 0x100, "driver");
	assert_non_null(r);
	assert_ptr_equal(r->parent, &bus);
	assert_ptr_equal(bus.child, r);
	/* Across the describing range's boundary: refused. */
	assert_null(request_mem_region(s + 0xf00, 0x200, "across"));
	assert_null(request_mem_region(s - 0x10, 0x20, "across"));
	/* A range inside a busy one may be described by its owner. */
	inner = calloc(1, sizeof(*inner));
	assert_non_null(inner);
	*inner = (struct resource)DEFINE_RES_MEM_NAMED(s + 0x180, 0x10, "sub");
	assert_int_equal(request_resource(r, inner), 0);
	assert_int_equal(release_resource(inner), 0);
	free(inner);
	release_mem_region(s + 0x100, 0x100);
	assert_null(bus.child);
	assert_int_equal(release_resource(&bus), 0);
}

static void request_resource_rules(void **state)
{
	const resource_size_t s = BASE + 0x40000;
	struct resource a = DEFINE_RES_MEM_NAMED(s, 0x100, "a");
	struct resource b = DEFINE_RES_MEM_NAMED(s + 0x80, 0x100, "b");
	struct resource c = DEFINE_RES_MEM_NAMED(s + 0x100, 0x100, "c");
	struct resource d = DEFINE_RES_MEM_NAMED(s + 0x40, 0x10, "d");
	struct resource e = DEFINE_RES_MEM_NAMED(s + 0xf8, 0x10, "e");

	(void)state;
	assert_int_equal(request_resource(&iomem_resource, &a), 0);
	assert_ptr_equal(request_resource_conflict(&iomem_resource, &b), &a);
	assert_int_equal(request_resource(&iomem_resource, &b), -EBUSY);
	assert_int_equal(request_resource(&iomem_resource, &c), 0);
	/* Not inside the root it is asked of. */
	assert_ptr_equal(request_resource_conflict(&a, &e), &a);
	assert_int_equal(request_resource(&a, &d), 0);
	start_capture();
	assert_ptr_equal(request_resource_conflict(&a, &d), &d);
	expect_warn_on("(no device)", "request_resource_conflict",
		       "d is already in the tree");
	start_capture();
	assert_int_equal(request_resource(NULL, &d), -EINVAL);
	expect_warn_on("(no device)", "request_resource", "NULL resource");
	assert_int_equal(release_resource(&c), 0);
	assert_int_equal(release_resource(&c), -EINVAL);
	/* The child goes out with its parent. */
	assert_int_equal(release_resource(&a), 0);
	assert_ptr_equal(a.child, &d);
	assert_ptr_equal(d.parent, &a);
	assert_int_equal(release_resource(&d), 0);
}

static void insert_resource_rules(void **state)
{
	const resource_size_t s = BASE + 0x50000;
	struct resource x = DEFINE_RES_MEM_NAMED(s + 0x100, 0x100, "x");
	struct resource y = DEFINE_RES_MEM_NAMED(s + 0x300, 0x100, "y");
	struct resource big = DEFINE_RES_MEM_NAMED(s, 0x1000, "big");
	struct resource same = DEFINE_RES_MEM_NAMED(s, 0x1000, "same");
	struct resource part = DEFINE_RES_MEM_NAMED(s + 0x380, 0x100, "part");
	struct resource leaf = DEFINE_RES_MEM_NAMED(s + 0x120, 0x10, "leaf");

	(void)state;
	assert_int_equal(insert_resource(&iomem_resource, &x), 0);
	assert_int_equal(insert_resource(&iomem_resource, &y), 0);
	/* Covering x and y: they become its children. */
	assert_int_equal(insert_resource(&iomem_resource, &big), 0);
	assert_ptr_equal(big.parent, &iomem_resource);
	assert_ptr_equal(big.child, &x);
	assert_ptr_equal(x.sibling, &y);
	assert_ptr_equal(y.parent, &big);
	assert_null(y.sibling);
	/* An equal range goes above. */
	assert_int_equal(insert_resource(&iomem_resource, &same), 0);
	assert_ptr_equal(same.child, &big);
	assert_ptr_equal(big.parent, &same);
	/* A partial overlap is refused, naming who is in the way. */
	assert_ptr_equal(insert_resource_conflict(&iomem_resource, &part), &y);
	/* Inside x: goes all the way down. */
	assert_int_equal(insert_resource(&iomem_resource, &leaf), 0);
	assert_ptr_equal(leaf.parent, &x);
	start_capture();
	assert_int_equal(insert_resource(&iomem_resource, &leaf), -EBUSY);
	expect_warn_on("(no device)", "insert_resource_conflict",
		       "leaf is already in the tree");

	/* remove_resource keeps the children in the tree. */
	assert_int_equal(remove_resource(&same), 0);
	assert_ptr_equal(big.parent, &iomem_resource);
	assert_null(same.child);
	assert_int_equal(remove_resource(&big), 0);
	assert_ptr_equal(x.parent, &iomem_resource);
	assert_ptr_equal(y.parent, &iomem_resource);
	assert_int_equal(remove_resource(&big), -EINVAL);
	assert_int_equal(release_resource(&x), 0);
	assert_null(leaf.sibling);
	assert_int_equal(release_resource(&leaf), 0);
	assert_int_equal(release_resource(&y), 0);
}

static void remove_unless_busy(void **state)
{
	const resource_size_t s = BASE + 0x60000;
	struct resource win = DEFINE_RES_MEM_NAMED(s, 0x1000, "win");
	struct resource dev = DEFINE_RES_MEM_NAMED(s + 0x100, 0x100, "dev");

	(void)state;
	assert_int_equal(remove_resource_unless_busy(&win), -EINVAL);
	assert_int_equal(insert_resource(&iomem_resource, &win), 0);
	assert_int_equal(insert_resource(&iomem_resource, &dev), 0);
	/* Busy two levels down. */
	assert_non_null(request_mem_region(s + 0x180, 0x10, "drv"));
	assert_int_equal(remove_resource_unless_busy(&win), -EBUSY);
	assert_ptr_equal(win.parent, &iomem_resource);
	release_mem_region(s + 0x180, 0x10);
	assert_int_equal(remove_resource_unless_busy(&win), 0);
	assert_ptr_equal(dev.parent, &iomem_resource);
	assert_int_equal(release_resource(&dev), 0);
}

static void dump_format(void **state)
{
	const resource_size_t s = 0x123450000ull;
	struct resource win = DEFINE_RES_MEM_NAMED(s, 0x10000, "window");
	struct resource io = DEFINE_RES_IO_NAMED(0x3f8, 8, NULL);
	char *text;

	(void)state;
	assert_int_equal(insert_resource(&iomem_resource, &win), 0);
	assert_non_null(request_mem_region(s + 0x1000, 0x100, "drv"));
	text = tree_dump(&iomem_resource);
	assert_non_null(strstr(text, "123450000-12345ffff : window\n"
				     "  123451000-1234510ff : drv\n"));
	free(text);
	release_mem_region(s + 0x1000, 0x100);
	assert_int_equal(remove_resource(&win), 0);

	assert_int_equal(request_resource(&ioport_resource, &io), 0);
	text = tree_dump(&ioport_resource);
	assert_non_null(strstr(text, "03f8-03ff : <BAD>\n"));
	free(text);
	assert_int_equal(release_resource(&io), 0);
	assert_int_equal(resource_dump(NULL, stdout), -EINVAL);
}

static void helpers(void **state)
{
	struct resource a = DEFINE_RES_MEM(0x1000, 0x100);
	struct resource b = DEFINE_RES_MEM(0x1080, 0x100);
	struct resource c = DEFINE_RES_MEM(0x1010, 0x10);
	struct resource p = DEFINE_RES_IO(0x1010, 0x10);
	struct resource r;

	(void)state;
	assert_int_equal(resource_size(&a), 0x100);
	assert_true(resource_contains(&a, &c));
	assert_false(resource_contains(&c, &a));
	assert_false(resource_contains(&a, &b));
	assert_false(resource_contains(&a, &p)); /* other type */
	c.flags |= IORESOURCE_UNSET;
	assert_false(resource_contains(&a, &c));
	assert_true(resource_overlaps(&a, &b));
	assert_true(resource_overlaps(&a, &p)); /* ranges only */
	assert_true(resource_intersection(&a, &b, &r));
	assert_int_equal(r.start, 0x1080);
	assert_int_equal(r.end, 0x10ff);
	b.start = 0x1100;
	assert_false(resource_overlaps(&a, &b));
	assert_false(resource_intersection(&a, &b, &r));
}

static void exclusive(void **state)
{
	const resource_size_t s = BASE + 0x70000;

	(void)state;
	assert_non_null(request_mem_region(s, 0x100, "shared"));
	assert_non_null(request_mem_region_exclusive(s + 0x100, 0x100, "ex"));
	assert_false(iomem_is_exclusive(s + 0x80));
	assert_true(iomem_is_exclusive(s + 0x100));
	assert_true(iomem_is_exclusive(s + 0x1ff));
	assert_false(iomem_is_exclusive(s + 0x200));
	/* Exclusive or not, a busy range refuses a second claim. */
	assert_null(request_mem_region(s + 0x100, 0x10, "again"));
	release_mem_region(s + 0x100, 0x100);
	assert_false(iomem_is_exclusive(s + 0x100));
	release_mem_region(s, 0x100);
}

static void request_fault(void **state)
{
	long before = regions_now();

	(void)state;
	devres_fail_nth(1);
	assert_null(request_mem_region(BASE, 0x10, "x"));
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_int_equal(regions_now(), before);
}

/* Platform devices' MEM and IO resources are in the tree while added. */
static int probed;
static struct resource *probe_region;

static int regs_probe(struct platform_device *pdev)
{
	struct resource *res = platform_get_resource(pdev, IORESOURCE_MEM, 0);

	probed++;
	probe_region = devm_request_mem_region(&pdev->dev, res->start + 0x10,
					       0x10, "regs");
	return probe_region ? 0 : -EBUSY;
}

static struct platform_driver regs_driver = {
	.probe = regs_probe,
	.driver = { .name = "io-res-dev" },
};

static void platform_resources(void **state)
{
	const resource_size_t s = BASE + 0x80000;
	struct resource res[] = {
		DEFINE_RES_MEM(s, 0x100),
		DEFINE_RES_IO(0x2000, 0x10),
		DEFINE_RES_IRQ(9),
	};
	struct resource clash = DEFINE_RES_MEM(s + 0x80, 0x100);
	struct platform_device *pdev, *other_pdev;
	struct resource *mem, *io;
	char *text;

	(void)state;
	assert_int_equal(platform_driver_register(&regs_driver), 0);
	pdev = platform_device_register_simple("io-res-dev", 3, res, 3);
	assert_false(IS_ERR(pdev));
	assert_int_equal(probed, 1);
	mem = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	io = platform_get_resource(pdev, IORESOURCE_IO, 0);
	assert_ptr_equal(mem->parent, &iomem_resource);
	assert_ptr_equal(io->parent, &ioport_resource);
	assert_null(platform_get_resource(pdev, IORESOURCE_IRQ, 0)->parent);
	/* The driver's region nests inside the device's resource. */
	assert_ptr_equal(probe_region->parent, mem);
	text = tree_dump(&iomem_resource);
	assert_non_null(strstr(text, "40080000-400800ff : io-res-dev.3\n"
				     "  40080010-4008001f : regs\n"));
	free(text);

	/* A device whose range partly overlaps cannot be added. */
	other_pdev =
		platform_device_register_simple("io-res-other", 1, &clash, 1);
	assert_int_equal(PTR_ERR(other_pdev), -EBUSY);

	platform_device_del(pdev);
	assert_null(mem->parent);
	assert_null(io->parent);
	platform_device_put(pdev);
	text = tree_dump(&iomem_resource);
	assert_null(strstr(text, "io-res-dev"));
	free(text);
	/* The range is free again. */
	other_pdev =
		platform_device_register_simple("io-res-other", 1, &clash, 1);
	assert_false(IS_ERR(other_pdev));
	platform_device_unregister(other_pdev);
	platform_driver_unregister(&regs_driver);
}

static void managed_regions(void **state)
{
	struct device *dev = *state;
	const resource_size_t s = BASE + 0x90000;
	long before = regions_now();
	struct resource *r;
	char *text;

	r = devm_request_mem_region(dev, s, 0x100, "mmio");
	assert_non_null(r);
	assert_non_null(devm_request_region(dev, 0x300, 8, "ports"));
	assert_non_null(devm_request_mem_region(dev, s + 0x100, 0x100, "b"));
	assert_null(devm_request_mem_region(dev, s + 0x80, 0x10, "clash"));
	assert_int_equal(regions_now(), before + 3);
	text = dump_to_string(dev);
	assert_int_equal(count_substr(text, "devm_request_mem_region"), 2);
	assert_int_equal(count_substr(text, "devm_request_region"), 1);
	free(text);

	devm_release_mem_region(dev, s, 0x100);
	assert_int_equal(regions_now(), before + 2);
	start_capture();
	devm_release_mem_region(dev, s, 0x100);
	expect_warn("devm_release_mem_region", "no managed region "
					       "[0x40090000-0x400900ff]");
	/* Ports are not addresses. */
	start_capture();
	devm_release_mem_region(dev, 0x300, 8);
	expect_warn("devm_release_mem_region", "no managed region");
	devm_release_region(dev, 0x300, 8);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(regions_now(), before);
}

static void managed_region_gone_behind(void **state)
{
	struct device *dev = *state;
	const resource_size_t s = BASE + 0xa0000;

	assert_non_null(devm_request_mem_region(dev, s, 0x100, "mmio"));
	/* Caught at the call: the region and its node go there. */
	start_capture();
	release_mem_region(s, 0x100);
	expect_warn("release_mem_region", "a region acquired with "
					  "devm_request_mem_region(): use "
					  "devm_release_mem_region()");
	start_capture();
	assert_int_equal(devres_release_all(dev), 0);
	expect_no_warn();
}

static void managed_region_faults(void **state)
{
	struct device *dev = *state;
	long before = regions_now();

	for (unsigned int n = 1; n <= 2; n++) {
		devres_fail_nth(n);
		assert_null(devm_request_mem_region(dev, BASE, 0x10, "x"));
		assert_int_equal(devres_fail_nth_get(), 0);
		assert_int_equal(regions_now(), before);
		expect_stats(dev, 0, 0);
	}
	devres_fail_nth(3);
	assert_non_null(devm_request_mem_region(dev, BASE, 0x10, "x"));
	devres_fail_nth(0);
}

static void managed_resource(void **state)
{
	struct device *dev = *state;
	struct resource a = DEFINE_RES_MEM_NAMED(BASE + 0xb0000, 0x100, "a");
	struct resource b = DEFINE_RES_MEM_NAMED(BASE + 0xb0080, 0x100, "b");
	struct devres_stats st;

	assert_int_equal(devm_request_resource(dev, &iomem_resource, &a), 0);
	assert_int_equal(devm_request_resource(dev, &iomem_resource, &b),
			 -EBUSY);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	start_capture();
	devm_release_resource(dev, &b);
	expect_warn("devm_release_resource", "is not managed");
	devm_release_resource(dev, &a);
	assert_null(a.parent);
	assert_int_equal(devm_request_resource(dev, &iomem_resource, &a), 0);
	devres_fail_nth(1);
	assert_int_equal(devm_request_resource(dev, &iomem_resource, &b),
			 -ENOMEM);
	assert_int_equal(devres_release_all(dev), 1);
	assert_null(a.parent);
}

static void managed_bad_device(void **state)
{
	(void)state;
	start_capture();
	assert_null(devm_request_mem_region(NULL, BASE, 0x10, "x"));
	assert_int_equal(devres_warn_count() > 0, 1);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roots),
		cmocka_unit_test(request_and_release),
		cmocka_unit_test(conflicts),
		cmocka_unit_test(empty_and_wrapping),
		cmocka_unit_test(release_unrequested),
		cmocka_unit_test(caller_busy_range_never_freed),
		cmocka_unit_test(nested_requests),
		cmocka_unit_test(request_resource_rules),
		cmocka_unit_test(insert_resource_rules),
		cmocka_unit_test(remove_unless_busy),
		cmocka_unit_test(dump_format),
		cmocka_unit_test(helpers),
		cmocka_unit_test(exclusive),
		cmocka_unit_test(request_fault),
		cmocka_unit_test(platform_resources),
		cmocka_unit_test_setup_teardown(managed_regions, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(managed_region_gone_behind,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(managed_region_faults,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(managed_resource, dev_setup,
						dev_teardown),
		cmocka_unit_test(managed_bad_device),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
