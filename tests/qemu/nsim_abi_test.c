/* Guest ABI tests of the client node in null-hardware mode: every ioctl's
 * validation, handles, overflow, mmap, isolation between files, cleanup. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "nsim_test.h"

int nsim_failures;

static uint64_t g_mem_size;
static long g_page;

static void test_get_param(void)
{
	struct neuronsim_get_param p = { 0 };
	int fd = nsim_open(NSIM_DEV), fw;

	p.param = NEURONSIM_PARAM_ABI_MAJOR;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == NEURONSIM_ABI_MAJOR);
	p.param = NEURONSIM_PARAM_ABI_MINOR;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == NEURONSIM_ABI_MINOR);
	p.param = NEURONSIM_PARAM_NUM_CORES;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == 2);
	p.param = NEURONSIM_PARAM_MEM_SIZE;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == 16u << 20);
	g_mem_size = p.value;
	p.param = NEURONSIM_PARAM_NULL_HW;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == 1);
	p.param = NEURONSIM_PARAM_FW_ATTACHED;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == 0);
	p.param = NEURONSIM_PARAM_CAPABILITIES;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value & NEURONSIM_CAP_FW_DEVICE);
	CHECK(p.value & NEURONSIM_CAP_FW_ABORT);
	CHECK(p.value & NEURONSIM_CAP_RECORD_EXT);
	p.param = NEURONSIM_PARAM_MEM_ALIGN;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == (uint64_t)g_page);
	p.param = NEURONSIM_PARAM_MAX_REGIONS;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == NEURONSIM_MAX_REGIONS);
	p.param = NEURONSIM_PARAM_DEVICE_INDEX;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == 0);

	p.param = 0x1000;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	p.param = NEURONSIM_PARAM_ABI_MAJOR;
	p.pad = 1;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK_ERR(EFAULT, ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, (void *)8));
	CHECK_ERR(ENOTTY, ioctl(fd, _IOWR(NEURONSIM_IOCTL_BASE, 0x1f, uint64_t), &p));
	CHECK_ERR(ENOTTY, ioctl(fd, _IOWR('N', 0x00, struct neuronsim_get_param), &p));
	CHECK_ERR(ENOTTY, ioctl(fd, NEURONSIM_IOCTL_FW_ATTACH, &p));
	/* The size is part of the command number. */
	CHECK_ERR(ENOTTY, ioctl(fd, _IOWR(NEURONSIM_IOCTL_BASE, 0x00, uint32_t), &p));
	CHECK_ERR(ENOTTY, ioctl(fd, _IOR(NEURONSIM_IOCTL_BASE, 0x00, struct neuronsim_get_param), &p));

	fw = nsim_open(NSIM_FW_DEV);
	p.pad = 0;
	CHECK_OK(ioctl(fw, NEURONSIM_IOCTL_GET_PARAM, &p));
	CHECK(p.value == NEURONSIM_ABI_MAJOR);
	CHECK_ERR(ENOTTY, ioctl(fw, NEURONSIM_IOCTL_MEM_ALLOC, &p));
	close(fw);
	close(fd);
}

