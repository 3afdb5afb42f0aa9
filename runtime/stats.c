/* Process stats for neuron-top, neuron-monitor and neuron-ls: one shared-memory file per runtime (neuronsim/procstats.h), updated after every execution and refreshed by a small thread. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "neuronsim/procstats.h"
#include "neuronsim/spin.h"
#include "env.h"
#include "observe.h"

_Static_assert(NRT_NEURONSIM_MEM_CATEGORY_COUNT == PROCSTATS_MEM_CATEGORIES,
	       "procstats.h memory categories must follow nrt_neuronsim_mem_category_t");
_Static_assert(NRT_NEURONSIM_MEM_SNAPSHOT == PROCSTATS_MEM_SNAPSHOT - PROCSTATS_MEM_FIRST,
	       "procstats.h memory categories must follow nrt_neuronsim_mem_category_t");
_Static_assert(NRT_MAX_CORES <= PROCSTATS_MAX_CORES, "procstats.h holds every visible core");

struct nrt_stats_state {
	procstats_file_t *file;
	char path[4096];
	pthread_mutex_t lock;     /* stop + wake, for the refresher */
	pthread_cond_t wake;
	bool stop;
	bool thread_started;
	pthread_t thread;
};

/* ---- the seqlock writer side ----
 * Writers of this process (executing threads, the refresher) take the
 * in-file spinlock: its hold time is a handful of stores, and a mutex would
 * cost more than the update itself on the ~0.3 us path of a tiny model. */
