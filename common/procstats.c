/* Reader of the per-process stats files libnrt publishes (procstats.h): liveness checks, seqlock copies, directory scans. */
#include "neuronsim/clock.h"
#include "neuronsim/status.h"
#include "neuronsim/proc_stat.h"
#include "neuronsim/procstats.h"
#include "neuronsim/quantile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(procstats_core_t) == 144, "procstats_core_t layout");
_Static_assert(sizeof(procstats_model_t) == 10 * 8 + PROCSTATS_MODEL_NAME_MAX, "procstats_model_t layout");
_Static_assert(offsetof(procstats_file_t, models) % 8 == 0, "models alignment");
_Static_assert(PROCSTATS_MEM_CATEGORIES <= 8, "procstats_core_t.mem too small");
_Static_assert(sizeof(procstats_lat_t) == 24, "procstats_lat_t layout");
_Static_assert(offsetof(procstats_file_t, seq) % 8 == 0, "seq alignment");
_Static_assert(offsetof(procstats_file_t, v) % 8 == 0, "v alignment");
_Static_assert(offsetof(procstats_file_t, cores) % 8 == 0, "cores alignment");
_Static_assert(PROCSTATS_CORE_COUNT <= 8, "procstats_core_t.v too small");
_Static_assert(PROCSTATS_MEM_SNAPSHOT - PROCSTATS_MEM_FIRST + 1 == PROCSTATS_MEM_CATEGORIES,
	       "memory categories");
_Static_assert(PROCSTATS_ERR_HARDWARE - PROCSTATS_ERR_FIRST + 1 == PROCSTATS_ERR_KINDS, "error kinds");

/* A reader gives up on a seqlock that never settles after this many tries. */
#define SEQ_TRIES 100000


const char *procstats_dir(void)
{
	const char *d = getenv("NEURONSIM_STATS_DIR");
	return d && *d ? d : PROCSTATS_DEFAULT_DIR;
}

