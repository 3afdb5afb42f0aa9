// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuronsim client side of jobs: core reservation, submit (handle to
 * device-address translation and bounds checks), wait, and cleanup at close.
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "nsim.h"

static void nsim_job_release(struct kref *ref)
{
	struct nsim_job *job = container_of(ref, struct nsim_job, ref);
	unsigned int i;

	for (i = 0; i < job->n_mems; i++)
		nsim_mem_put(job->mems[i]);
	kvfree(job->mems);
	kvfree(job->regions);
	kfree(job);
}

void nsim_job_put(struct nsim_job *job)
{
	kref_put(&job->ref, nsim_job_release);
}

/* Under dev->lock: the memory of a finished job can be reused at once. */
static void nsim_job_drop_mems(struct nsim_job *job)
{
	unsigned int i;

	for (i = 0; i < job->n_mems; i++)
		nsim_mem_put(job->mems[i]);
	job->n_mems = 0;
}

/* Under dev->lock: forget a job id and drop the jobs xarray's reference. */
static void nsim_job_remove(struct nsim_job *job)
{
	struct nsim_dev *dev = job->dev;

	xa_erase(&dev->jobs, job->id);
	if (job->owner)
		job->owner->n_jobs--;
	job->owner = NULL;
	nsim_job_put(job);
}

static void nsim_core_count(struct nsim_core *core, u32 status)
{
	if (status == NEURONSIM_STATUS_SUCCESS) {
		core->stats[NSIM_STAT_SUCCESS]++;
		return;
	}
	core->stats[NSIM_STAT_FAILURE]++;
	if (status == NEURONSIM_STATUS_TIMEOUT)
		core->stats[NSIM_STAT_TIMEOUT]++;
	else if (status == NEURONSIM_STATUS_NUM_ERR)
		core->stats[NSIM_STAT_NUM_ERR]++;
	else if (status == NEURONSIM_STATUS_OOB)
		core->stats[NSIM_STAT_OOB]++;
	else if (status == NEURONSIM_STATUS_FW_LOST)
		core->stats[NSIM_STAT_FW_LOST]++;
}

/**
 * nsim_job_finish() - end a pending or running job
 * @job: the job; a pending one must already be off its core's queue
 * @status: enum neuronsim_status
 * @rec: record from the firmware (valid 0 for a plain one), or NULL for an
 *	empty one
 * @msg: message replacing the record's, or NULL
 *
 * Called with dev->lock held. Wakes the waiter; an orphaned job (its file
 * closed) is freed here.
 */
void nsim_job_finish(struct nsim_job *job, u32 status,
		     const struct neuronsim_error_record_ext *rec,
		     const char *msg)
{
	struct nsim_dev *dev = job->dev;
	struct nsim_core *core = job->core;

	lockdep_assert_held(&dev->lock);
	if (job->state == NSIM_JOB_RUNNING && core->running == job) {
		core->running = NULL;
		/* The core can take its next job. */
		atomic_inc(&dev->fw_events);
		wake_up_all(&dev->fw_wq);
	}
	if (rec) {
		job->record = *rec;
	} else {
		/* Ended here, not by the firmware: nothing ran that it reported. */
		memset(&job->record, 0, sizeof(job->record));
		job->record.valid = NEURONSIM_EXT_FLOPS;
	}
	job->record.rec.status = status;
	job->record.rec.pad = 0;
	if (msg)
		strscpy(job->record.rec.message, msg,
			sizeof(job->record.rec.message));
	job->record.rec.message[sizeof(job->record.rec.message) - 1] = '\0';
	job->fw = NULL;
	nsim_core_count(core, status);
	nsim_job_drop_mems(job);
	WRITE_ONCE(job->state, NSIM_JOB_DONE);

	if (!job->owner)
		nsim_job_remove(job);
	else
		wake_up_all(&job->done_wq);
}

static int nsim_core_args(struct nsim_file *nf, void __user *uarg,
			  struct nsim_core **out_core)
{
	struct neuronsim_core_reserve args;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	if (args.core >= nf->dev->num_cores)
		return -EINVAL;
	*out_core = nf->dev->cores[args.core];
	return 0;
}

