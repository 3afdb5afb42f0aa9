/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * The neuronsim release: one version for the kernel module (MODULE_VERSION),
 * libnrt, the tools, the PJRT plugin and torch_neuronsim. A plain header so the
 * module's Kbuild/DKMS build, which has no Meson, can include it; meson.build's
 * project() version and frontends/torch/pyproject.toml must say the same
 * (checked at `meson setup`). Not part of the ioctl ABI: that is
 * NEURONSIM_ABI_MAJOR/MINOR in neuronsim.h.
 */
#ifndef _UAPI_LINUX_NEURONSIM_VERSION_H
#define _UAPI_LINUX_NEURONSIM_VERSION_H

#define NEURONSIM_VERSION_MAJOR 0
#define NEURONSIM_VERSION_MINOR 1
#define NEURONSIM_VERSION_PATCH 0
#define NEURONSIM_VERSION "0.1.0"

#endif /* _UAPI_LINUX_NEURONSIM_VERSION_H */
