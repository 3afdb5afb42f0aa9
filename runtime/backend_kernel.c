/* The kernel backend: device memory, cores and jobs through the ioctls of /dev/neuronsimN (neuronsim.ko). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uapi/linux/neuronsim.h"

#include "backend_kernel.h"
#include "neuronsim/clock.h"

/* How long after a job's deadline we keep waiting for the firmware to report
 * it. The firmware stops a job within ~2^16 element operations of its
 * deadline (inside long instructions too; an f32 matmul between its sgemm
 * tiles) and the driver asks it to abort the job then as well, so this is
 * only reached when the firmware is hung: the caller gets
 * NRT_BACKEND_TIMEOUT (the job is reaped later). */
#define KB_DEADLINE_GRACE_NS (5ull * 1000000000ull)
/* Jobs without a deadline are waited for in slices of this length, so an
 * absolute deadline never overflows and a hang stays visible in a debugger. */
#define KB_WAIT_SLICE_NS (3600ull * 1000000000ull)
/* Abandoned (timed-out) jobs remembered per device for later reaping. */
#define KB_MAX_STALE 64
#define KB_STACK_REGIONS 32

/* Statuses, flags, the error record and trace spans are
 * include/neuronsim/device.h's, which ties them to the ABI's. */

/* One allocation of this runtime: driver handle and host mapping. */
typedef struct kb_alloc {
	uint32_t handle;
	uint64_t size;
	uint8_t *host;
} kb_alloc_t;

struct nrt_backend_dev {
	int fd;
	uint32_t index;
	char node[32];
	uint32_t n_cores;       /* cores this runtime uses (<= the driver's) */
	uint64_t mem_size;      /* bytes this runtime may use (<= the driver's) */
	uint64_t mem_align;
	bool record_ext;        /* NEURONSIM_CAP_RECORD_EXT (ABI 1.2): waits read the flops */

	/* This runtime's allocations, in no order: only so that mem_free can
	 * refuse a block that is not ours and close can unmap what is left.
	 * Jobs never look here: their regions carry the block's handle. */
	pthread_rwlock_t lock;
	kb_alloc_t *allocs;
	size_t n_allocs, cap_allocs;
	uint64_t in_use, peak;

	pthread_mutex_t stale_lock;
	uint64_t stale[KB_MAX_STALE]; /* job ids given up on, 0 = free slot */
	atomic_uint n_stale;          /* lets execute skip the lock when 0 */
};

struct nrt_backend_program {
	uint32_t core;
	uint32_t code_handle;
	struct neuronsim_stream streams[NEURONSIM_NUM_ENGINES];
	uint32_t n_regions;
};

/* ioctl that restarts on EINTR: every neuronsim wait takes an absolute
 * deadline, so repeating the call never extends it. */
static int kb_ioctl(int fd, unsigned long req, void *arg)
{
	int r;
	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

static int kb_get_param(int fd, uint32_t param, uint64_t *out)
{
	struct neuronsim_get_param gp = { .param = param };
	int r = kb_ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &gp);
	if (!r)
		*out = gp.value;
	return r;
}

ns_status_t nrt_backend_kernel_check_abi(const char *node, uint64_t drv_major, uint64_t drv_minor)
{
	if (drv_major == NEURONSIM_ABI_MAJOR && drv_minor >= NRT_KB_MIN_ABI_MINOR)
		return NS_OK;
	return nrt_status_make(NRT_FAILURE, "%s: the driver speaks neuronsim ABI %llu.%llu, this "
			       "runtime speaks %d.%d (needs %d.%d or a later %d.x): load a matching "
			       "neuronsim.ko or use a matching libnrt", node,
			       (unsigned long long)drv_major, (unsigned long long)drv_minor,
			       NEURONSIM_ABI_MAJOR, NEURONSIM_ABI_MINOR, NEURONSIM_ABI_MAJOR,
			       NRT_KB_MIN_ABI_MINOR, NEURONSIM_ABI_MAJOR);
}

