/* Guest tests of the device side with a small fake firmware: fetch,
 * device-memory mmap, completions with error records, timeouts, interrupted
 * waits, kill -9 of a client and of the firmware in the middle of a job. */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "nsim_test.h"

int nsim_failures;

static uint64_t g_mem_size;
static long g_page;

/* A client with code, one input and one output allocation on core 0. */
struct client {
	int fd;
	uint32_t code, in, out;
	uint64_t in_addr, out_addr, code_addr;
	uint8_t *in_map, *out_map;
	struct neuronsim_region regions[3];
	struct neuronsim_job_submit s;
};

static void client_open(struct client *c, uint32_t core)
{
	uint64_t off;

	memset(c, 0, sizeof(*c));
	c->fd = nsim_open(NSIM_DEV);
	CHECK_OK(core_reserve(c->fd, core));
	c->code = mem_alloc(c->fd, 8 * NEURONSIM_INSN_SIZE, NULL,
			    &c->code_addr);
	c->in = mem_alloc(c->fd, 4096, &off, &c->in_addr);
	c->in_map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
			 off);
	CHECK(c->in_map != MAP_FAILED);
	c->out = mem_alloc(c->fd, 8192, &off, &c->out_addr);
	c->out_map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED,
			  c->fd, off);
	CHECK(c->out_map != MAP_FAILED);
	c->regions[0] = (struct neuronsim_region){ 0, 0, 0, 0 };
	c->regions[1] = (struct neuronsim_region){ c->in, 0, 16, 64 };
	c->regions[2] = (struct neuronsim_region){ c->out, 0, 4096, 4096 };
	c->s.core = core;
	c->s.code_handle = c->code;
	c->s.n_regions = 3;
	c->s.regions_ptr = (uintptr_t)c->regions;
	c->s.streams[1] = (struct neuronsim_stream){ 8, 3, 0 };
	c->s.streams[4] = (struct neuronsim_stream){ 4 * NEURONSIM_INSN_SIZE,
						     1, 0 };
}

static void client_close(struct client *c)
{
	munmap(c->in_map, 4096);
	munmap(c->out_map, 8192);
	close(c->fd);
}

static uint64_t client_submit(struct client *c)
{
	c->s.job_id = 0;
	CHECK_OK(ioctl(c->fd, NEURONSIM_IOCTL_JOB_SUBMIT, &c->s));
	return c->s.job_id;
}

static int fw_attach(int fw)
{
	struct neuronsim_fw_attach a = { 0 };

	return ioctl(fw, NEURONSIM_IOCTL_FW_ATTACH, &a);
}

static int fw_fetch(int fw, struct neuronsim_fw_fetch *f,
		    struct neuronsim_fw_region *regions, uint32_t max,
		    int64_t timeout_ns)
{
	memset(f, 0, sizeof(*f));
	f->max_regions = max;
	f->regions_ptr = (uintptr_t)regions;
	f->timeout_ns = timeout_ns;
	return ioctl(fw, NEURONSIM_IOCTL_FW_FETCH, f);
}

static int fw_complete(int fw, uint64_t id, uint32_t status,
		       struct neuronsim_error_record *rec)
{
	struct neuronsim_fw_complete c = {
		.job_id = id, .status = status, .error_ptr = (uintptr_t)rec,
	};

	return ioctl(fw, NEURONSIM_IOCTL_FW_COMPLETE, &c);
}

static void test_no_firmware(void)
{
	struct client c;

	client_open(&c, 0);
	CHECK_ERR(ENODEV, ioctl(c.fd, NEURONSIM_IOCTL_JOB_SUBMIT, &c.s));
	client_close(&c);
}

