/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuronsim driver internals: devices, memory objects, jobs, open files.
 *
 * Locking (outermost first):
 *   mmap_lock (held by the mm core around ->mmap and vm_ops->close)
 *   nsim_dev.lock (mutex): cores, job states and queues, the jobs xarray's
 *                  contents, the attached firmware, nsim_file.n_jobs, stats
 *   xa_lock of nsim_file.mems (spinlock, internal to the xarray; also
 *                  guards nsim_file.mem_tree)
 *   nsim_dev.stat_lock (spinlock): mem_in_use, mem_peak
 * No user copy happens under nsim_dev.lock, so the mutex never nests
 * inside mmap_lock through a page fault. The memory allocator (gen_pool)
 * is lockless for its callers.
 */
#ifndef NSIM_H
#define NSIM_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/genalloc.h>
#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <linux/neuronsim.h>

#include "nsim_compat.h"

#define NSIM_MAX_DEVICES 8
#define NSIM_MAX_CORES 64
#define NSIM_MAX_MEM_MIB 4096

/* Per-core counters, exported in sysfs. */
enum nsim_stat {
	NSIM_STAT_SUBMITTED,
	NSIM_STAT_SUCCESS,
	NSIM_STAT_FAILURE,	/* every status other than SUCCESS */
	NSIM_STAT_TIMEOUT,
	NSIM_STAT_NUM_ERR,
	NSIM_STAT_OOB,
	NSIM_STAT_FW_LOST,
	NSIM_STAT_DROPPED,	/* queued jobs dropped when their file closed */
	NSIM_STAT_COUNT
};

extern const char *const nsim_stat_names[NSIM_STAT_COUNT];

struct nsim_dev;
struct nsim_file;
struct nsim_fw_file;

/**
 * struct nsim_core - one NeuronCore; fields under nsim_dev.lock
 * @kobj: sysfs directory coreN under the client device; owns this struct
 * @dev: the device
 * @index: core index
 * @owner: file holding the reservation, or NULL
 * @owner_pid: tgid of the reserving process, for sysfs
 * @queue: pending jobs (struct nsim_job.node), in submit order
 * @n_queued: entries in @queue
 * @running: job handed to the firmware and not completed, or NULL
 * @stats: enum nsim_stat counters
 */
struct nsim_core {
	struct kobject kobj;
	struct nsim_dev *dev;
	unsigned int index;
	struct nsim_file *owner;
	pid_t owner_pid;
	struct list_head queue;
	unsigned int n_queued;
	struct nsim_job *running;
	u64 stats[NSIM_STAT_COUNT];
};

/**
 * struct nsim_dev - one simulated device
 * @index: N of /dev/neuronsimN
 * @client_dev: /dev/neuronsimN, carries the sysfs attributes
 * @fw_dev: /dev/neuronsim-fwN
 * @mem: vmalloc_user() backing of device memory
 * @mem_size: bytes of device memory
 * @pool: allocator of device addresses (offset by NSIM_POOL_BASE)
 * @stat_lock: protects @mem_in_use and @mem_peak
 * @mem_in_use: bytes allocated now
 * @mem_peak: most bytes ever allocated at once
 * @lock: see the locking comment at the top of this file
 * @jobs: job id -> struct nsim_job (holds one reference)
 * @next_job_id: cursor for xa_alloc_cyclic()
 * @fw: attached firmware file, or NULL
 * @fw_events: bumped (under @lock) whenever a core may have become
 *	runnable or the firmware was detached; FW_FETCH waits on it
 * @abort_events: bumped (under @lock) whenever a running job may need
 *	aborting (its file closed, a job started, the firmware detached);
 *	FW_ABORT_WAIT waits on it and on the running jobs' deadlines
 * @rr: round-robin start for FW_FETCH
 * @fw_wq: woken when @fw_events changes
 * @abort_wq: woken when @abort_events changes
 * @null_hw: jobs finish at submit, no firmware
 * @num_cores: entries of @cores
 * @cores: the NeuronCores
 */
struct nsim_dev {
	unsigned int index;
	struct device *client_dev;
	struct device *fw_dev;
	void *mem;
	u64 mem_size;
	struct gen_pool *pool;
	spinlock_t stat_lock;	/* mem_in_use, mem_peak */
	u64 mem_in_use;
	u64 mem_peak;
	struct mutex lock;	/* see the top of this file */
	struct xarray jobs;
	u32 next_job_id;
	struct nsim_fw_file *fw;
	atomic_t fw_events;
	atomic_t abort_events;
	unsigned int rr;
	wait_queue_head_t fw_wq;
	wait_queue_head_t abort_wq;
	bool null_hw;
	unsigned int num_cores;
	struct nsim_core **cores;
};

/**
 * struct nsim_mem - one device memory allocation
 * @ref: held by the owner's handle, each mmap() and each unfinished job
 * @dev: the device
 * @addr: device address, also its mmap offset
 * @size: bytes, a multiple of PAGE_SIZE
 * @node: entry in nsim_file.mem_tree while a handle names it
 */
