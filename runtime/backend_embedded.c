/* The embedded backend: libfwsim cores in-process over one mmap of simulated device memory. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "device_mem.h"
#include "fwsim/fwsim.h"

/* Device address 0 is never handed out so that a zeroed region descriptor can
 * not silently alias a live allocation. */
#define EMB_RESERVED_LOW 4096u
/* Region bindings converted on the stack up to this many. */
#define EMB_STACK_REGIONS 32

typedef struct emb_core {
	fwsim_core_t *core;     /* created at reservation */
	atomic_int reserved;
} emb_core_t;

struct nrt_backend_dev {
	uint32_t index;
	uint8_t *mem;           /* emb_map_memory: huge-page aligned, MAP_NORESERVE */
	uint64_t mem_size;
	uint64_t page_size;
	nrt_dmem_t alloc;
	uint32_t n_cores;
	int pin_threads;
	emb_core_t *cores;
};

struct nrt_backend_program {
	fwsim_program_t *prog;
	uint32_t core;
};

/* Huge pages (x86-64's 2 MiB; other sizes only cost the alignment). */
#define EMB_HUGE_PAGE (2u << 20)

/*
 * Maps size bytes of zeroed device memory, MAP_NORESERVE (untouched pages cost
 * nothing), starting on a huge-page boundary and backed by transparent huge
 * pages where the kernel offers them. Debian's default THP mode ("madvise")
 * gives them only to ranges that ask. With 4 KiB pages the kernels' strided
 * walks missed the TLB: a GEMM reading a 512x512x3x3 weight a tap at a time,
 * an SGD update reading a gradient in its transpose's order (a new page per
 * element). ResNet-18's b8 training step, neuron-run p50, 4 KiB -> huge
 * pages: one CPU 106-111 -> 88 ms, two 71.5-73 -> 58-59 ms; through
 * torch_xla the device's part of the step 95-98 -> 91-95 ms on one CPU,
 * 72-76 -> 67.5-70 on two. Cost: resident memory grows 2 MiB at a time, and
 * on the VMs measured a first touch of a huge page took about twice a small
 * page's time per byte (0.7-1.2 against 1.7-2.1 GB/s): MobileNetV2 b96's
 * first execution, which touches 6.7 GB, 11-14 -> 20 s; later ones 6.7-7.2
 * -> 6.4 s. Without THP the hint fails and the mapping keeps small pages.
 */
static void *emb_map_memory(uint64_t size)
{
	uint64_t span = size + EMB_HUGE_PAGE;
	if (span < size)
		return MAP_FAILED;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	if (m == MAP_FAILED)
		return MAP_FAILED;
	uintptr_t at = ((uintptr_t)m + EMB_HUGE_PAGE - 1) & ~(uintptr_t)(EMB_HUGE_PAGE - 1);
	size_t head = at - (uintptr_t)m, tail = span - head - size;
	if (head)
		munmap(m, head);
	if (tail)
		munmap((uint8_t *)at + size, tail);
#ifdef MADV_HUGEPAGE
	(void)madvise((void *)at, size, MADV_HUGEPAGE);
#endif
	return (void *)at;
}

static ns_status_t emb_open(const nrt_backend_config_t *config, uint32_t index,
			    nrt_backend_dev_t **out_dev)
{
	if (config->device_memory < 2 * EMB_RESERVED_LOW || config->cores_per_device == 0)
		return nrt_status_make(NRT_INVALID,
				       "device %u: %llu bytes of memory and %u cores cannot make a device",
				       index, (unsigned long long)config->device_memory,
				       config->cores_per_device);
	nrt_backend_dev_t *dev = calloc(1, sizeof(*dev));
	if (!dev)
		goto err_nomem;
	dev->index = index;
	dev->n_cores = config->cores_per_device;
	dev->pin_threads = config->pin_threads;
	fwsim_set_threads(config->threads); /* process-wide, like the environment */
	fwsim_set_max_isa((fwsim_isa_t)config->cpu_isa);
	dev->mem_size = config->device_memory;
	dev->cores = calloc(dev->n_cores, sizeof(*dev->cores));
	if (!dev->cores)
		goto err_free_dev;
	void *m = emb_map_memory(dev->mem_size);
	if (m == MAP_FAILED) {
		ns_status_t st = nrt_status_make(NRT_RESOURCE, "device %u: cannot map %llu bytes of device "
						 "memory: %s (lower NEURONSIM_DEVICE_MEMORY)", index,
						 (unsigned long long)dev->mem_size, strerror(errno));
		free(dev->cores);
		free(dev);
		return st;
	}
	dev->mem = m;
	long page = sysconf(_SC_PAGESIZE);
	dev->page_size = page > 0 ? (uint64_t)page : 4096;
	if (nrt_dmem_init(&dev->alloc, EMB_RESERVED_LOW, dev->mem_size - EMB_RESERVED_LOW) != NRT_SUCCESS) {
		munmap(dev->mem, dev->mem_size);
		free(dev->cores);
		free(dev);
		goto err_nomem;
	}
	*out_dev = dev;
	return NS_OK;

err_free_dev:
	free(dev);
err_nomem:
	return nrt_status_make(NRT_RESOURCE, "device %u: out of host memory", index);
}

