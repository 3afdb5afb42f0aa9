// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuronsim module: parameters, device creation, the client node's file
 * operations and GET_PARAM.
 */
#include <linux/build_bug.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/uaccess.h>

#include <linux/neuronsim_version.h>

#include "nsim.h"

static unsigned int num_devices = 1;
module_param(num_devices, uint, 0444);
MODULE_PARM_DESC(num_devices, "Number of simulated devices (1-8, default 1)");

static unsigned int num_cores = 2;
module_param(num_cores, uint, 0444);
MODULE_PARM_DESC(num_cores, "NeuronCores per device (1-64, default 2)");

static unsigned int mem_size = 64;
module_param(mem_size, uint, 0444);
MODULE_PARM_DESC(mem_size, "Device memory per device in MiB (1-4096, default 64)");

static bool null_hw;
module_param(null_hw, bool, 0444);
MODULE_PARM_DESC(null_hw, "Complete jobs at submit without a firmware (default 0)");

static dev_t nsim_devt;
static struct class *nsim_class;
static struct cdev nsim_client_cdev;
static struct cdev nsim_fw_cdev;
static struct nsim_dev *nsim_devs[NSIM_MAX_DEVICES];

/* The ABI is fixed by these layouts; pahole agrees (see docs/abi.md). */
static void __init nsim_abi_check(void)
{
	BUILD_BUG_ON(sizeof(struct neuronsim_get_param) != 16);
	BUILD_BUG_ON(sizeof(struct neuronsim_mem_alloc) != 32);
	BUILD_BUG_ON(sizeof(struct neuronsim_mem_free) != 8);
	BUILD_BUG_ON(sizeof(struct neuronsim_mem_info) != 32);
	BUILD_BUG_ON(sizeof(struct neuronsim_core_reserve) != 8);
	BUILD_BUG_ON(sizeof(struct neuronsim_region) != 24);
	BUILD_BUG_ON(sizeof(struct neuronsim_stream) != 16);
	BUILD_BUG_ON(sizeof(struct neuronsim_job_submit) != 152);
	BUILD_BUG_ON(offsetof(struct neuronsim_job_submit, streams) != 32);
	BUILD_BUG_ON(offsetof(struct neuronsim_job_submit, trace) != 112);
	BUILD_BUG_ON(offsetof(struct neuronsim_job_submit, job_id) != 136);
	BUILD_BUG_ON(sizeof(struct neuronsim_error_record) != 280);
	BUILD_BUG_ON(offsetof(struct neuronsim_error_record, first_index) !=
		     32);
	BUILD_BUG_ON(offsetof(struct neuronsim_error_record, engine_busy_ns) !=
		     80);
	BUILD_BUG_ON(offsetof(struct neuronsim_error_record, message) != 120);
	BUILD_BUG_ON(sizeof(struct neuronsim_error_record_ext) != 312);
	BUILD_BUG_ON(offsetof(struct neuronsim_error_record_ext, valid) != 280);
	BUILD_BUG_ON(offsetof(struct neuronsim_error_record_ext, flops) != 288);
	BUILD_BUG_ON(sizeof(struct neuronsim_job_wait) != 40);
	BUILD_BUG_ON(offsetof(struct neuronsim_job_wait, timeout_ns) != 16);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_attach) != 24);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_region) != 16);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_stream) != 16);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_fetch) != 152);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_fetch, deadline_ns) != 48);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_fetch, streams) != 56);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_fetch, trace) != 136);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_complete) != 24);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_detach) != 8);
	BUILD_BUG_ON(sizeof(struct neuronsim_fw_abort) != 32);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_abort, timeout_ns) != 8);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_abort, job_id) != 16);
	BUILD_BUG_ON(offsetof(struct neuronsim_fw_abort, reason) != 28);
}

/**
 * nsim_dev_from_minor() - the device behind a node
 * @minor: minor number of the opened inode
 * @fw: true for the device-side node
 *
 * Return: the device, or NULL if the minor is not of that kind.
 */
struct nsim_dev *nsim_dev_from_minor(unsigned int minor, bool fw)
{
	unsigned int i = minor - MINOR(nsim_devt);

	if (fw) {
		if (i < num_devices)
			return NULL;
		i -= num_devices;
	}
	if (i >= num_devices)
		return NULL;
	return nsim_devs[i];
}

