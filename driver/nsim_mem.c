// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuronsim device memory: a vmalloc_user() area carved by a gen_pool,
 * refcounted allocations, per-file handles and client mmap().
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "nsim.h"

/* gen_pool returns 0 for "no memory", so device address 0 lives here. */
#define NSIM_POOL_BASE PAGE_SIZE

int nsim_mem_pool_init(struct nsim_dev *dev, u64 size)
{
	int ret;

	dev->mem = vmalloc_user(size);
	if (!dev->mem)
		return -ENOMEM;
	dev->mem_size = size;
	spin_lock_init(&dev->stat_lock);

	dev->pool = gen_pool_create(PAGE_SHIFT, -1);
	if (!dev->pool) {
		ret = -ENOMEM;
		goto err_vfree;
	}
	ret = gen_pool_add(dev->pool, NSIM_POOL_BASE, size, -1);
	if (ret)
		goto err_destroy;
	return 0;

err_destroy:
	gen_pool_destroy(dev->pool);
err_vfree:
	vfree(dev->mem);
	return ret;
}

void nsim_mem_pool_fini(struct nsim_dev *dev)
{
	/* Every file is closed by now, so every allocation is gone. */
	WARN_ON(dev->mem_in_use);
	gen_pool_destroy(dev->pool);
	vfree(dev->mem);
}

static void nsim_mem_release(struct kref *ref)
{
	struct nsim_mem *mem = container_of(ref, struct nsim_mem, ref);
	struct nsim_dev *dev = mem->dev;

	gen_pool_free(dev->pool, mem->addr + NSIM_POOL_BASE, mem->size);
	spin_lock(&dev->stat_lock);
	dev->mem_in_use -= mem->size;
	spin_unlock(&dev->stat_lock);
	kfree(mem);
}

void nsim_mem_put(struct nsim_mem *mem)
{
	kref_put(&mem->ref, nsim_mem_release);
}

static struct nsim_mem *nsim_mem_create(struct nsim_dev *dev, u64 size)
{
	struct nsim_mem *mem;
	unsigned long addr;

	if (!size || size > dev->mem_size)
		return ERR_PTR(-EINVAL);
	size = PAGE_ALIGN(size);

	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);

	addr = gen_pool_alloc(dev->pool, size);
	if (!addr) {
		kfree(mem);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&mem->ref);
	mem->dev = dev;
	mem->addr = addr - NSIM_POOL_BASE;
	mem->size = size;
	/* The previous tenant's data must not leak into this allocation. */
	memset(dev->mem + mem->addr, 0, size);

	spin_lock(&dev->stat_lock);
	dev->mem_in_use += size;
	if (dev->mem_in_use > dev->mem_peak)
		dev->mem_peak = dev->mem_in_use;
	spin_unlock(&dev->stat_lock);
	return mem;
}

/**
 * nsim_mem_lookup() - find an allocation of this file by handle
 * @nf: the open file
 * @handle: handle from MEM_ALLOC on @nf
 *
 * Return: the allocation with a new reference, or NULL.
 */
struct nsim_mem *nsim_mem_lookup(struct nsim_file *nf, u32 handle)
{
	struct nsim_mem *mem;

	if (!handle)
		return NULL;
	xa_lock(&nf->mems);
	mem = xa_load(&nf->mems, handle);
	if (mem)
		kref_get(&mem->ref);
	xa_unlock(&nf->mems);
	return mem;
}

/* Called under the xa_lock of nf->mems. Allocations never overlap. */
static void nsim_mem_tree_insert(struct nsim_file *nf, struct nsim_mem *mem)
{
	struct rb_node **link = &nf->mem_tree.rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		if (mem->addr < rb_entry(parent, struct nsim_mem, node)->addr)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&mem->node, parent, link);
	rb_insert_color(&mem->node, &nf->mem_tree);
}

/* Called under the xa_lock of nf->mems: the allocation holding offset @off. */
static struct nsim_mem *nsim_mem_tree_find(struct nsim_file *nf, u64 off)
{
	struct rb_node *n = nf->mem_tree.rb_node;
	struct nsim_mem *mem;

	while (n) {
		mem = rb_entry(n, struct nsim_mem, node);
		if (off < mem->addr)
			n = n->rb_left;
		else if (off - mem->addr >= mem->size)
			n = n->rb_right;
		else
			return mem;
	}
	return NULL;
}

/* Drops handle @handle of @nf; returns its allocation (the handle's
 * reference passes to the caller), or NULL.
 */