/* The whole device-side path: addresses, device memory, error record. */
static void test_fw_roundtrip(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_error_record rec, got;
	struct neuronsim_fw_attach at = { 0 };
	struct neuronsim_fw_fetch f;
	int fw = nsim_open(NSIM_FW_DEV), fw2 = nsim_open(NSIM_FW_DEV);
	uint8_t *dmem;
	uint32_t status;
	uint64_t id;
	struct client c;

	at.flags = 1;
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_ATTACH, &at));
	at.flags = 0;
	CHECK_OK(ioctl(fw, NEURONSIM_IOCTL_FW_ATTACH, &at));
	CHECK(at.num_cores == 2 && at.mem_size == g_mem_size);
	CHECK_ERR(EBUSY, fw_attach(fw2));
	CHECK(sysfs_read("fw_attached") == 1);
	dmem = mmap(NULL, g_mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, fw, 0);
	CHECK(dmem != MAP_FAILED);

	CHECK_ERR(ETIME, fw_fetch(fw, &f, regions, 8, 0));
	CHECK_ERR(EPERM, fw_fetch(fw2, &f, regions, 8, 0));
	f.flags = 1;
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_FETCH, &f));

	client_open(&c, 0);
	memcpy(c.in_map + 16, "hello device", 13);
	c.s.flags = NEURONSIM_JOB_CHECK_NAN | NEURONSIM_JOB_PROFILE;
	c.s.trace = (struct neuronsim_region){ c.out, 0, 0, 4096 };
	c.s.deadline_ns = now_ns() + 60000000000LL;
	id = client_submit(&c);
	CHECK(sysfs_read("core0/queued") == 1);

	CHECK_ERR(E2BIG, fw_fetch(fw, &f, regions, 2, 0));
	CHECK(f.n_regions == 3 && f.job_id == id);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL));
	CHECK(f.job_id == id && f.core == 0);
	CHECK(f.job_flags == (NEURONSIM_JOB_CHECK_NAN | NEURONSIM_JOB_PROFILE));
	CHECK(f.deadline_ns == c.s.deadline_ns);
	CHECK(f.n_regions == 3);
	CHECK(regions[0].addr == 0 && regions[0].size == 0);
	CHECK(regions[1].addr == c.in_addr + 16 && regions[1].size == 64);
	CHECK(regions[2].addr == c.out_addr + 4096 && regions[2].size == 4096);
	CHECK(f.streams[0].count == 0);
	CHECK(f.streams[1].addr == c.code_addr + 8 && f.streams[1].count == 3);
	CHECK(f.streams[4].addr == c.code_addr + 4 * NEURONSIM_INSN_SIZE &&
	      f.streams[4].count == 1);
	CHECK(f.trace.addr == c.out_addr && f.trace.size == 4096);
	CHECK(sysfs_read("core0/queued") == 0);
	CHECK(sysfs_read("core0/running") == (long long)id);

	/* The firmware reads the input and writes the output in device
	 * memory; the client sees it through its own mapping. */
	if (dmem != MAP_FAILED) {
		CHECK(memcmp(dmem + regions[1].addr, "hello device", 13) == 0);
		memcpy(dmem + regions[2].addr, "hello client", 13);
	}

	memset(&rec, 0, sizeof(rec));
	rec.engine = 2;
	rec.insn_index = 7;
	rec.debug_id = 42;
	rec.ap_index = 0;
	rec.region = 2;
	rec.is_inf = 1;
	rec.first_index = 3;
	rec.count = 5;
	rec.num_err_insns = 1;
	rec.insns_executed = 4;
	rec.trace_count = 4;
	rec.engine_busy_ns[1] = 1234;
	memset(rec.message, 'x', sizeof(rec.message)); /* not terminated */
	rec.pad = 1;
	CHECK_ERR(EINVAL, fw_complete(fw, id, NEURONSIM_STATUS_NUM_ERR, &rec));
	rec.pad = 0;
	CHECK_ERR(EINVAL, fw_complete(fw, id, NEURONSIM_STATUS_COUNT, &rec));
	CHECK_ERR(EFAULT, ioctl(fw, NEURONSIM_IOCTL_FW_COMPLETE,
				&(struct neuronsim_fw_complete){
					.job_id = id, .error_ptr = 16 }));
	CHECK_ERR(ENOENT, fw_complete(fw, id + 1000, 0, NULL));
	CHECK_ERR(EPERM, fw_complete(fw2, id, 0, NULL));
	CHECK_ERR(ENOTTY, ioctl(fw, NEURONSIM_IOCTL_JOB_WAIT, &f));
	CHECK_OK(fw_complete(fw, id, NEURONSIM_STATUS_NUM_ERR, &rec));
	CHECK_ERR(ENOENT, fw_complete(fw, id, 0, NULL));

	memset(&got, 0xee, sizeof(got));
	CHECK_OK(job_wait(c.fd, id, now_ns() + 1000000000LL, &status, &got));
	CHECK(status == NEURONSIM_STATUS_NUM_ERR);
	CHECK(got.status == NEURONSIM_STATUS_NUM_ERR && got.engine == 2 &&
	      got.insn_index == 7 && got.debug_id == 42 && got.region == 2 &&
	      got.is_inf == 1 && got.first_index == 3 && got.count == 5 &&
	      got.num_err_insns == 1 && got.insns_executed == 4 &&
	      got.trace_count == 4 && got.engine_busy_ns[1] == 1234);
	CHECK(strlen(got.message) == sizeof(got.message) - 1);
	CHECK(memcmp(c.out_map + 4096, "hello client", 13) == 0);
	CHECK(sysfs_read("jobs_num_err") == 1);
	CHECK(sysfs_read("core0/jobs_failure") == 1);

	/* OOB status and an empty record. */
	id = client_submit(&c);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL));
	CHECK_OK(fw_complete(fw, f.job_id, NEURONSIM_STATUS_OOB, NULL));
	CHECK_OK(job_wait(c.fd, id, now_ns() + 1000000000LL, &status, &got));
	CHECK(status == NEURONSIM_STATUS_OOB && got.message[0] == 0);
	CHECK(sysfs_read("jobs_oob") == 1);

	if (dmem != MAP_FAILED)
		munmap(dmem, g_mem_size);
	client_close(&c);
	close(fw2);
	close(fw);
	CHECK(sysfs_read("fw_attached") == 0);
	CHECK(sysfs_read("mem_in_use") == 0);
}

static int fw_complete_ext(int fw, uint64_t id, uint32_t status,
			   struct neuronsim_error_record_ext *ext)
{
	struct neuronsim_fw_complete c = {
		.job_id = id, .status = status,
		.flags = NEURONSIM_COMPLETE_RECORD_EXT,
		.error_ptr = (uintptr_t)ext,
	};

	return ioctl(fw, NEURONSIM_IOCTL_FW_COMPLETE, &c);
}

