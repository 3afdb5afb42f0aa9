// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuronsim device side (/dev/neuronsim-fwN): the firmware process attaches,
 * fetches jobs as device addresses, maps all of device memory and completes
 * jobs. Closing the file fails every unfinished job with FW_LOST. The
 * firmware learns which running jobs to abort (deadline passed, submitter
 * gone) through FW_ABORT_WAIT.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "nsim.h"

/* Under dev->lock: fail every queued and running job, forget the firmware. */
static void nsim_fw_detach_locked(struct nsim_fw_file *ff)
{
	struct nsim_dev *dev = ff->dev;
	struct nsim_job *job;
	unsigned long id;

	lockdep_assert_held(&dev->lock);
	if (dev->fw != ff)
		return;
	dev->fw = NULL;
	xa_for_each(&dev->jobs, id, job) {
		if (job->state == NSIM_JOB_PENDING) {
			list_del_init(&job->node);
			job->core->n_queued--;
		} else if (job->state != NSIM_JOB_RUNNING) {
			continue;
		}
		nsim_job_finish(job, NEURONSIM_STATUS_FW_LOST, NULL,
				"firmware detached before the job completed");
	}
	atomic_inc(&dev->fw_events);
	wake_up_all(&dev->fw_wq);
	atomic_inc(&dev->abort_events);
	wake_up_all(&dev->abort_wq);
	dev_info_ratelimited(dev->client_dev, "firmware detached\n");
}

static int nsim_fw_attach(struct nsim_fw_file *ff, void __user *uarg)
{
	struct neuronsim_fw_attach args;
	struct nsim_dev *dev = ff->dev;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad || args.pad2)
		return -EINVAL;
	if (dev->null_hw)
		return -EOPNOTSUPP;

	mutex_lock(&dev->lock);
	if (dev->fw)
		ret = -EBUSY;
	else
		dev->fw = ff;
	mutex_unlock(&dev->lock);
	if (ret)
		return ret;
	dev_info_ratelimited(dev->client_dev, "firmware attached (pid %d)\n",
			     task_tgid_nr(current));

	args.num_cores = dev->num_cores;
	args.mem_size = dev->mem_size;
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static int nsim_fw_detach(struct nsim_fw_file *ff, void __user *uarg)
{
	struct neuronsim_fw_detach args;
	struct nsim_dev *dev = ff->dev;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad)
		return -EINVAL;

	mutex_lock(&dev->lock);
	if (dev->fw == ff)
		nsim_fw_detach_locked(ff);
	else
		ret = -EPERM;
	mutex_unlock(&dev->lock);
	return ret;
}

/*
 * A pick of nsim_fw_wait(), under dev->lock: the job @ff is waiting for at
 * @now, or NULL; it may lower *@until, the instant to look again at the
 * latest. The abort pick says why in *@reason (NULL for the fetch pick).
 *
 * nsim_fw_pick_fetch: the first queued job of the next idle core,
 * round-robin. Jobs whose deadline passed while queued end with TIMEOUT here.
 */
static struct nsim_job *nsim_fw_pick_fetch(struct nsim_fw_file *ff,
					   ktime_t now, ktime_t *until,
					   u32 *reason)
{
	struct nsim_dev *dev = ff->dev;
	struct nsim_core *core;
	struct nsim_job *job;
	unsigned int i, c;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < dev->num_cores; i++) {
		c = (dev->rr + i) % dev->num_cores;
		core = dev->cores[c];
		if (core->running)
			continue;
		while (!list_empty(&core->queue)) {
			job = list_first_entry(&core->queue, struct nsim_job,
					       node);
			if (!job->deadline_ns ||
			    job->deadline_ns > ktime_to_ns(now)) {
				dev->rr = c + 1;
				return job;
			}
			list_del_init(&job->node);
			core->n_queued--;
			nsim_job_finish(job, NEURONSIM_STATUS_TIMEOUT, NULL,
					"deadline passed before the job started");
		}
	}
	return NULL;
}

/*
 * The wait of FW_FETCH and FW_ABORT_WAIT: @pick under dev->lock until it
 * finds a job, sleeping in between on @wq until @events moves, @deadline
 * (the caller's timeout) passes or the instant @pick asked for comes; all
 * absolute, so a restarted call waits for the same instants.
 * Returns 0 with dev->lock held and the job in *@job, or -EPERM (@ff is not
 * the attached firmware), -ETIME or -ERESTARTSYS without the lock.
 */
static int nsim_fw_wait(struct nsim_fw_file *ff, ktime_t deadline,
			wait_queue_head_t *wq, atomic_t *events,
			struct nsim_job *(*pick)(struct nsim_fw_file *ff,
						 ktime_t now, ktime_t *until,
						 u32 *reason),
			struct nsim_job **job, u32 *reason)
{
	struct nsim_dev *dev = ff->dev;
	ktime_t now, until;
	int seen, ret;

