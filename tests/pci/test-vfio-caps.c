// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * The VFIO backend's reading of the kernel's info replies, on replies
 * built here: whether a BAR maps whole (a sparse mmap does not, an MSI-X
 * table marked mappable does), which IOVA ranges and page size the type1
 * IOMMU allows, and the IOVA search that stays inside those ranges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <linux/vfio.h>
#include <cmocka.h>
#include "testlib.h"
#include "../../src/vfio/vfio.h"

/* A region reply with capabilities @ids chained in order. */
static size_t region_reply(unsigned char *buf, size_t size, uint32_t flags,
			   const uint16_t *ids, int n)
{
	struct vfio_region_info *info = (void *)buf;
	size_t off = sizeof(*info);

	memset(buf, 0, size);
	info->flags = flags;
	info->cap_offset = n ? (uint32_t)off : 0;
	for (int i = 0; i < n; i++) {
		struct vfio_info_cap_header *h = (void *)(buf + off);

		h->id = ids[i];
		h->version = 1;
		off += 32;
		h->next = i + 1 < n ? (uint32_t)off : 0;
	}
	info->argsz = (uint32_t)off;
	return off;
}

static void test_region_mappable(void **state)
{
	_Alignas(8) unsigned char buf[256];
	const uint32_t mm = VFIO_REGION_INFO_FLAG_MMAP;
	const uint32_t caps = mm | VFIO_REGION_INFO_FLAG_CAPS;
	const uint16_t sparse[] = { VFIO_REGION_INFO_CAP_SPARSE_MMAP };
	const uint16_t msix[] = { VFIO_REGION_INFO_CAP_MSIX_MAPPABLE };
	const uint16_t type_then_msix[] = {
		VFIO_REGION_INFO_CAP_TYPE, VFIO_REGION_INFO_CAP_MSIX_MAPPABLE
	};
	const uint16_t type[] = { VFIO_REGION_INFO_CAP_TYPE };
	size_t len;

	(void)state;
	len = region_reply(buf, sizeof(buf), mm, NULL, 0);
	assert_true(vfio__region_mappable((void *)buf, len));
	len = region_reply(buf, sizeof(buf), VFIO_REGION_INFO_FLAG_READ, NULL,
			   0);
	assert_false(vfio__region_mappable((void *)buf, len));
	len = region_reply(buf, sizeof(buf), caps, sparse, 1);
	assert_false(vfio__region_mappable((void *)buf, len));
	len = region_reply(buf, sizeof(buf), caps, msix, 1);
	assert_true(vfio__region_mappable((void *)buf, len));
	len = region_reply(buf, sizeof(buf), caps, type_then_msix, 2);
	assert_true(vfio__region_mappable((void *)buf, len));
	len = region_reply(buf, sizeof(buf), caps, type, 1);
	assert_true(vfio__region_mappable((void *)buf, len));
	/* A chain cut short by the reply's length: the sparse capability unseen. */
	(void)region_reply(buf, sizeof(buf), caps, sparse, 1);
	assert_true(vfio__region_mappable((void *)buf,
					  sizeof(struct vfio_region_info)));
	/* A link pointing back ends the walk instead of looping. */
	len = region_reply(buf, sizeof(buf), caps, type, 1);
	((struct vfio_info_cap_header *)(buf + sizeof(struct vfio_region_info)))
		->next = sizeof(struct vfio_region_info);
	assert_true(vfio__region_mappable((void *)buf, len));
}

/* A type1 reply with pgsizes @pg and @n ranges (none: no capability). */
static size_t iommu_reply(unsigned char *buf, uint64_t pg,
			  const struct vfio_iova_range *r, uint32_t n)
{
	struct vfio_iommu_type1_info *info = (void *)buf;
	struct vfio_iommu_type1_info_cap_iova_range *rc;
	size_t off = (sizeof(*info) + 7) & ~(size_t)7;

	memset(buf, 0, 512);
	info->flags = VFIO_IOMMU_INFO_PGSIZES;
	info->iova_pgsizes = pg;
	if (!r)
		return sizeof(*info);
	info->flags |= VFIO_IOMMU_INFO_CAPS;
	info->cap_offset = (uint32_t)off;
	rc = (void *)(buf + off);
	rc->header.id = VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE;
	rc->header.version = 1;
	rc->nr_iovas = n;
	memcpy(rc->iova_ranges, r, n * sizeof(*r));
	return off + sizeof(*rc) + n * sizeof(*r);
}

