// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuronsim sysfs: device attributes on /sys/class/neuronsim/neuronsimN and
 * one coreM directory per NeuronCore below it (docs/abi.md lists them).
 */
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "nsim.h"

const char *const nsim_stat_names[NSIM_STAT_COUNT] = {
	[NSIM_STAT_SUBMITTED] = "jobs_submitted",
	[NSIM_STAT_SUCCESS] = "jobs_success",
	[NSIM_STAT_FAILURE] = "jobs_failure",
	[NSIM_STAT_TIMEOUT] = "jobs_timeout",
	[NSIM_STAT_NUM_ERR] = "jobs_num_err",
	[NSIM_STAT_OOB] = "jobs_oob",
	[NSIM_STAT_FW_LOST] = "jobs_fw_lost",
	[NSIM_STAT_DROPPED] = "jobs_dropped",
};

/* ---- per device ---- */

static u64 nsim_dev_stat(struct nsim_dev *dev, enum nsim_stat stat)
{
	u64 sum = 0;
	unsigned int i;

	mutex_lock(&dev->lock);
	for (i = 0; i < dev->num_cores; i++)
		sum += dev->cores[i]->stats[stat];
	mutex_unlock(&dev->lock);
	return sum;
}

#define NSIM_DEV_STAT_ATTR(_name, _stat)				\
static ssize_t _name##_show(struct device *d,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%llu\n",				\
			  nsim_dev_stat(dev_get_drvdata(d), _stat));	\
}									\
static DEVICE_ATTR_RO(_name)

NSIM_DEV_STAT_ATTR(jobs_submitted, NSIM_STAT_SUBMITTED);
NSIM_DEV_STAT_ATTR(jobs_success, NSIM_STAT_SUCCESS);
NSIM_DEV_STAT_ATTR(jobs_failure, NSIM_STAT_FAILURE);
NSIM_DEV_STAT_ATTR(jobs_timeout, NSIM_STAT_TIMEOUT);
NSIM_DEV_STAT_ATTR(jobs_num_err, NSIM_STAT_NUM_ERR);
NSIM_DEV_STAT_ATTR(jobs_oob, NSIM_STAT_OOB);
NSIM_DEV_STAT_ATTR(jobs_fw_lost, NSIM_STAT_FW_LOST);
NSIM_DEV_STAT_ATTR(jobs_dropped, NSIM_STAT_DROPPED);

static ssize_t num_cores_show(struct device *d, struct device_attribute *attr,
			      char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return sysfs_emit(buf, "%u\n", dev->num_cores);
}
static DEVICE_ATTR_RO(num_cores);

static ssize_t mem_size_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return sysfs_emit(buf, "%llu\n", dev->mem_size);
}
static DEVICE_ATTR_RO(mem_size);

/* *@stat, a u64 statistic of @dev, read under its stat_lock. */
static ssize_t nsim_stat_emit(struct nsim_dev *dev, const u64 *stat, char *buf)
{
	u64 v;

	spin_lock(&dev->stat_lock);
	v = *stat;
	spin_unlock(&dev->stat_lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static ssize_t mem_in_use_show(struct device *d, struct device_attribute *attr,
			       char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return nsim_stat_emit(dev, &dev->mem_in_use, buf);
}
static DEVICE_ATTR_RO(mem_in_use);

static ssize_t mem_peak_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return nsim_stat_emit(dev, &dev->mem_peak, buf);
}
static DEVICE_ATTR_RO(mem_peak);

static ssize_t cores_reserved_show(struct device *d,
				   struct device_attribute *attr, char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);
	unsigned int i, n = 0;

	mutex_lock(&dev->lock);
	for (i = 0; i < dev->num_cores; i++)
		n += !!dev->cores[i]->owner;
	mutex_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(cores_reserved);

static ssize_t fw_attached_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return sysfs_emit(buf, "%d\n", !!READ_ONCE(dev->fw));
}
static DEVICE_ATTR_RO(fw_attached);

static ssize_t null_hw_show(struct device *d, struct device_attribute *attr,
			    char *buf)
{
	struct nsim_dev *dev = dev_get_drvdata(d);

	return sysfs_emit(buf, "%d\n", dev->null_hw);
}
static DEVICE_ATTR_RO(null_hw);