int procstats_path(char *buf, size_t len, const char *dir, uid_t uid, pid_t pid)
{
	int n = snprintf(buf, len, "%s/%s%u.%u", dir, PROCSTATS_FILE_PREFIX, (unsigned)uid, (unsigned)pid);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int procstats_proc_start_time(pid_t pid, uint64_t *out_start_time)
{
	ns_proc_stat_t st;
	if (ns_proc_stat_read(pid, &st))
		return -1;
	*out_start_time = st.start_time;
	return 0;
}

/* Alive and the same process that wrote the file. */
static bool owner_alive(uint32_t pid, uint64_t start_time)
{
	uint64_t st;
	if (procstats_proc_start_time((pid_t)pid, &st) == 0)
		return st == start_time;
	/* No /proc/PID (dead) or no /proc at all: ask the kernel. */
	if (access("/proc/self/stat", R_OK) == 0)
		return false;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* A file in state INIT whose owner still runs is being created. Its writer
 * stores start_time after magic, pid and the version, so a reader can see it
 * still 0: then the owner's pid alone says so (else a scan would call a file
 * in the middle of its creation stale and remove it). */
static bool being_created(uint32_t state, uint32_t pid, uint64_t start_time)
{
	if (state != PROCSTATS_STATE_INIT)
		return false;
	if (start_time == 0)
		return kill((pid_t)pid, 0) == 0 || errno == EPERM;
	return owner_alive(pid, start_time);
}

/* "neuronsim-stats.UID.PID" -> uid, pid; false for any other name. */
static bool parse_name(const char *name, uint32_t *out_uid, uint32_t *out_pid)
{
	size_t plen = strlen(PROCSTATS_FILE_PREFIX);
	if (strncmp(name, PROCSTATS_FILE_PREFIX, plen) != 0)
		return false;
	const char *p = name + plen;
	unsigned long vals[2];
	for (int i = 0; i < 2; i++) {
		if (*p < '0' || *p > '9')
			return false;
		char *end;
		errno = 0;
		vals[i] = strtoul(p, &end, 10);
		if (errno || vals[i] > UINT32_MAX || *end != (i == 0 ? '.' : '\0'))
			return false;
		p = end + 1;
	}
	*out_uid = (uint32_t)vals[0];
	*out_pid = (uint32_t)vals[1];
	return true;
}

/* ---- the guarded copy ----
 * The owner (or root) could shrink the file between our fstat and the copy;
 * touching a page past the end of a shared mapping raises SIGBUS. The copy runs
 * with a handler that jumps back, so a shrinking file is an error, not a crash. */
static sigjmp_buf *volatile bus_jump;

static void on_sigbus(int sig)
{
	(void)sig;
	if (bus_jump)
		siglongjmp(*bus_jump, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

void procstats_uuid_str(const uint8_t uuid[16], char *buf)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		buf[2 * i] = hex[uuid[i] >> 4];
		buf[2 * i + 1] = hex[uuid[i] & 15];
	}
	buf[32] = '\0';
}

/* The listed models of f into out, by ascending id; inside the seqlock's
 * copy loop (a torn copy is thrown away with the rest). */
static void copy_models(const procstats_file_t *f, procstats_snap_t *out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < PROCSTATS_MAX_MODELS; i++) {
		const procstats_model_t *m = &f->models[i];
		uint64_t id = atomic_load_explicit(&m->id, memory_order_acquire);
		if (!id)
			continue;
		/* insertion by id: at most 64 entries */
		uint32_t at = n;
		while (at > 0 && out->models[at - 1].id > id) {
			out->models[at] = out->models[at - 1];
			at--;
		}
		procstats_model_info_t *o = &out->models[at];
		o->id = id;
		o->first_core = (uint32_t)atomic_load_explicit(&m->first_core, memory_order_acquire);
		o->neff_cores = (uint32_t)atomic_load_explicit(&m->neff_cores, memory_order_acquire);
		o->n_instances = (uint32_t)atomic_load_explicit(&m->n_instances, memory_order_acquire);
		o->mem_constants = atomic_load_explicit(&m->mem_constants, memory_order_acquire);
		o->mem_code = atomic_load_explicit(&m->mem_code, memory_order_acquire);
		o->mem_scratch = atomic_load_explicit(&m->mem_scratch, memory_order_acquire);
		for (size_t w = 0; w < PROCSTATS_MODEL_NAME_MAX / 8; w++) {
			uint64_t word = atomic_load_explicit(&m->name[w], memory_order_acquire);
			memcpy(o->name + w * 8, &word, 8);
		}
		o->name[PROCSTATS_MODEL_NAME_MAX - 1] = '\0';
		for (size_t w = 0; w < 2; w++) {
			uint64_t word = atomic_load_explicit(&m->uuid[w], memory_order_acquire);
			memcpy(o->uuid + w * 8, &word, 8);
		}
		o->running = atomic_load_explicit(&m->running, memory_order_acquire);
		n++;
	}
	out->n_models = n;
}

/* Copies identity, counters (under the seqlock) and latencies of f into out.
 * Fails with NS_STATUS_ABORTED (busy) or NS_STATUS_INVALID_ARGUMENT (bad field). */