static void write_begin(procstats_file_t *f)
{
	unsigned spins = 0;
	while (atomic_exchange_explicit(&f->writer_lock, 1, memory_order_acquire)) {
		while (atomic_load_explicit(&f->writer_lock, memory_order_relaxed)) {
			/* The holder may have been preempted: let it run. */
			if (++spins % 256 == 0)
				sched_yield();
			else
				ns_cpu_relax();
		}
	}
	uint64_t s = atomic_load_explicit(&f->seq, memory_order_relaxed);
	atomic_store_explicit(&f->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void write_end(procstats_file_t *f)
{
	uint64_t s = atomic_load_explicit(&f->seq, memory_order_relaxed);
	atomic_store_explicit(&f->seq, s + 1, memory_order_release);
	atomic_store_explicit(&f->writer_lock, 0, memory_order_release);
}

/* Under the writer lock: a plain read-modify-write is enough. */
static inline void bump(procstats_file_t *f, int i, uint64_t d)
{
	atomic_store_explicit(&f->v[i], atomic_load_explicit(&f->v[i], memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline void put(_Atomic uint64_t *dst, uint64_t v)
{
	atomic_store_explicit(dst, v, memory_order_relaxed);
}

/* Copies the runtime's counters of logical core i (execute.c keeps them). */
static void copy_core(procstats_file_t *f, nrt_ctx_t *ctx, uint32_t i)
{
	nrt_core_t *c = &ctx->cores[i];
	_Atomic uint64_t *v = f->cores[i].v;
	put(&v[PROCSTATS_CORE_EXECUTIONS], atomic_load_explicit(&c->n_exec, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_COMPLETED], atomic_load_explicit(&c->n_ok, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_COMPLETED_WITH_ERR], atomic_load_explicit(&c->n_err, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_COMPLETED_WITH_NUM_ERR],
	    atomic_load_explicit(&c->n_num_err, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_TIMED_OUT], atomic_load_explicit(&c->n_timeout, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_INCORRECT_INPUT], atomic_load_explicit(&c->n_bad_input, memory_order_relaxed));
	put(&v[PROCSTATS_CORE_BUSY_NS], nrt_core_busy_ns(c, ns_monotonic_ns()));
	put(&v[PROCSTATS_CORE_FLOPS], atomic_load_explicit(&c->flops_unknown, memory_order_relaxed)
					      ? PROCSTATS_FLOPS_UNKNOWN
					      : atomic_load_explicit(&c->flops, memory_order_relaxed));
	for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
		put(&f->cores[i].mem[k], atomic_load_explicit(&c->mem_by_cat[k], memory_order_relaxed));
}

/* Memory, every core and the heartbeat; under the writer lock. */
static void copy_all(procstats_file_t *f, nrt_ctx_t *ctx)
{
	for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
		put(&f->v[PROCSTATS_MEM_FIRST + k], atomic_load(&ctx->mem_by_cat[k]));
	put(&f->v[PROCSTATS_MEM_IN_USE], atomic_load(&ctx->mem_in_use));
	put(&f->v[PROCSTATS_MEM_PEAK], atomic_load(&ctx->mem_peak));
	put(&f->v[PROCSTATS_HOST_TENSORS], atomic_load(&ctx->host_tensor_bytes));
	put(&f->v[PROCSTATS_HOST_SNAPSHOT], atomic_load(&ctx->host_snapshot_bytes));
	for (uint32_t i = 0; i < ctx->n_cores; i++)
		copy_core(f, ctx, i);
	put(&f->v[PROCSTATS_HEARTBEAT_NS], ns_monotonic_ns());
}

static void refresh(nrt_ctx_t *ctx, procstats_file_t *f)
{
	write_begin(f);
	copy_all(f, ctx);
	write_end(f);
}

static void *refresher_main(void *arg)
{
	nrt_ctx_t *ctx = arg;
	struct nrt_stats_state *s = ctx->stats;
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += PROCSTATS_REFRESH_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
		if (!s->stop)
			refresh(ctx, s->file);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Where every execution lands: one outcome, and for a failure one error kind. */
static void classify(const nrt_exec_rec_t *rec, int *out_outcome, int *out_kind)
{
	int kind = -1, outcome;
	switch (rec->status) {
	case NRT_SUCCESS:
		/* A NaN under NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=warning returns
		 * success; it still is a numerical error, as the core counters say. */
		if (rec->error.kind == NRT_NEURONSIM_ERROR_NAN || rec->error.kind == NRT_NEURONSIM_ERROR_INF) {
			outcome = PROCSTATS_COMPLETED_WITH_NUM_ERR;
			kind = PROCSTATS_ERR_NUMERICAL;
		} else {
			outcome = PROCSTATS_COMPLETED;
		}
		break;
	case NRT_EXEC_COMPLETED_WITH_NUM_ERR:
		outcome = PROCSTATS_COMPLETED_WITH_NUM_ERR;
		kind = PROCSTATS_ERR_NUMERICAL;
		break;
	case NRT_TIMEOUT:
		outcome = PROCSTATS_TIMED_OUT;
		kind = PROCSTATS_ERR_GENERIC;
		break;
	case NRT_QUEUE_FULL:
		outcome = PROCSTATS_FAILED_TO_QUEUE;
		kind = PROCSTATS_ERR_RUNTIME;
		break;
	case NRT_INVALID:
	case NRT_INVALID_HANDLE:
	case NRT_EXEC_BAD_INPUT:
		/* As execute.c counts it: refused before anything ran. */
		if (!rec->ran) {
			outcome = PROCSTATS_INCORRECT_INPUT;
			kind = PROCSTATS_ERR_GENERIC;
			break;
		}
		/* fall through */
	default:
		outcome = PROCSTATS_COMPLETED_WITH_ERR;
		if (rec->status == NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE)
			kind = PROCSTATS_ERR_TRANSIENT;
		else if (rec->status == NRT_HW_ERROR ||
			 (rec->status >= NRT_EXEC_HW_ERR_COLLECTIVES && rec->status <= NRT_EXEC_HW_ERR_DMA_ABORT))
			kind = PROCSTATS_ERR_HARDWARE;
		else if (rec->ran && (rec->status == NRT_EXEC_OOB || rec->status == NRT_EXEC_COMPLETED_WITH_ERR ||
				      rec->status == NRT_INVALID))
			kind = PROCSTATS_ERR_MODEL;
		else
			kind = PROCSTATS_ERR_RUNTIME;
		break;
	}
	*out_outcome = outcome;
	*out_kind = kind;
}

void nrt_stats_exec_begin(nrt_ctx_t *ctx, nrt_exec_rec_t *rec)
{
	struct nrt_stats_state *s = ctx->stats;
	uint32_t slot = atomic_load_explicit(&rec->model->stats_slot, memory_order_acquire);
	if (!s || !slot)
		return;
	/* one word, outside the seqlock: a reader sees it before or after */
	atomic_fetch_add_explicit(&s->file->models[slot - 1].running, 1, memory_order_release);
	rec->stats_slot = slot;
}

void nrt_stats_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec)
{
	struct nrt_stats_state *s = ctx->stats;
	if (!s)
		return;
	procstats_file_t *f = s->file;
	if (rec->stats_slot)
		atomic_fetch_sub_explicit(&f->models[rec->stats_slot - 1].running, 1,
					  memory_order_release);
	int outcome, kind;
	classify(rec, &outcome, &kind);
	uint32_t first = rec->instance ? rec->instance->first_core : rec->model->start_nc;
	uint32_t n = rec->model->neff_cores;
	uint64_t total_ns = rec->end_ns >= rec->start_ns ? rec->end_ns - rec->start_ns : 0;
	uint64_t device_ns = UINT64_MAX;
	if (rec->ran && rec->device_start_ns && rec->end_ns >= rec->device_start_ns)
		device_ns = rec->end_ns - rec->device_start_ns;

	write_begin(f);
	bump(f, PROCSTATS_EXECUTIONS, 1);
	bump(f, outcome, 1);
	if (kind >= 0)
		bump(f, kind, 1);
	if (outcome == PROCSTATS_COMPLETED_WITH_NUM_ERR)
		bump(f, rec->error.kind == NRT_NEURONSIM_ERROR_INF ? PROCSTATS_NUM_INF : PROCSTATS_NUM_NAN, 1);
	for (uint32_t i = first; i < first + n && i < ctx->n_cores; i++)
		copy_core(f, ctx, i);
	if (rec->ran && rec->error.kind != NRT_NEURONSIM_ERROR_NONE && rec->error.logical_nc < ctx->n_cores)
		copy_core(f, ctx, rec->error.logical_nc);
	if (!s->thread_started)
		copy_all(f, ctx);
	/* The slot's index goes to 0 first, so a reader never pairs an old
	 * index with new latencies. */
	uint64_t idx = atomic_load_explicit(&f->v[PROCSTATS_LAT_HEAD], memory_order_relaxed) + 1;
	procstats_lat_t *slot = &f->lat[(idx - 1) % PROCSTATS_LAT_RING];
	atomic_store_explicit(&slot->index, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot->total_ns, total_ns, memory_order_relaxed);
	atomic_store_explicit(&slot->device_ns, device_ns, memory_order_relaxed);
	atomic_store_explicit(&slot->index, idx, memory_order_release);
	put(&f->v[PROCSTATS_LAT_HEAD], idx);
	write_end(f);
}

/* ---- loaded models ---- */

void nrt_stats_model_load(nrt_ctx_t *ctx, nrt_model_obj_t *m)
{
	struct nrt_stats_state *s = ctx->stats;
	if (!s)
		return;
	procstats_file_t *f = s->file;
	const nrt_instance_t *in = &m->instances[0];
	uint64_t code = 0;
	for (uint32_t c = 0; c < m->neff_cores; c++)
		code += in->code[c].size;
	uint64_t name[PROCSTATS_MODEL_NAME_MAX / 8] = { 0 };
	snprintf((char *)name, sizeof(name), "%s", m->view.meta->model_name);
	uint64_t uuid[2];
	memcpy(uuid, m->uuid, sizeof(uuid));
	write_begin(f);
	bump(f, PROCSTATS_MODELS_LOADED, 1);
	procstats_model_t *slot = NULL;
	uint32_t slot_index = 0;
	for (uint32_t i = 0; i < PROCSTATS_MAX_MODELS && !slot; i++) {
		if (!atomic_load_explicit(&f->models[i].id, memory_order_relaxed)) {
			slot = &f->models[i];
			slot_index = i;
		}
	}
	if (slot) {
		put(&slot->first_core, m->start_nc);
		put(&slot->neff_cores, m->neff_cores);
		put(&slot->n_instances, m->n_instances);
		put(&slot->mem_constants, in->consts.size);
		put(&slot->mem_code, code);
		put(&slot->mem_scratch, in->scratch.size);
		for (size_t w = 0; w < PROCSTATS_MODEL_NAME_MAX / 8; w++)
			put(&slot->name[w], name[w]);
		put(&slot->uuid[0], uuid[0]);
		put(&slot->uuid[1], uuid[1]);
		/* executions that began before this point are not counted in it */
		put(&slot->running, 0);
		put(&slot->id, (uint64_t)m->executable_id + 1);
		atomic_store_explicit(&m->stats_slot, slot_index + 1, memory_order_release);
	} else {
		bump(f, PROCSTATS_MODELS_UNLISTED, 1);
	}
	/* the memory the model just took, without waiting for the refresher */
	copy_all(f, ctx);
	write_end(f);
}

void nrt_stats_model_unload(nrt_ctx_t *ctx, const nrt_model_obj_t *m)
{
	struct nrt_stats_state *s = ctx->stats;
	if (!s)
		return;
	procstats_file_t *f = s->file;
	uint64_t id = (uint64_t)m->executable_id + 1;
	write_begin(f);
	bool listed = false;
	for (uint32_t i = 0; i < PROCSTATS_MAX_MODELS && !listed; i++) {
		if (atomic_load_explicit(&f->models[i].id, memory_order_relaxed) == id) {
			put(&f->models[i].id, 0);
			put(&f->models[i].running, 0);
			listed = true;
		}
	}
	bump(f, PROCSTATS_MODELS_LOADED, (uint64_t)-1);
	if (!listed)
		bump(f, PROCSTATS_MODELS_UNLISTED, (uint64_t)-1);
	write_end(f);
}

/* ---- publishing ---- */

/* 1 on, 0 off, -1 not a boolean (the spellings of docs/env.md). */
static void read_comm(char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, len - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
		}
	}
	if (!buf[0])
		snprintf(buf, len, "%s", program_invocation_short_name);
}

/* Creates and fills the file. On failure returns -1 with why in err; nothing is left behind. */
static int publish(nrt_ctx_t *ctx, struct nrt_stats_state *s, char *err, size_t err_len)
{
	const char *dir = procstats_dir();
	if (procstats_path(s->path, sizeof(s->path), dir, geteuid(), getpid())) {
		snprintf(err, err_len, "the directory name %s is too long", dir);
		return -1;
	}
	/* A file under our name is a leftover: of a dead process that had our
	 * pid, or of an earlier runtime of ours. O_EXCL|O_NOFOLLOW then makes
	 * sure we write into a file we just created, not someone's link. */
	if (unlink(s->path) != 0 && errno != ENOENT) {
		snprintf(err, err_len, "%s exists and cannot be removed: %s", s->path, strerror(errno));
		return -1;
	}
	int fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, err_len, "%s: %s", s->path, strerror(errno));
		return -1;
	}
	/* Reserve the pages now: on a full tmpfs a store into a sparse page
	 * would raise SIGBUS in the middle of an execution. */
	int rc = posix_fallocate(fd, 0, sizeof(procstats_file_t));
	if (rc) {
		snprintf(err, err_len, "%s: reserving %zu bytes: %s", s->path, sizeof(procstats_file_t),
			 strerror(rc));
		goto err_unlink;
	}
	procstats_file_t *f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED) {
		snprintf(err, err_len, "%s: mmap: %s", s->path, strerror(errno));
		goto err_unlink;
	}
	close(fd);
	f->magic = PROCSTATS_MAGIC;
	f->version = PROCSTATS_VERSION;
	f->size = sizeof(*f);
	f->pid = (uint32_t)getpid();
	f->uid = (uint32_t)geteuid();
	f->n_cores = ctx->n_cores;
	f->n_devices = ctx->n_devices;
	uint64_t st = 0;
	procstats_proc_start_time(getpid(), &st);
	f->start_time = st;
	f->init_ns = ns_monotonic_ns();
	f->mem_total = ctx->mem_total;
	snprintf(f->backend, sizeof(f->backend), "%s", ctx->ops->name);
	read_comm(f->comm, sizeof(f->comm));
	const char *tag = getenv("NEURON_PROCESS_TAG");
	snprintf(f->tag, sizeof(f->tag), "%s", tag ? tag : "");
	for (uint32_t i = 0; i < ctx->n_cores; i++) {
		f->cores[i].global = ctx->cores[i].global;
		f->cores[i].device = ctx->cores[i].device;
		f->cores[i].dev_core = ctx->cores[i].dev_core;
	}
	refresh(ctx, f);
	atomic_store_explicit(&f->state, PROCSTATS_STATE_LIVE, memory_order_release);
	s->file = f;
	return 0;

err_unlink:
	unlink(s->path);
	close(fd);
	return -1;
}