int nsim_ioctl_core_reserve(struct nsim_file *nf, void __user *uarg)
{
	struct nsim_dev *dev = nf->dev;
	struct nsim_core *core;
	int ret;

	ret = nsim_core_args(nf, uarg, &core);
	if (ret)
		return ret;

	mutex_lock(&dev->lock);
	if (core->owner == nf) {
		ret = 0;
	} else if (core->owner) {
		ret = -EBUSY;
	} else {
		core->owner = nf;
		core->owner_pid = task_tgid_nr(current);
	}
	mutex_unlock(&dev->lock);
	return ret;
}

int nsim_ioctl_core_release(struct nsim_file *nf, void __user *uarg)
{
	struct nsim_dev *dev = nf->dev;
	struct nsim_core *core;
	struct nsim_job *job;
	unsigned long id;
	int ret;

	ret = nsim_core_args(nf, uarg, &core);
	if (ret)
		return ret;

	mutex_lock(&dev->lock);
	if (core->owner != nf) {
		ret = -EACCES;
		goto out_unlock;
	}
	/* Unfinished jobs keep the core: wait for them first. */
	xa_for_each(&dev->jobs, id, job) {
		if (job->owner == nf && job->core == core &&
		    job->state != NSIM_JOB_DONE) {
			ret = -EBUSY;
			goto out_unlock;
		}
	}
	core->owner = NULL;
	core->owner_pid = 0;
out_unlock:
	mutex_unlock(&dev->lock);
	return ret;
}

/* Resolves one region of this file to a device address range, taking a
 * reference on its allocation (stored in job->mems).
 */
static int nsim_job_bind(struct nsim_file *nf, struct nsim_job *job,
			 const struct neuronsim_region *r,
			 struct neuronsim_fw_region *out)
{
	struct nsim_mem *mem;
	u64 end;

	if (r->pad)
		return -EINVAL;
	if (!r->handle) {
		if (r->offset || r->size)
			return -EINVAL;
		out->addr = 0;
		out->size = 0;
		return 0;
	}
	mem = nsim_mem_lookup(nf, r->handle);
	if (!mem)
		return -ENOENT;
	job->mems[job->n_mems++] = mem;
	if (check_add_overflow(r->offset, r->size, &end) || end > mem->size)
		return -EINVAL;
	out->addr = mem->addr + r->offset;
	out->size = r->size;
	return 0;
}

static int nsim_job_bind_code(struct nsim_file *nf, struct nsim_job *job,
			      const struct neuronsim_job_submit *args)
{
	struct nsim_mem *mem = NULL;
	unsigned int e;
	bool any = false;
	u64 bytes, end;

	for (e = 0; e < NEURONSIM_NUM_ENGINES; e++) {
		if (args->streams[e].pad || args->streams[e].offset % 8)
			return -EINVAL;
		if (args->streams[e].count)
			any = true;
	}
	if (!args->code_handle) {
		for (e = 0; e < NEURONSIM_NUM_ENGINES; e++)
			if (args->streams[e].offset)
				return -EINVAL;
		return any ? -EINVAL : 0;
	}
	mem = nsim_mem_lookup(nf, args->code_handle);
	if (!mem)
		return -ENOENT;
	job->mems[job->n_mems++] = mem;
	for (e = 0; e < NEURONSIM_NUM_ENGINES; e++) {
		const struct neuronsim_stream *s = &args->streams[e];

		if (check_mul_overflow((u64)s->count, (u64)NEURONSIM_INSN_SIZE,
				       &bytes) ||
		    check_add_overflow(s->offset, bytes, &end) ||
		    end > mem->size)
			return -EINVAL;
		job->streams[e].addr = mem->addr + s->offset;
		job->streams[e].count = s->count;
	}
	return 0;
}

