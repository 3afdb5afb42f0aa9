/* neuronsim-fwd: attaches to a neuronsim device's firmware node and executes its jobs with libfwsim. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fwd.h"
#include "neuronsim/atomic_file.h"
#include "neuronsim/log.h"

#define FWD_VERSION "0.1.0"
#define FWD_DEFAULT_CACHE_ENTRIES 256u
#define FWD_DEFAULT_CACHE_BYTES (64ull << 20)
#define FWD_FETCH_SLICE_NS (200ull * 1000 * 1000)

/* The logger's configuration: written once by main before any thread
 * starts, read-only afterwards (the one piece of process-wide state). */
static struct {
	fwd_log_level_t max_level;
	int use_syslog;
} fwd_log_cfg = { FWD_LOG_INFO, 0 };

/* Self-pipe for SIGTERM/SIGINT: the handler only writes the signal number;
 * main reads it. A handler (rather than sigwait with the signals blocked)
 * because threads a library starts before main or on its own do not block them,
 * and a process-directed signal may be delivered to any thread. */
static int fwd_sig_pipe[2] = { -1, -1 };

static void fwd_on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (write(fwd_sig_pipe[1], &b, 1) < 0) {
		/* pipe full: a stop is already pending */
	}
	errno = saved;
}

static int fwd_signals_setup(void)
{
	if (pipe2(fwd_sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fwd_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
		return -1;
	return 0;
}

/* Waits up to timeout_ms (-1: forever) for a signal; returns it or 0. */
static int fwd_signal_wait(int timeout_ms)
{
	struct pollfd pfd = { .fd = fwd_sig_pipe[0], .events = POLLIN };
	for (;;) {
		int r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		unsigned char b;
		if (read(fwd_sig_pipe[0], &b, 1) == 1)
			return b;
		if (timeout_ms >= 0)
			return 0;
	}
}

void fwd_log_setup(fwd_log_level_t max_level, int use_syslog)
{
	fwd_log_cfg.max_level = max_level;
	fwd_log_cfg.use_syslog = use_syslog;
	if (use_syslog)
		openlog("neuronsim-fwd", LOG_PID, LOG_DAEMON);
}

void fwd_log(fwd_log_level_t level, const char *fmt, ...)
{
	if (level > fwd_log_cfg.max_level)
		return;
	static const ns_log_level_t ns_level[] = { NS_LOG_ERROR, NS_LOG_WARN, NS_LOG_INFO, NS_LOG_DEBUG };
	static const char *const name[] = { "ERROR ", "WARN ", "INFO ", "DEBUG " };
	ns_log_sink_t sink = {
		.dest = fwd_log_cfg.use_syslog ? NS_LOG_TO_SYSLOG : NS_LOG_TO_STDERR,
		.tag = "neuronsim-fwd", /* openlog names the daemon in syslog */
	};
	va_list ap;
	va_start(ap, fmt);
	/* The level is a column on stderr; syslog has the priority for it. */
	ns_log_vwrite(&sink, ns_level[level], fwd_log_cfg.use_syslog ? "" : name[level], fmt, ap);
	va_end(ap);
}

static void fwd_usage(FILE *out)
{
	fprintf(out,
		"Usage: neuronsim-fwd [OPTIONS]\n"
		"Attaches to /dev/neuronsim-fwN as the device's firmware and executes the jobs\n"
		"clients submit on /dev/neuronsimN with the neuronsim firmware simulator.\n"
		"Needs root (CAP_SYS_ADMIN). SIGTERM or SIGINT: finish running jobs, detach\n"
		"(queued jobs then fail with FW_LOST) and exit; a second signal detaches at once.\n"
		"\n"
		"  -d, --device N        device index (default 0)\n"
		"  -f, --foreground      stay in the foreground and log to stderr\n"
		"                        (default: detach from the terminal, log to syslog)\n"
		"  -p, --pidfile PATH    write the pid to PATH (absolute; removed at exit)\n"
		"  -w, --workers N       worker threads (default: one per core of the device)\n"
		"  -c, --cache-entries N validated programs kept (default %u, 0 disables)\n"
		"      --pin             pin the simulated engines' threads to CPUs (hwloc)\n"
		"  -v, --verbose         log every job (repeat for more)\n"
		"  -q, --quiet           log errors only\n"
		"  -V, --version         print the version and the ABI spoken\n"
		"  -h, --help            this text\n",
		FWD_DEFAULT_CACHE_ENTRIES);
}

typedef struct fwd_options {
	uint32_t device;
	int foreground;
	const char *pidfile;       /* NULL = none */
	uint32_t workers;          /* 0 = one per core */
	uint32_t cache_entries;
	int pin;                   /* fwsim_core_config_t.pin_threads */
	int verbosity;             /* fwd_log_level_t */
} fwd_options_t;

static int fwd_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Returns 0 to run, 1 to exit successfully (help/version), -1 on bad usage. */
static int fwd_parse_args(int argc, char **argv, fwd_options_t *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "workers", required_argument, NULL, 'w' },
		{ "cache-entries", required_argument, NULL, 'c' },
		{ "pin", no_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (fwd_options_t){ .cache_entries = FWD_DEFAULT_CACHE_ENTRIES, .verbosity = FWD_LOG_INFO };
	int c;
	while ((c = getopt_long(argc, argv, "d:fp:w:c:vqVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (fwd_parse_u32(optarg, 255, &o->device)) {
				fprintf(stderr, "neuronsim-fwd: --device \"%s\": expected 0-255\n", optarg);
				return -1;
			}
			break;
		case 'f':
			o->foreground = 1;
			break;
		case 'p':
			if (optarg[0] != '/') {
				/* the daemon changes to / before writing it */
				fprintf(stderr, "neuronsim-fwd: --pidfile \"%s\": give an absolute path\n",
					optarg);
				return -1;
			}
			o->pidfile = optarg;
			break;
		case 'w':
			if (fwd_parse_u32(optarg, 1024, &o->workers) || o->workers == 0) {
				fprintf(stderr, "neuronsim-fwd: --workers \"%s\": expected 1-1024\n", optarg);
				return -1;
			}
			break;
		case 'c':
			if (fwd_parse_u32(optarg, 1u << 20, &o->cache_entries)) {
				fprintf(stderr, "neuronsim-fwd: --cache-entries \"%s\": expected 0-%u\n",
					optarg, 1u << 20);
				return -1;
			}
			break;
		case 'P':
			o->pin = 1;
			break;
		case 'v':
			if (o->verbosity < FWD_LOG_DEBUG)
				o->verbosity++;
			break;
		case 'q':
			o->verbosity = FWD_LOG_ERROR;
			break;
		case 'V':
			printf("neuronsim-fwd %s (neuronsim ABI %d.%d, ISA %d.%d)\n", FWD_VERSION,
			       NEURONSIM_ABI_MAJOR, NEURONSIM_ABI_MINOR, ISA_VERSION_MAJOR,
			       ISA_VERSION_MINOR);
			return 1;
		case 'h':
			fwd_usage(stdout);
			return 1;
		default:
			fwd_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "neuronsim-fwd: unexpected argument \"%s\" (see --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* Opens and attaches to the device side, maps device memory. */
static int fwd_attach(fwd_ctx_t *ctx)
{
	char node[32];
	snprintf(node, sizeof(node), "/dev/neuronsim-fw%u", ctx->device);
	ctx->fd = open(node, O_RDWR | O_CLOEXEC);
	if (ctx->fd < 0) {
		int e = errno;
		fwd_log(FWD_LOG_ERROR, "cannot open %s: %s%s", node, strerror(e),
			e == ENOENT ? " (load neuronsim.ko, or pick another --device)" :
			e == EACCES || e == EPERM ? " (run as root: the firmware node needs "
						    "CAP_SYS_ADMIN)" : "");
		return -1;
	}
	struct neuronsim_get_param gp = { .param = NEURONSIM_PARAM_ABI_MAJOR };
	uint64_t major = 0, minor = 0;
	int r = ioctl(ctx->fd, NEURONSIM_IOCTL_GET_PARAM, &gp);
	major = gp.value;
	gp = (struct neuronsim_get_param){ .param = NEURONSIM_PARAM_ABI_MINOR };
	if (!r)
		r = ioctl(ctx->fd, NEURONSIM_IOCTL_GET_PARAM, &gp);
	minor = gp.value;
	if (r < 0) {
		fwd_log(FWD_LOG_ERROR, "%s: cannot query the ABI version: %s", node, strerror(errno));
		return -1;
	}
	/* Same rule as the runtime: same major, and the driver at least 1.1
	 * (FW_ABORT_WAIT, which jobs past their deadline need); 1.2's record
	 * extension is used when the driver has it. */
	if (major != NEURONSIM_ABI_MAJOR || minor < FWD_MIN_ABI_MINOR) {
		fwd_log(FWD_LOG_ERROR, "%s: the driver speaks neuronsim ABI %llu.%llu, neuronsim-fwd "
			"speaks %d.%d (needs %d.%d or a later %d.x): install matching neuronsim.ko and "
			"neuronsim-fwd", node, (unsigned long long)major, (unsigned long long)minor,
			NEURONSIM_ABI_MAJOR, NEURONSIM_ABI_MINOR, NEURONSIM_ABI_MAJOR,
			FWD_MIN_ABI_MINOR, NEURONSIM_ABI_MAJOR);
		return -1;
	}
	gp = (struct neuronsim_get_param){ .param = NEURONSIM_PARAM_CAPABILITIES };
	if (ioctl(ctx->fd, NEURONSIM_IOCTL_GET_PARAM, &gp) < 0) {
		fwd_log(FWD_LOG_ERROR, "%s: cannot query the capabilities: %s", node, strerror(errno));
		return -1;
	}
	ctx->record_ext = (gp.value & NEURONSIM_CAP_RECORD_EXT) != 0;
	if (!ctx->record_ext)
		fwd_log(FWD_LOG_INFO, "%s: the driver (ABI %llu.%llu) has no record extension: jobs "
			"complete without their FLOPs", node, (unsigned long long)major,
			(unsigned long long)minor);
	struct neuronsim_fw_attach at = { 0 };
	if (ioctl(ctx->fd, NEURONSIM_IOCTL_FW_ATTACH, &at) < 0) {
		int e = errno;
		fwd_log(FWD_LOG_ERROR, "%s: attach failed: %s%s", node, strerror(e),
			e == EBUSY ? " (another firmware is attached: stop it first)" :
			e == EOPNOTSUPP ? " (the module was loaded with null_hw=1)" : "");
		return -1;
	}
	ctx->num_cores = at.num_cores;
	ctx->mem_size = at.mem_size;
	void *m = mmap(NULL, ctx->mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->fd, 0);
	if (m == MAP_FAILED) {
		fwd_log(FWD_LOG_ERROR, "%s: cannot map %llu bytes of device memory: %s", node,
			(unsigned long long)ctx->mem_size, strerror(errno));
		return -1;
	}
	ctx->mem = m;
	return 0;
}

static void fwd_detach(fwd_ctx_t *ctx)
{
	if (ctx->fd < 0)
		return;
	struct neuronsim_fw_detach d = { 0 };
	if (ioctl(ctx->fd, NEURONSIM_IOCTL_FW_DETACH, &d) < 0 && errno != EPERM)
		fwd_log(FWD_LOG_WARN, "device %u: detach failed: %s (closing the node detaches)",
			ctx->device, strerror(errno));
}

static void fwd_teardown(fwd_ctx_t *ctx)
{
	if (ctx->cores) {
		for (uint32_t i = 0; i < ctx->num_cores; i++)
			if (ctx->cores[i])
				fwsim_core_destroy(ctx->cores[i]);
		free(ctx->cores);
	}
	if (ctx->running) {
		for (uint32_t i = 0; i < ctx->num_cores; i++)
			pthread_mutex_destroy(&ctx->running[i].lock);
		free(ctx->running);
	}
	fwd_cache_destroy(ctx->cache);
	if (ctx->mem)
		munmap(ctx->mem, ctx->mem_size);
	if (ctx->fd >= 0)
		close(ctx->fd);
	free(ctx->workers);
}

/* Waits for the workers to finish their current jobs; a second signal (or
 * SIGKILL) cuts it short: detach now, the driver fails what is running. */
static int fwd_join_workers(fwd_ctx_t *ctx, uint32_t started)
{
	for (uint32_t i = 0; i < started; i++) {
		for (;;) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pthread_timedjoin_np(ctx->workers[i], NULL, &ts) == 0)
				break;
			int sig = fwd_signal_wait(0);
			if (sig > 0) {
				fwd_log(FWD_LOG_WARN, "device %u: second signal (%s): detaching with jobs "
					"still running", ctx->device, strsignal(sig));
				return -1;
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	fwd_options_t opt;
	int pr = fwd_parse_args(argc, argv, &opt);
	if (pr)
		return pr > 0 ? 0 : 2;
	fwd_log_setup((fwd_log_level_t)opt.verbosity, 0);

	fwd_ctx_t ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.fd = -1;
	ctx.device = opt.device;
	ctx.fetch_slice_ns = FWD_FETCH_SLICE_NS;
	if (fwd_attach(&ctx)) {
		fwd_teardown(&ctx);
		return 1;
	}
	/* Detach from the terminal only now, so that start-up errors reach
	 * the caller. fork keeps only the calling thread: our workers and the
	 * engine threads start after it (oneDNN's OpenMP runtime starts no
	 * threads: every sgemm runs on its caller). The attached file is shared with the child,
	 * which keeps it open when the parent exits. */
	if (!opt.foreground) {
		if (daemon(0, 0) < 0) {
			fwd_log(FWD_LOG_ERROR, "cannot become a daemon: %s", strerror(errno));
			fwd_teardown(&ctx);
			return 1;
		}
		fwd_log_setup((fwd_log_level_t)opt.verbosity, 1);
	}
	if (opt.pidfile) {
		/* a root daemon: never through a symlink planted at the name, and a
		 * reader never sees an empty or half-written pid (atomic_file.h) */
		char pid[32];
		int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		const char *step;
		if (atomic_file_write_whole(opt.pidfile, pid, (size_t)n, 0644, &step) != 0) {
			fwd_log(FWD_LOG_ERROR, "cannot write the pid file %s: %s", opt.pidfile,
				strerror(errno));
			fwd_teardown(&ctx);
			return 1;
		}
	}

	int rc = 1;
	ctx.cores = calloc(ctx.num_cores, sizeof(*ctx.cores));
	ctx.n_workers = opt.workers ? opt.workers : ctx.num_cores;
	ctx.workers = calloc(ctx.n_workers, sizeof(*ctx.workers));
	ctx.running = calloc(ctx.num_cores, sizeof(*ctx.running));
	if (ctx.running)
		for (uint32_t i = 0; i < ctx.num_cores; i++)
			pthread_mutex_init(&ctx.running[i].lock, NULL);
	if (!ctx.cores || !ctx.workers || !ctx.running ||
	    fwd_cache_create(opt.cache_entries, FWD_DEFAULT_CACHE_BYTES, &ctx.cache) != FWSIM_OK) {
		fwd_log(FWD_LOG_ERROR, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < ctx.num_cores; i++) {
		fwsim_core_config_t cfg = { .core_index = ctx.device * ctx.num_cores + i,
					    .pin_threads = opt.pin };
		if (fwsim_core_create(&cfg, &ctx.cores[i]) != FWSIM_OK) {
			fwd_log(FWD_LOG_ERROR, "device %u: cannot create simulated core %u", ctx.device, i);
			goto out;
		}
	}

	if (fwd_signals_setup() < 0) {
		fwd_log(FWD_LOG_ERROR, "cannot install the signal handlers: %s", strerror(errno));
		goto out;
	}

	uint32_t started = 0;
	for (; started < ctx.n_workers; started++) {
		int e = pthread_create(&ctx.workers[started], NULL, fwd_worker_main, &ctx);
		if (e) {
			fwd_log(FWD_LOG_ERROR, "device %u: cannot start worker %u: %s", ctx.device,
				started, strerror(e));
			break;
		}
	}
	/* The driver's abort requests (deadline passed, client gone) cancel
	 * the running job of their core. */
	int abort_started = 0;
	if (started == ctx.n_workers) {
		int e = pthread_create(&ctx.abort_thread, NULL, fwd_abort_main, &ctx);
		if (e)
			fwd_log(FWD_LOG_ERROR, "device %u: cannot start the abort thread: %s", ctx.device,
				strerror(e));
		else
			abort_started = 1;
	}
	if (started == ctx.n_workers && abort_started) {
		fwd_log(FWD_LOG_INFO, "device %u attached: %u cores, %llu MiB of device memory, "
			"%u workers, program cache %u entries", ctx.device, ctx.num_cores,
			(unsigned long long)(ctx.mem_size >> 20), ctx.n_workers, opt.cache_entries);
		int sig = fwd_signal_wait(-1);
		fwd_log(FWD_LOG_INFO, "device %u: %s: finishing running jobs and detaching",
			ctx.device, strsignal(sig));
		rc = 0;
	}
	atomic_store(&ctx.stop, 1);
	if (fwd_join_workers(&ctx, started)) {
		fwd_detach(&ctx);
		/* Workers may still be inside fwsim: leave without tearing down
		 * what they use; the kernel reclaims it all. */
		_exit(1);
	}
	atomic_store(&ctx.abort_stop, 1);
	if (abort_started)
		pthread_join(ctx.abort_thread, NULL);
	fwd_detach(&ctx);
	fwd_cache_stats_t cs = { 0 };
	fwd_cache_get_stats(ctx.cache, &cs);
	fwd_log(FWD_LOG_INFO, "device %u detached: %llu jobs (%llu failed, %llu aborted by the "
		"driver); program cache %llu hits, %llu misses, %llu invalid, %llu evictions",
		ctx.device, (unsigned long long)atomic_load(&ctx.jobs_done),
		(unsigned long long)atomic_load(&ctx.jobs_failed),
		(unsigned long long)atomic_load(&ctx.jobs_aborted), (unsigned long long)cs.hits,
		(unsigned long long)cs.misses, (unsigned long long)cs.invalid,
		(unsigned long long)cs.evictions);
out:
	fwd_teardown(&ctx);
	if (opt.pidfile)
		unlink(opt.pidfile);
	return rc;
}