static void test_mem(void)
{
	struct neuronsim_mem_alloc a;
	struct neuronsim_mem_info info;
	struct neuronsim_mem_free f;
	uint64_t off, addr, off2, addr2;
	int fd = nsim_open(NSIM_DEV);
	uint32_t h, h2;
	uint8_t *p;

	memset(&a, 0, sizeof(a));
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	a.size = 4096;
	a.flags = 1;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	a.flags = 0x80000000u;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	a.flags = 0;
	a.size = UINT64_MAX;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	a.size = g_mem_size + 1;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	a.size = UINT64_MAX - 100; /* would wrap when rounded up */
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));

	/* All of memory, then nothing left. */
	a.size = g_mem_size;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	CHECK(sysfs_read("mem_in_use") == (long long)g_mem_size);
	h = a.handle;
	a.size = 1;
	CHECK_ERR(ENOMEM, ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a));
	f = (struct neuronsim_mem_free){ .handle = h, .flags = 1 };
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	f.flags = 0;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	f.handle = 0;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	f.handle = 0xffffffffu;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("mem_peak") == (long long)g_mem_size);

	/* Rounding and info. */
	h = mem_alloc(fd, 1, &off, &addr);
	info = (struct neuronsim_mem_info){ .handle = h };
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));
	CHECK(info.size == (uint64_t)g_page);
	CHECK(info.mmap_offset == off && info.dev_addr == addr);
	info.flags = 2;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));
	info.flags = 0;
	info.handle = 0;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));
	info.handle = 12345;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));

	/* mmap: inside the allocation only. */
	h2 = mem_alloc(fd, 3 * g_page, &off2, &addr2);
	p = mmap(NULL, 3 * g_page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off2);
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		for (int i = 0; i < 3 * g_page; i++)
			CHECK(p[i] == 0 || (i = 3 * g_page));
		memset(p, 0xab, 3 * g_page);
		munmap(p, 3 * g_page);
	}
	p = mmap(NULL, g_page, PROT_READ, MAP_SHARED, fd, off2 + g_page);
	CHECK(p != MAP_FAILED && p[0] == 0xab);
	if (p != MAP_FAILED)
		munmap(p, g_page);
	CHECK(mmap(NULL, 4 * g_page, PROT_READ, MAP_SHARED, fd, off2) ==
	      MAP_FAILED && errno == EINVAL);
	CHECK(mmap(NULL, g_page, PROT_READ, MAP_SHARED, fd,
		   off2 + 3 * g_page) == MAP_FAILED);
	CHECK(mmap(NULL, g_page, PROT_READ, MAP_SHARED, fd, 8 << 20) ==
	      MAP_FAILED);
	CHECK(mmap(NULL, g_page, PROT_READ, MAP_SHARED, fd,
		   (off_t)0x7ffffffffffff000LL) == MAP_FAILED);

	/* A mapping keeps the memory: free, then the pages stay reserved. */
	p = mmap(NULL, 3 * g_page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off2);
	CHECK(p != MAP_FAILED);
	f = (struct neuronsim_mem_free){ .handle = h2 };
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_FREE, &f));
	CHECK(sysfs_read("mem_in_use") == 4 * g_page);
	if (p != MAP_FAILED) {
		p[5] = 7;
		/* A split mapping takes its own reference. */
		munmap(p + g_page, g_page);
		CHECK(sysfs_read("mem_in_use") == 4 * g_page);
		munmap(p, g_page);
		CHECK(sysfs_read("mem_in_use") == 4 * g_page);
		munmap(p + 2 * g_page, g_page);
	}
	CHECK(sysfs_read("mem_in_use") == g_page);

	/* Reused memory is zeroed. */
	h2 = mem_alloc(fd, 3 * g_page, &off2, &addr2);
	p = mmap(NULL, 3 * g_page, PROT_READ, MAP_SHARED, fd, off2);
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		int nz = 0;

		for (int i = 0; i < 3 * g_page; i++)
			nz += p[i] != 0;
		CHECK(nz == 0);
		munmap(p, 3 * g_page);
	}
	close(fd);
	CHECK(sysfs_read("mem_in_use") == 0);
	(void)h;
}