/* Opens node and checks the driver's ABI version (NRT_FAILURE when it cannot). */
static ns_status_t kb_open_node(const char *node, int *out_fd)
{
	int fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return nrt_status_make(NRT_FAILURE, "cannot open %s: %s (is neuronsim.ko loaded? or set "
				       "NEURONSIM_BACKEND=embedded)", node, strerror(errno));
	uint64_t major = 0, minor = 0;
	int r = kb_get_param(fd, NEURONSIM_PARAM_ABI_MAJOR, &major);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_ABI_MINOR, &minor);
	if (r) {
		close(fd);
		return nrt_status_make(NRT_FAILURE, "%s: cannot query the ABI version: %s (not a "
				       "neuronsim device, or a driver older than ABI 1.0)", node,
				       strerror(-r));
	}
	ns_status_t st = nrt_backend_kernel_check_abi(node, major, minor);
	if (st) {
		close(fd);
		return st;
	}
	*out_fd = fd;
	return NS_OK;
}

int nrt_backend_kernel_present(void)
{
	return access("/dev/neuronsim0", F_OK) == 0;
}

ns_status_t nrt_backend_kernel_probe(nrt_backend_kernel_probe_t *out)
{
	int fd;
	NS_RETURN_IF_ERROR(kb_open_node("/dev/neuronsim0", &fd));
	uint64_t cores = 0, mem = 0, fw = 0;
	int r = kb_get_param(fd, NEURONSIM_PARAM_NUM_CORES, &cores);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_MEM_SIZE, &mem);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_FW_ATTACHED, &fw);
	close(fd);
	if (r)
		return nrt_status_make(NRT_FAILURE, "/dev/neuronsim0: GET_PARAM failed: %s", strerror(-r));
	uint32_t n = 1;
	while (n < 64) {
		char node[32];
		snprintf(node, sizeof(node), "/dev/neuronsim%u", n);
		if (access(node, F_OK) != 0)
			break;
		n++;
	}
	out->num_devices = n;
	out->cores_per_device = (uint32_t)cores;
	out->mem_size = mem;
	out->fw_attached = fw != 0;
	return NS_OK;
}

static ns_status_t kb_open(const nrt_backend_config_t *config, uint32_t index,
			   nrt_backend_dev_t **out_dev)
{
	char node[32];
	snprintf(node, sizeof(node), "/dev/neuronsim%u", index);
	if (index > 0 && access(node, F_OK) != 0 && access("/dev/neuronsim0", F_OK) == 0)
		return nrt_status_make(NRT_FAILURE, "%s does not exist: the driver has fewer devices "
				       "than NEURONSIM_NUM_DEVICES asks for (lower it, or load "
				       "neuronsim.ko with a larger num_devices)", node);
	int fd;
	NS_RETURN_IF_ERROR(kb_open_node(node, &fd));
	uint64_t cores = 0, mem = 0, align = 0, caps = 0;
	int r = kb_get_param(fd, NEURONSIM_PARAM_NUM_CORES, &cores);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_MEM_SIZE, &mem);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_MEM_ALIGN, &align);
	if (!r)
		r = kb_get_param(fd, NEURONSIM_PARAM_CAPABILITIES, &caps);
	if (r || !cores || !align || (align & (align - 1))) {
		close(fd);
		return nrt_status_make(NRT_FAILURE, "%s: cannot read the device's parameters (%s)", node,
				       r ? strerror(-r) : "zero cores or a bad alignment");
	}
	/* The runtime may use fewer cores than the driver has (a subset, as
	 * NEURON_RT_VISIBLE_CORES does), never more. */
	if (config->cores_per_device > cores) {
		close(fd);
		return nrt_status_make(NRT_FAILURE, "%s has %llu cores (module parameter num_cores) but "
				       "the runtime is configured for %u per device: unset "
				       "NEURONSIM_CORES_PER_DEVICE or lower it", node,
				       (unsigned long long)cores, config->cores_per_device);
	}
	nrt_backend_dev_t *dev = calloc(1, sizeof(*dev));
	if (!dev) {
		close(fd);
		return nrt_status_make(NRT_RESOURCE, "%s: out of host memory", node);
	}
	dev->fd = fd;
	dev->index = index;
	snprintf(dev->node, sizeof(dev->node), "%s", node);
	dev->n_cores = config->cores_per_device ? config->cores_per_device : (uint32_t)cores;
	/* NEURONSIM_DEVICE_MEMORY caps this runtime's share of the device, so
	 * memory limits behave as on the embedded backend. */
	dev->mem_size = config->device_memory && config->device_memory < mem ? config->device_memory : mem;
	dev->mem_align = align;
	dev->record_ext = (caps & NEURONSIM_CAP_RECORD_EXT) != 0;
	pthread_rwlock_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->stale_lock, NULL);
	*out_dev = dev;
	return NS_OK;
}

