// SPDX-License-Identifier: MIT
/*
 * Reading the capability chains VFIO appends to its info replies: a
 * region's (is the BAR mappable whole?) and the type1 IOMMU's (which
 * IOVAs may be mapped, in which page size). Pure functions of the reply,
 * so that they can be checked without a device.
 */
#include <errno.h>
#include <stddef.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include "vfio.h"

/*
 * The offset of capability @id in the chain that starts at @first, inside
 * a reply of @len bytes; 0 when absent. The chain comes from the kernel,
 * but a header outside the reply or a link that does not move forward
 * ends the walk rather than looping. The kernel packs capabilities
 * without padding (one of 12 bytes leaves the next on a 4-byte
 * boundary), so each is copied out, never read in place.
 */
static size_t find_cap(const void *reply, size_t len, uint32_t first,
		       uint16_t id)
{
	uint32_t off = first;

	while (off &&
	       (size_t)off + sizeof(struct vfio_info_cap_header) <= len) {
		struct vfio_info_cap_header h;

		memcpy(&h, (const char *)reply + off, sizeof(h));
		if (h.id == id)
			return off;
		if (h.next <= off)
			break;
		off = h.next;
	}
	return 0;
}

bool vfio__region_mappable(const struct vfio_region_info *info, size_t len)
{
	if (!(info->flags & VFIO_REGION_INFO_FLAG_MMAP))
		return false;
	if (!(info->flags & VFIO_REGION_INFO_FLAG_CAPS))
		return true;
	/*
	 * A sparse mmap leaves holes (older kernels made one over an MSI-X
	 * table); MSIX_MAPPABLE says the table may be mapped with the rest,
	 * which is what lets a device such as NVMe, whose doorbells share
	 * BAR 0 with its MSI-X table, be driven through loads and stores.
	 * Any other capability (a region type) does not restrict the mmap.
	 */
	if (find_cap(info, len, info->cap_offset,
		     VFIO_REGION_INFO_CAP_MSIX_MAPPABLE))
		return true;
	return !find_cap(info, len, info->cap_offset,
			 VFIO_REGION_INFO_CAP_SPARSE_MMAP);
}

static int range_cmp(const void *a, const void *b)
{
	const struct vfio_range *x = a, *y = b;

	return x->start < y->start ? 1 : x->start > y->start ? -1 : 0;
}

unsigned int vfio__iommu_ranges(const struct vfio_iommu_type1_info *info,
				size_t len, struct vfio_range *out,
				unsigned int max, uint64_t *ret_pgsize,
				unsigned int *ret_total)
{
	const size_t cap_size =
		sizeof(struct vfio_iommu_type1_info_cap_iova_range);
	size_t off = 0;
	unsigned int n = 0;

	/* The smallest page the IOMMU maps: IOVAs and sizes align to it. */
	*ret_pgsize = 4096;
	*ret_total = 0;
	if ((info->flags & VFIO_IOMMU_INFO_PGSIZES) && info->iova_pgsizes)
		*ret_pgsize = info->iova_pgsizes & -info->iova_pgsizes;
	if ((info->flags & VFIO_IOMMU_INFO_CAPS) && len >= sizeof(*info))
		off = find_cap(info, len, info->cap_offset,
			       VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE);
	if (off && off + cap_size <= len) {
		const char *p = (const char *)info + off;
		uint32_t nr;

		memcpy(&nr,
		       p + offsetof(struct vfio_iommu_type1_info_cap_iova_range,
				    nr_iovas),
		       sizeof(nr));
		p += cap_size;
		for (uint32_t i = 0;
		     i < nr && (size_t)(p - (const char *)info) +
					       sizeof(struct vfio_iova_range) <=
				       len;
		     i++, p += sizeof(struct vfio_iova_range)) {
			struct vfio_iova_range r;
			unsigned int low = 0;

			memcpy(&r, p, sizeof(r));
			if (r.end < r.start)
				continue;
			(*ret_total)++;
			/*
			 * More ranges than room: the highest are kept, since
			 * IOVAs are handed out top down (the kernel lists
			 * them lowest first, so keeping the first ones
			 * dropped the space above 4 GiB).
			 */
			if (n == max) {
				for (unsigned int k = 1; k < n; k++)
					if (out[k].start < out[low].start)
						low = k;
				if (!n || r.start <= out[low].start)
					continue;
			} else {
				low = n++;
			}
			out[low].start = r.start;
			out[low].end = r.end;
		}
	} else {
		off = 0;
	}
	/* No capability (an older kernel): every IOVA, as before it had one. */
	if (!off) {
		out[0].start = 0;
		out[0].end = UINT64_MAX;
		n = *ret_total = 1;
	}
	qsort(out, n, sizeof(*out), range_cmp);
	return n;
}

/*
 * The highest free IOVA range of @size, aligned to @align, inside one of
 * the @n usable @ranges (highest first), whose last byte is at most @mask
 * and whose first is at least one page: a handle of 0 would read as none.
 * The mappings at *@head are sorted highest first; *@ret_pos is where the
 * new one goes in that list.
 */
int vfio__iova_find(struct vfio_map **head, const struct vfio_range *ranges,
		    unsigned int n, uint64_t size, uint64_t align,
		    uint64_t mask, uint64_t *ret_iova,
		    struct vfio_map ***ret_pos)
{
	if (!size || !align || (align & (align - 1)))
		return -EINVAL;
	for (unsigned int r = 0; r < n; r++) {
		uint64_t lo = ranges[r].start < 4096 ? 4096 : ranges[r].start;
		uint64_t top = ranges[r].end < mask ? ranges[r].end : mask;
		struct vfio_map **pp = head;

		if (top < lo)
			continue;
		for (;;) {
			struct vfio_map *m = *pp;
			uint64_t floor = lo,
				 last = m ? m->iova + (m->size - 1) : 0;
			bool none = false;

			/* The free gap is [floor, top], above m. */
			if (m && last >= floor) {
				none = last == UINT64_MAX;
				floor = last + 1;
			}
			if (!none && top >= floor && top - floor >= size - 1) {
				uint64_t cand = (top - (size - 1)) &
						~(align - 1);

				if (cand >= floor) {
					*ret_iova = cand;
					*ret_pos = pp;
					return 0;
				}
			}
			if (!m || m->iova <= lo)
				break;
			if (m->iova - 1 < top)
				top = m->iova - 1;
			pp = &m->next;
		}
	}
	return -ENOMEM;
}