static ssize_t abi_version_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d.%d\n", NEURONSIM_ABI_MAJOR,
			  NEURONSIM_ABI_MINOR);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *nsim_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_num_cores.attr,
	&dev_attr_mem_size.attr,
	&dev_attr_mem_in_use.attr,
	&dev_attr_mem_peak.attr,
	&dev_attr_cores_reserved.attr,
	&dev_attr_fw_attached.attr,
	&dev_attr_null_hw.attr,
	&dev_attr_jobs_submitted.attr,
	&dev_attr_jobs_success.attr,
	&dev_attr_jobs_failure.attr,
	&dev_attr_jobs_timeout.attr,
	&dev_attr_jobs_num_err.attr,
	&dev_attr_jobs_oob.attr,
	&dev_attr_jobs_fw_lost.attr,
	&dev_attr_jobs_dropped.attr,
	NULL
};

static const struct attribute_group nsim_dev_group = {
	.attrs = nsim_dev_attrs,
};

const struct attribute_group *nsim_dev_groups[] = {
	&nsim_dev_group,
	NULL
};

/* ---- per core ---- */

static struct nsim_core *to_nsim_core(struct kobject *kobj)
{
	return container_of(kobj, struct nsim_core, kobj);
}

/* One show for every core attribute: the value is picked by name. */
static ssize_t nsim_core_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	struct nsim_core *core = to_nsim_core(kobj);
	const char *name = attr->attr.name;
	struct nsim_dev *dev = core->dev;
	long long v = -1;
	unsigned int i;

	mutex_lock(&dev->lock);
	if (!strcmp(name, "reserved"))
		v = !!core->owner;
	else if (!strcmp(name, "owner_pid"))
		v = core->owner ? core->owner_pid : 0;
	else if (!strcmp(name, "queued"))
		v = core->n_queued;
	else if (!strcmp(name, "running"))
		v = core->running ? core->running->id : 0;
	for (i = 0; i < NSIM_STAT_COUNT; i++)
		if (!strcmp(name, nsim_stat_names[i]))
			v = core->stats[i];
	mutex_unlock(&dev->lock);
	return sysfs_emit(buf, "%lld\n", v);
}

#define NSIM_CORE_ATTR(_name) \
	static struct kobj_attribute nsim_core_attr_##_name = \
		__ATTR(_name, 0444, nsim_core_show, NULL)

NSIM_CORE_ATTR(reserved);
NSIM_CORE_ATTR(owner_pid);
NSIM_CORE_ATTR(queued);
NSIM_CORE_ATTR(running);
NSIM_CORE_ATTR(jobs_submitted);
NSIM_CORE_ATTR(jobs_success);
NSIM_CORE_ATTR(jobs_failure);
NSIM_CORE_ATTR(jobs_timeout);
NSIM_CORE_ATTR(jobs_num_err);
NSIM_CORE_ATTR(jobs_oob);
NSIM_CORE_ATTR(jobs_fw_lost);
NSIM_CORE_ATTR(jobs_dropped);

static struct attribute *nsim_core_attrs[] = {
	&nsim_core_attr_reserved.attr,
	&nsim_core_attr_owner_pid.attr,
	&nsim_core_attr_queued.attr,
	&nsim_core_attr_running.attr,
	&nsim_core_attr_jobs_submitted.attr,
	&nsim_core_attr_jobs_success.attr,
	&nsim_core_attr_jobs_failure.attr,
	&nsim_core_attr_jobs_timeout.attr,
	&nsim_core_attr_jobs_num_err.attr,
	&nsim_core_attr_jobs_oob.attr,
	&nsim_core_attr_jobs_fw_lost.attr,
	&nsim_core_attr_jobs_dropped.attr,
	NULL
};
ATTRIBUTE_GROUPS(nsim_core);

static void nsim_core_release(struct kobject *kobj)
{
	kfree(to_nsim_core(kobj));
}

static struct kobj_type nsim_core_ktype = {
	.release = nsim_core_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = nsim_core_groups,
};

struct nsim_core *nsim_core_alloc(struct nsim_dev *dev, unsigned int index)
{
	struct nsim_core *core;

	core = kzalloc(sizeof(*core), GFP_KERNEL);
	if (!core)
		return NULL;
	kobject_init(&core->kobj, &nsim_core_ktype);
	core->dev = dev;
	core->index = index;
	INIT_LIST_HEAD(&core->queue);
	return core;
}

int nsim_core_sysfs_add(struct nsim_core *core)
{
	return kobject_add(&core->kobj, &core->dev->client_dev->kobj, "core%u",
			   core->index);
}

void nsim_core_put(struct nsim_core *core)
{
	if (core->kobj.state_in_sysfs)
		kobject_del(&core->kobj);
	kobject_put(&core->kobj);
}
