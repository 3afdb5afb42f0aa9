/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuronsim: the kernel API changes since 6.1 (the oldest kernel supported)
 * that the driver touches, in one place. Checked by building against every
 * Debian kernel header package (tests/qemu/driver-build-matrix).
 *
 * The one file checkpatch --strict warns about (LINUX_VERSION_CODE tests):
 * an out-of-tree module built for several kernels needs them, and an
 * upstream merge would delete this file, keeping the newest branch of each.
 */
#ifndef NSIM_COMPAT_H
#define NSIM_COMPAT_H

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/version.h>

/* 6.4: class_create() no longer takes the owning module. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define nsim_class_create(name) class_create(name)
#else
#define nsim_class_create(name) class_create(THIS_MODULE, name)
#endif

/* 6.2: struct class's devnode callback gets a const device. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define NSIM_DEVNODE_CONST const
#else
#define NSIM_DEVNODE_CONST
#endif

/*
 * 6.12: no_llseek is gone; a NULL .llseek means the same
 * there (no FMODE_LSEEK, lseek fails with ESPIPE). Our files are opened with
 * nonseekable_open() on every version anyway.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define NSIM_NO_LLSEEK NULL
#else
#define NSIM_NO_LLSEEK no_llseek
#endif

#endif /* NSIM_COMPAT_H */