static int job_wait_ext(int fd, uint64_t id, uint32_t *status,
			struct neuronsim_error_record_ext *ext)
{
	struct neuronsim_job_wait w = {
		.job_id = id, .flags = NEURONSIM_WAIT_RECORD_EXT,
		.timeout_ns = now_ns() + 1000000000LL,
		.error_ptr = (uintptr_t)ext,
	};
	int r = ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w);

	if (!r && status)
		*status = w.status;
	return r;
}

/*
 * ABI 1.2: the firmware's FLOPs reach an extended waiter; a plain waiter
 * gets the 280-byte record and nothing past it; a plain completion (a 1.1
 * firmware) reads as valid 0; a job the driver ends itself as flops 0; the
 * extension's pad, reserved fields and unknown valid bits are refused.
 */
static void test_fw_record_ext(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_error_record_ext ext, got;
	struct neuronsim_fw_fetch f;
	int fw = nsim_open(NSIM_FW_DEV);
	uint8_t buf[sizeof(struct neuronsim_error_record_ext)];
	uint32_t status;
	uint64_t id;
	struct client c;

	CHECK_OK(fw_attach(fw));
	client_open(&c, 0);

	/* extended completion, extended waiter */
	id = client_submit(&c);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL));
	memset(&ext, 0, sizeof(ext));
	ext.rec.insns_executed = 3;
	ext.valid = NEURONSIM_EXT_FLOPS;
	ext.flops = 0x123456789abcULL;
	ext.pad = 1;
	CHECK_ERR(EINVAL, fw_complete_ext(fw, id, 0, &ext));
	ext.pad = 0;
	ext.reserved[1] = 1;
	CHECK_ERR(EINVAL, fw_complete_ext(fw, id, 0, &ext));
	ext.reserved[1] = 0;
	ext.valid = 2;
	CHECK_ERR(EINVAL, fw_complete_ext(fw, id, 0, &ext));
	ext.valid = 0; /* flops without its valid bit */
	CHECK_ERR(EINVAL, fw_complete_ext(fw, id, 0, &ext));
	ext.valid = NEURONSIM_EXT_FLOPS;
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_COMPLETE,
				&(struct neuronsim_fw_complete){
					.job_id = id, .flags = 2,
					.error_ptr = (uintptr_t)&ext }));
	CHECK_OK(fw_complete_ext(fw, id, 0, &ext));
	memset(&got, 0xee, sizeof(got));
	CHECK_OK(job_wait_ext(c.fd, id, &status, &got));
	CHECK(status == 0 && got.rec.status == 0 && got.rec.insns_executed == 3);
	CHECK(got.valid == NEURONSIM_EXT_FLOPS && got.flops == 0x123456789abcULL);
	CHECK(got.pad == 0 && got.reserved[0] == 0 && got.reserved[1] == 0);

	/* extended completion, plain waiter: nothing past the 1.0 record */
	id = client_submit(&c);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL));
	CHECK_OK(fw_complete_ext(fw, id, 0, &ext));
	memset(buf, 0xee, sizeof(buf));
	CHECK_OK(job_wait(c.fd, id, now_ns() + 1000000000LL, &status,
			  (struct neuronsim_error_record *)buf));
	CHECK(((struct neuronsim_error_record *)buf)->insns_executed == 3);
	CHECK(buf[sizeof(struct neuronsim_error_record)] == 0xee &&
	      buf[sizeof(buf) - 1] == 0xee);

	/* plain completion (a 1.1 firmware), extended waiter: valid 0 */
	id = client_submit(&c);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL));
	CHECK_OK(fw_complete(fw, id, NEURONSIM_STATUS_OOB, &ext.rec));
	memset(&got, 0xee, sizeof(got));
	CHECK_OK(job_wait_ext(c.fd, id, &status, &got));
	CHECK(status == NEURONSIM_STATUS_OOB && got.rec.insns_executed == 3);
	CHECK(got.valid == 0 && got.flops == 0);

	/* ended by the driver (deadline passed in the queue): flops 0 */
	c.s.deadline_ns = now_ns() + 1000000;
	id = client_submit(&c);
	c.s.deadline_ns = 0;
	usleep(5000);
	CHECK_ERR(ETIME, fw_fetch(fw, &f, regions, 8, 0));
	memset(&got, 0xee, sizeof(got));
	CHECK_OK(job_wait_ext(c.fd, id, &status, &got));
	CHECK(status == NEURONSIM_STATUS_TIMEOUT);
	CHECK(got.valid == NEURONSIM_EXT_FLOPS && got.flops == 0);

	client_close(&c);
	close(fw);
	CHECK(sysfs_read("fw_attached") == 0);
	CHECK(sysfs_read("mem_in_use") == 0);
}

