/* SPDX-License-Identifier: MIT */
/*
 * Files as types only: struct file, struct inode and file_operations
 * exist so that declarations compile; nothing opens one.
 */
#ifndef KCOMPAT_LINUX_FS_H
#define KCOMPAT_LINUX_FS_H

#include <linux/types.h>

struct file;
struct inode;
struct module;
struct poll_table_struct;
struct vm_area_struct;

struct file_operations {
	struct module *owner;
	long long (*llseek)(struct file *f, long long off, int whence);
	ssize_t (*read)(struct file *f, char *buf, size_t n, long long *pos);
	ssize_t (*write)(struct file *f, const char *buf, size_t n,
			 long long *pos);
	long (*unlocked_ioctl)(struct file *f, unsigned int cmd,
			       unsigned long arg);
	long (*compat_ioctl)(struct file *f, unsigned int cmd,
			     unsigned long arg);
	int (*open)(struct inode *inode, struct file *f);
	int (*release)(struct inode *inode, struct file *f);
	int (*mmap)(struct file *f, struct vm_area_struct *vma);
	unsigned int (*poll)(struct file *f, struct poll_table_struct *p);
};

#endif /* KCOMPAT_LINUX_FS_H */