int nsim_get_param(struct nsim_dev *dev, void __user *uarg)
{
	struct neuronsim_get_param args;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.pad)
		return -EINVAL;

	switch (args.param) {
	case NEURONSIM_PARAM_ABI_MAJOR:
		args.value = NEURONSIM_ABI_MAJOR;
		break;
	case NEURONSIM_PARAM_ABI_MINOR:
		args.value = NEURONSIM_ABI_MINOR;
		break;
	case NEURONSIM_PARAM_NUM_CORES:
		args.value = dev->num_cores;
		break;
	case NEURONSIM_PARAM_MEM_SIZE:
		args.value = dev->mem_size;
		break;
	case NEURONSIM_PARAM_CAPABILITIES:
		args.value = NEURONSIM_CAP_NAN_CHECK | NEURONSIM_CAP_PROFILE |
			     NEURONSIM_CAP_FW_DEVICE | NEURONSIM_CAP_FW_ABORT |
			     NEURONSIM_CAP_RECORD_EXT;
		break;
	case NEURONSIM_PARAM_FW_ATTACHED:
		args.value = !!READ_ONCE(dev->fw);
		break;
	case NEURONSIM_PARAM_NULL_HW:
		args.value = dev->null_hw;
		break;
	case NEURONSIM_PARAM_DEVICE_INDEX:
		args.value = dev->index;
		break;
	case NEURONSIM_PARAM_MEM_ALIGN:
		args.value = PAGE_SIZE;
		break;
	case NEURONSIM_PARAM_MAX_REGIONS:
		args.value = NEURONSIM_MAX_REGIONS;
		break;
	case NEURONSIM_PARAM_MEM_IN_USE:
		spin_lock(&dev->stat_lock);
		args.value = dev->mem_in_use;
		spin_unlock(&dev->stat_lock);
		break;
	default:
		return -EINVAL;
	}
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static long nsim_client_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct nsim_file *nf = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case NEURONSIM_IOCTL_GET_PARAM:
		return nsim_get_param(nf->dev, uarg);
	case NEURONSIM_IOCTL_MEM_ALLOC:
		return nsim_ioctl_mem_alloc(nf, uarg);
	case NEURONSIM_IOCTL_MEM_FREE:
		return nsim_ioctl_mem_free(nf, uarg);
	case NEURONSIM_IOCTL_MEM_INFO:
		return nsim_ioctl_mem_info(nf, uarg);
	case NEURONSIM_IOCTL_CORE_RESERVE:
		return nsim_ioctl_core_reserve(nf, uarg);
	case NEURONSIM_IOCTL_CORE_RELEASE:
		return nsim_ioctl_core_release(nf, uarg);
	case NEURONSIM_IOCTL_JOB_SUBMIT:
		return nsim_ioctl_job_submit(nf, uarg);
	case NEURONSIM_IOCTL_JOB_WAIT:
		return nsim_ioctl_job_wait(nf, uarg);
	default:
		return -ENOTTY;
	}
}

static int nsim_client_mmap_fop(struct file *file, struct vm_area_struct *vma)
{
	return nsim_client_mmap(file->private_data, vma);
}

static int nsim_client_open(struct inode *inode, struct file *file)
{
	struct nsim_file *nf;
	struct nsim_dev *dev;

	dev = nsim_dev_from_minor(iminor(inode), false);
	if (!dev)
		return -ENODEV;
	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	nf->dev = dev;
	xa_init_flags(&nf->mems, XA_FLAGS_ALLOC1);
	nf->mem_tree = RB_ROOT;
	file->private_data = nf;
	return nonseekable_open(inode, file);
}

/* Also runs after kill -9: everything the file owns goes here. */
static int nsim_client_release(struct inode *inode, struct file *file)
{
	struct nsim_file *nf = file->private_data;

	nsim_file_jobs_release(nf);
	nsim_file_mems_release(nf);
	kfree(nf);
	return 0;
}

static const struct file_operations nsim_client_fops = {
	.owner = THIS_MODULE,
	.open = nsim_client_open,
	.release = nsim_client_release,
	.unlocked_ioctl = nsim_client_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nsim_client_mmap_fop,
	.llseek = NSIM_NO_LLSEEK,
};

static char *nsim_devnode(NSIM_DEVNODE_CONST struct device *dev, umode_t *mode)
{
	/* Clients are anyone; the device side is root's. */
	if (mode)
		*mode = MINOR(dev->devt) - MINOR(nsim_devt) >= num_devices ?
			0600 : 0666;
	return NULL;
}

static void nsim_dev_destroy(struct nsim_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->num_cores; i++)
		if (dev->cores[i])
			nsim_core_put(dev->cores[i]);
	if (dev->fw_dev)
		device_destroy(nsim_class, dev->fw_dev->devt);
	if (dev->client_dev)
		device_destroy(nsim_class, dev->client_dev->devt);
	WARN_ON(!xa_empty(&dev->jobs));
	xa_destroy(&dev->jobs);
	nsim_mem_pool_fini(dev);
	kfree(dev->cores);
	mutex_destroy(&dev->lock);
	kfree(dev);
}

static struct nsim_dev *nsim_dev_create(unsigned int index)
{
	struct nsim_dev *dev;
	unsigned int i;
	int ret;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->index = index;
	dev->null_hw = null_hw;
	mutex_init(&dev->lock);
	xa_init_flags(&dev->jobs, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&dev->fw_wq);
	atomic_set(&dev->fw_events, 0);
	init_waitqueue_head(&dev->abort_wq);
	atomic_set(&dev->abort_events, 0);