/* One job per core at a time, cores in parallel, deadlines, release. */
static void test_fw_scheduling(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_fw_fetch f, f1;
	struct neuronsim_core_reserve r = { .core = 0 };
	int fw = nsim_open(NSIM_FW_DEV);
	struct client c0, c1;
	uint64_t a, b, d, e;
	uint32_t status;

	CHECK_OK(fw_attach(fw));
	client_open(&c0, 0);
	client_open(&c1, 1);
	a = client_submit(&c0);
	b = client_submit(&c0);
	d = client_submit(&c1);
	/* Round-robin over cores: one from each, in either order. */
	CHECK_OK(fw_fetch(fw, &f, regions, 8, 0));
	CHECK_OK(fw_fetch(fw, &f1, regions, 8, 0));
	if (f.core == 1) {
		struct neuronsim_fw_fetch t = f;

		f = f1;
		f1 = t;
	}
	CHECK(f.job_id == a && f.core == 0);
	CHECK(f1.job_id == d && f1.core == 1);
	CHECK_ERR(ETIME, fw_fetch(fw, &f1, regions, 8, now_ns() + 20000000));
	CHECK_ERR(EBUSY, ioctl(c0.fd, NEURONSIM_IOCTL_CORE_RELEASE, &r));
	CHECK_OK(fw_complete(fw, a, 0, NULL));
	CHECK_OK(fw_fetch(fw, &f, regions, 8, 0));
	CHECK(f.job_id == b);
	CHECK_OK(fw_complete(fw, b, 0, NULL));
	CHECK_OK(fw_complete(fw, d, 0, NULL));
	CHECK_OK(job_wait(c0.fd, b, 0, &status, NULL));
	CHECK_OK(job_wait(c0.fd, a, 0, &status, NULL));
	CHECK_OK(job_wait(c1.fd, d, 0, &status, NULL));
	CHECK(status == 0);

	/* Deadline passes while queued: TIMEOUT without reaching the fw. */
	c0.s.deadline_ns = now_ns() + 1000000;
	e = client_submit(&c0);
	c0.s.deadline_ns = 0;
	usleep(5000);
	CHECK_ERR(ETIME, fw_fetch(fw, &f, regions, 8, 0));
	struct neuronsim_error_record rec;

	CHECK_OK(job_wait(c0.fd, e, 0, &status, &rec));
	CHECK(status == NEURONSIM_STATUS_TIMEOUT && rec.message[0] != 0);
	CHECK(sysfs_read("jobs_timeout") == 1);

	/* Memory a running job uses stays allocated after the client frees
	 * it, and is not handed to anyone else meanwhile. */
	long long used = sysfs_read("mem_in_use");

	e = client_submit(&c0);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, 0));
	munmap(c0.out_map, 8192);
	c0.out_map = MAP_FAILED;
	struct neuronsim_mem_free mf = { .handle = c0.out };

	CHECK_OK(ioctl(c0.fd, NEURONSIM_IOCTL_MEM_FREE, &mf));
	CHECK(sysfs_read("mem_in_use") == used);
	uint64_t addr;
	uint32_t h = mem_alloc(c1.fd, 8192, NULL, &addr);

	CHECK(addr + 8192 <= c0.out_addr || addr >= c0.out_addr + 8192);
	CHECK_OK(fw_complete(fw, e, 0, NULL));
	CHECK(sysfs_read("mem_in_use") == used);     /* 8192 out, 8192 in */
	mf.handle = h;
	CHECK_OK(ioctl(c1.fd, NEURONSIM_IOCTL_MEM_FREE, &mf));
	CHECK(sysfs_read("mem_in_use") == used - 8192);
	CHECK_OK(job_wait(c0.fd, e, 0, &status, NULL));

	/* Closing a client drops its queued jobs. */
	c0.regions[2].handle = 0;
	c0.regions[2].size = 0;
	c0.regions[2].offset = 0;
	long long dropped = sysfs_read("jobs_dropped");

	client_submit(&c0);
	client_submit(&c0);
	CHECK(sysfs_read("core0/queued") == 2);
	client_close(&c0);
	CHECK(sysfs_read("core0/queued") == 0);
	CHECK(sysfs_read("jobs_dropped") == dropped + 2);
	CHECK(sysfs_read("core0/reserved") == 0);

	/* FW_DETACH fails what is queued and running. */
	d = client_submit(&c1);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, 0));
	e = client_submit(&c1);
	CHECK_OK(ioctl(fw, NEURONSIM_IOCTL_FW_DETACH,
		       &(struct neuronsim_fw_detach){ 0 }));
	CHECK_ERR(EPERM, ioctl(fw, NEURONSIM_IOCTL_FW_DETACH,
			       &(struct neuronsim_fw_detach){ 0 }));
	CHECK_OK(job_wait(c1.fd, d, 0, &status, &rec));
	CHECK(status == NEURONSIM_STATUS_FW_LOST && rec.message[0]);
	CHECK_OK(job_wait(c1.fd, e, 0, &status, NULL));
	CHECK(status == NEURONSIM_STATUS_FW_LOST);
	CHECK_ERR(ENODEV, ioctl(c1.fd, NEURONSIM_IOCTL_JOB_SUBMIT, &c1.s));
	client_close(&c1);
	close(fw);
	CHECK(sysfs_read("mem_in_use") == 0);
}

static volatile sig_atomic_t g_signals;

static void on_alarm(int sig)
{
	(void)sig;
	g_signals++;
}

static void set_timer(int restart, long usec)
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, usec }, { 0, usec } };

	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	g_signals = 0;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void stop_timer(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_IGN);
}