	for (;;) {
		mutex_lock(&dev->lock);
		if (dev->fw != ff) {
			mutex_unlock(&dev->lock);
			return -EPERM;
		}
		seen = atomic_read(events);
		now = ktime_get();
		until = deadline;
		*job = pick(ff, now, &until, reason);
		if (*job)
			return 0;
		mutex_unlock(&dev->lock);

		if (ktime_compare(now, deadline) >= 0)
			return -ETIME;
		ret = wait_event_interruptible_hrtimeout(*wq,
							 atomic_read(events) != seen,
							 ktime_sub(until, now));
		if (ret == -ERESTARTSYS)
			return ret;
	}
}

static void nsim_fw_fill(struct neuronsim_fw_fetch *args,
			 const struct nsim_job *job)
{
	args->job_id = job->id;
	args->core = job->core->index;
	args->job_flags = job->flags;
	args->n_regions = job->n_regions;
	args->pad = 0;
	args->deadline_ns = job->deadline_ns;
	memcpy(args->streams, job->streams, sizeof(args->streams));
	args->trace = job->trace;
}

static int nsim_fw_fetch(struct nsim_fw_file *ff, void __user *uarg)
{
	struct neuronsim_fw_fetch args;
	struct nsim_dev *dev = ff->dev;
	struct nsim_job *job;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || (args.max_regions && !args.regions_ptr))
		return -EINVAL;

	ret = nsim_fw_wait(ff, ns_to_ktime(args.timeout_ns), &dev->fw_wq,
			   &dev->fw_events, nsim_fw_pick_fetch, &job, NULL);
	if (ret)
		return ret;

	if (job->n_regions > args.max_regions) {
		/* Leave it queued; tell the caller the size it needs. */
		nsim_fw_fill(&args, job);
		mutex_unlock(&dev->lock);
		if (copy_to_user(uarg, &args, sizeof(args)))
			return -EFAULT;
		return -E2BIG;
	}
	list_del_init(&job->node);
	job->core->n_queued--;
	job->core->running = job;
	job->state = NSIM_JOB_RUNNING;
	job->fw = ff;
	job->abort_sent = false;
	kref_get(&job->ref);
	nsim_fw_fill(&args, job);
	/* An abort waiter sleeping until a later deadline re-arms for this
	 * job's.
	 */
	atomic_inc(&dev->abort_events);
	wake_up_all(&dev->abort_wq);
	mutex_unlock(&dev->lock);

	ret = 0;
	if ((job->n_regions &&
	     copy_to_user(u64_to_user_ptr(args.regions_ptr), job->regions,
			  array_size(job->n_regions, sizeof(*job->regions)))) ||
	    copy_to_user(uarg, &args, sizeof(args))) {
		ret = -EFAULT;
		/* Give the job back unless it ended meanwhile. */
		mutex_lock(&dev->lock);
		if (job->state == NSIM_JOB_RUNNING && job->fw == ff) {
			job->core->running = NULL;
			job->fw = NULL;
			job->state = NSIM_JOB_PENDING;
			list_add(&job->node, &job->core->queue);
			job->core->n_queued++;
			atomic_inc(&dev->fw_events);
			wake_up_all(&dev->fw_wq);
		}
		mutex_unlock(&dev->lock);
	}
	nsim_job_put(job);
	return ret;
}

static int nsim_fw_complete(struct nsim_fw_file *ff, void __user *uarg)
{
	struct neuronsim_error_record_ext *rec = NULL;
	struct neuronsim_fw_complete args;
	struct nsim_dev *dev = ff->dev;
	struct nsim_job *job;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if ((args.flags & ~NEURONSIM_COMPLETE_RECORD_EXT) ||
	    args.status >= NEURONSIM_STATUS_COUNT)
		return -EINVAL;
	if (!args.job_id || args.job_id > U32_MAX)
		return -ENOENT;
	if (args.error_ptr) {
		/* A plain record (ABI 1.1 firmware) leaves the extension zero. */
		rec = kzalloc(sizeof(*rec), GFP_KERNEL);
		if (!rec)
			return -ENOMEM;
		if (copy_from_user(rec, u64_to_user_ptr(args.error_ptr),
				   args.flags & NEURONSIM_COMPLETE_RECORD_EXT ?
				   sizeof(*rec) : sizeof(rec->rec))) {
			ret = -EFAULT;
			goto out_free;
		}
		if (rec->rec.pad || rec->pad ||
		    (rec->valid & ~NEURONSIM_EXT_VALID_ALL) ||
		    (!(rec->valid & NEURONSIM_EXT_FLOPS) && rec->flops) ||
		    rec->reserved[0] || rec->reserved[1]) {
			ret = -EINVAL;
			goto out_free;
		}
	}

	mutex_lock(&dev->lock);
	if (dev->fw != ff) {
		ret = -EPERM;
		goto out_unlock;
	}
	job = xa_load(&dev->jobs, args.job_id);
	if (!job || job->state != NSIM_JOB_RUNNING || job->fw != ff) {
		ret = -ENOENT;
		goto out_unlock;
	}
	nsim_job_finish(job, args.status, rec, NULL);
out_unlock:
	mutex_unlock(&dev->lock);
out_free:
	kfree(rec);
	return ret;
}