static struct nsim_job *nsim_job_build(struct nsim_file *nf,
				       const struct neuronsim_job_submit *args)
{
	struct neuronsim_region *uregions = NULL;
	struct nsim_job *job;
	unsigned int i;
	int ret;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return ERR_PTR(-ENOMEM);
	kref_init(&job->ref);
	job->dev = nf->dev;
	INIT_LIST_HEAD(&job->node);
	init_waitqueue_head(&job->done_wq);
	job->flags = args->flags;
	job->deadline_ns = args->deadline_ns;
	job->n_regions = args->n_regions;

	/* Code, trace and each region hold at most one allocation each. */
	job->mems = kvcalloc(args->n_regions + 2, sizeof(*job->mems),
			     GFP_KERNEL);
	if (!job->mems) {
		ret = -ENOMEM;
		goto err_put;
	}
	if (args->n_regions) {
		job->regions = kvcalloc(args->n_regions, sizeof(*job->regions),
					GFP_KERNEL);
		uregions = kvcalloc(args->n_regions, sizeof(*uregions),
				    GFP_KERNEL);
		if (!job->regions || !uregions) {
			ret = -ENOMEM;
			goto err_put;
		}
		if (copy_from_user(uregions, u64_to_user_ptr(args->regions_ptr),
				   array_size(args->n_regions,
					      sizeof(*uregions)))) {
			ret = -EFAULT;
			goto err_put;
		}
	}

	ret = nsim_job_bind_code(nf, job, args);
	if (ret)
		goto err_put;
	for (i = 0; i < args->n_regions; i++) {
		ret = nsim_job_bind(nf, job, &uregions[i], &job->regions[i]);
		if (ret)
			goto err_put;
	}
	if (args->flags & NEURONSIM_JOB_PROFILE) {
		ret = nsim_job_bind(nf, job, &args->trace, &job->trace);
		if (ret)
			goto err_put;
		/* Spans hold __u64s: the firmware writes them in place. */
		if (args->trace.offset % 8) {
			ret = -EINVAL;
			goto err_put;
		}
	} else if (args->trace.handle || args->trace.pad ||
		   args->trace.offset || args->trace.size) {
		ret = -EINVAL;
		goto err_put;
	}
	kvfree(uregions);
	return job;

err_put:
	kvfree(uregions);
	nsim_job_put(job);
	return ERR_PTR(ret);
}

int nsim_ioctl_job_submit(struct nsim_file *nf, void __user *uarg)
{
	struct neuronsim_job_submit args;
	struct nsim_dev *dev = nf->dev;
	struct nsim_core *core;
	struct nsim_job *job;
	u32 id;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if ((args.flags & ~NEURONSIM_JOB_FLAGS_ALL) || args.reserved ||
	    args.core >= dev->num_cores || args.deadline_ns < 0 ||
	    args.n_regions > NEURONSIM_MAX_REGIONS ||
	    (!args.n_regions && args.regions_ptr))
		return -EINVAL;

	/* Reservation first, so a foreign core is EACCES whatever else the
	 * job holds; checked again below, the owner may change meanwhile.
	 */
	core = dev->cores[args.core];
	mutex_lock(&dev->lock);
	ret = core->owner == nf ? 0 : -EACCES;
	mutex_unlock(&dev->lock);
	if (ret)
		return ret;

	job = nsim_job_build(nf, &args);
	if (IS_ERR(job))
		return PTR_ERR(job);

	mutex_lock(&dev->lock);
	if (core->owner != nf) {
		ret = -EACCES;
		goto err_unlock;
	}
	if (!dev->null_hw && !dev->fw) {
		ret = -ENODEV;
		goto err_unlock;
	}
	if (nf->n_jobs >= NEURONSIM_MAX_JOBS_PER_FILE) {
		ret = -EBUSY;
		goto err_unlock;
	}
	ret = xa_alloc_cyclic(&dev->jobs, &id, job, xa_limit_32b,
			      &dev->next_job_id, GFP_KERNEL);
	if (ret < 0)
		goto err_unlock;
	job->id = id;
	job->owner = nf;
	job->core = core;
	nf->n_jobs++;
	core->stats[NSIM_STAT_SUBMITTED]++;

	if (dev->null_hw) {
		job->state = NSIM_JOB_RUNNING;
		nsim_job_finish(job, NEURONSIM_STATUS_SUCCESS, NULL, NULL);
	} else {
		job->state = NSIM_JOB_PENDING;
		list_add_tail(&job->node, &core->queue);
		core->n_queued++;
		atomic_inc(&dev->fw_events);
		wake_up_all(&dev->fw_wq);
	}
	mutex_unlock(&dev->lock);

	/* On -EFAULT the job stays queued; it is reaped at close. */
	args.job_id = id;
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;

err_unlock:
	mutex_unlock(&dev->lock);
	nsim_job_put(job);
	return ret;
}