static void test_wait_timeouts(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_fw_fetch f;
	int fw = nsim_open(NSIM_FW_DEV);
	struct neuronsim_job_wait w;
	int64_t t0, dt, deadline;
	uint32_t status;
	struct client c;
	uint64_t id;
	int r;

	CHECK_OK(fw_attach(fw));
	client_open(&c, 0);
	id = client_submit(&c);

	/* Plain timeout, and a deadline in the past polls. */
	CHECK_ERR(ETIME, job_wait(c.fd, id, 0, NULL, NULL));
	CHECK_ERR(ETIME, job_wait(c.fd, id, -5, NULL, NULL));
	t0 = now_ns();
	CHECK_ERR(ETIME, job_wait(c.fd, id, t0 + 50000000, NULL, NULL));
	dt = now_ns() - t0;
	CHECK(dt >= 50000000 && dt < 2000000000);

	/* SA_RESTART: the kernel restarts the wait for the same deadline. */
	set_timer(1, 20000);
	t0 = now_ns();
	CHECK_ERR(ETIME, job_wait(c.fd, id, t0 + 200000000, NULL, NULL));
	dt = now_ns() - t0;
	stop_timer();
	CHECK(g_signals >= 2);
	CHECK(dt >= 200000000 && dt < 3000000000LL);

	/* Without SA_RESTART: EINTR early, then the same call finishes. */
	set_timer(0, 30000);
	t0 = now_ns();
	deadline = t0 + 5000000000LL;
	w = (struct neuronsim_job_wait){ .job_id = id, .timeout_ns = deadline };
	errno = 0;
	r = ioctl(c.fd, NEURONSIM_IOCTL_JOB_WAIT, &w);
	dt = now_ns() - t0;
	stop_timer();
	CHECK(r == -1 && errno == EINTR);
	CHECK(dt < 2000000000LL);
	/* The firmware side wait is interruptible too. */
	CHECK_OK(fw_fetch(fw, &f, regions, 8, 0));
	set_timer(0, 30000);
	errno = 0;
	r = fw_fetch(fw, &f, regions, 8, now_ns() + 5000000000LL);
	stop_timer();
	CHECK(r == -1 && errno == EINTR);
	CHECK_OK(fw_complete(fw, id, NEURONSIM_STATUS_SUCCESS, NULL));
	CHECK_OK(ioctl(c.fd, NEURONSIM_IOCTL_JOB_WAIT, &w));
	CHECK(w.status == NEURONSIM_STATUS_SUCCESS);
	(void)status;

	/* A waiter blocked in the kernel is woken by the completion. */
	id = client_submit(&c);
	pid_t pid = fork();

	if (pid == 0) {
		struct neuronsim_fw_fetch ff;

		usleep(100000);
		if (fw_fetch(fw, &ff, regions, 8, now_ns() + 2000000000LL) ||
		    fw_complete(fw, ff.job_id, NEURONSIM_STATUS_DEADLOCK, NULL))
			_exit(1);
		_exit(0);
	}
	t0 = now_ns();
	CHECK_OK(job_wait(c.fd, id, t0 + 10000000000LL, &status, NULL));
	CHECK(status == NEURONSIM_STATUS_DEADLOCK);
	CHECK(now_ns() - t0 < 5000000000LL);
	int st;

	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	client_close(&c);
	close(fw);
}

static int wait_readable(int fd)
{
	char ch;

	return read(fd, &ch, 1) == 1 ? 0 : -1;
}

/* kill -9 of a client with a running and a queued job. */
static void test_kill_client(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_fw_fetch f;
	int fw = nsim_open(NSIM_FW_DEV), p[2], st;
	uint32_t status;
	struct client c;
	pid_t pid;

	CHECK_OK(fw_attach(fw));
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		struct client cc;

		client_open(&cc, 0);
		client_submit(&cc);
		client_submit(&cc);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	CHECK(wait_readable(p[0]) == 0);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 2000000000LL));
	CHECK(sysfs_read("cores_reserved") == 1);
	CHECK(sysfs_read("mem_in_use") > 0);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* Cores at once; the running job's memory until it completes. */
	CHECK(sysfs_read("cores_reserved") == 0);
	CHECK(sysfs_read("core0/queued") == 0);
	CHECK(sysfs_read("mem_in_use") > 0);
	CHECK(sysfs_read("mem_in_use") == 4 * 4096);
	CHECK(sysfs_read("core0/running") == (long long)f.job_id);

	/* The next client queues behind the orphan and runs after it. */
	struct neuronsim_fw_fetch f2;

	client_open(&c, 0);
	uint64_t id = client_submit(&c);

	CHECK_ERR(ETIME, fw_fetch(fw, &f2, regions, 8, 0));
	CHECK_OK(fw_complete(fw, f.job_id, NEURONSIM_STATUS_SUCCESS, NULL));
	CHECK(sysfs_read("mem_in_use") == 4 * 4096); /* c's own */
	CHECK_OK(fw_fetch(fw, &f2, regions, 8, 0));
	CHECK(f2.job_id == id);
	CHECK_OK(fw_complete(fw, id, NEURONSIM_STATUS_SUCCESS, NULL));
	CHECK_OK(job_wait(c.fd, id, now_ns() + 1000000000LL, &status, NULL));
	CHECK(status == 0);
	client_close(&c);
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("cores_reserved") == 0);

	/* An orphan whose firmware dies is cleaned up too. */
	pid = fork();
	if (pid == 0) {
		struct client cc;

		client_open(&cc, 1);
		client_submit(&cc);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	CHECK(wait_readable(p[0]) == 0);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 2000000000LL));
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(sysfs_read("mem_in_use") == 4 * 4096);
	CHECK(sysfs_read("core1/running") == (long long)f.job_id);
	long long lost = sysfs_read("core1/jobs_fw_lost");

	close(fw);
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("core1/running") == 0);
	CHECK(sysfs_read("core1/jobs_fw_lost") == lost + 1);
	close(p[0]);
	close(p[1]);
}