/*
 * nsim_fw_pick_abort, the pick of FW_ABORT_WAIT: the first running job of
 * @ff to abort and why (its file closed, or its deadline passed at @now), or
 * NULL; lowers *@until to the earliest deadline still ahead among the others.
 */
static struct nsim_job *nsim_fw_pick_abort(struct nsim_fw_file *ff,
					   ktime_t now, ktime_t *until,
					   u32 *reason)
{
	struct nsim_dev *dev = ff->dev;
	struct nsim_job *job;
	unsigned int i;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < dev->num_cores; i++) {
		job = dev->cores[i]->running;
		if (!job || job->fw != ff || job->abort_sent)
			continue;
		if (!job->owner) {
			*reason = NEURONSIM_ABORT_CLOSED;
			return job;
		}
		if (!job->deadline_ns)
			continue;
		if (job->deadline_ns <= ktime_to_ns(now)) {
			*reason = NEURONSIM_ABORT_DEADLINE;
			return job;
		}
		if (job->deadline_ns < ktime_to_ns(*until))
			*until = ns_to_ktime(job->deadline_ns);
	}
	return NULL;
}

/*
 * Sleeps until the earliest running deadline, the caller's timeout or an
 * event (a job started or was orphaned, the firmware detached).
 */
static int nsim_fw_abort_wait(struct nsim_fw_file *ff, void __user *uarg)
{
	struct neuronsim_fw_abort args;
	struct nsim_dev *dev = ff->dev;
	struct nsim_job *job;
	u32 reason = 0;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad)
		return -EINVAL;

	ret = nsim_fw_wait(ff, ns_to_ktime(args.timeout_ns), &dev->abort_wq,
			   &dev->abort_events, nsim_fw_pick_abort, &job,
			   &reason);
	if (ret)
		return ret;
	job->abort_sent = true;
	args.job_id = job->id;
	args.core = job->core->index;
	args.reason = reason;
	mutex_unlock(&dev->lock);

	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static long nsim_fw_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct nsim_fw_file *ff = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case NEURONSIM_IOCTL_GET_PARAM:
		return nsim_get_param(ff->dev, uarg);
	case NEURONSIM_IOCTL_FW_ATTACH:
		return nsim_fw_attach(ff, uarg);
	case NEURONSIM_IOCTL_FW_FETCH:
		return nsim_fw_fetch(ff, uarg);
	case NEURONSIM_IOCTL_FW_COMPLETE:
		return nsim_fw_complete(ff, uarg);
	case NEURONSIM_IOCTL_FW_DETACH:
		return nsim_fw_detach(ff, uarg);
	case NEURONSIM_IOCTL_FW_ABORT_WAIT:
		return nsim_fw_abort_wait(ff, uarg);
	default:
		return -ENOTTY;
	}
}

/* The firmware sees all of device memory: offset 0 is device address 0. */
static int nsim_fw_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct nsim_fw_file *ff = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off, end;

	if (check_shl_overflow((u64)vma->vm_pgoff, PAGE_SHIFT, &off) ||
	    check_add_overflow(off, (u64)len, &end) ||
	    end > ff->dev->mem_size)
		return -EINVAL;
	return remap_vmalloc_range(vma, ff->dev->mem, vma->vm_pgoff);
}

static int nsim_fw_open(struct inode *inode, struct file *file)
{
	struct nsim_fw_file *ff;
	struct nsim_dev *dev;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	dev = nsim_dev_from_minor(iminor(inode), true);
	if (!dev)
		return -ENODEV;
	ff = kzalloc(sizeof(*ff), GFP_KERNEL);
	if (!ff)
		return -ENOMEM;
	ff->dev = dev;
	file->private_data = ff;
	return nonseekable_open(inode, file);
}

static int nsim_fw_release(struct inode *inode, struct file *file)
{
	struct nsim_fw_file *ff = file->private_data;

	mutex_lock(&ff->dev->lock);
	nsim_fw_detach_locked(ff);
	mutex_unlock(&ff->dev->lock);
	kfree(ff);
	return 0;
}

const struct file_operations nsim_fw_fops = {
	.owner = THIS_MODULE,
	.open = nsim_fw_open,
	.release = nsim_fw_release,
	.unlocked_ioctl = nsim_fw_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nsim_fw_mmap,
	.llseek = NSIM_NO_LLSEEK,
};