static ns_status_t copy_file(const procstats_file_t *f, procstats_snap_t *out)
{
	uint32_t n_cores = f->n_cores;
	if (n_cores > PROCSTATS_MAX_CORES)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "n_cores %u exceeds %u", n_cores,
			    PROCSTATS_MAX_CORES);
	out->pid = f->pid;
	out->uid = f->uid;
	out->n_cores = n_cores;
	out->n_devices = f->n_devices;
	out->start_time = f->start_time;
	out->init_ns = f->init_ns;
	out->mem_total = f->mem_total;
	memcpy(out->backend, f->backend, sizeof(out->backend));
	memcpy(out->comm, f->comm, sizeof(out->comm));
	memcpy(out->tag, f->tag, sizeof(out->tag));
	out->backend[sizeof(out->backend) - 1] = '\0';
	out->comm[sizeof(out->comm) - 1] = '\0';
	out->tag[sizeof(out->tag) - 1] = '\0';
	if (!out->tag[0])
		snprintf(out->tag, sizeof(out->tag), "%u", out->pid);
	for (uint32_t c = 0; c < n_cores; c++) {
		out->cores[c].global = f->cores[c].global;
		out->cores[c].device = f->cores[c].device;
		out->cores[c].dev_core = f->cores[c].dev_core;
	}

	bool settled = false;
	for (int tries = 0; tries < SEQ_TRIES && !settled; tries++) {
		uint64_t s1 = atomic_load_explicit(&f->seq, memory_order_acquire);
		if (s1 & 1) {
			if (tries % 64 == 63)
				sched_yield();
			continue;
		}
		/* Acquire loads keep the second read of seq after them, as a fence
		 * would (free on x86); ThreadSanitizer models these, not fences. */
		for (int i = 0; i < PROCSTATS_COUNT; i++)
			out->v[i] = atomic_load_explicit(&f->v[i], memory_order_acquire);
		for (uint32_t c = 0; c < n_cores; c++) {
			for (int i = 0; i < PROCSTATS_CORE_COUNT; i++)
				out->cores[c].v[i] = atomic_load_explicit(&f->cores[c].v[i], memory_order_acquire);
			for (int i = 0; i < PROCSTATS_MEM_CATEGORIES; i++)
				out->cores[c].mem[i] = atomic_load_explicit(&f->cores[c].mem[i], memory_order_acquire);
		}
		copy_models(f, out);
		settled = atomic_load_explicit(&f->seq, memory_order_relaxed) == s1;
	}
	if (!settled)
		return ns_status_make(NS_STATUS_ABORTED, "the counters of pid %u never settled (process stopped in the middle of an update?)",
			    out->pid);
	out->read_ns = ns_monotonic_ns();

	/* Latencies, each slot validated by its own index. Writers overwrite the
	 * oldest slot first, so the ring is read newest first and the read stops at
	 * the first slot a writer has lapped: what is kept is the newest contiguous
	 * run, and a later read never ends on an older execution than this one. */
	uint64_t head = out->v[PROCSTATS_LAT_HEAD];
	uint64_t first = head > PROCSTATS_LAT_RING ? head - PROCSTATS_LAT_RING + 1 : 1;
	uint32_t n = 0;
	for (uint64_t idx = head; idx >= first && idx != 0; idx--) {
		const procstats_lat_t *slot = &f->lat[(idx - 1) % PROCSTATS_LAT_RING];
		uint64_t i1 = atomic_load_explicit(&slot->index, memory_order_acquire);
		uint64_t t = atomic_load_explicit(&slot->total_ns, memory_order_acquire);
		uint64_t d = atomic_load_explicit(&slot->device_ns, memory_order_acquire);
		uint64_t i2 = atomic_load_explicit(&slot->index, memory_order_relaxed);
		/* Overwritten by a newer execution, or being written: older slots are
		 * being overwritten too. */
		if (i1 != idx || i2 != idx)
			break;
		out->lat[n++] = (procstats_lat_sample_t){ idx, t, d };
	}
	for (uint32_t i = 0; i < n / 2; i++) {
		procstats_lat_sample_t tmp = out->lat[i];
		out->lat[i] = out->lat[n - 1 - i];
		out->lat[n - 1 - i] = tmp;
	}
	out->n_lat = n;
	return NS_OK;
}

