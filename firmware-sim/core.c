/* fwsim_core_t: per-core job serialisation and the two engine schedulers (inline cooperative, threaded). */
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pool.h"
#include "sched_pick.h"
#include "neuronsim/clock.h"
#include "neuronsim/spin.h"

/* Pause iterations before a blocked engine sleeps: a few microseconds, far
 * cheaper than a futex round trip when the producer is about to signal, yet
 * short enough not to starve the producer on a 2-core host. */
#define SEM_SPIN 200

typedef struct engine_wait {
	int active;
	uint32_t sem, value, pc;
} engine_wait_t;

struct fwsim_core {
	fwsim_core_config_t cfg;
	pthread_mutex_t job_lock; /* one job at a time on this core */

	/* threaded mode: work hand-off */
	pthread_mutex_t m;
	pthread_cond_t work_cv, done_cv;
	pthread_t threads[ISA_ENGINE_COUNT];
	int have_thread[ISA_ENGINE_COUNT];
	uint64_t gen;
	int shutdown;
	uint32_t worker_mask; /* engines the workers run in the current job */
	uint32_t remaining;
	fwsim_exec_t *x;

	/* threaded mode: semaphore sleeping and deadlock detection */
	pthread_mutex_t wait_m;
	/* one per engine (CLOCK_MONOTONIC, for deadlines): a signal wakes only
	 * the engines whose semaphore it made ready. One shared condition
	 * broadcast on every signal woke every sleeping engine to find most of
	 * them still blocked: a ResNet-18 step spent 17% of its CPU time in the
	 * scheduler. */
	pthread_cond_t wait_cv[ISA_ENGINE_COUNT];
	atomic_uint n_waiting;
	engine_wait_t waiting[ISA_ENGINE_COUNT];
	int done[ISA_ENGINE_COUNT];

	hwloc_topology_t topo;
	int have_topo;
};

typedef struct worker_arg {
	fwsim_core_t *core;
	uint32_t engine;
	uint64_t gen; /* last generation this worker must not run */
} worker_arg_t;

static inline bool sem_ready(fwsim_exec_t *x, const isa_insn_t *in)
{
	return in->wait_sem == ISA_SEM_NONE ||
	       atomic_load_explicit(&x->sems[in->wait_sem], memory_order_acquire) >= in->wait_value;
}

/* Appends "engine insn N waits sem S >= V (is C)" for every blocked engine. */
static void deadlock_fail(fwsim_exec_t *x, const uint32_t *pcs, const int *blocked)
{
	char msg[160];
	size_t len = (size_t)snprintf(msg, sizeof(msg), "deadlock:");
	uint32_t first = UINT32_MAX;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (!blocked[e])
			continue;
		const isa_insn_t *in = &x->prog->insns[e][pcs[e]];
		if (first == UINT32_MAX)
			first = e;
		if (len < sizeof(msg))
			len += (size_t)snprintf(msg + len, sizeof(msg) - len,
						" %s insn %u waits sem %u >= %u (is %u);",
						fwsim_engine_name(e), pcs[e], in->wait_sem,
						in->wait_value, atomic_load(&x->sems[in->wait_sem]));
	}
	fwsim_exec_fail(x, FWSIM_DEADLOCK, first, first < ISA_ENGINE_COUNT ? pcs[first] : 0, 0,
			ISA_REGION_NONE, "%s", msg);
}

/* ---- inline cooperative scheduler ---- */

/* Runs each engine until it blocks on a semaphore, ends, or jumps back (a
 * loop's next round), then switches to the next one; no progress in a full
 * round is a deadlock. Costs no thread hand-off, which keeps a small job at a
 * few microseconds. The turn a loop gives up lets a program that polls
 * memory another engine writes (a race the ISA does not order, but one a
 * program may run) end as it does on threads, rather than spin to its
 * deadline while the writer never runs. */
static void run_inline(fwsim_exec_t *x)
{
	const fwsim_program_t *p = x->prog;
	x->par_min_ew = FWSIM_PAR_MIN_EW_INLINE;
	uint32_t pcs[ISA_ENGINE_COUNT] = { 0 };
	for (;;) {
		bool progress = false, all_done = true;
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			while (pcs[e] < p->counts[e]) {
				if (!sem_ready(x, &p->insns[e][pcs[e]]))
					break;
				uint32_t next;
				if (fwsim_exec_insn(x, e, pcs[e], &next) != FWSIM_OK)
					return;
				bool back = next <= pcs[e];
				pcs[e] = next;
				progress = true;
				if (back)
					break;
			}
			x->chain_ns[e] = 0; /* blocked or done: the next engine runs */
			if (pcs[e] < p->counts[e])
				all_done = false;
		}
		if (all_done)
			return;
		if (!progress) {
			int blocked[ISA_ENGINE_COUNT];
			for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
				blocked[e] = pcs[e] < p->counts[e];
			deadlock_fail(x, pcs, blocked);
			return;
		}
	}
}