static void test_core(void)
{
	struct neuronsim_core_reserve r = { 0 };
	int fd = nsim_open(NSIM_DEV), fd2 = nsim_open(NSIM_DEV);

	r.core = 2;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	r.core = 0xffffffffu;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	r.core = 0;
	r.flags = 4;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	r.flags = 0;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	CHECK(sysfs_read("cores_reserved") == 1);
	CHECK(sysfs_read("core0/reserved") == 1);
	CHECK(sysfs_read("core0/owner_pid") == getpid());
	CHECK_ERR(EBUSY, ioctl(fd2, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	CHECK_ERR(EACCES, ioctl(fd2, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	CHECK_ERR(EACCES, ioctl(fd, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	CHECK_OK(ioctl(fd2, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	r.core = 1;
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r));
	CHECK(sysfs_read("cores_reserved") == 2);
	close(fd2);
	CHECK(sysfs_read("cores_reserved") == 1);
	close(fd);
	CHECK(sysfs_read("cores_reserved") == 0);
}

struct job_setup {
	int fd;
	uint32_t code, in, out;
	struct neuronsim_region regions[4];
	struct neuronsim_job_submit s;
};

static void job_setup(struct job_setup *js, int fd)
{
	memset(js, 0, sizeof(*js));
	js->fd = fd;
	js->code = mem_alloc(fd, 4 * NEURONSIM_INSN_SIZE, NULL, NULL);
	js->in = mem_alloc(fd, 8192, NULL, NULL);
	js->out = mem_alloc(fd, 4096, NULL, NULL);
	js->regions[0] = (struct neuronsim_region){ js->in, 0, 0, 64 };
	js->regions[1] = (struct neuronsim_region){ 0, 0, 0, 0 };
	js->regions[2] = (struct neuronsim_region){ js->in, 0, 4096, 4096 };
	js->regions[3] = (struct neuronsim_region){ js->out, 0, 0, 4096 };
	js->s.core = 0;
	js->s.code_handle = js->code;
	js->s.n_regions = 4;
	js->s.regions_ptr = (uintptr_t)js->regions;
	js->s.streams[0] = (struct neuronsim_stream){ 0, 2, 0 };
	js->s.streams[1] = (struct neuronsim_stream){ 2 * NEURONSIM_INSN_SIZE,
						      2, 0 };
}

static int submit(struct job_setup *js)
{
	return ioctl(js->fd, NEURONSIM_IOCTL_JOB_SUBMIT, &js->s);
}

static void test_submit_validation(void)
{
	int fd = nsim_open(NSIM_DEV);
	struct neuronsim_job_submit good;
	struct neuronsim_error_record rec;
	struct job_setup js;
	uint32_t status;

	job_setup(&js, fd);
	good = js.s;
	CHECK_ERR(EACCES, submit(&js)); /* core not reserved */
	CHECK_OK(core_reserve(fd, 0));

#define BAD(e, stmt)                                                         \
	do {                                                                 \
		js.s = good;                                                 \
		stmt;                                                        \
		CHECK_ERR(e, submit(&js));                                   \
		js.s = good;                                                 \
	} while (0)
	BAD(EINVAL, js.s.flags = 1u << 3);
	BAD(EINVAL, js.s.flags = 0x80000000u);
	BAD(EINVAL, js.s.reserved = 1);
	BAD(EINVAL, js.s.core = 2);
	BAD(EACCES, js.s.core = 1);
	BAD(EINVAL, js.s.deadline_ns = -1);
	BAD(EINVAL, js.s.n_regions = NEURONSIM_MAX_REGIONS + 1);
	BAD(EINVAL, js.s.n_regions = 0xffffffffu);
	BAD(EINVAL, js.s.n_regions = 0);
	BAD(EFAULT, js.s.regions_ptr = 16);
	BAD(EFAULT, js.s.regions_ptr = (uint64_t)-4096);
	BAD(ENOENT, js.s.code_handle = 999);
	BAD(EINVAL, js.s.code_handle = 0);
	BAD(EINVAL, js.s.streams[4].pad = 1);
	BAD(EINVAL, js.s.streams[0].offset = 4);
	BAD(EINVAL, js.s.streams[0].count = 9); /* 9 * 496 > 4096 */
	BAD(EINVAL, js.s.streams[2].count = 0xffffffffu);
	BAD(EINVAL, js.s.streams[2].offset = UINT64_MAX - 7);
	BAD(EINVAL, (js.s.streams[2].offset = UINT64_MAX - 7,
		     js.s.streams[2].count = 1));
	BAD(EINVAL, js.s.trace.size = 8);
	BAD(EINVAL, js.s.trace.pad = 8);
	BAD(EINVAL, (js.s.flags = NEURONSIM_JOB_PROFILE,
		     js.s.trace.handle = js.out, js.s.trace.size = 4097));
	BAD(EINVAL, (js.s.flags = NEURONSIM_JOB_PROFILE,
		     js.s.trace.handle = js.out, js.s.trace.offset = 4,
		     js.s.trace.size = 8));
	BAD(ENOENT, (js.s.flags = NEURONSIM_JOB_PROFILE,
		     js.s.trace.handle = 77, js.s.trace.size = 8));

	/* Region table entries. */
	struct neuronsim_region saved = js.regions[2];
	struct { uint64_t off, size; int e; } rcases[] = {
		{ 4096, 4097, EINVAL },
		{ 8192, 1, EINVAL },
		{ UINT64_MAX - 10, 100, EINVAL },
		{ 100, UINT64_MAX, EINVAL },
		{ UINT64_MAX, UINT64_MAX, EINVAL },
	};
	for (unsigned int i = 0; i < sizeof(rcases) / sizeof(rcases[0]); i++) {
		js.regions[2] = saved;
		js.regions[2].offset = rcases[i].off;
		js.regions[2].size = rcases[i].size;
		CHECK_ERR(rcases[i].e, submit(&js));
	}
	js.regions[2] = saved;
	js.regions[2].pad = 1;
	CHECK_ERR(EINVAL, submit(&js));
	js.regions[2] = saved;
	js.regions[2].handle = 4242;
	CHECK_ERR(ENOENT, submit(&js));
	js.regions[2] = saved;
	js.regions[1].size = 1; /* empty region with a size */
	CHECK_ERR(EINVAL, submit(&js));
	js.regions[1].size = 0;
	CHECK(sysfs_read("core0/jobs_submitted") == 0);

	/* And the good one, exact fit at the end of the allocation. */
	js.regions[2].offset = 0;
	js.regions[2].size = 8192;
	js.s = good;
	js.s.deadline_ns = now_ns() + 1000000000LL;
	js.s.flags = NEURONSIM_JOB_FLAGS_ALL;
	js.s.trace = (struct neuronsim_region){ js.out, 0, 64, 4096 - 64 };
	CHECK_OK(submit(&js));
	CHECK(js.s.job_id != 0);
	memset(&rec, 0xff, sizeof(rec));
	status = 99;
	CHECK_OK(job_wait(fd, js.s.job_id, now_ns() + 1000000000LL, &status,
			  &rec));
	CHECK(status == NEURONSIM_STATUS_SUCCESS);
	CHECK(rec.status == 0 && rec.message[0] == 0 && rec.count == 0);
	CHECK_ERR(ENOENT, job_wait(fd, js.s.job_id, 0, NULL, NULL));

	/* The 1.2 record: a job null_hw completed ran nothing, flops 0. */
	struct neuronsim_error_record_ext ext;

	CHECK_OK(submit(&js));
	memset(&ext, 0xff, sizeof(ext));
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT,
		       &(struct neuronsim_job_wait){
			       .job_id = js.s.job_id,
			       .flags = NEURONSIM_WAIT_RECORD_EXT,
			       .timeout_ns = now_ns() + 1000000000LL,
			       .error_ptr = (uintptr_t)&ext }));
	CHECK(ext.rec.status == 0 && ext.valid == NEURONSIM_EXT_FLOPS &&
	      ext.flops == 0 && ext.pad == 0 && ext.reserved[0] == 0 &&
	      ext.reserved[1] == 0);

	/* Wait validation. */
	struct neuronsim_job_wait w = { 0 };

	CHECK_OK(submit(&js));
	w.job_id = js.s.job_id;
	w.flags = 2;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.flags = 0x80000000u | NEURONSIM_WAIT_RECORD_EXT;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.flags = 0;
	w.pad = 1;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.pad = 0;
	w.pad2 = 1;
	CHECK_ERR(EINVAL, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.pad2 = 0;
	w.job_id = 0;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.job_id = 1ULL << 40;
	CHECK_ERR(ENOENT, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	w.job_id = js.s.job_id;
	w.error_ptr = 8; /* bad pointer: EFAULT, the job is reaped anyway */
	CHECK_ERR(EFAULT, ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	CHECK_ERR(ENOENT, job_wait(fd, js.s.job_id, 0, NULL, NULL));

	/* Release blocked by an unwaited job? It is finished: allowed. */
	CHECK_OK(submit(&js));
	struct neuronsim_core_reserve r = { .core = 0 };

	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	CHECK_OK(job_wait(fd, js.s.job_id, 0, &status, NULL));
	close(fd);
	CHECK(sysfs_read("mem_in_use") == 0);
#undef BAD
}

static void test_null_hw_many(void)
{
	int fd = nsim_open(NSIM_DEV);
	long long before = sysfs_read("jobs_success");
	struct job_setup js;
	uint64_t ids[200];
	uint32_t status;

	job_setup(&js, fd);
	CHECK_OK(core_reserve(fd, 0));
	for (int i = 0; i < 200; i++) {
		CHECK_OK(submit(&js));
		ids[i] = js.s.job_id;
	}
	for (int i = 199; i >= 0; i--) {
		status = 99;
		CHECK_OK(job_wait(fd, ids[i], now_ns(), &status, NULL));
		CHECK(status == 0);
	}
	CHECK(sysfs_read("jobs_success") == before + 200);
	CHECK(sysfs_read("core0/jobs_success") >= 200);
	/* Jobs never waited are freed at close. */
	for (int i = 0; i < 50; i++)
		CHECK_OK(submit(&js));
	close(fd);
	CHECK(sysfs_read("mem_in_use") == 0);
}

static void test_isolation(void)
{
	int fd = nsim_open(NSIM_DEV), pipefd[2], st;
	struct job_setup js;
	uint64_t off;
	pid_t pid;

	job_setup(&js, fd);
	CHECK_OK(core_reserve(fd, 0));
	struct neuronsim_mem_info info = { .handle = js.out };

	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));
	off = info.mmap_offset;
	CHECK_OK(submit(&js));
	CHECK(pipe(pipefd) == 0);

	pid = fork();
	if (pid == 0) {
		int fd2 = nsim_open(NSIM_DEV);
		struct neuronsim_mem_free f = { .handle = js.out };
		struct job_setup js2;

		nsim_failures = 0;
		CHECK_ERR(ENOENT, ioctl(fd2, NEURONSIM_IOCTL_MEM_INFO, &info));
		CHECK_ERR(ENOENT, ioctl(fd2, NEURONSIM_IOCTL_MEM_FREE, &f));
		CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, off) ==
		      MAP_FAILED);
		CHECK_ERR(EBUSY, core_reserve(fd2, 0));
		js2 = js;
		js2.fd = fd2;
		CHECK_ERR(EACCES, submit(&js2));
		CHECK_OK(core_reserve(fd2, 1));
		js2.s.core = 1;
		/* The parent's handles mean nothing here. */
		CHECK_ERR(ENOENT, submit(&js2));
		CHECK_ERR(ENOENT, job_wait(fd2, js.s.job_id, 0, NULL, NULL));
		/* Own allocations get their own handles and offsets. */
		uint64_t off2;
		uint32_t h = mem_alloc(fd2, 4096, &off2, NULL);

		CHECK(h != 0 && off2 != off);
		CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, off) ==
		      MAP_FAILED);
		f.handle = h;
		CHECK_OK(ioctl(fd2, NEURONSIM_IOCTL_MEM_FREE, &f));
		_exit(nsim_failures ? 1 : 0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The parent's objects are intact. */
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_MEM_INFO, &info));
	CHECK_OK(job_wait(fd, js.s.job_id, 0, NULL, NULL));
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("cores_reserved") == 0);
}