ns_status_t nrt_stats_init(nrt_ctx_t *ctx)
{
	bool on;
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURONSIM_STATS", true, &on));
	if (!on)
		return NS_OK;
	/* From here on nothing fails nrt_init: the tools are a convenience. */
	struct nrt_stats_state *s = calloc(1, sizeof(*s));
	char err[4200];
	if (!s) {
		NRT_LOGW("nrt_init: out of memory setting up process stats; neuron-top and "
			 "neuron-monitor will not see this process");
		return NS_OK;
	}
	if (publish(ctx, s, err, sizeof(err))) {
		NRT_LOGW("nrt_init: cannot publish process stats (%s); neuron-top and neuron-monitor "
			 "will not see this process. Set NEURONSIM_STATS_DIR to a writable directory, or "
			 "NEURONSIM_STATS=0 to silence this", err);
		free(s);
		return NS_OK;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	ctx->stats = s;
	/* The refresher takes no signals meant for the application's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, refresher_main, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		s->thread_started = true;
		pthread_setname_np(s->thread, "nrt-stats");
	} else {
		/* Executions still publish; memory then refreshes only with them. */
		NRT_LOGW("nrt_init: cannot start the process stats thread (%s); memory figures of "
			 "neuron-top/neuron-monitor update only when this process executes", strerror(rc));
	}
	return NS_OK;
}

void nrt_stats_fini(nrt_ctx_t *ctx)
{
	struct nrt_stats_state *s = ctx->stats;
	if (!s)
		return;
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	/* Closed before unlinked: a reader that opened it just now skips it. */
	atomic_store_explicit(&s->file->state, PROCSTATS_STATE_CLOSED, memory_order_release);
	unlink(s->path);
	munmap(s->file, sizeof(*s->file));
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
	ctx->stats = NULL;
}