struct nsim_mem {
	struct kref ref;
	struct nsim_dev *dev;
	struct rb_node node;
	u64 addr;
	u64 size;
};

/**
 * struct nsim_file - an open /dev/neuronsimN
 * @dev: the device
 * @mems: handle -> struct nsim_mem (holds one reference each)
 * @mem_tree: the same allocations keyed by mmap offset (nsim_mem.addr), so
 *	mmap() finds one in O(log n); under the xa_lock of @mems
 * @n_jobs: jobs of this file in nsim_dev.jobs (under nsim_dev.lock)
 */
struct nsim_file {
	struct nsim_dev *dev;
	struct xarray mems;
	struct rb_root mem_tree;
	unsigned int n_jobs;
};

/**
 * struct nsim_fw_file - an open /dev/neuronsim-fwN
 * @dev: the device
 */
struct nsim_fw_file {
	struct nsim_dev *dev;
};

enum nsim_job_state {
	NSIM_JOB_PENDING,	/* on its core's queue */
	NSIM_JOB_RUNNING,	/* fetched by the firmware */
	NSIM_JOB_DONE,		/* @record valid */
};

/**
 * struct nsim_job - a submitted job; fields under nsim_dev.lock
 * @ref: held by nsim_dev.jobs and by waiters/fetchers in flight
 * @dev: the device
 * @id: key in nsim_dev.jobs
 * @owner: submitting file; NULL once that file closed (orphan)
 * @core: the core it runs on
 * @node: entry in core->queue while pending
 * @state: enum nsim_job_state; read without the lock by waiters
 * @done_wq: woken when @state becomes NSIM_JOB_DONE; JOB_WAIT sleeps here,
 *	holding a reference, so only the waiters of this job wake
 * @fw: firmware file running it (while running)
 * @abort_sent: FW_ABORT_WAIT reported it (while running)
 * @flags: NEURONSIM_JOB_* bits
 * @deadline_ns: absolute CLOCK_MONOTONIC execution deadline or 0
 * @streams: code streams as device addresses
 * @trace: trace buffer as a device address range
 * @n_regions: entries of @regions
 * @regions: region bindings as device address ranges
 * @n_mems: entries of @mems
 * @mems: allocations referenced by the job, one reference each, dropped
 *	when the job finishes
 * @record: the completion record with its 1.2 extension, valid when done
 */
struct nsim_job {
	struct kref ref;
	struct nsim_dev *dev;
	u32 id;
	struct nsim_file *owner;
	struct nsim_core *core;
	struct list_head node;
	int state;
	wait_queue_head_t done_wq;
	struct nsim_fw_file *fw;
	bool abort_sent;
	u32 flags;
	s64 deadline_ns;
	struct neuronsim_fw_stream streams[NEURONSIM_NUM_ENGINES];
	struct neuronsim_fw_region trace;
	u32 n_regions;
	struct neuronsim_fw_region *regions;
	unsigned int n_mems;
	struct nsim_mem **mems;
	struct neuronsim_error_record_ext record;
};

/* nsim_mem.c */
int nsim_mem_pool_init(struct nsim_dev *dev, u64 size);
void nsim_mem_pool_fini(struct nsim_dev *dev);
struct nsim_mem *nsim_mem_lookup(struct nsim_file *nf, u32 handle);
void nsim_mem_put(struct nsim_mem *mem);
int nsim_ioctl_mem_alloc(struct nsim_file *nf, void __user *uarg);
int nsim_ioctl_mem_free(struct nsim_file *nf, void __user *uarg);
int nsim_ioctl_mem_info(struct nsim_file *nf, void __user *uarg);
int nsim_client_mmap(struct nsim_file *nf, struct vm_area_struct *vma);
void nsim_file_mems_release(struct nsim_file *nf);

/* nsim_job.c */
int nsim_ioctl_core_reserve(struct nsim_file *nf, void __user *uarg);
int nsim_ioctl_core_release(struct nsim_file *nf, void __user *uarg);
int nsim_ioctl_job_submit(struct nsim_file *nf, void __user *uarg);
int nsim_ioctl_job_wait(struct nsim_file *nf, void __user *uarg);
void nsim_file_jobs_release(struct nsim_file *nf);
void nsim_job_finish(struct nsim_job *job, u32 status,
		     const struct neuronsim_error_record_ext *rec,
		     const char *msg);
void nsim_job_put(struct nsim_job *job);

/* nsim_fw.c */
extern const struct file_operations nsim_fw_fops;

/* nsim_main.c */
int nsim_get_param(struct nsim_dev *dev, void __user *uarg);
struct nsim_dev *nsim_dev_from_minor(unsigned int minor, bool fw);

/* nsim_sysfs.c */
extern const struct attribute_group *nsim_dev_groups[];
int nsim_core_sysfs_add(struct nsim_core *core);
struct nsim_core *nsim_core_alloc(struct nsim_dev *dev, unsigned int index);
void nsim_core_put(struct nsim_core *core);

#endif /* NSIM_H */