static int fw_abort_wait(int fw, struct neuronsim_fw_abort *a, int64_t timeout_ns)
{
	memset(a, 0, sizeof(*a));
	a->timeout_ns = timeout_ns;
	return ioctl(fw, NEURONSIM_IOCTL_FW_ABORT_WAIT, a);
}

struct abort_waiter {
	int fw;
	int ret, err;
	int64_t returned_ns;
	struct neuronsim_fw_abort a;
};

static void *abort_waiter_main(void *arg)
{
	struct abort_waiter *w = arg;

	w->ret = fw_abort_wait(w->fw, &w->a, now_ns() + 5000000000LL);
	w->err = errno;
	w->returned_ns = now_ns();
	return NULL;
}

/*
 * FW_ABORT_WAIT (ABI 1.1, issue #11 item 2): the driver asks the firmware to
 * stop a running job when its deadline passes and when its client's file is
 * closed, each job once, so no job can hold a core for good.
 */
static void test_fw_abort_requests(void)
{
	struct neuronsim_fw_region regions[8];
	struct neuronsim_fw_fetch f;
	struct neuronsim_fw_abort a;
	struct abort_waiter w;
	struct client c;
	uint32_t status;
	int fw = nsim_open(NSIM_FW_DEV), p[2], st;
	int64_t dl, t0;
	pthread_t th;
	uint64_t id;
	pid_t pid;

	CHECK_ERR(EPERM, fw_abort_wait(fw, &a, 0)); /* not attached */
	CHECK_OK(fw_attach(fw));
	a = (struct neuronsim_fw_abort){ .flags = 1 };
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_ABORT_WAIT, &a));
	a = (struct neuronsim_fw_abort){ .pad = 1 };
	CHECK_ERR(EINVAL, ioctl(fw, NEURONSIM_IOCTL_FW_ABORT_WAIT, &a));
	CHECK_ERR(ETIME, fw_abort_wait(fw, &a, 0)); /* nothing runs */
	CHECK_ERR(ETIME, fw_abort_wait(fw, &a, now_ns() + 20000000LL));

	/* A deadline 300 ms ahead: reported when it passes (the wait is cut
	 * to it, not to the 5 s timeout), not before, and only once. */
	client_open(&c, 0);
	dl = now_ns() + 300000000LL;
	c.s.deadline_ns = dl;
	id = client_submit(&c);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 2000000000LL));
	CHECK(f.job_id == id);
	CHECK_ERR(ETIME, fw_abort_wait(fw, &a, 0));
	CHECK_OK(fw_abort_wait(fw, &a, now_ns() + 5000000000LL));
	t0 = now_ns();
	CHECK(t0 >= dl);
	CHECK(t0 < dl + 2000000000LL);
	CHECK(a.job_id == id && a.core == 0 &&
	      a.reason == NEURONSIM_ABORT_DEADLINE);
	CHECK_ERR(ETIME, fw_abort_wait(fw, &a, 0));
	CHECK_OK(fw_complete(fw, id, NEURONSIM_STATUS_TIMEOUT, NULL));
	CHECK_OK(job_wait(c.fd, id, now_ns() + 1000000000LL, &status, NULL));
	CHECK(status == NEURONSIM_STATUS_TIMEOUT);
	client_close(&c);

	/* kill -9 of a client whose job runs without a deadline: a waiter
	 * already asleep is woken by the close, with the job and CLOSED. */
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		struct client cc;

		client_open(&cc, 0);
		client_submit(&cc);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	CHECK(wait_readable(p[0]) == 0);
	CHECK_OK(fw_fetch(fw, &f, regions, 8, now_ns() + 2000000000LL));
	memset(&w, 0, sizeof(w));
	w.fw = fw;
	CHECK(pthread_create(&th, NULL, abort_waiter_main, &w) == 0);
	usleep(100000); /* let it sleep in the ioctl */
	t0 = now_ns();
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid);
	pthread_join(th, NULL);
	CHECK(w.ret == 0);
	CHECK(w.returned_ns - t0 < 1000000000LL);
	CHECK(w.a.job_id == f.job_id && w.a.core == 0 &&
	      w.a.reason == NEURONSIM_ABORT_CLOSED);
	CHECK(sysfs_read("core0/running") == (long long)f.job_id);
	CHECK_OK(fw_complete(fw, f.job_id, NEURONSIM_STATUS_TIMEOUT, NULL));
	CHECK(sysfs_read("core0/running") == 0);
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("cores_reserved") == 0);

	/* A detach wakes a waiter with EPERM. */
	memset(&w, 0, sizeof(w));
	w.fw = fw;
	CHECK(pthread_create(&th, NULL, abort_waiter_main, &w) == 0);
	usleep(100000);
	t0 = now_ns();
	struct neuronsim_fw_detach d = { 0 };

	CHECK_OK(ioctl(fw, NEURONSIM_IOCTL_FW_DETACH, &d));
	pthread_join(th, NULL);
	CHECK(w.ret == -1 && w.err == EPERM);
	CHECK(w.returned_ns - t0 < 1000000000LL);
	close(fw);
	close(p[0]);
	close(p[1]);
}