ns_status_t procstats_read_file(const char *path, procstats_snap_t *out)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	uint32_t name_uid, name_pid;
	if (!parse_name(base, &name_uid, &name_pid))
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: not named %sUID.PID", path,
			    PROCSTATS_FILE_PREFIX);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ns_status_make_errno(errno, "%s: %s", path, strerror(errno)); /* ENOENT: stale */
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return ns_status_make_errno(e, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(sb.st_mode) || sb.st_uid != name_uid) {
		close(fd);
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: not a regular file owned by uid %u (the uid in its name)", path, name_uid);
	}
	if (sb.st_size != (off_t)sizeof(procstats_file_t)) {
		close(fd);
		/* A different size is most likely another layout version. */
		return ns_status_make(sb.st_size >= 16 ? NS_STATUS_UNAVAILABLE : NS_STATUS_INVALID_ARGUMENT,
			    "%s: %lld bytes, this reader expects %zu (layout version %d): a different "
			    "neuronsim version, or not a stats file", path, (long long)sb.st_size,
			    sizeof(procstats_file_t), PROCSTATS_VERSION);
	}
	const procstats_file_t *f = mmap(NULL, sizeof(*f), PROT_READ, MAP_SHARED, fd, 0);
	int map_errno = errno;
	close(fd);
	if (f == MAP_FAILED)
		return ns_status_make_errno(map_errno, "%s: mmap: %s", path, strerror(map_errno));

	ns_status_t st;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	sigjmp_buf jb;
	if (sigsetjmp(jb, 1)) {
		bus_jump = NULL;
		st = ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: the file shrank while being read", path);
		goto out;
	}
	bus_jump = &jb;
	if (f->magic != PROCSTATS_MAGIC) {
		st = ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: bad magic", path);
		goto out_guard;
	}
	if (f->version != PROCSTATS_VERSION || f->size != sizeof(procstats_file_t)) {
		st = ns_status_make(NS_STATUS_UNAVAILABLE, "%s: layout version %u (%u bytes), this reader "
			  "reads version %d (%zu bytes)", path, f->version, f->size, PROCSTATS_VERSION,
			  sizeof(procstats_file_t));
		goto out_guard;
	}
	if (f->pid != name_pid || f->uid != name_uid) {
		st = ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: header says uid %u pid %u", path, f->uid,
			  f->pid);
		goto out_guard;
	}
	uint32_t state = atomic_load_explicit(&f->state, memory_order_acquire);
	if (being_created(state, f->pid, f->start_time)) {
		st = ns_status_make(NS_STATUS_UNAVAILABLE, "%s: still being created", path);
		goto out_guard;
	}
	if (state != PROCSTATS_STATE_LIVE || !owner_alive(f->pid, f->start_time)) {
		st = ns_status_make(NS_STATUS_NOT_FOUND, "%s: process %u is gone", path, f->pid);
		goto out_guard;
	}
	st = copy_file(f, out);
out_guard:
	bus_jump = NULL;
out:
	sigaction(SIGBUS, &old, NULL);
	munmap((void *)f, sizeof(*f));
	return st;
}

/* Removes a stale file if it is still the one we judged (not recreated by a
 * new process that got the same pid in between) and ours to remove. */
static bool remove_stale(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid())
		return false;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	bool gone = false;
	/* Only the identity fields: the header up to backend[]. */
	unsigned char hdr[offsetof(procstats_file_t, backend)];
	ssize_t n = pread(fd, hdr, sizeof(hdr), 0);
	struct stat sb2;
	if (n == (ssize_t)sizeof(hdr) && fstat(fd, &sb2) == 0 && sb2.st_ino == sb.st_ino &&
	    sb2.st_dev == sb.st_dev) {
		uint64_t magic, start_time;
		uint32_t state, pid;
		memcpy(&magic, hdr + offsetof(procstats_file_t, magic), sizeof(magic));
		memcpy(&state, hdr + offsetof(procstats_file_t, state), sizeof(state));
		memcpy(&pid, hdr + offsetof(procstats_file_t, pid), sizeof(pid));
		memcpy(&start_time, hdr + offsetof(procstats_file_t, start_time), sizeof(start_time));
		bool dead = magic == PROCSTATS_MAGIC &&
			    (state == PROCSTATS_STATE_CLOSED ||
			     (!being_created(state, pid, start_time) && !owner_alive(pid, start_time)));
		gone = dead && unlink(path) == 0;
	}
	close(fd);
	return gone;
}