static void kb_close(nrt_backend_dev_t *dev)
{
	if (!dev)
		return;
	for (size_t i = 0; i < dev->n_allocs; i++)
		munmap(dev->allocs[i].host, dev->allocs[i].size);
	/* Closing the file releases everything the driver holds for us:
	 * handles, core reservations, unreaped (stale) jobs. */
	close(dev->fd);
	pthread_rwlock_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->stale_lock);
	free(dev->allocs);
	free(dev);
}

static NRT_STATUS kb_query(nrt_backend_dev_t *dev, nrt_backend_info_t *out_info)
{
	nrt_backend_info_t info = {
		.abi_version = NRT_BACKEND_ABI_VERSION,
		.n_cores = dev->n_cores,
		.mem_size = dev->mem_size,
		.numa_node = -1,
	};
	pthread_rwlock_rdlock(&dev->lock);
	info.mem_in_use = dev->in_use;
	info.mem_peak = dev->peak;
	pthread_rwlock_unlock(&dev->lock);
	*out_info = info;
	return NRT_SUCCESS;
}

static NRT_STATUS kb_mem_alloc(nrt_backend_dev_t *dev, uint64_t size, nrt_backend_mem_t *out_mem)
{
	if (size == 0 || size > dev->mem_size)
		return size ? NRT_RESOURCE : NRT_INVALID;
	uint64_t rounded = (size + dev->mem_align - 1) & ~(dev->mem_align - 1);
	pthread_rwlock_wrlock(&dev->lock);
	if (dev->n_allocs == dev->cap_allocs) {
		size_t cap = dev->cap_allocs ? dev->cap_allocs * 2 : 64;
		kb_alloc_t *a = realloc(dev->allocs, cap * sizeof(*a));
		if (!a) {
			pthread_rwlock_unlock(&dev->lock);
			return NRT_RESOURCE;
		}
		dev->allocs = a;
		dev->cap_allocs = cap;
	}
	if (dev->in_use + rounded > dev->mem_size) {
		pthread_rwlock_unlock(&dev->lock);
		return NRT_RESOURCE;
	}
	/* Reserve against the cap before dropping the lock for the syscalls. */
	dev->in_use += rounded;
	pthread_rwlock_unlock(&dev->lock);

	struct neuronsim_mem_alloc ma = { .size = size };
	int r = kb_ioctl(dev->fd, NEURONSIM_IOCTL_MEM_ALLOC, &ma);
	void *host = MAP_FAILED;
	if (!r) {
		host = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
			    (off_t)ma.mmap_offset);
		if (host == MAP_FAILED) {
			struct neuronsim_mem_free mf = { .handle = ma.handle };
			(void)kb_ioctl(dev->fd, NEURONSIM_IOCTL_MEM_FREE, &mf);
		}
	}
	pthread_rwlock_wrlock(&dev->lock);
	if (r || host == MAP_FAILED) {
		dev->in_use -= rounded;
		pthread_rwlock_unlock(&dev->lock);
		/* ENOMEM (no contiguous range) is the everyday case; anything
		 * else is a driver problem the caller sees as a resource error. */
		return NRT_RESOURCE;
	}
	dev->allocs[dev->n_allocs++] = (kb_alloc_t){ ma.handle, rounded, host };
	if (dev->in_use > dev->peak)
		dev->peak = dev->in_use;
	pthread_rwlock_unlock(&dev->lock);
	out_mem->handle = ma.handle;
	out_mem->addr = ma.dev_addr;
	out_mem->size = rounded;
	out_mem->host = host;
	return NRT_SUCCESS;
}

static void kb_mem_free(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem)
{
	pthread_rwlock_wrlock(&dev->lock);
	size_t at = 0;
	while (at < dev->n_allocs && (dev->allocs[at].handle != mem->handle ||
				      dev->allocs[at].host != mem->host))
		at++;
	if (at == dev->n_allocs) {
		pthread_rwlock_unlock(&dev->lock);
		return; /* not ours: a double free must not drop someone else's block */
	}
	kb_alloc_t a = dev->allocs[at];
	dev->allocs[at] = dev->allocs[--dev->n_allocs];
	dev->in_use -= a.size;
	pthread_rwlock_unlock(&dev->lock);
	/* The driver keeps the memory alive while an unfinished job uses it,
	 * so this is safe also after a timed-out (abandoned) job. */
	munmap(a.host, a.size);
	struct neuronsim_mem_free mf = { .handle = a.handle };
	(void)kb_ioctl(dev->fd, NEURONSIM_IOCTL_MEM_FREE, &mf);
}

