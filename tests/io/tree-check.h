/* SPDX-License-Identifier: MIT */
/*
 * A checker of the resource tree's shape, read through resource_dump()
 * (which holds the tree's lock, so it may run while other threads claim
 * and release): every range inside its parent, siblings sorted by start
 * and apart, a depth never more than one below the line before. Include
 * after stdio.h, stdlib.h, string.h and devres/ioport.h.
 */
#ifndef DEVRES_TESTS_IO_TREE_CHECK_H
#define DEVRES_TESTS_IO_TREE_CHECK_H

#include <inttypes.h>

#define TREE_DEPTH_MAX 32

struct tree_level {
	uint64_t start, end; /* the range open at this depth */
	uint64_t last_end;   /* the last child's end, below it */
	int has_child;
};

/*
 * Checks the tree under @root. Returns the number of ranges in it, or -1
 * when the shape is broken (the broken line printed to stderr).
 */
static inline int tree_check(struct resource *root)
{
	struct tree_level lv[TREE_DEPTH_MAX + 1];
	char *buf = NULL, *line, *save = NULL;
	size_t size = 0;
	int n = 0, prev_depth = -1;
	FILE *f = open_memstream(&buf, &size);

	if (!f || resource_dump(root, f) < 0) {
		if (f)
			fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	lv[0] = (struct tree_level){ root->start, root->end, 0, 0 };
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int spaces = 0, depth;
		uint64_t s, e;
		struct tree_level *up;

		while (line[spaces] == ' ')
			spaces++;
		/* Depth 0: a child of @root, in lv[0]; its own go in lv[1]. */
		depth = spaces / 2;
		if (spaces % 2 || depth >= TREE_DEPTH_MAX ||
		    depth > prev_depth + 1 ||
		    sscanf(line + spaces, "%" SCNx64 "-%" SCNx64, &s, &e) != 2)
			goto bad;
		up = &lv[depth];
		if (s > e || s < up->start || e > up->end ||
		    (up->has_child && s <= up->last_end))
			goto bad;
		up->has_child = 1;
		up->last_end = e;
		lv[depth + 1] = (struct tree_level){ s, e, 0, 0 };
		prev_depth = depth;
		n++;
	}
	free(buf);
	return n;
bad:
	fprintf(stderr, "tree broken at \"%s\"\n", line);
	free(buf);
	return -1;
}

#endif /* DEVRES_TESTS_IO_TREE_CHECK_H */