static void test_iommu_ranges(void **state)
{
	_Alignas(8) unsigned char buf[512];
	/* As QEMU's intel-iommu reports them: the MSI window cut out. */
	const struct vfio_iova_range x86[] = {
		{ 0, 0xfedfffff },
		{ 0xfef00000, 0x7fffffffffull },
	};
	struct vfio_range out[VFIO_MAX_RANGES];
	unsigned int total = 0;
	uint64_t pg = 0;
	size_t len;

	(void)state;
	len = iommu_reply(buf, 0x40201000ull, x86, 2);
	assert_int_equal(vfio__iommu_ranges((void *)buf, len, out,
					    VFIO_MAX_RANGES, &pg, &total),
			 2);
	assert_int_equal(pg, 4096);
	/* Highest first. */
	assert_int_equal(out[0].start, 0xfef00000);
	assert_int_equal(out[0].end, 0x7fffffffffull);
	assert_int_equal(out[1].start, 0);
	assert_int_equal(out[1].end, 0xfedfffff);
	/* At most @max kept; a reply too short for its ranges is cut. */
	assert_int_equal(
		vfio__iommu_ranges((void *)buf, len, out, 1, &pg, &total), 1);
	assert_int_equal(vfio__iommu_ranges((void *)buf, len - 16, out,
					    VFIO_MAX_RANGES, &pg, &total),
			 1);
	assert_int_equal(out[0].start, 0);
	/*
	 * As kernel 6.1 packs them: a 12-byte capability (DMA_AVAIL) first,
	 * so the ranges' capability sits on a 4-byte boundary.
	 */
	{
		struct vfio_iommu_type1_info *info = (void *)buf;
		struct vfio_info_cap_header h = { 3, 1, 0 };
		struct vfio_iommu_type1_info_cap_iova_range rc = { 0 };
		size_t at = sizeof(*info), at2 = at + 12;

		memset(buf, 0, sizeof(buf));
		info->flags = VFIO_IOMMU_INFO_PGSIZES | VFIO_IOMMU_INFO_CAPS;
		info->iova_pgsizes = 4096;
		info->cap_offset = (uint32_t)at;
		h.next = (uint32_t)at2;
		memcpy(buf + at, &h, sizeof(h));
		rc.header.id = VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE;
		rc.header.version = 1;
		rc.nr_iovas = 2;
		memcpy(buf + at2, &rc, sizeof(rc));
		memcpy(buf + at2 + sizeof(rc), x86, sizeof(x86));
		len = at2 + sizeof(rc) + sizeof(x86);
		assert_int_equal(at2 % 8, 4);
		assert_int_equal(vfio__iommu_ranges((void *)buf, len, out,
						    VFIO_MAX_RANGES, &pg,
						    &total),
				 2);
		assert_int_equal(out[0].start, 0xfef00000);
		assert_int_equal(out[1].end, 0xfedfffff);
	}
	/* No capability: the whole space; a 64 KiB-page IOMMU. */
	len = iommu_reply(buf, 0x10000, NULL, 0);
	assert_int_equal(vfio__iommu_ranges((void *)buf, len, out,
					    VFIO_MAX_RANGES, &pg, &total),
			 1);
	assert_int_equal(out[0].start, 0);
	assert_true(out[0].end == UINT64_MAX);
	assert_int_equal(pg, 0x10000);
}

/*
 * More usable ranges than the group keeps (a platform with many reserved
 * regions): the highest are kept, as IOVAs are handed out top down, and
 * the total is told. The kernel lists ranges lowest first: keeping the
 * first ones used to drop the space at the top.
 * limit-cell: src/vfio/vfio.h:vfio_group.ranges
 */
static void test_iommu_ranges_beyond_limit(void **state)
{
	_Alignas(8) unsigned char buf[512];
	struct vfio_iova_range r[VFIO_MAX_RANGES + 4];
	struct vfio_range out[VFIO_MAX_RANGES];
	const unsigned int n = VFIO_MAX_RANGES + 4;
	unsigned int total = 0;
	uint64_t pg = 0;
	size_t len;

	(void)state;
	/* [i MiB, i MiB + 64 KiB), lowest first; the last one is big. */
	for (unsigned int i = 0; i < n; i++) {
		r[i].start = (uint64_t)i << 20;
		r[i].end = r[i].start + 0xffff;
	}
	r[n - 1].end = 0x7fffffffffull;
	len = iommu_reply(buf, 4096, r, n);
	assert_true(len <= sizeof(buf));
	assert_int_equal(vfio__iommu_ranges((void *)buf, len, out,
					    VFIO_MAX_RANGES, &pg, &total),
			 VFIO_MAX_RANGES);
	assert_int_equal(total, n);
	/* The top one, then each lower one down to the 16th from the top. */
	assert_int_equal(out[0].start, (uint64_t)(n - 1) << 20);
	assert_true(out[0].end == 0x7fffffffffull);
	for (unsigned int k = 0; k < VFIO_MAX_RANGES; k++)
		assert_int_equal(out[k].start, (uint64_t)(n - 1 - k) << 20);
	/* Room for one: the highest. */
	assert_int_equal(
		vfio__iommu_ranges((void *)buf, len, out, 1, &pg, &total), 1);
	assert_int_equal(out[0].start, (uint64_t)(n - 1) << 20);
	assert_int_equal(total, n);
	/* Within the limit the total is the count kept. */
	len = iommu_reply(buf, 4096, r, 3);
	assert_int_equal(vfio__iommu_ranges((void *)buf, len, out,
					    VFIO_MAX_RANGES, &pg, &total),
			 3);
	assert_int_equal(total, 3);
}