static NRT_STATUS kb_core_reserve(nrt_backend_dev_t *dev, uint32_t core)
{
	if (core >= dev->n_cores)
		return NRT_INVALID;
	struct neuronsim_core_reserve cr = { .core = core };
	int r = kb_ioctl(dev->fd, NEURONSIM_IOCTL_CORE_RESERVE, &cr);
	if (r == -EBUSY)
		return NRT_EXEC_NC_BUSY;
	return r ? NRT_FAILURE : NRT_SUCCESS;
}

static void kb_core_release(nrt_backend_dev_t *dev, uint32_t core)
{
	struct neuronsim_core_reserve cr = { .core = core };
	(void)kb_ioctl(dev->fd, NEURONSIM_IOCTL_CORE_RELEASE, &cr);
}

static ns_status_t kb_program_create(nrt_backend_dev_t *dev, uint32_t core,
				     const nrt_backend_code_t *code,
				     nrt_backend_program_t **out_program)
{
	if (core >= dev->n_cores)
		return nrt_status_make(NRT_INVALID, "core %u of a device of %u cores", core, dev->n_cores);
	/* The program itself is validated where it runs: the NEFF reader
	 * checked every instruction at nrt_load (isa_insn_validate, as
	 * libfwsim does), and neuronsim-fwd validates the code it fetches
	 * (it cannot trust us: a cached program only when its bytes are
	 * unchanged) and reports a bad one through the error record. Here
	 * only the streams' place in their block. */
	uint64_t total = 0;
	for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (code->count[e] && (code->offset[e] > code->mem->size || code->offset[e] % 8 ||
		    (code->mem->size - code->offset[e]) / sizeof(isa_insn_t) < code->count[e])) {
			return nrt_status_make(NRT_INVALID, "code stream of engine %d lies outside its block",
					       e);
		}
		total += code->count[e];
	}
	nrt_backend_program_t *p = calloc(1, sizeof(*p));
	if (!p)
		return nrt_status_make(NRT_RESOURCE, "out of host memory");
	p->core = core;
	p->code_handle = total ? (uint32_t)code->mem->handle : 0;
	for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
		p->streams[e].offset = code->count[e] ? code->offset[e] : 0;
		p->streams[e].count = code->count[e];
	}
	p->n_regions = code->n_regions;
	*out_program = p;
	return NS_OK;
}

static void kb_program_destroy(nrt_backend_dev_t *dev, nrt_backend_program_t *program)
{
	free(program);
}

/* Reaps jobs given up on earlier (best effort, never blocks), so they do not
 * pile up against the driver's per-file job limit. */
