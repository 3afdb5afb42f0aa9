/* fwsim_par: the pool of host threads that splits one large instruction (pool.h). */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "pool.h"
#include "neuronsim/clock.h"
#include "neuronsim/spin.h"

typedef struct pool {
	pthread_mutex_t m;
	pthread_cond_t work_cv; /* a job was published, or shutdown */
	pthread_cond_t done_cv; /* the last running worker left a closed job */
	pthread_t th[FWSIM_PAR_MAX_THREADS];
	uint32_t n_started;     /* workers created (slots 1..n_started) */
	uint64_t gen;           /* job generation (read by look_until without
				 * the mutex) */
	int busy;               /* a caller owns the pool */
	int open;               /* the current job still takes workers */
	uint64_t running;       /* workers inside the current job (read by
				 * look_until without the mutex) */
	uint32_t allowed;       /* workers that may join (threads - 1) */
	/* the current job */
	fwsim_par_fn_t fn;
	void *ctx;
	uint64_t n_items;
	atomic_uint_fast64_t next;
	atomic_int failed;
	fwsim_status_t st;      /* the first failure */
	fwsim_watch_t fail_w;   /* its watch */
	const fwsim_watch_t *proto;
} pool_t;

static pool_t g_pool = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.work_cv = PTHREAD_COND_INITIALIZER,
	.done_cv = PTHREAD_COND_INITIALIZER,
};
static atomic_uint_fast64_t g_worker_items;
static atomic_uint g_threads; /* fwsim_set_threads(); 0 = not set (auto) */

uint32_t fwsim_affinity_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	int n = CPU_COUNT(&set);
	return n > 0 ? (uint32_t)n : 1;
}

void fwsim_set_threads(uint32_t n)
{
	atomic_store(&g_threads, n > FWSIM_PAR_MAX_THREADS ? FWSIM_PAR_MAX_THREADS : n);
}

uint32_t fwsim_get_threads(void)
{
	uint32_t n = atomic_load(&g_threads);
	if (!n)
		n = fwsim_affinity_cpus();
	return n > FWSIM_PAR_MAX_THREADS ? FWSIM_PAR_MAX_THREADS : n;
}

/* How long a worker that left a job looks for the next one, and a caller
 * for its last running worker, before sleeping on a condition variable.
 *
 * Why look at all: asleep, a hand-off costs a futex wake and, on a virtual
 * machine, the wake of an idle vCPU. On the 2-vCPU machines here a worker
 * joined a job 57-66 us after it was published (mean; 40% over 50 us),
 * against items of 50-200 us: ResNet-18 b8's step NEFF publishes 65 jobs,
 * 85% of them within 0.8 ms of the one before, so about 4 ms of each 55 ms
 * step had one core idle. Looking, a worker joins within a microsecond;
 * the step ran 50-55 ms instead of 56-59 (2 CPUs, interleaved).
 *
 * Why it yields, and stops when the yield gave the CPU away: a thread that
 * stays runnable ages in the scheduler. Beside a CPU hog, a looker that only
 * yielded then ran each job behind the hog's slices (the step 85-97 ms
 * against 85-87 asleep); stopping at the first yield that another thread
 * took (POOL_SPIN_GIVEN_NS) keeps it asleep there, as before (85-89 ms
 * against 88-90). A yield with no one else to run costs a system call. */
#define POOL_SPIN_NS 800000ull
#define POOL_SPIN_GIVEN_NS 20000ull

/* Looks, without the mutex, until *v changes from old (or, when want_zero,
 * reaches 0) or the look ends as above; the caller then checks again under
 * the mutex and sleeps if it must. */
static void look_until(const uint64_t *v, uint64_t old, bool want_zero)
{
	uint64_t t0 = ns_monotonic_ns();
	for (uint32_t i = 0;; i++) {
		uint64_t now = __atomic_load_n(v, __ATOMIC_ACQUIRE);
		if (want_zero ? now == 0 : now != old)
			return;
		if ((i & 15) == 15) { /* every 16 pauses, about half a microsecond */
			uint64_t t1 = ns_monotonic_ns();
			if (t1 - t0 > POOL_SPIN_NS)
				return;
			sched_yield();
			if (ns_monotonic_ns() - t1 > POOL_SPIN_GIVEN_NS)
				return;
		}
		ns_cpu_relax();
	}
}

/* Takes items until none are left or one failed. */
static void run_items(pool_t *p, uint32_t slot)
{
	fwsim_watch_t w = *p->proto;
	w.left = FWSIM_POLL_WORK;
	while (!atomic_load_explicit(&p->failed, memory_order_relaxed)) {
		uint64_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n_items)
			break;
		fwsim_status_t st = p->fn(p->ctx, i, slot, &w);
		if (slot)
			atomic_fetch_add_explicit(&g_worker_items, 1, memory_order_relaxed);
		if (st != FWSIM_OK) {
			pthread_mutex_lock(&p->m);
			if (!atomic_load(&p->failed)) {
				p->st = st;
				p->fail_w = w;
				atomic_store(&p->failed, 1);
			}
			pthread_mutex_unlock(&p->m);
			break;
		}
	}
}