/* ---- threaded scheduler ---- */

/* Under wait_m: every unfinished engine sleeps on a semaphore nobody can
 * raise any more. Checking the values (not just "is waiting") avoids calling
 * a deadlock when a signal raced with a waiter going to sleep. */
static bool deadlocked(fwsim_core_t *c, fwsim_exec_t *x)
{
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (!x->prog->counts[e] || c->done[e])
			continue;
		if (!c->waiting[e].active)
			return false;
		if (atomic_load(&x->sems[c->waiting[e].sem]) >= c->waiting[e].value)
			return false;
	}
	return true;
}

/* Under wait_m: wakes every sleeping engine (to see a stop, a finished
 * engine that may leave the others deadlocked). */
static void wake_all_locked(fwsim_core_t *c)
{
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		pthread_cond_signal(&c->wait_cv[e]);
}

static void wake_all(fwsim_core_t *c)
{
	pthread_mutex_lock(&c->wait_m);
	wake_all_locked(c);
	pthread_mutex_unlock(&c->wait_m);
}

/* Wakes the sleeping engines whose semaphore is now at their value. A waiter
 * records what it waits for under wait_m before its last check, so it is
 * either seen here or sees the new value itself. */
static void wake_ready(fwsim_core_t *c, fwsim_exec_t *x)
{
	pthread_mutex_lock(&c->wait_m);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		if (c->waiting[e].active &&
		    atomic_load(&x->sems[c->waiting[e].sem]) >= c->waiting[e].value)
			pthread_cond_signal(&c->wait_cv[e]);
	pthread_mutex_unlock(&c->wait_m);
}

static bool sem_wait_threaded(fwsim_core_t *c, fwsim_exec_t *x, uint32_t e, uint32_t pc,
			      const isa_insn_t *in)
{
	for (int i = 0; i < SEM_SPIN; i++) {
		if (sem_ready(x, in))
			return true;
		if (atomic_load_explicit(&x->stop, memory_order_relaxed))
			return false;
		ns_cpu_relax();
	}
	bool ok = false;
	uint64_t deadline = x->job->deadline_ns;
	pthread_mutex_lock(&c->wait_m);
	c->waiting[e] = (engine_wait_t){ 1, in->wait_sem, in->wait_value, pc };
	atomic_fetch_add(&c->n_waiting, 1);
	for (;;) {
		if (sem_ready(x, in)) {
			ok = true;
			break;
		}
		if (atomic_load(&x->stop))
			break;
		if (deadlocked(c, x)) {
			uint32_t pcs[ISA_ENGINE_COUNT] = { 0 };
			int blocked[ISA_ENGINE_COUNT] = { 0 };
			for (uint32_t q = 0; q < ISA_ENGINE_COUNT; q++) {
				blocked[q] = x->prog->counts[q] && !c->done[q];
				pcs[q] = c->waiting[q].pc;
			}
			deadlock_fail(x, pcs, blocked);
			wake_all_locked(c);
			break;
		}
		if (deadline) {
			if (ns_monotonic_ns() >= deadline) {
				fwsim_exec_fail(x, FWSIM_TIMEOUT, e, pc, 0, ISA_REGION_NONE,
						"deadline passed while %s insn %u waited on sem %u",
						fwsim_engine_name(e), pc, in->wait_sem);
				wake_all_locked(c);
				break;
			}
			struct timespec ts = { (time_t)(deadline / 1000000000ull),
					       (long)(deadline % 1000000000ull) };
			pthread_cond_timedwait(&c->wait_cv[e], &c->wait_m, &ts);
		} else {
			pthread_cond_wait(&c->wait_cv[e], &c->wait_m);
		}
	}
	c->waiting[e].active = 0;
	atomic_fetch_sub(&c->n_waiting, 1);
	pthread_mutex_unlock(&c->wait_m);
	return ok;
}

static void run_engine_threaded(fwsim_core_t *c, fwsim_exec_t *x, uint32_t e)
{
	const fwsim_program_t *p = x->prog;
	uint32_t pc = 0;
	while (pc < p->counts[e]) {
		const isa_insn_t *in = &p->insns[e][pc];
		if (!sem_ready(x, in)) {
			x->chain_ns[e] = 0; /* the wait is not busy time */
			if (!sem_wait_threaded(c, x, e, pc, in))
				break;
		}
		uint32_t next;
		if (fwsim_exec_insn(x, e, pc, &next) != FWSIM_OK) {
			wake_all(c); /* let sleepers see stop */
			break;
		}
		/* seq_cst: pairs with the waiter's n_waiting increment before it
		 * re-checks the semaphore, so a wake-up cannot be lost */
		if (in->signal_sem != ISA_SEM_NONE && atomic_load(&c->n_waiting))
			wake_ready(c, x);
		pc = next;
	}
	pthread_mutex_lock(&c->wait_m);
	c->done[e] = 1;
	wake_all_locked(c); /* a sleeper may now be deadlocked */
	pthread_mutex_unlock(&c->wait_m);
}

