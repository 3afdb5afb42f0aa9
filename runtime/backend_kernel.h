/* The kernel backend's entry points: its vtable, the device probe used for backend selection, and its ABI check. */
#ifndef NRT_BACKEND_KERNEL_H
#define NRT_BACKEND_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* /dev/neuronsimN through include/uapi/linux/neuronsim.h (backend_kernel.c). */
extern const nrt_backend_ops_t nrt_backend_kernel_ops;

/* What the driver offers, for the runtime's configuration defaults. */
typedef struct nrt_backend_kernel_probe {
	uint32_t num_devices;      /* consecutive /dev/neuronsim0, 1, ... nodes */
	uint32_t cores_per_device; /* of device 0 (module parameter num_cores) */
	uint64_t mem_size;         /* of device 0, bytes (module parameter mem_size) */
	int fw_attached;           /* device 0 has a firmware (neuronsim-fwd) now */
} nrt_backend_kernel_probe_t;

/* 1 when /dev/neuronsim0 exists (the automatic backend choice), else 0. */
int nrt_backend_kernel_present(void);

/* Opens /dev/neuronsim0, checks the ABI version and fills *out. A failure
 * (NRT_FAILURE, rt_status.h) says why: there is no device or the driver speaks
 * another ABI. */
ns_status_t nrt_backend_kernel_probe(nrt_backend_kernel_probe_t *out);

/* The oldest driver minor this runtime runs on: 1.1, whose firmware stops a
 * job at its deadline (FW_ABORT_WAIT). What later minors add is used only
 * when the driver reports its capability (1.2: the jobs' FLOPs). */
#define NRT_KB_MIN_ABI_MINOR 1

/* Compatibility rule between this runtime (built against NEURONSIM_ABI_MAJOR.
 * MINOR) and a driver speaking drv_major.drv_minor: same major, driver minor
 * at least NRT_KB_MIN_ABI_MINOR. On mismatch a failure (NRT_FAILURE) whose
 * message names both versions and what to do. */
ns_status_t nrt_backend_kernel_check_abi(const char *node, uint64_t drv_major, uint64_t drv_minor);

#endif /* NRT_BACKEND_KERNEL_H */
