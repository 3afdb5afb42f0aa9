/* Seeded random ioctl fuzzer for both nodes: random command numbers and
 * random, half-valid or mutated argument bytes, random mmaps, periodic
 * reopen. It only has to not crash the kernel; the harness checks dmesg.
 * Usage: nsim-fuzz SEED CALLS */
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>

#include "nsim_test.h"

int nsim_failures;

static uint64_t g_rng;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the seed */
	g_rng ^= g_rng >> 12;
	g_rng ^= g_rng << 25;
	g_rng ^= g_rng >> 27;
	return g_rng * 2685821657736338717ULL;
}

static const unsigned long cmds[] = {
	NEURONSIM_IOCTL_GET_PARAM,   NEURONSIM_IOCTL_MEM_ALLOC,
	NEURONSIM_IOCTL_MEM_FREE,    NEURONSIM_IOCTL_MEM_INFO,
	NEURONSIM_IOCTL_CORE_RESERVE, NEURONSIM_IOCTL_CORE_RELEASE,
	NEURONSIM_IOCTL_JOB_SUBMIT,  NEURONSIM_IOCTL_JOB_WAIT,
	NEURONSIM_IOCTL_FW_ATTACH,   NEURONSIM_IOCTL_FW_FETCH,
	NEURONSIM_IOCTL_FW_COMPLETE, NEURONSIM_IOCTL_FW_DETACH,
	NEURONSIM_IOCTL_FW_ABORT_WAIT,
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

/* Buffers arguments may point to: a region table, a record, fw regions. */
static uint8_t g_aux[3][64 * 1024] __attribute__((aligned(64)));

/* Values learned from successful calls: handles, job ids. */
static uint64_t g_learned[64];
static uint64_t g_fetched; /* last job id the fuzzer fetched */

static void learn(uint64_t v)
{
	g_learned[rnd() % 64] = v;
}

static uint64_t learned(void)
{
	return g_learned[rnd() % 64];
}

static uint64_t small_value(void)
{
	if (rnd() % 6 == 0)
		return learned();
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return rnd() % 8;
	case 3: return rnd() % 4096;
	case 4: return UINT64_MAX - rnd() % 8;
	case 5: return 1ULL << (rnd() % 64);
	case 6: return (uint64_t)now_ns() + rnd() % 200000;
	default: return rnd();
	}
}

static void fill_words(uint8_t *buf, size_t len, int zero_bias)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = (zero_bias && rnd() % 3) ? 0 : small_value();

		if (rnd() % 5 == 0)
			v = (uintptr_t)g_aux[rnd() % 3] + (rnd() % 2 ? 0 : rnd() % 64);
		if (rnd() % 4 == 0)
			v &= 0xffffffffu;
		memcpy(buf + i, &v, 8);
	}
}

/* A valid-looking argument for cmd built from learned values, to reach the
 * code behind the argument checks; the caller then mutates a few bytes. */