static void test_fw_node_null_hw(void)
{
	int fw = nsim_open(NSIM_FW_DEV);
	struct neuronsim_fw_attach at = { 0 };
	struct neuronsim_fw_fetch fe = { 0 };
	struct neuronsim_fw_complete co = { 0 };
	uint8_t *p;

	CHECK_ERR(EOPNOTSUPP, ioctl(fw, NEURONSIM_IOCTL_FW_ATTACH, &at));
	at.pad = 1;
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_ATTACH, &at));
	fe.timeout_ns = 0;
	CHECK_ERR(EPERM, ioctl(fw, NEURONSIM_IOCTL_FW_FETCH, &fe));
	co.job_id = 1;
	CHECK_ERR(EPERM, ioctl(fw, NEURONSIM_IOCTL_FW_COMPLETE, &co));
	p = mmap(NULL, g_mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, fw, 0);
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED)
		munmap(p, g_mem_size);
	CHECK(mmap(NULL, g_mem_size + g_page, PROT_READ, MAP_SHARED, fw, 0) ==
	      MAP_FAILED);
	CHECK(mmap(NULL, g_page, PROT_READ, MAP_SHARED, fw, g_mem_size) ==
	      MAP_FAILED);
	close(fw);
}

/* An unprivileged process may use the client node, never the device side. */
static void test_permissions(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd;

		nsim_failures = 0;
		if (setgid(65534) || setuid(65534))
			_exit(3);
		errno = 0;
		CHECK(open(NSIM_FW_DEV, O_RDWR) == -1 && errno == EACCES);
		fd = open(NSIM_DEV, O_RDWR);
		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(mem_alloc(fd, 4096, NULL, NULL) != 0);
			close(fd);
		}
		_exit(nsim_failures ? 1 : 0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	CHECK(sysfs_read("mem_in_use") == 0);
}

int main(void)
{
	g_page = sysconf(_SC_PAGESIZE);
	signal(SIGPIPE, SIG_IGN);
#define RUN(t)                                                               \
	do {                                                                 \
		int f0 = nsim_failures;                                      \
		t();                                                         \
		printf("%s %s\n", nsim_failures == f0 ? "ok  " : "FAIL", #t);\
		fflush(stdout);                                              \
	} while (0)
	RUN(test_get_param);
	RUN(test_mem);
	RUN(test_core);
	RUN(test_submit_validation);
	RUN(test_null_hw_many);
	RUN(test_isolation);
	RUN(test_fw_node_null_hw);
	RUN(test_permissions);
	printf("nsim-abi-test: %d failure(s)\n", nsim_failures);
	return nsim_failures ? 1 : 0;
}