static struct nsim_mem *nsim_file_mem_erase(struct nsim_file *nf,
					    unsigned long handle)
{
	struct nsim_mem *mem;

	xa_lock(&nf->mems);
	mem = __xa_erase(&nf->mems, handle);
	if (mem)
		rb_erase(&mem->node, &nf->mem_tree);
	xa_unlock(&nf->mems);
	return mem;
}

int nsim_ioctl_mem_alloc(struct nsim_file *nf, void __user *uarg)
{
	struct neuronsim_mem_alloc args;
	struct nsim_mem *mem;
	u32 handle;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || !args.size ||
	    args.size > nf->dev->mem_size)
		return -EINVAL;

	mem = nsim_mem_create(nf->dev, args.size);
	if (IS_ERR(mem))
		return PTR_ERR(mem);

	xa_lock(&nf->mems);
	ret = __xa_alloc(&nf->mems, &handle, mem, xa_limit_31b, GFP_KERNEL);
	if (!ret)
		nsim_mem_tree_insert(nf, mem);
	xa_unlock(&nf->mems);
	if (ret)
		goto err_put_mem;

	args.handle = handle;
	args.mmap_offset = mem->addr;
	args.dev_addr = mem->addr;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		ret = -EFAULT;
		goto err_erase;
	}
	return 0;

err_erase:
	nsim_file_mem_erase(nf, handle);
err_put_mem:
	nsim_mem_put(mem);
	return ret;
}

int nsim_ioctl_mem_free(struct nsim_file *nf, void __user *uarg)
{
	struct neuronsim_mem_free args;
	struct nsim_mem *mem;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	if (!args.handle)
		return -ENOENT;

	mem = nsim_file_mem_erase(nf, args.handle);
	if (!mem)
		return -ENOENT;
	nsim_mem_put(mem);
	return 0;
}

int nsim_ioctl_mem_info(struct nsim_file *nf, void __user *uarg)
{
	struct neuronsim_mem_info args;
	struct nsim_mem *mem;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;

	mem = nsim_mem_lookup(nf, args.handle);
	if (!mem)
		return -ENOENT;
	args.size = mem->size;
	args.mmap_offset = mem->addr;
	args.dev_addr = mem->addr;
	nsim_mem_put(mem);

	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

/* Each client mapping holds a reference, so unmapped memory is never reused
 * while a process can still reach it.
 */
static void nsim_mem_vm_open(struct vm_area_struct *vma)
{
	struct nsim_mem *mem = vma->vm_private_data;

	kref_get(&mem->ref);
}

static void nsim_mem_vm_close(struct vm_area_struct *vma)
{
	nsim_mem_put(vma->vm_private_data);
}

static const struct vm_operations_struct nsim_mem_vm_ops = {
	.open = nsim_mem_vm_open,
	.close = nsim_mem_vm_close,
};

/**
 * nsim_client_mmap() - map part of one of this file's allocations
 * @nf: the open file
 * @vma: the mapping; vm_pgoff is a page inside an allocation of @nf and
 *	the whole mapping must lie inside that allocation
 *
 * Return: 0 or a negative errno.
 */
int nsim_client_mmap(struct nsim_file *nf, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	struct nsim_mem *mem;
	u64 off, end;
	int ret;

	if (check_shl_overflow((u64)vma->vm_pgoff, PAGE_SHIFT, &off) ||
	    check_add_overflow(off, (u64)len, &end))
		return -EINVAL;

	xa_lock(&nf->mems);
	mem = nsim_mem_tree_find(nf, off);
	if (mem && end <= mem->addr + mem->size)
		kref_get(&mem->ref);
	else
		mem = NULL;
	xa_unlock(&nf->mems);
	if (!mem)
		return -EINVAL;

	ret = remap_vmalloc_range(vma, nf->dev->mem, vma->vm_pgoff);
	if (ret) {
		nsim_mem_put(mem);
		return ret;
	}
	vma->vm_private_data = mem;
	vma->vm_ops = &nsim_mem_vm_ops;
	return 0;
}

/* Called at close: drop every handle of the file. */
void nsim_file_mems_release(struct nsim_file *nf)
{
	struct nsim_mem *mem;
	unsigned long handle;

	xa_for_each(&nf->mems, handle, mem)
		nsim_mem_put(nsim_file_mem_erase(nf, handle));
	xa_destroy(&nf->mems);
}
