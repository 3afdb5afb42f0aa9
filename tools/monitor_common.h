/* Shared by neuron-top and neuron-monitor: the kernel devices as the driver's
 * sysfs shows them, and small formatting helpers. The embedded devices of
 * running processes come from neuronsim/procstats.h (and a process's core
 * list, procstats_core_list), CPU times from neuronsim/proc_stat.h. */
#ifndef NEURONSIM_TOOLS_MONITOR_COMMON_H
#define NEURONSIM_TOOLS_MONITOR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/clock.h"
#include "neuronsim/procstats.h"
#include "neuronsim/status.h"

#define MON_DEFAULT_SYSFS_ROOT "/sys/class/neuronsim"

/* The driver's job counters (docs/abi.md, sysfs), per device and per core. */
enum {
	MON_JOBS_SUBMITTED = 0,
	MON_JOBS_SUCCESS,
	MON_JOBS_FAILURE,
	MON_JOBS_TIMEOUT,
	MON_JOBS_NUM_ERR,
	MON_JOBS_OOB,
	MON_JOBS_FW_LOST,
	MON_JOBS_DROPPED,
	MON_JOBS_COUNT
};
extern const char *const mon_jobs_names[MON_JOBS_COUNT];

typedef struct mon_kcore {
	uint32_t index;
	int64_t reserved, owner_pid, queued, running;
	uint64_t jobs[MON_JOBS_COUNT];
} mon_kcore_t;

typedef struct mon_kdev {
	uint32_t index;                /* N of neuronsimN */
	char abi_version[16];
	uint64_t num_cores, mem_size, mem_in_use, mem_peak, cores_reserved, fw_attached, null_hw;
	uint64_t jobs[MON_JOBS_COUNT];
	uint32_t n_cores;              /* coreM directories read */
	mon_kcore_t *cores;
	char error[256];               /* first attribute that could not be read, "" if none */
} mon_kdev_t;

typedef struct mon_kdevs {
	mon_kdev_t *devs;              /* sorted by index */
	size_t n;
	uint64_t read_ns;              /* CLOCK_MONOTONIC */
} mon_kdevs_t;

/* $NEURONSIM_SYSFS_ROOT when set and non-empty, else MON_DEFAULT_SYSFS_ROOT. */
const char *mon_sysfs_root(void);

/* Reads every root/neuronsimN device (not the neuronsim-fwN nodes). A missing
 * root is no devices (the module is not loaded), not an error. A failure (root
 * unreadable: the errno's code; out of memory) is a status saying so; a device
 * whose attributes are missing or malformed is kept with its error[] set. Free
 * with mon_sysfs_free. */
ns_status_t mon_sysfs_read(const char *root, mon_kdevs_t *out);
void mon_sysfs_free(mon_kdevs_t *d);

/* The device of out with index idx, or NULL. */
const mon_kdev_t *mon_sysfs_find(const mon_kdevs_t *d, uint32_t idx);

/* "1.23G"-style byte counts (binary units) into buf. */
const char *mon_bytes(uint64_t v, char *buf, size_t len);

/* Counter difference that tolerates a counter going backwards (a device
 * reset): then the new value is the difference. */
static inline uint64_t mon_delta(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : now;
}

#endif /* NEURONSIM_TOOLS_MONITOR_COMMON_H */
