/* Guest test of neuronsim-fwd through raw client ioctls: results, code rewritten after validation, invalid code, profile traces, many regions, deadlines. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "neuronsim/isa.h"
#include "uapi/linux/neuronsim.h"

#include "nsim_kb_test.h"

#define N 16
#define MANY_REGIONS 300 /* more than neuronsim-fwd's first fetch buffer (64) */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct buf {
	uint32_t handle;
	uint8_t *host;
} buf_t;

static buf_t alloc_map(int fd, uint64_t size)
{
	struct neuronsim_mem_alloc a = { .size = size };
	if (ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a)) {
		perror("MEM_ALLOC");
		exit(1);
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return (buf_t){ a.handle, p };
}

/* gpsimd: out[i] = base + i, f32[N] in region 2. */
static isa_insn_t iota(double base)
{
	uint64_t n = N;
	isa_insn_t in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	in.ap[0] = isa_ap_contig(ISA_REGION_IO0, 0, ISA_DT_F32, 1, &n);
	in.param = 0;
	in.imm[0] = base;
	in.debug_id = 42;
	return in;
}

/* Submits the one-instruction gpsimd program in code and waits for it. */
static int run(int fd, const buf_t *code, const buf_t *out, uint32_t n_regions, uint32_t flags,
	       const buf_t *trace, int64_t deadline, struct neuronsim_error_record *rec)
{
	static struct neuronsim_region regions[MANY_REGIONS];
	memset(regions, 0, sizeof(regions));
	memset(rec, 0, sizeof(*rec));
	regions[ISA_REGION_IO0] = (struct neuronsim_region){ .handle = out->handle, .size = N * 4 };
	struct neuronsim_job_submit js = {
		.core = 0,
		.flags = flags,
		.code_handle = code->handle,
		.n_regions = n_regions,
		.regions_ptr = (uint64_t)(uintptr_t)regions,
		.deadline_ns = deadline,
	};
	js.streams[ISA_ENGINE_GPSIMD].count = 1;
	if (trace)
		js.trace = (struct neuronsim_region){ .handle = trace->handle, .size = 4096 };
	if (ioctl(fd, NEURONSIM_IOCTL_JOB_SUBMIT, &js)) {
		printf("FAIL: JOB_SUBMIT: %s\n", strerror(errno));
		return -1;
	}
	struct neuronsim_job_wait w = {
		.job_id = js.job_id,
		.timeout_ns = now_ns() + 20000000000ll,
		.error_ptr = (uint64_t)(uintptr_t)rec,
	};
	int r;
	do
		r = ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w);
	while (r && errno == EINTR);
	if (r) {
		printf("FAIL: JOB_WAIT: %s\n", strerror(errno));
		return -1;
	}
	return (int)w.status;
}

static int out_is(const buf_t *out, float base)
{
	const float *y = (const float *)out->host;
	for (int i = 0; i < N; i++)
		if (y[i] != base + (float)i)
			return 0;
	return 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd = open("/dev/neuronsim0", O_RDWR);
	if (fd < 0) {
		perror("/dev/neuronsim0");
		return 1;
	}
	struct neuronsim_core_reserve cr = { .core = 0 };
	if (ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &cr)) {
		perror("CORE_RESERVE");
		return 1;
	}
	buf_t code = alloc_map(fd, 4096), out = alloc_map(fd, 4096), trace = alloc_map(fd, 4096);
	isa_insn_t *insn = (isa_insn_t *)code.host;
	struct neuronsim_error_record rec;

	*insn = iota(1.0);
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_SUCCESS, "iota 1");
	EXPECT(out_is(&out, 1.0f), "out after iota 1");
	EXPECT(rec.insns_executed == 1, "insns_executed %llu", (unsigned long long)rec.insns_executed);
	/* Again: the cached program. */
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_SUCCESS, "iota 1 again");

	/* The code is rewritten in place after it was validated and cached: the
	 * next job runs the new code. */
	*insn = iota(100.0);
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_SUCCESS, "iota 100");
	EXPECT(out_is(&out, 100.0f), "out after rewriting the code: %g", ((float *)out.host)[0]);

	/* ... and made invalid: refused, nothing written. */
	memset(out.host, 0, N * 4);
	insn->opcode = 0x7fff;
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_INVALID,
	       "invalid opcode accepted");
	EXPECT(rec.message[0] != '\0', "no message for invalid code");
	printf("fwd-test: invalid code: %s\n", rec.message);
	int zero = 1;
	for (int i = 0; i < N; i++)
		zero &= ((float *)out.host)[i] == 0.0f;
	EXPECT(zero, "invalid code wrote output");

	/* Region 3 referenced with only 3 regions bound: invalid program. */
	*insn = iota(5.0);
	insn->ap[0].region = 3;
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_INVALID,
	       "region beyond n_regions accepted");

	/* Profile: one span, in the trace buffer. */
	*insn = iota(7.0);
	memset(trace.host, 0, 4096);
	EXPECT(run(fd, &code, &out, 3, NEURONSIM_JOB_PROFILE, &trace, 0, &rec) ==
	       NEURONSIM_STATUS_SUCCESS, "profiled job");
	EXPECT(out_is(&out, 7.0f), "profiled output");
	EXPECT(rec.trace_count == 1 && rec.trace_dropped == 0, "trace count %llu dropped %llu",
	       (unsigned long long)rec.trace_count, (unsigned long long)rec.trace_dropped);
	const uint64_t *span = (const uint64_t *)trace.host;
	const uint32_t *span32 = (const uint32_t *)(trace.host + 16);
	EXPECT(span[0] && span[1] >= span[0] && span32[0] == ISA_ENGINE_GPSIMD && span32[2] == 42,
	       "span %llu..%llu engine %u debug %u", (unsigned long long)span[0],
	       (unsigned long long)span[1], span32[0], span32[2]);

	/* More regions than the daemon's first fetch buffer holds (E2BIG). */
	*insn = iota(9.0);
	EXPECT(run(fd, &code, &out, MANY_REGIONS, 0, NULL, 0, &rec) == NEURONSIM_STATUS_SUCCESS,
	       "job with %d regions", MANY_REGIONS);
	EXPECT(out_is(&out, 9.0f), "output of the job with many regions");

	/* The daemon enforces the deadline of a running job. */
	isa_insn_t spin = isa_insn_init(ISA_OP_JUMP, 0);
	*insn = spin;
	int64_t t0 = now_ns();
	EXPECT(run(fd, &code, &out, 3, 0, NULL, t0 + 300000000, &rec) == NEURONSIM_STATUS_TIMEOUT,
	       "spin past its deadline");
	double late = (double)(now_ns() - t0) / 1e9;
	EXPECT(late < 5.0, "timeout reported after %.1f s", late);
	printf("fwd-test: deadline 0.3 s, TIMEOUT after %.2f s: %s\n", late, rec.message);

	/* Work continues after all that. */
	*insn = iota(3.0);
	EXPECT(run(fd, &code, &out, 3, 0, NULL, 0, &rec) == NEURONSIM_STATUS_SUCCESS, "iota 3");
	EXPECT(out_is(&out, 3.0f), "out after iota 3");

	close(fd);
	printf("fwd-test: %s (%d failure(s))\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