static void emb_close(nrt_backend_dev_t *dev)
{
	if (!dev)
		return;
	for (uint32_t i = 0; i < dev->n_cores; i++)
		if (dev->cores[i].core)
			fwsim_core_destroy(dev->cores[i].core);
	nrt_dmem_fini(&dev->alloc);
	munmap(dev->mem, dev->mem_size);
	free(dev->cores);
	free(dev);
}

static NRT_STATUS emb_query(nrt_backend_dev_t *dev, nrt_backend_info_t *out_info)
{
	nrt_backend_info_t info = {
		.abi_version = NRT_BACKEND_ABI_VERSION,
		.n_cores = dev->n_cores,
		.mem_size = dev->mem_size,
		.numa_node = -1, /* in-process: the runtime uses the caller's node */
	};
	nrt_dmem_stats(&dev->alloc, &info.mem_in_use, &info.mem_peak, NULL);
	*out_info = info;
	return NRT_SUCCESS;
}

static NRT_STATUS emb_mem_alloc(nrt_backend_dev_t *dev, uint64_t size, nrt_backend_mem_t *out_mem)
{
	uint64_t addr, got, handle;
	NRT_STATUS st = nrt_dmem_alloc(&dev->alloc, size, &addr, &got, &handle);
	if (st != NRT_SUCCESS)
		return st;
	out_mem->handle = handle;
	out_mem->addr = addr;
	out_mem->size = got;
	out_mem->host = dev->mem + addr;
	return NRT_SUCCESS;
}

static void emb_mem_free(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem)
{
	(void)nrt_dmem_free(&dev->alloc, mem->handle);
}

/* Below this, a memset of warm pages is cheaper than dropping them and
 * taking a page fault per page on the next touch. The cut was 2 MiB: a
 * torch_xla ResNet-18 b8 step allocates its 45 MB of gradients as fresh
 * output tensors every step, and the faults of blocks of 2-9 MB (the freed
 * ones of the step before, still resident) cost it 20 ms of its 95 (one CPU:
 * 84 -> 64 ms waiting for the device). Above it a block is rarely all
 * touched soon (a big model's scratch: GBs, dropped at load in a few ms
 * where a memset took seconds). */
#define EMB_ZERO_DROP_MIN (64u << 20)

/* Whole pages inside the block are dropped (MADV_DONTNEED on the private
 * anonymous mapping): they read as zeros, the kernel clears each only when it
 * is first touched, and the resident memory they held is returned. The
 * partial pages at the ends are shared with neighbouring blocks: memset. */
static void emb_mem_zero(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem)
{
	uintptr_t page = (uintptr_t)dev->page_size;
	uintptr_t lo = (uintptr_t)mem->host, hi = lo + mem->size;
	uintptr_t a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);
	if (mem->size >= EMB_ZERO_DROP_MIN && a < b &&
	    madvise((void *)a, b - a, MADV_DONTNEED) == 0) {
		memset(mem->host, 0, a - lo);
		memset((void *)b, 0, hi - b);
		return;
	}
	memset(mem->host, 0, mem->size);
}

static NRT_STATUS emb_core_reserve(nrt_backend_dev_t *dev, uint32_t core)
{
	if (core >= dev->n_cores)
		return NRT_INVALID;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&dev->cores[core].reserved, &expect, 1))
		return NRT_EXEC_NC_BUSY;
	if (!dev->cores[core].core) {
		fwsim_core_config_t cfg = {
			.core_index = dev->index * dev->n_cores + core,
			.pin_threads = dev->pin_threads,
		};
		if (fwsim_core_create(&cfg, &dev->cores[core].core) != FWSIM_OK) {
			atomic_store(&dev->cores[core].reserved, 0);
			return NRT_RESOURCE;
		}
	}
	return NRT_SUCCESS;
}

static void emb_core_release(nrt_backend_dev_t *dev, uint32_t core)
{
	if (core < dev->n_cores)
		atomic_store(&dev->cores[core].reserved, 0);
}