int nsim_ioctl_job_wait(struct nsim_file *nf, void __user *uarg)
{
	struct neuronsim_error_record_ext *rec;
	struct neuronsim_job_wait args;
	struct nsim_dev *dev = nf->dev;
	struct nsim_job *job;
	ktime_t now, deadline;
	size_t rec_size;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if ((args.flags & ~NEURONSIM_WAIT_RECORD_EXT) || args.pad || args.pad2)
		return -EINVAL;
	if (!args.job_id || args.job_id > U32_MAX)
		return -ENOENT;
	/* A plain waiter gets the 1.0 record only: its buffer is that large. */
	rec_size = args.flags & NEURONSIM_WAIT_RECORD_EXT ?
		   sizeof(*rec) : sizeof(rec->rec);

	mutex_lock(&dev->lock);
	job = xa_load(&dev->jobs, args.job_id);
	if (!job || job->owner != nf) {
		mutex_unlock(&dev->lock);
		return -ENOENT;
	}
	kref_get(&job->ref);
	mutex_unlock(&dev->lock);

	/* The deadline is absolute: a restarted call waits for the same
	 * instant, so -ERESTARTSYS is safe to return.
	 */
	deadline = ns_to_ktime(args.timeout_ns);
	while (READ_ONCE(job->state) != NSIM_JOB_DONE) {
		now = ktime_get();
		if (ktime_compare(now, deadline) >= 0) {
			ret = -ETIME;
			goto out_put;
		}
		ret = wait_event_interruptible_hrtimeout(job->done_wq,
							 READ_ONCE(job->state) == NSIM_JOB_DONE,
							 ktime_sub(deadline, now));
		if (ret == -ERESTARTSYS)
			goto out_put;
	}

	rec = kmalloc(sizeof(*rec), GFP_KERNEL);
	if (!rec) {
		ret = -ENOMEM;
		goto out_put;
	}
	mutex_lock(&dev->lock);
	*rec = job->record;
	/* A second waiter of the same id may have reaped it already. */
	if (job->owner == nf && xa_load(&dev->jobs, job->id) == job)
		nsim_job_remove(job);
	mutex_unlock(&dev->lock);

	ret = 0;
	args.status = rec->rec.status;
	if (copy_to_user(uarg, &args, sizeof(args)) ||
	    (args.error_ptr &&
	     copy_to_user(u64_to_user_ptr(args.error_ptr), rec, rec_size)))
		ret = -EFAULT;
	kfree(rec);
out_put:
	nsim_job_put(job);
	return ret;
}

/* Called at close: queued jobs are dropped, running ones orphaned (freed
 * when the firmware completes them or dies) and the firmware asked to abort
 * them, finished ones freed; then the file's cores are released.
 */
void nsim_file_jobs_release(struct nsim_file *nf)
{
	struct nsim_dev *dev = nf->dev;
	struct nsim_job *job;
	unsigned long id;
	unsigned int i;

	mutex_lock(&dev->lock);
	xa_for_each(&dev->jobs, id, job) {
		if (job->owner != nf)
			continue;
		switch (job->state) {
		case NSIM_JOB_PENDING:
			list_del_init(&job->node);
			job->core->n_queued--;
			job->core->stats[NSIM_STAT_DROPPED]++;
			nsim_job_drop_mems(job);
			WRITE_ONCE(job->state, NSIM_JOB_DONE);
			nsim_job_remove(job);
			break;
		case NSIM_JOB_RUNNING:
			/* The firmware is asked to stop it (FW_ABORT_WAIT):
			 * nobody waits for it and it must not hold the core.
			 */
			nf->n_jobs--;
			job->owner = NULL;
			atomic_inc(&dev->abort_events);
			wake_up_all(&dev->abort_wq);
			break;
		default:
			nsim_job_remove(job);
			break;
		}
	}
	WARN_ON(nf->n_jobs);
	for (i = 0; i < dev->num_cores; i++) {
		if (dev->cores[i]->owner == nf) {
			dev->cores[i]->owner = NULL;
			dev->cores[i]->owner_pid = 0;
		}
	}
	mutex_unlock(&dev->lock);
}
