// SPDX-License-Identifier: MIT
/*
 * Two copies of the library in one process: a program linked with the
 * static library that loads a plugin linked with the shared one, or two
 * sonames. Each copy keeps its own process-wide state (devices' kinds,
 * buses, drivers, interrupt dispatcher, fork handlers, fault point), so a
 * device one copy made is garbage to the other: its nodes' kinds name
 * another table's releases.
 *
 * Each copy carries an ELF note (owner "libdevres") whose descriptor is
 * the offset from it to the copy's number, and finds the others' notes
 * through dl_iterate_phdr(): no symbol is shared (a static copy inside a
 * plugin exports none), no environment, no descriptor. A copy's
 * constructor takes the smallest number no other copy holds and WARNs
 * once when it finds another, naming both. The number sits above the
 * process id in the stamp every device records (devres__dev_stamp), so a
 * device of another copy fails the check every call already makes, at
 * no cost, and is refused with its WARN (devres.c).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include "subsys.h"

#define COPY_NOTE_TYPE 0x44525331u /* "DRS1" */
#define COPY_NOTE_NAME "libdevres"

int devres__copy_no;
unsigned int devres__dev_stamp;

/* The note: n_namesz, n_descsz, n_type, the name, the offset to the number. */
__asm__(".pushsection .note.devres.copy,\"a\",%note\n\t"
	".balign 4\n\t"
	".globl devres__copy_note\n\t"
	".hidden devres__copy_note\n"
	"devres__copy_note:\n\t"
	".long 10\n\t"
	".long 4\n\t"
	".long 0x44525331\n\t"
	".asciz \"" COPY_NOTE_NAME "\"\n\t"
	".balign 4\n\t"
	".long devres__copy_no - .\n\t"
	".popsection\n\t");

extern HIDDEN const char devres__copy_note[];

struct look {
	uint64_t taken; /* numbers of the other copies, by bit */
	int others;
	const char *other_name;
};

static size_t align_up(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

static void note_seen(struct look *l, const char *desc, const char *name)
{
	int32_t off;
	int no;

	memcpy(&off, desc, sizeof(off));
	no = __atomic_load_n((const int *)(const void *)(desc + off),
			     __ATOMIC_ACQUIRE);
	if (no > 0 && no < 64)
		l->taken |= (uint64_t)1 << no;
	if (!l->others++)
		l->other_name = name;
}

static void look_in(struct look *l, const char *p, const char *end, size_t al,
		    const char *name)
{
	while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *nh = (const void *)p;
		const char *desc = p + align_up(sizeof(*nh) + nh->n_namesz, al);

		if (desc > end || (size_t)(end - desc) < nh->n_descsz)
			return;
		if (nh->n_type == COPY_NOTE_TYPE &&
		    nh->n_namesz == sizeof(COPY_NOTE_NAME) &&
		    nh->n_descsz == 4 &&
		    !memcmp(p + sizeof(*nh), COPY_NOTE_NAME,
			    sizeof(COPY_NOTE_NAME)) &&
		    p != devres__copy_note)
			note_seen(l, desc, name);
		if ((size_t)(end - desc) < align_up(nh->n_descsz, al))
			return;
		p = desc + align_up(nh->n_descsz, al);
	}
}

static int look_at(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);

		if (ph->p_type == PT_NOTE)
			look_in(arg, p, p + ph->p_memsz,
				ph->p_align == 8 ? 8 : 4, info->dlpi_name);
	}
	return 0;
}

static const char *path_or_program(const char *path)
{
	return path && *path ? path : "the program";
}

void devres__copies_find(void)
{
	struct look l = { 0, 0, NULL };
	Dl_info self = { 0 };
	int no = 1;

	dl_iterate_phdr(look_at, &l);
	while (no < 63 && (l.taken & ((uint64_t)1 << no)))
		no++;
	__atomic_store_n(&devres__copy_no, no, __ATOMIC_RELEASE);
	devres__dev_stamp_set();
	if (!l.others)
		return;
	(void)dladdr(devres__copy_note, &self);
	devres__warn(NULL, "libdevres",
		     "%d copies of the library in this process: this one (%s) "
		     "and %s%s; each keeps its own devices and state, and "
		     "refuses another's devices",
		     l.others + 1, path_or_program(self.dli_fname),
		     path_or_program(l.other_name),
		     l.others > 1 ? " and others" : "");
}

void devres__dev_stamp_set(void)
{
	unsigned int no = (unsigned int)__atomic_load_n(&devres__copy_no,
							__ATOMIC_RELAXED);

	__atomic_store_n(&devres__dev_stamp,
			 (unsigned int)devres__pid_now() |
				 no << DEVRES_DEV_PID_BITS,
			 __ATOMIC_RELAXED);
}