static ns_status_t emb_program_create(nrt_backend_dev_t *dev, uint32_t core,
				      const nrt_backend_code_t *code,
				      nrt_backend_program_t **out_program)
{
	if (core >= dev->n_cores)
		return nrt_status_make(NRT_INVALID, "core %u of a device of %u cores", core, dev->n_cores);
	const isa_insn_t *streams[ISA_ENGINE_COUNT];
	for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (code->count[e] && (code->offset[e] > code->mem->size ||
		    (code->mem->size - code->offset[e]) / sizeof(isa_insn_t) < code->count[e])) {
			return nrt_status_make(NRT_INVALID, "code stream of engine %d lies outside its block",
					       e);
		}
		streams[e] = code->count[e] ? (const isa_insn_t *)(code->mem->host + code->offset[e]) : NULL;
	}
	nrt_backend_program_t *p = calloc(1, sizeof(*p));
	if (!p)
		return nrt_status_make(NRT_RESOURCE, "out of host memory");
	ns_status_t fs = fwsim_program_create(streams, code->count, code->n_regions, &p->prog);
	if (fs) {
		free(p);
		return ns_status_with_detail(fs, ns_status_code(fs) == NS_STATUS_RESOURCE_EXHAUSTED
							 ? NRT_RESOURCE : NRT_INVALID);
	}
	p->core = core;
	*out_program = p;
	return NS_OK;
}

static void emb_program_destroy(nrt_backend_dev_t *dev, nrt_backend_program_t *program)
{
	if (!program)
		return;
	fwsim_program_destroy(program->prog);
	free(program);
}

static nrt_backend_status_t emb_execute(nrt_backend_dev_t *dev, uint32_t core,
					const nrt_backend_job_t *job, nrt_backend_error_t *out_error)
{
	memset(out_error, 0, sizeof(*out_error));
	if (core >= dev->n_cores || !dev->cores[core].core || job->program->core != core) {
		out_error->status = NRT_BACKEND_INVALID;
		snprintf(out_error->message, sizeof(out_error->message),
			 "job for core %u with a program of core %u", core, job->program->core);
		return NRT_BACKEND_INVALID;
	}
	/* Regions name (block, offset, size); the simulator takes device
	 * addresses. Flags, spans and the error record are the same types on
	 * both sides (include/neuronsim/device.h): passed and filled in place. */
	fwsim_region_t stack_regions[EMB_STACK_REGIONS];
	fwsim_region_t *regions = stack_regions;
	if (job->n_regions > EMB_STACK_REGIONS) {
		regions = malloc(job->n_regions * sizeof(*regions));
		if (!regions) {
			out_error->status = NRT_BACKEND_NOMEM;
			snprintf(out_error->message, sizeof(out_error->message),
				 "out of host memory for %u regions", job->n_regions);
			return NRT_BACKEND_NOMEM;
		}
	}
	for (uint32_t i = 0; i < job->n_regions; i++) {
		const nrt_backend_region_t *r = &job->regions[i];
		if (!r->size) {
			regions[i] = (fwsim_region_t){ 0 };
			continue;
		}
		if (!r->mem || r->offset > r->mem->size || r->size > r->mem->size - r->offset) {
			out_error->status = NRT_BACKEND_INVALID;
			snprintf(out_error->message, sizeof(out_error->message),
				 "region %u [+%llu, %llu bytes) is not inside its device memory block",
				 i, (unsigned long long)r->offset, (unsigned long long)r->size);
			if (regions != stack_regions)
				free(regions);
			return NRT_BACKEND_INVALID;
		}
		regions[i] = (fwsim_region_t){ r->mem->addr + r->offset, r->size };
	}
	fwsim_job_t fj = {
		.program = job->program->prog,
		.mem = dev->mem,
		.mem_size = dev->mem_size,
		.regions = regions,
		.n_regions = job->n_regions,
		.flags = job->flags & (FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF),
		.deadline_ns = job->deadline_ns,
	};
	/* Without a buffer the job runs untraced: every span counts as dropped. */
	nrt_backend_trace_t *bt = (job->flags & NRT_BACKEND_JOB_PROFILE) ? job->trace : NULL;
	fwsim_trace_t ft = { 0 };
	if (bt) {
		bt->count = bt->dropped = bt->insns_executed = 0;
		bt->recorded = 0;
		memset(bt->engine_busy_ns, 0, sizeof(bt->engine_busy_ns));
		ft.spans = bt->spans;
		ft.cap = bt->spans ? bt->cap : 0;
		fj.flags |= FWSIM_JOB_PROFILE;
		fj.trace = &ft;
	}
	fwsim_status_t fs = fwsim_core_execute(dev->cores[core].core, &fj);
	if (regions != stack_regions)
		free(regions);
	if (bt) {
		bt->count = ft.count;
		bt->dropped = ft.dropped;
		memcpy(bt->engine_busy_ns, fj.engine_busy_ns, sizeof(bt->engine_busy_ns));
		bt->insns_executed = fj.insns_executed;
		bt->recorded = 1;
	}
	*out_error = fj.error; /* with the job's flops */
	return fs;
}

const nrt_backend_ops_t nrt_backend_embedded_ops = {
	.name = "embedded",
	.open = emb_open,
	.close = emb_close,
	.query = emb_query,
	.mem_alloc = emb_mem_alloc,
	.mem_free = emb_mem_free,
	.mem_zero = emb_mem_zero,
	.core_reserve = emb_core_reserve,
	.core_release = emb_core_release,
	.program_create = emb_program_create,
	.program_destroy = emb_program_destroy,
	.execute = emb_execute,
};