/* Fake firmware process: attach, serve n jobs (status SUCCESS, writes a
 * marker into region 2), then take one more job and signal the parent. */
static pid_t spawn_fw(int notify_fd, int serve, int hold_last)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	int fw = nsim_open(NSIM_FW_DEV);
	struct neuronsim_fw_region regions[8];
	struct neuronsim_fw_fetch f;
	uint8_t *dmem;

	if (fw_attach(fw))
		_exit(10);
	dmem = mmap(NULL, g_mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, fw, 0);
	if (dmem == MAP_FAILED)
		_exit(11);
	if (write(notify_fd, "a", 1) != 1)
		_exit(12);
	for (int i = 0; i < serve; i++) {
		if (fw_fetch(fw, &f, regions, 8, now_ns() + 10000000000LL))
			_exit(13);
		memcpy(dmem + regions[2].addr, "done", 5);
		if (fw_complete(fw, f.job_id, NEURONSIM_STATUS_SUCCESS, NULL))
			_exit(14);
	}
	if (hold_last) {
		if (fw_fetch(fw, &f, regions, 8, now_ns() + 10000000000LL))
			_exit(15);
		if (write(notify_fd, "f", 1) != 1)
			_exit(16);
		for (;;)
			pause();
	}
	_exit(0);
}

/* kill -9 of the firmware in the middle of a job. */
static void test_kill_firmware(void)
{
	int p[2], st;
	uint32_t status;
	struct neuronsim_error_record rec;
	struct client c;
	int64_t t0;
	pid_t fwpid, killer;
	uint64_t id;

	CHECK(pipe(p) == 0);
	fwpid = spawn_fw(p[1], 1, 1);
	CHECK(wait_readable(p[0]) == 0);
	client_open(&c, 0);
	id = client_submit(&c);
	CHECK_OK(job_wait(c.fd, id, now_ns() + 5000000000LL, &status, NULL));
	CHECK(status == 0 && memcmp(c.out_map + 4096, "done", 5) == 0);

	id = client_submit(&c);
	CHECK(wait_readable(p[0]) == 0); /* the firmware holds the job */
	killer = fork();
	if (killer == 0) {
		usleep(100000);
		kill(fwpid, SIGKILL);
		_exit(0);
	}
	t0 = now_ns();
	CHECK_OK(job_wait(c.fd, id, t0 + 20000000000LL, &status, &rec));
	CHECK(status == NEURONSIM_STATUS_FW_LOST);
	CHECK(now_ns() - t0 < 10000000000LL);
	CHECK(waitpid(fwpid, &st, 0) == fwpid && WIFSIGNALED(st));
	CHECK(waitpid(killer, &st, 0) == killer);
	CHECK(sysfs_read("fw_attached") == 0);
	CHECK(sysfs_read("jobs_fw_lost") >= 1);
	CHECK_ERR(ENODEV, ioctl(c.fd, NEURONSIM_IOCTL_JOB_SUBMIT, &c.s));

	/* A new firmware attaches and work resumes. */
	memset(c.out_map + 4096, 0, 8);
	fwpid = spawn_fw(p[1], 1, 0);
	CHECK(wait_readable(p[0]) == 0);
	id = client_submit(&c);
	CHECK_OK(job_wait(c.fd, id, now_ns() + 5000000000LL, &status, NULL));
	CHECK(status == 0 && memcmp(c.out_map + 4096, "done", 5) == 0);
	CHECK(waitpid(fwpid, &st, 0) == fwpid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	client_close(&c);
	close(p[0]);
	close(p[1]);
	CHECK(sysfs_read("mem_in_use") == 0);
}

/* Concurrency: a two-thread firmware process serves two clients (one per
 * core) with two submitting threads each; the firmware copies each job's
 * input region to its output region and reports the input's first word. */
#define STRESS_ITERS 2000

static uint8_t *g_dmem; /* the stress firmware's device-memory mapping */

static void *stress_fw_worker(void *arg)
{
	int fw = *(int *)arg;
	struct neuronsim_fw_region regions[8];
	struct neuronsim_error_record rec;
	struct neuronsim_fw_fetch f;

	for (;;) {
		if (fw_fetch(fw, &f, regions, 8, now_ns() + 1000000000LL))
			continue;
		memset(&rec, 0, sizeof(rec));
		memcpy(g_dmem + regions[2].addr, g_dmem + regions[1].addr, 64);
		memcpy(&rec.insns_executed, g_dmem + regions[1].addr, 8);
		if (fw_complete(fw, f.job_id, NEURONSIM_STATUS_SUCCESS, &rec))
			_exit(20);
	}
	return NULL;
}

struct stress_client {
	int fd;
	uint32_t core;
	int failures;
};

static void *stress_client_thread(void *arg)
{
	struct stress_client *sc = arg;
	struct neuronsim_error_record rec;
	struct neuronsim_region regions[3];
	struct neuronsim_job_submit s;
	uint64_t in_off = 0, out_off = 0;
	uint32_t in, out, status;
	uint8_t *im, *om;

	in = mem_alloc(sc->fd, 4096, &in_off, NULL);
	out = mem_alloc(sc->fd, 4096, &out_off, NULL);
	im = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sc->fd,
		  in_off);
	om = mmap(NULL, 4096, PROT_READ, MAP_SHARED, sc->fd, out_off);
	if (im == MAP_FAILED || om == MAP_FAILED) {
		sc->failures++;
		return NULL;
	}
	regions[0] = (struct neuronsim_region){ 0, 0, 0, 0 };
	regions[1] = (struct neuronsim_region){ in, 0, 0, 64 };
	regions[2] = (struct neuronsim_region){ out, 0, 0, 64 };
	for (uint64_t i = 1; i <= STRESS_ITERS; i++) {
		uint64_t v = ((uint64_t)sc->core << 48) ^ (i * 0x9e3779b9ULL) ^
			     (uint64_t)(uintptr_t)&rec;

		memcpy(im, &v, 8);
		memset(im + 8, (int)(i & 0xff), 56);
		memset(&s, 0, sizeof(s));
		s.core = sc->core;
		s.n_regions = 3;
		s.regions_ptr = (uintptr_t)regions;
		if (ioctl(sc->fd, NEURONSIM_IOCTL_JOB_SUBMIT, &s) ||
		    job_wait(sc->fd, s.job_id, now_ns() + 10000000000LL,
			     &status, &rec) ||
		    status != 0 || rec.insns_executed != v ||
		    memcmp(om, im, 64) != 0) {
			fprintf(stderr, "stress: core %u iter %llu failed: %s\n",
				sc->core, (unsigned long long)i,
				strerror(errno));
			sc->failures++;
			break;
		}
	}
	munmap(im, 4096);
	munmap(om, 4096);
	return NULL;
}