static void pin_self(fwsim_core_t *c, uint32_t e)
{
	if (!c->have_topo)
		return;
	int npu = hwloc_get_nbobjs_by_type(c->topo, HWLOC_OBJ_PU);
	if (npu <= 0)
		return;
	unsigned idx = (c->cfg.core_index * ISA_ENGINE_COUNT + e) % (unsigned)npu;
	hwloc_obj_t pu = hwloc_get_obj_by_type(c->topo, HWLOC_OBJ_PU, idx);
	if (pu)
		hwloc_set_cpubind(c->topo, pu->cpuset, HWLOC_CPUBIND_THREAD); /* best effort */
}

static void *worker_main(void *arg)
{
	worker_arg_t wa = *(worker_arg_t *)arg;
	free(arg);
	fwsim_core_t *c = wa.core;
	uint32_t e = wa.engine;
	char name[16];
	snprintf(name, sizeof(name), "nc%u-%s", c->cfg.core_index % 1000, fwsim_engine_name(e));
	pthread_setname_np(pthread_self(), name);
	if (c->cfg.pin_threads)
		pin_self(c, e);
	pthread_mutex_lock(&c->m);
	uint64_t seen = wa.gen;
	for (;;) {
		while (c->gen == seen && !c->shutdown)
			pthread_cond_wait(&c->work_cv, &c->m);
		if (c->shutdown)
			break;
		seen = c->gen;
		/* A worker idle in this job may wake after it has finished and
		 * c->x is gone: it must decide from the mask, not from x. */
		bool mine = (c->worker_mask >> e) & 1;
		fwsim_exec_t *x = c->x;
		pthread_mutex_unlock(&c->m);
		if (mine)
			run_engine_threaded(c, x, e);
		pthread_mutex_lock(&c->m);
		if (mine && --c->remaining == 0)
			pthread_cond_signal(&c->done_cv);
	}
	pthread_mutex_unlock(&c->m);
	return NULL;
}

static fwsim_status_t ensure_thread(fwsim_core_t *c, uint32_t e)
{
	if (c->have_thread[e])
		return FWSIM_OK;
	worker_arg_t *wa = malloc(sizeof(*wa));
	if (!wa)
		return FWSIM_NOMEM;
	wa->core = c;
	wa->engine = e;
	/* The worker starts from the generation current now: the job about to
	 * be published (gen + 1) is then new to it however late it starts. */
	pthread_mutex_lock(&c->m);
	wa->gen = c->gen;
	int rc = pthread_create(&c->threads[e], NULL, worker_main, wa);
	pthread_mutex_unlock(&c->m);
	if (rc) {
		free(wa);
		return FWSIM_NOMEM;
	}
	c->have_thread[e] = 1;
	return FWSIM_OK;
}

static void run_threaded(fwsim_core_t *c, fwsim_exec_t *x)
{
	const fwsim_program_t *p = x->prog;
	x->par_min_ew = FWSIM_PAR_MIN_EW;
	uint32_t caller = ISA_ENGINE_COUNT, n_workers = 0, mask = 0;
	/* The caller runs the busiest engine itself: one hand-off fewer. */
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		if (p->counts[e] && (caller == ISA_ENGINE_COUNT || p->work[e] > p->work[caller]))
			caller = e;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (!p->counts[e] || e == caller)
			continue;
		if (ensure_thread(c, e) != FWSIM_OK) {
			fwsim_exec_fail(x, FWSIM_NOMEM, e, 0, 0, ISA_REGION_NONE,
					"cannot create the %s engine thread", fwsim_engine_name(e));
			return;
		}
		n_workers++;
		mask |= 1u << e;
	}
	memset(c->waiting, 0, sizeof(c->waiting));
	memset(c->done, 0, sizeof(c->done));
	atomic_store(&c->n_waiting, 0);
	pthread_mutex_lock(&c->m);
	c->x = x;
	c->worker_mask = mask;
	c->remaining = n_workers;
	c->gen++;
	pthread_cond_broadcast(&c->work_cv);
	pthread_mutex_unlock(&c->m);

	run_engine_threaded(c, x, caller);

	pthread_mutex_lock(&c->m);
	while (c->remaining)
		pthread_cond_wait(&c->done_cv, &c->m);
	c->x = NULL;
	c->worker_mask = 0;
	pthread_mutex_unlock(&c->m);
}