static void kb_reap_stale(nrt_backend_dev_t *dev)
{
	if (atomic_load_explicit(&dev->n_stale, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&dev->stale_lock);
	for (int i = 0; i < KB_MAX_STALE; i++) {
		if (!dev->stale[i])
			continue;
		struct neuronsim_job_wait w = { .job_id = dev->stale[i], .timeout_ns = 0 };
		int r = kb_ioctl(dev->fd, NEURONSIM_IOCTL_JOB_WAIT, &w);
		if (r != -ETIME) {
			dev->stale[i] = 0;
			atomic_fetch_sub(&dev->n_stale, 1);
		}
	}
	pthread_mutex_unlock(&dev->stale_lock);
}

static void kb_add_stale(nrt_backend_dev_t *dev, uint64_t job_id)
{
	pthread_mutex_lock(&dev->stale_lock);
	/* When full, forget one: the driver reaps it at close anyway. */
	int slot = (int)(job_id % KB_MAX_STALE);
	for (int i = 0; i < KB_MAX_STALE; i++)
		if (!dev->stale[i]) {
			slot = i;
			break;
		}
	if (!dev->stale[slot])
		atomic_fetch_add(&dev->n_stale, 1);
	dev->stale[slot] = job_id;
	pthread_mutex_unlock(&dev->stale_lock);
}

static nrt_backend_status_t kb_fail(nrt_backend_error_t *out_error, nrt_backend_status_t st,
				    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static nrt_backend_status_t kb_fail(nrt_backend_error_t *out_error, nrt_backend_status_t st,
				    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out_error->message, sizeof(out_error->message), fmt, ap);
	va_end(ap);
	out_error->status = st;
	return st;
}

/* A region of the runtime's -> the driver's: the block's handle as it is. */
static int kb_region(const nrt_backend_region_t *r, struct neuronsim_region *out)
{
	if (r->size == 0) {
		*out = (struct neuronsim_region){ 0 };
		return 0;
	}
	if (!r->mem || r->offset > r->mem->size || r->size > r->mem->size - r->offset)
		return -1;
	*out = (struct neuronsim_region){ .handle = (uint32_t)r->mem->handle, .offset = r->offset,
					  .size = r->size };
	return 0;
}

static nrt_backend_status_t kb_execute(nrt_backend_dev_t *dev, uint32_t core,
				       const nrt_backend_job_t *job, nrt_backend_error_t *out_error)
{
	memset(out_error, 0, sizeof(*out_error));
	/* until the firmware reports them (ABI 1.2 driver and neuronsim-fwd) */
	out_error->flops = NRT_BACKEND_FLOPS_UNKNOWN;
	/* A profiled job: the firmware writes its spans into a device buffer
	 * (the submit's trace region) that is copied out after the wait. */
	nrt_backend_trace_t *bt = (job->flags & NRT_BACKEND_JOB_PROFILE) ? job->trace : NULL;
	nrt_backend_mem_t tmem = { 0 };
	if (bt) {
		bt->count = bt->dropped = bt->insns_executed = 0;
		memset(bt->engine_busy_ns, 0, sizeof(bt->engine_busy_ns));
		bt->recorded = 0;
	}
	const nrt_backend_program_t *p = job->program;
	if (core >= dev->n_cores || p->core != core)
		return kb_fail(out_error, NRT_BACKEND_INVALID,
			       "job for core %u with a program of core %u", core, p->core);
	if (job->n_regions > NEURONSIM_MAX_REGIONS)
		return kb_fail(out_error, NRT_BACKEND_INVALID, "job binds %u regions, the driver "
			       "takes at most %d", job->n_regions, NEURONSIM_MAX_REGIONS);
	struct neuronsim_region stack_regions[KB_STACK_REGIONS];
	struct neuronsim_region *regions = stack_regions;
	if (job->n_regions > KB_STACK_REGIONS) {
		regions = malloc(job->n_regions * sizeof(*regions));
		if (!regions)
			return kb_fail(out_error, NRT_BACKEND_NOMEM, "out of host memory for %u regions",
				       job->n_regions);
	}
	nrt_backend_status_t st = NRT_BACKEND_OK;
	for (uint32_t i = 0; i < job->n_regions && st == NRT_BACKEND_OK; i++)
		if (kb_region(&job->regions[i], &regions[i]))
			st = kb_fail(out_error, NRT_BACKEND_INVALID, "region %u [+%llu, %llu bytes) is "
				     "not inside its device memory block", i,
				     (unsigned long long)job->regions[i].offset,
				     (unsigned long long)job->regions[i].size);
	if (st != NRT_BACKEND_OK)
		goto out;

	kb_reap_stale(dev);
	/* Without the buffer (device memory full) the job runs untraced and its
	 * spans count as dropped. */
	if (bt && bt->spans && bt->cap && bt->cap <= UINT32_MAX &&
	    kb_mem_alloc(dev, bt->cap * sizeof(nrt_backend_span_t), &tmem) != NRT_SUCCESS)
		tmem.size = 0;
	struct neuronsim_job_submit js = {
		.core = core,
		.flags = (job->flags & (NEURONSIM_JOB_CHECK_NAN | NEURONSIM_JOB_CHECK_INF)) |
			 (tmem.size ? NEURONSIM_JOB_PROFILE : 0),
		.trace = { .handle = tmem.size ? (uint32_t)tmem.handle : 0,
			   .size = tmem.size ? bt->cap * sizeof(nrt_backend_span_t) : 0 },
		.code_handle = p->code_handle,
		.n_regions = job->n_regions,
		.regions_ptr = (uint64_t)(uintptr_t)regions,
		.deadline_ns = (int64_t)job->deadline_ns,
	};
	memcpy(js.streams, p->streams, sizeof(js.streams));
	int r = kb_ioctl(dev->fd, NEURONSIM_IOCTL_JOB_SUBMIT, &js);
	if (r) {
		switch (r) {
		case -ENODEV:
			st = kb_fail(out_error, NRT_BACKEND_DEVICE_LOST, "%s: no firmware attached: "
				     "start neuronsim-fwd (as root) for this device", dev->node);
			break;
		case -ENOMEM:
		case -EBUSY:
			st = kb_fail(out_error, NRT_BACKEND_NOMEM, "%s: the driver cannot queue "
				     "another job (%s)", dev->node, strerror(-r));
			break;
		case -EACCES:
			st = kb_fail(out_error, NRT_BACKEND_INVALID, "%s: core %u is not reserved by "
				     "this runtime", dev->node, core);
			break;
		default:
			st = kb_fail(out_error, NRT_BACKEND_INVALID, "%s: job submit on core %u failed: %s",
				     dev->node, core, strerror(-r));
			break;
		}
		goto out;
	}

	/* A driver of ABI 1.1 fills the plain record, the extension's first member. */
	struct neuronsim_error_record_ext ext;
	const struct neuronsim_error_record *rec = &ext.rec;
	struct neuronsim_job_wait w = { .job_id = js.job_id,
					.flags = dev->record_ext ? NEURONSIM_WAIT_RECORD_EXT : 0,
					.error_ptr = (uint64_t)(uintptr_t)&ext };
	for (;;) {
		memset(&ext, 0, sizeof(ext));
		uint64_t limit = job->deadline_ns ? job->deadline_ns + KB_DEADLINE_GRACE_NS
						  : ns_monotonic_ns() + KB_WAIT_SLICE_NS;
		w.timeout_ns = (int64_t)limit;
		r = kb_ioctl(dev->fd, NEURONSIM_IOCTL_JOB_WAIT, &w);
		if (r != -ETIME || job->deadline_ns)
			break;
	}
	if (r == -ETIME) {
		kb_add_stale(dev, js.job_id);
		st = kb_fail(out_error, NRT_BACKEND_TIMEOUT, "%s: job %llu on core %u did not finish "
			     "within %llu ms after its deadline: neuronsim-fwd may be hung",
			     dev->node, (unsigned long long)js.job_id, core,
			     (unsigned long long)(KB_DEADLINE_GRACE_NS / 1000000));
		goto out;
	}
	if (r) {
		st = kb_fail(out_error, NRT_BACKEND_DEVICE_LOST, "%s: waiting for job %llu failed: %s",
			     dev->node, (unsigned long long)js.job_id, strerror(-r));
		goto out;
	}
	ns_job_error_from_record(&ext, w.status, out_error);
	if (bt) {
		uint64_t n = tmem.size ? (rec->trace_count < bt->cap ? rec->trace_count : bt->cap) : 0;
		if (n)
			memcpy(bt->spans, tmem.host, n * sizeof(nrt_backend_span_t));
		bt->count = n;
		bt->dropped = tmem.size ? rec->trace_dropped : rec->insns_executed;
		memcpy(bt->engine_busy_ns, rec->engine_busy_ns, sizeof(bt->engine_busy_ns));
		bt->insns_executed = rec->insns_executed;
		bt->recorded = 1;
	}
	st = (nrt_backend_status_t)out_error->status;
	if (st == NRT_BACKEND_DEVICE_LOST && !out_error->message[0])
		snprintf(out_error->message, sizeof(out_error->message),
			 "%s: the firmware went away before the job completed", dev->node);
out:
	if (tmem.size)
		kb_mem_free(dev, &tmem); /* the driver keeps it while an abandoned job runs */
	if (regions != stack_regions)
		free(regions);
	return st;
}

/* MEM_ALLOC already zeroed the block (the previous tenant's data must not
 * leak: the driver's rule), so a fresh block needs nothing more. */
static void kb_mem_zero(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem)
{
	(void)dev;
	(void)mem;
}

const nrt_backend_ops_t nrt_backend_kernel_ops = {
	.name = "kernel",
	.open = kb_open,
	.close = kb_close,
	.query = kb_query,
	.mem_alloc = kb_mem_alloc,
	.mem_free = kb_mem_free,
	.mem_zero = kb_mem_zero,
	.core_reserve = kb_core_reserve,
	.core_release = kb_core_release,
	.program_create = kb_program_create,
	.program_destroy = kb_program_destroy,
	.execute = kb_execute,
};