static void test_stress(void)
{
	struct stress_client sc[4];
	pthread_t th[4];
	int p[2], st, fds[2];
	int64_t t0 = now_ns();
	long long done0 = sysfs_read("jobs_success");
	pid_t fwpid;

	CHECK(pipe(p) == 0);
	fwpid = fork();
	if (fwpid == 0) {
		int fw = nsim_open(NSIM_FW_DEV);
		pthread_t t;

		if (fw_attach(fw))
			_exit(10);
		g_dmem = mmap(NULL, g_mem_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, fw, 0);
		if (g_dmem == MAP_FAILED)
			_exit(12);
		if (write(p[1], "a", 1) != 1)
			_exit(11);
		pthread_create(&t, NULL, stress_fw_worker, &fw);
		stress_fw_worker(&fw);
		_exit(0);
	}
	CHECK(wait_readable(p[0]) == 0);
	for (int c = 0; c < 2; c++) {
		fds[c] = nsim_open(NSIM_DEV);
		CHECK_OK(core_reserve(fds[c], c));
	}
	for (int i = 0; i < 4; i++) {
		sc[i] = (struct stress_client){ fds[i / 2], i / 2, 0 };
		pthread_create(&th[i], NULL, stress_client_thread, &sc[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(sc[i].failures == 0);
	}
	CHECK(sysfs_read("jobs_success") == done0 + 4 * STRESS_ITERS);
	printf("stress: %d jobs in %.2f s\n", 4 * STRESS_ITERS,
	       (now_ns() - t0) / 1e9);
	kill(fwpid, SIGKILL);
	CHECK(waitpid(fwpid, &st, 0) == fwpid);
	close(fds[0]);
	close(fds[1]);
	close(p[0]);
	close(p[1]);
	CHECK(sysfs_read("mem_in_use") == 0);
	CHECK(sysfs_read("fw_attached") == 0);
}

int main(void)
{
	struct neuronsim_get_param gp = { .param = NEURONSIM_PARAM_MEM_SIZE };
	int fd = nsim_open(NSIM_DEV);

	g_page = sysconf(_SC_PAGESIZE);
	CHECK_OK(ioctl(fd, NEURONSIM_IOCTL_GET_PARAM, &gp));
	g_mem_size = gp.value;
	close(fd);
	signal(SIGPIPE, SIG_IGN);
#define RUN(t)                                                               \
	do {                                                                 \
		int f0 = nsim_failures;                                      \
		t();                                                         \
		printf("%s %s\n", nsim_failures == f0 ? "ok  " : "FAIL", #t);\
		fflush(stdout);                                              \
	} while (0)
	RUN(test_no_firmware);
	RUN(test_fw_roundtrip);
	RUN(test_fw_scheduling);
	/* after the exact jobs_timeout count of test_fw_scheduling */
	RUN(test_fw_record_ext);
	RUN(test_wait_timeouts);
	RUN(test_kill_client);
	RUN(test_fw_abort_requests);
	RUN(test_kill_firmware);
	RUN(test_stress);
	printf("nsim-fw-test: %d failure(s)\n", nsim_failures);
	return nsim_failures ? 1 : 0;
}