	ret = nsim_mem_pool_init(dev, (u64)mem_size << 20);
	if (ret)
		goto err_free;
	dev->cores = kcalloc(num_cores, sizeof(*dev->cores), GFP_KERNEL);
	if (!dev->cores) {
		ret = -ENOMEM;
		goto err_pool;
	}
	dev->num_cores = num_cores;
	for (i = 0; i < num_cores; i++) {
		dev->cores[i] = nsim_core_alloc(dev, i);
		if (!dev->cores[i]) {
			ret = -ENOMEM;
			goto err_destroy;
		}
	}
	return dev;

err_pool:
	nsim_mem_pool_fini(dev);
err_free:
	mutex_destroy(&dev->lock);
	kfree(dev);
	return ERR_PTR(ret);
err_destroy:
	nsim_dev_destroy(dev);
	return ERR_PTR(ret);
}

/* Creates the nodes and sysfs entries once the cdevs are live. */
static int nsim_dev_register(struct nsim_dev *dev)
{
	struct device *d;
	unsigned int i;
	int ret;

	d = device_create_with_groups(nsim_class, NULL,
				      MKDEV(MAJOR(nsim_devt),
					    MINOR(nsim_devt) + dev->index),
				      dev, nsim_dev_groups, "neuronsim%u",
				      dev->index);
	if (IS_ERR(d))
		return PTR_ERR(d);
	dev->client_dev = d;

	d = device_create(nsim_class, dev->client_dev,
			  MKDEV(MAJOR(nsim_devt), MINOR(nsim_devt) +
				num_devices + dev->index),
			  dev, "neuronsim-fw%u", dev->index);
	if (IS_ERR(d))
		return PTR_ERR(d);
	dev->fw_dev = d;

	for (i = 0; i < dev->num_cores; i++) {
		ret = nsim_core_sysfs_add(dev->cores[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int __init nsim_init(void)
{
	unsigned int i;
	int ret;

	nsim_abi_check();
	if (!num_devices || num_devices > NSIM_MAX_DEVICES ||
	    !num_cores || num_cores > NSIM_MAX_CORES ||
	    !mem_size || mem_size > NSIM_MAX_MEM_MIB) {
		pr_err("neuronsim: bad parameters (num_devices 1-%d, num_cores 1-%d, mem_size 1-%d MiB)\n",
		       NSIM_MAX_DEVICES, NSIM_MAX_CORES, NSIM_MAX_MEM_MIB);
		return -EINVAL;
	}

	ret = alloc_chrdev_region(&nsim_devt, 0, 2 * num_devices, "neuronsim");
	if (ret)
		return ret;
	nsim_class = nsim_class_create("neuronsim");
	if (IS_ERR(nsim_class)) {
		ret = PTR_ERR(nsim_class);
		goto err_region;
	}
	nsim_class->devnode = nsim_devnode;

	for (i = 0; i < num_devices; i++) {
		nsim_devs[i] = nsim_dev_create(i);
		if (IS_ERR(nsim_devs[i])) {
			ret = PTR_ERR(nsim_devs[i]);
			nsim_devs[i] = NULL;
			goto err_devs;
		}
	}

	cdev_init(&nsim_client_cdev, &nsim_client_fops);
	nsim_client_cdev.owner = THIS_MODULE;
	ret = cdev_add(&nsim_client_cdev, nsim_devt, num_devices);
	if (ret)
		goto err_devs;
	cdev_init(&nsim_fw_cdev, &nsim_fw_fops);
	nsim_fw_cdev.owner = THIS_MODULE;
	ret = cdev_add(&nsim_fw_cdev, nsim_devt + num_devices, num_devices);
	if (ret)
		goto err_client_cdev;

	for (i = 0; i < num_devices; i++) {
		ret = nsim_dev_register(nsim_devs[i]);
		if (ret)
			goto err_fw_cdev;
	}
	pr_info("neuronsim: %u device(s), %u core(s), %u MiB each%s, ABI %d.%d\n",
		num_devices, num_cores, mem_size, null_hw ? ", null hw" : "",
		NEURONSIM_ABI_MAJOR, NEURONSIM_ABI_MINOR);
	return 0;

err_fw_cdev:
	cdev_del(&nsim_fw_cdev);
err_client_cdev:
	cdev_del(&nsim_client_cdev);
err_devs:
	for (i = 0; i < num_devices; i++)
		if (nsim_devs[i])
			nsim_dev_destroy(nsim_devs[i]);
	class_destroy(nsim_class);
err_region:
	unregister_chrdev_region(nsim_devt, 2 * num_devices);
	return ret;
}

static void __exit nsim_exit(void)
{
	unsigned int i;

	cdev_del(&nsim_fw_cdev);
	cdev_del(&nsim_client_cdev);
	for (i = 0; i < num_devices; i++)
		nsim_dev_destroy(nsim_devs[i]);
	class_destroy(nsim_class);
	unregister_chrdev_region(nsim_devt, 2 * num_devices);
}

module_init(nsim_init);
module_exit(nsim_exit);

MODULE_DESCRIPTION("neuronsim: simulated Neuron-style accelerator");
MODULE_AUTHOR("neuronsim developers");
MODULE_LICENSE("GPL");
/* the project's release (neuronsim_version.h), shown by modinfo */
MODULE_VERSION(NEURONSIM_VERSION);