static int cmp_pid(const void *a, const void *b)
{
	const procstats_snap_t *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

ns_status_t procstats_scan(const char *dir, unsigned flags, pid_t exclude_pid,
			   procstats_list_t *out)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir(dir);
	if (!d)
		return ns_status_make_errno(errno, "cannot read the stats directory %s: %s", dir,
					    strerror(errno));
	size_t cap = 0;
	ns_status_t rc = NS_OK;
	struct dirent *e;
	char path[4096];
	procstats_snap_t *snap = malloc(sizeof(*snap));
	if (!snap) {
		closedir(d);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory reading %s", dir);
	}
	while ((e = readdir(d))) {
		uint32_t uid, pid;
		if (!parse_name(e->d_name, &uid, &pid))
			continue;
		if (exclude_pid > 0 && pid == (uint32_t)exclude_pid && uid == geteuid())
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		ns_status_t st = procstats_read_file(path, snap);
		if (ns_status_code(st) == NS_STATUS_NOT_FOUND) {
			ns_status_free(st);
			out->n_stale++;
			if (flags & PROCSTATS_SCAN_REMOVE_STALE)
				remove_stale(path);
			continue;
		}
		if (st) {
			/* Files of other users are mode 0600: not an error worth reporting. */
			bool foreign = ns_status_errno(st) && uid != geteuid() && geteuid() != 0;
			if (!foreign && !out->n_skipped++)
				ns_status_copy_message(st, out->first_skip, sizeof(out->first_skip));
			ns_status_free(st);
			continue;
		}
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			procstats_snap_t *p = realloc(out->procs, ncap * sizeof(*p));
			if (!p) {
				rc = ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory reading %s", dir);
				break;
			}
			out->procs = p;
			cap = ncap;
		}
		out->procs[out->n++] = *snap;
	}
	free(snap);
	closedir(d);
	if (rc) {
		procstats_list_free(out);
		return rc;
	}
	if (out->n > 1)
		qsort(out->procs, out->n, sizeof(*out->procs), cmp_pid);
	return NS_OK;
}

void procstats_list_free(procstats_list_t *list)
{
	free(list->procs);
	memset(list, 0, sizeof(*list));
}

void procstats_latencies(const procstats_snap_t *s, uint64_t after, double *total_s, size_t *n_total,
			 double *device_s, size_t *n_device)
{
	size_t nt = 0, nd = 0;
	for (uint32_t i = 0; i < s->n_lat && i < PROCSTATS_LAT_RING; i++) {
		const procstats_lat_sample_t *l = &s->lat[i];
		if (l->index <= after)
			continue;
		total_s[nt++] = (double)l->total_ns * 1e-9;
		if (l->device_ns != UINT64_MAX)
			device_s[nd++] = (double)l->device_ns * 1e-9;
	}
	*n_total = nt;
	*n_device = nd;
}

double procstats_quantile(double *v, size_t n, double q)
{
	if (n == 0)
		return 0.0;
	qsort(v, n, sizeof(*v), ns_cmp_double);
	if (q <= 0.0)
		return v[0];
	if (q >= 1.0)
		return v[n - 1];
	/* Nearest rank: the smallest value with at least q of the samples at or below it. */
	size_t rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

const char *procstats_core_list(const procstats_snap_t *s, const char *none, char *buf,
				size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < s->n_cores && used < len; i++) {
		uint32_t first = s->cores[i].global, last = first;
		while (i + 1 < s->n_cores && s->cores[i + 1].global == last + 1)
			last = s->cores[++i].global;
		int n = first == last ? snprintf(buf + used, len - used, "%s%u", used ? "," : "", first)
				      : snprintf(buf + used, len - used, "%s%u-%u", used ? "," : "",
						 first, last);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (!s->n_cores)
		snprintf(buf, len, "%s", none);
	return buf;
}