uint64_t fwsim_par_worker_items(void)
{
	return atomic_load(&g_worker_items);
}

static void *worker_main(void *arg)
{
	pool_t *p = &g_pool;
	uint32_t slot = (uint32_t)(uintptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "fwsim-par%u", slot % 100);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&p->m);
	uint64_t seen = p->gen;
	for (;;) {
		if (p->gen == seen) {
			pthread_mutex_unlock(&p->m);
			look_until(&p->gen, seen, false);
			pthread_mutex_lock(&p->m);
		}
		while (p->gen == seen)
			pthread_cond_wait(&p->work_cv, &p->m);
		seen = p->gen;
		/* a worker that wakes after the caller closed the job has nothing to
		 * do: the caller never waits for it */
		if (!p->open || slot > p->allowed)
			continue;
		__atomic_store_n(&p->running, p->running + 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&p->m);
		run_items(p, slot);
		pthread_mutex_lock(&p->m);
		__atomic_store_n(&p->running, p->running - 1, __ATOMIC_RELEASE);
		if (p->running == 0 && !p->open)
			pthread_cond_signal(&p->done_cv);
	}
	return NULL; /* not reached: the workers live as long as the process */
}

/* Starts workers up to want (slots 1..want); under p->m. Best effort: a
 * worker that cannot be created leaves its items to the others. */
static void ensure_workers(pool_t *p, uint32_t want)
{
	while (p->n_started < want) {
		uint32_t slot = p->n_started + 1;
		if (pthread_create(&p->th[slot - 1], NULL, worker_main, (void *)(uintptr_t)slot) != 0)
			break;
		pthread_detach(p->th[slot - 1]);
		p->n_started = slot;
	}
}

fwsim_status_t fwsim_par_for(uint64_t n_items, fwsim_par_fn_t fn, void *ctx, fwsim_watch_t *w)
{
	pool_t *p = &g_pool;
	uint32_t threads = fwsim_get_threads();
	bool use_pool = false;
	if (threads > 1 && n_items > 1) {
		pthread_mutex_lock(&p->m);
		if (!p->busy) {
			ensure_workers(p, threads - 1);
			p->busy = 1;
			use_pool = p->n_started > 0;
			if (!use_pool)
				p->busy = 0;
		}
		pthread_mutex_unlock(&p->m);
	}
	if (!use_pool) {
		/* the same items in order on this thread, with the caller's watch */
		for (uint64_t i = 0; i < n_items; i++) {
			fwsim_status_t st = fn(ctx, i, 0, w);
			if (st != FWSIM_OK)
				return st;
		}
		return FWSIM_OK;
	}
	pthread_mutex_lock(&p->m);
	p->fn = fn;
	p->ctx = ctx;
	p->n_items = n_items;
	p->proto = w;
	atomic_store(&p->next, 0);
	atomic_store(&p->failed, 0);
	p->st = FWSIM_OK;
	p->allowed = threads - 1 < p->n_started ? threads - 1 : p->n_started;
	p->open = 1;
	__atomic_store_n(&p->running, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->m);

	run_items(p, 0);

	pthread_mutex_lock(&p->m);
	p->open = 0;
	if (p->running) {
		pthread_mutex_unlock(&p->m);
		look_until(&p->running, 0, true);
		pthread_mutex_lock(&p->m);
	}
	while (p->running)
		pthread_cond_wait(&p->done_cv, &p->m);
	fwsim_status_t st = p->st;
	if (st != FWSIM_OK) {
		w->why = p->fail_w.why;
		w->cancelled = p->fail_w.cancelled;
	}
	p->fn = NULL;
	p->ctx = NULL;
	p->proto = NULL;
	p->busy = 0;
	pthread_mutex_unlock(&p->m);
	return st;
}

void fwsim_par_chk_init(const fwsim_kargs_t *k, fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS])
{
	for (uint32_t i = 0; k->chk && i < FWSIM_PAR_MAX_THREADS; i++) {
		chk[i] = *k->chk;
		chk[i].count = 0;
		chk[i].first = UINT64_MAX;
	}
}

void fwsim_par_chk_merge(const fwsim_kargs_t *k, const fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS])
{
	for (uint32_t i = 0; k->chk && i < FWSIM_PAR_MAX_THREADS; i++)
		fwsim_numchk_merge(k->chk, &chk[i]);
}

fwsim_kargs_t fwsim_par_kargs(const fwsim_kargs_t *k, fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS],
			      uint32_t slot, fwsim_watch_t *w)
{
	fwsim_kargs_t kk = *k;
	kk.watch = w;
	kk.chk = k->chk ? &chk[slot] : NULL;
	return kk;
}

int fwsim_par_cut_dim(const isa_ap_t *o, uint32_t reduced)
{
	uint32_t d = 0;
	while (d < o->rank && ((reduced >> d & 1) || o->shape[d] < 2))
		d++;
	return d < o->rank && o->stride[d] != 0 ? (int)d : -1;
}