static void template(unsigned long cmd, uint8_t *arg)
{
	int64_t soon = now_ns() + (int64_t)(rnd() % 300000);

	memset(arg, 0, 512);
	if (cmd == NEURONSIM_IOCTL_GET_PARAM) {
		((struct neuronsim_get_param *)arg)->param = rnd() % 12;
	} else if (cmd == NEURONSIM_IOCTL_MEM_ALLOC) {
		((struct neuronsim_mem_alloc *)arg)->size = 1 + rnd() % 65536;
	} else if (cmd == NEURONSIM_IOCTL_MEM_FREE ||
		   cmd == NEURONSIM_IOCTL_MEM_INFO) {
		((struct neuronsim_mem_free *)arg)->handle = (uint32_t)learned();
	} else if (cmd == NEURONSIM_IOCTL_CORE_RESERVE ||
		   cmd == NEURONSIM_IOCTL_CORE_RELEASE) {
		((struct neuronsim_core_reserve *)arg)->core = rnd() % 3;
	} else if (cmd == NEURONSIM_IOCTL_JOB_SUBMIT) {
		struct neuronsim_job_submit *j = (void *)arg;
		struct neuronsim_region *r = (void *)g_aux[0];
		uint32_t n = rnd() % 6;

		j->core = rnd() % 2;
		j->flags = rnd() % 8;
		if (rnd() % 2) {
			j->code_handle = (uint32_t)learned();
			j->streams[rnd() % 5].count = rnd() % 4;
		}
		j->n_regions = n;
		j->regions_ptr = n ? (uintptr_t)r : 0;
		for (uint32_t i = 0; i < n; i++)
			r[i] = (struct neuronsim_region){
				(uint32_t)(rnd() % 4 ? learned() : 0), 0,
				0, rnd() % 2 ? rnd() % 8192 : 0 };
		j->deadline_ns = rnd() % 2 ? 0 : soon;
		if (j->flags & NEURONSIM_JOB_PROFILE)
			j->trace = r[0];
	} else if (cmd == NEURONSIM_IOCTL_JOB_WAIT) {
		struct neuronsim_job_wait *w = (void *)arg;

		w->job_id = learned();
		w->timeout_ns = soon;
		w->flags = rnd() % 2 ? NEURONSIM_WAIT_RECORD_EXT : 0;
		w->error_ptr = rnd() % 2 ? (uintptr_t)g_aux[1] : 0;
	} else if (cmd == NEURONSIM_IOCTL_FW_ABORT_WAIT) {
		struct neuronsim_fw_abort *a = (void *)arg;

		a->timeout_ns = soon;
	} else if (cmd == NEURONSIM_IOCTL_FW_FETCH) {
		struct neuronsim_fw_fetch *f = (void *)arg;

		f->max_regions = rnd() % 8;
		f->regions_ptr = (uintptr_t)g_aux[2];
		f->timeout_ns = soon;
	} else if (cmd == NEURONSIM_IOCTL_FW_COMPLETE) {
		struct neuronsim_fw_complete *c = (void *)arg;

		c->job_id = rnd() % 2 ? g_fetched : learned();
		c->status = rnd() % 9;
		if (rnd() % 2) {
			struct neuronsim_error_record_ext *x = (void *)g_aux[1];

			memset(x, 'm', sizeof(*x));
			x->rec.pad = 0;
			/* the 1.2 record: a valid extension half the time */
			c->flags = rnd() % 2 ? NEURONSIM_COMPLETE_RECORD_EXT : 0;
			if (rnd() % 2) {
				memset(&x->valid, 0, sizeof(*x) - sizeof(x->rec));
				x->valid = NEURONSIM_EXT_FLOPS;
				x->flops = rnd();
			}
			c->error_ptr = (uintptr_t)g_aux[1];
		}
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int reopen(int fd, const char *path)
{
	if (fd >= 0)
		close(fd);
	return nsim_open(path);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	long calls = argc > 2 ? strtol(argv[2], NULL, 0) : 100000;
	long ok = 0, einval = 0, other = 0, mmaps = 0;
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct sigaction sa = { 0 };
	uint8_t arg[512] __attribute__((aligned(8)));
	int fds[4] = { -1, -1, -1, -1 };
	int64_t t0 = now_ns();
	long ok_by_cmd[NCMDS] = { 0 };

	g_rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	/* Every blocking call is cut short by a signal without SA_RESTART. */
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);

	fds[0] = reopen(-1, NSIM_DEV);
	fds[1] = reopen(-1, NSIM_DEV);
	fds[2] = reopen(-1, NSIM_FW_DEV);
	fds[3] = reopen(-1, NSIM_FW_DEV);

	for (long n = 0; n < calls; n++) {
		unsigned int which = rnd() % 4;
		int fd = fds[which];
		unsigned long cmd;
		void *argp = arg;
		int r;

		if (rnd() % 4000 == 0) {
			fds[which] = reopen(fds[which],
					    which < 2 ? NSIM_DEV : NSIM_FW_DEV);
			continue;
		}
		if (rnd() % 200 == 0) {
			size_t len = (1 + rnd() % 8) * 4096;
			off_t off = (off_t)((rnd() % 8192) * 4096);
			void *p;

			if (rnd() % 4 == 0)
				off = (off_t)(rnd() & ~4095ULL);
			p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, off);
			if (p != MAP_FAILED) {
				mmaps++;
				((volatile uint8_t *)p)[rnd() % len] = 1;
				munmap(p, len);
			}
			continue;
		}

		switch (rnd() % 10) {
		case 0: /* anything at all */
			cmd = (unsigned long)(uint32_t)rnd();
			break;
		case 1: /* our magic, any number and size */
			cmd = _IOC(rnd() % 4, NEURONSIM_IOCTL_BASE, rnd() % 64,
				   rnd() % 512);
			break;
		default:
			cmd = cmds[rnd() % NCMDS];
			/* Keep a firmware attached most of the time, so jobs
			 * get fetched and completed. */
			if ((cmd == NEURONSIM_IOCTL_FW_DETACH ||
			     cmd == NEURONSIM_IOCTL_CORE_RELEASE) && rnd() % 8)
				cmd = NEURONSIM_IOCTL_JOB_SUBMIT;
			break;
		}
		switch (rnd() % 8) {
		case 6:
		case 7:
			template(cmd, arg);
			for (unsigned int k = rnd() % 3; k; k--)
				arg[rnd() % 160] = (uint8_t)rnd();
			break;
		case 0:
			fill_words(arg, sizeof(arg), 0);
			break;
		case 1:
			for (size_t i = 0; i < sizeof(arg); i++)
				arg[i] = (uint8_t)rnd();
			break;
		default:
			fill_words(arg, sizeof(arg), 1);
			break;
		}
		if (rnd() % 3 == 0)
			fill_words(g_aux[rnd() % 3] + (rnd() % 64) * 1024, 512,
				   rnd() % 2);
		if (rnd() % 50 == 0)
			argp = (void *)(uintptr_t)(rnd() % 2 ? 0 : rnd());

		r = ioctl(fd, cmd, argp);
		if (r == 0 && argp == arg) {
			if (cmd == NEURONSIM_IOCTL_MEM_ALLOC)
				learn(((struct neuronsim_mem_alloc *)arg)->handle);
			else if (cmd == NEURONSIM_IOCTL_JOB_SUBMIT)
				learn(((struct neuronsim_job_submit *)arg)->job_id);
			else if (cmd == NEURONSIM_IOCTL_FW_FETCH)
				learn(g_fetched =
				      ((struct neuronsim_fw_fetch *)arg)->job_id);
			for (unsigned int i = 0; i < NCMDS; i++)
				if (cmd == cmds[i])
					ok_by_cmd[i]++;
		}
		if (r == 0)
			ok++;
		else if (errno == EINVAL)
			einval++;
		else
			other++;
	}
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	printf("nsim-fuzz: seed %llu, %ld calls (%ld ok, %ld EINVAL, %ld other errors), %ld mmaps, %.1f s\n",
	       (unsigned long long)seed, calls, ok, einval, other, mmaps,
	       (now_ns() - t0) / 1e9);
	printf("nsim-fuzz: successful calls per ioctl:");
	for (unsigned int i = 0; i < NCMDS; i++)
		printf(" 0x%02lx:%ld", (cmds[i] & 0xff), ok_by_cmd[i]);
	printf("\n");
	return 0;
}