/* Whether engine threads might pay for p at all: two engines with work
 * (the second-busiest at least FWSIM_THREAD_MIN_WORK) and two CPUs to run
 * on. Only then does AUTO time both modes (sched_pick.h). */
static bool threads_may_pay(const fwsim_program_t *p)
{
	double top = 0, second = 0;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		double w = p->counts[e] ? p->work[e] : 0;
		if (w > top) {
			second = top;
			top = w;
		} else if (w > second) {
			second = w;
		}
	}
	/* with one CPU to run on, engine threads only take turns on it, each
	 * hand-off a futex wake and a context switch: MobileNetV2 b8's step
	 * NEFF ran 75-77 ms threaded, 72-74 inline (taskset -c 1). Asked last:
	 * the mask is a system call, and most jobs are small */
	return second >= (double)FWSIM_THREAD_MIN_WORK && fwsim_affinity_cpus() >= 2;
}

/* Runs x's program inline or threaded: as configured, else (AUTO) inline
 * unless threads might pay, and then the mode the program's timing picks. */
static void run_job(fwsim_core_t *c, fwsim_exec_t *x)
{
	const fwsim_program_t *p = x->prog;
	if (p->n_active < 2 || c->cfg.sched == FWSIM_SCHED_INLINE) {
		run_inline(x);
		return;
	}
	if (c->cfg.sched == FWSIM_SCHED_THREADS) {
		run_threaded(c, x);
		return;
	}
	if (!threads_may_pay(p)) {
		run_inline(x);
		return;
	}
	uint64_t run;
	uint32_t mode = fwsim_sched_pick_next(p->pick, &run);
	uint64_t t0 = ns_monotonic_ns();
	if (mode == FWSIM_PICK_THREADS)
		run_threaded(c, x);
	else
		run_inline(x);
	if (x->fatal.status == FWSIM_OK)
		fwsim_sched_pick_record(p->pick, run, mode, ns_monotonic_ns() - t0);
}

fwsim_status_t fwsim_core_create(const fwsim_core_config_t *config, fwsim_core_t **out_core)
{
	*out_core = NULL;
	fwsim_core_t *c = calloc(1, sizeof(*c));
	if (!c)
		return FWSIM_NOMEM;
	if (config)
		c->cfg = *config;
	if (c->cfg.sched > FWSIM_SCHED_THREADS) {
		free(c);
		return FWSIM_INVALID;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&c->job_lock, NULL);
	pthread_mutex_init(&c->m, NULL);
	pthread_mutex_init(&c->wait_m, NULL);
	pthread_cond_init(&c->work_cv, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		pthread_cond_init(&c->wait_cv[e], &ca);
	pthread_condattr_destroy(&ca);
	if (c->cfg.pin_threads) {
		/* Pinning is an optimisation: without a topology threads float. */
		if (hwloc_topology_init(&c->topo) == 0) {
			if (hwloc_topology_load(c->topo) == 0)
				c->have_topo = 1;
			else
				hwloc_topology_destroy(c->topo);
		}
	}
	*out_core = c;
	return FWSIM_OK;
}

void fwsim_core_destroy(fwsim_core_t *core)
{
	if (!core)
		return;
	pthread_mutex_lock(&core->m);
	core->shutdown = 1;
	pthread_cond_broadcast(&core->work_cv);
	pthread_mutex_unlock(&core->m);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		if (core->have_thread[e])
			pthread_join(core->threads[e], NULL);
	if (core->have_topo)
		hwloc_topology_destroy(core->topo);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		pthread_cond_destroy(&core->wait_cv[e]);
	pthread_cond_destroy(&core->done_cv);
	pthread_cond_destroy(&core->work_cv);
	pthread_mutex_destroy(&core->wait_m);
	pthread_mutex_destroy(&core->m);
	pthread_mutex_destroy(&core->job_lock);
	free(core);
}

fwsim_status_t fwsim_core_execute(fwsim_core_t *core, fwsim_job_t *job)
{
	if (!job)
		return FWSIM_INVALID;
	if (!core) {
		memset(&job->error, 0, sizeof(job->error));
		job->error.status = FWSIM_INVALID;
		snprintf(job->error.message, sizeof(job->error.message), "NULL core");
		return FWSIM_INVALID;
	}
	fwsim_exec_t *x = malloc(sizeof(*x));
	if (!x)
		return FWSIM_NOMEM;
	pthread_mutex_lock(&core->job_lock);
	if (fwsim_exec_begin(x, job) == FWSIM_OK) {
		run_job(core, x);
	}
	fwsim_status_t st = fwsim_exec_end(x);
	pthread_mutex_unlock(&core->job_lock);
	free(x);
	return st;
}