static void test_iova_find(void **state)
{
	const struct vfio_range r[] = {
		{ 0xfef00000, 0x7fffffffffull },
		{ 0, 0xfedfffff },
	};
	struct vfio_map *head = NULL, maps[8], **pos;
	uint64_t iova = 0;

	(void)state;
	/* A 64-bit mask: the top of the IOMMU's space, not of 2^64. */
	assert_int_equal(vfio__iova_find(&head, r, 2, 8192, 4096, UINT64_MAX,
					 &iova, &pos),
			 0);
	assert_int_equal(iova, 0x7fffffe000ull);
	assert_ptr_equal(pos, &head);
	/* A 32-bit mask: above the MSI window. */
	assert_int_equal(vfio__iova_find(&head, r, 2, 8192, 4096, 0xffffffff,
					 &iova, &pos),
			 0);
	assert_int_equal(iova, 0xffffe000);
	/* A mask ending inside the window: below it, never in it. */
	assert_int_equal(vfio__iova_find(&head, r, 2, 8192, 4096, 0xfeefffff,
					 &iova, &pos),
			 0);
	assert_int_equal(iova, 0xfedfe000);
	/* Everything of the low range above a mapping is taken: below it. */
	maps[0] = (struct vfio_map){ 0x1000000, 0xfee00000 - 0x1000000, NULL };
	head = &maps[0];
	assert_int_equal(vfio__iova_find(&head, r, 2, 0x10000, 0x10000,
					 0xfeefffff, &iova, &pos),
			 0);
	assert_int_equal(iova, 0xff0000);
	assert_ptr_equal(pos, &maps[0].next);
	/* Nothing fits below page 1. */
	maps[0] = (struct vfio_map){ 0x2000, 0xfee00000 - 0x2000, NULL };
	assert_int_equal(vfio__iova_find(&head, r, 2, 8192, 4096, 0xfeefffff,
					 &iova, &pos),
			 -ENOMEM);
	assert_int_equal(vfio__iova_find(&head, r, 2, 4096, 4096, 0xfeefffff,
					 &iova, &pos),
			 0);
	assert_int_equal(iova, 0x1000);
	/* A gap between two mappings, found in the high range. */
	maps[1] = (struct vfio_map){ 0x100000000ull, 0x1000, &maps[0] };
	maps[2] = (struct vfio_map){ 0x100003000ull,
				     0x7fffffffffull - 0x100003000ull + 1,
				     &maps[1] };
	head = &maps[2];
	assert_int_equal(vfio__iova_find(&head, r, 2, 8192, 4096, UINT64_MAX,
					 &iova, &pos),
			 0);
	assert_int_equal(iova, 0x100001000ull);
	assert_ptr_equal(pos, &maps[2].next);
	/* A mapping that ends at 2^64 - 1 leaves no gap above it. */
	maps[3] = (struct vfio_map){ UINT64_MAX - 0xfff, 0x1000, NULL };
	head = &maps[3];
	{
		const struct vfio_range all = { 0, UINT64_MAX };

		assert_int_equal(vfio__iova_find(&head, &all, 1, 4096, 4096,
						 UINT64_MAX, &iova, &pos),
				 0);
		assert_true(iova == UINT64_MAX - 0x1fff);
	}
	assert_int_equal(vfio__iova_find(&head, r, 2, 4096, 3, UINT64_MAX,
					 &iova, &pos),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_region_mappable),
		cmocka_unit_test(test_iommu_ranges),
		cmocka_unit_test(test_iommu_ranges_beyond_limit),
		cmocka_unit_test(test_iova_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
