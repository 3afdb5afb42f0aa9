/* The system-trace recorder: per-thread event buffers and user block stacks, process-global like the metrics registry. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "trace.h"

/* One thread's events. The owner appends under lock; the writer and clear
 * take the same lock. Never freed while its thread lives: a thread caches
 * the pointer. After the thread exits (retired) the buffer is freed by the
 * next clear. */
typedef struct trace_thread {
	struct trace_thread *next;
	pthread_mutex_t lock;
	uint32_t tid;
	bool retired;
	char name[32];
	nrt_trace_event_t *ev;
	uint64_t n, cap;
	/* Open user blocks begun while recording (the thread's bitmask says
	 * which levels of its block stack these are). */
	uint32_t n_open;
	struct {
		uint64_t start_ns;
		char name[NRT_TRACE_NAME_MAX];
	} open[NRT_TRACE_MAX_DEPTH];
} trace_thread_t;

/* The recorder: the one global of the profiler. */
static struct {
	pthread_mutex_t lock;        /* the thread list */
	trace_thread_t *threads;
	_Atomic uint64_t n_events;   /* over all buffers, for the limit */
	_Atomic uint64_t dropped;
} g_trace = { .lock = PTHREAD_MUTEX_INITIALIZER };

atomic_bool nrt_trace_on_flag;

/* Per thread: its buffer (NULL until it records), how deep its block stack
 * is and which levels were begun while recording. */
static _Thread_local trace_thread_t *tls_buf;
static _Thread_local uint32_t tls_depth;
static _Thread_local uint64_t tls_recorded;

static pthread_key_t g_exit_key;
static bool g_exit_key_ok;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *p)
{
	trace_thread_t *t = p;
	pthread_mutex_lock(&t->lock);
	t->retired = true;
	pthread_mutex_unlock(&t->lock);
}

static void exit_key_create(void)
{
	/* Without the key a buffer is never retired: it stays until exit. */
	g_exit_key_ok = pthread_key_create(&g_exit_key, thread_exit) == 0;
}

void nrt_trace_set_on(bool on)
{
	atomic_store(&nrt_trace_on_flag, on);
}

/* The calling thread's buffer, created on first use; NULL out of memory. */
static trace_thread_t *thread_buf(void)
{
	if (tls_buf)
		return tls_buf;
	trace_thread_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->tid = (uint32_t)syscall(SYS_gettid);
	if (pthread_getname_np(pthread_self(), t->name, sizeof(t->name)) != 0 || !t->name[0])
		snprintf(t->name, sizeof(t->name), "thread %u", t->tid);
	pthread_once(&g_exit_once, exit_key_create);
	if (g_exit_key_ok)
		(void)pthread_setspecific(g_exit_key, t);
	pthread_mutex_lock(&g_trace.lock);
	t->next = g_trace.threads;
	g_trace.threads = t;
	pthread_mutex_unlock(&g_trace.lock);
	tls_buf = t;
	return t;
}

/* Appends under t->lock (held by the caller). */
static void append_locked(trace_thread_t *t, const nrt_trace_event_t *ev)
{
	if (atomic_fetch_add(&g_trace.n_events, 1) >= NRT_TRACE_MAX_EVENTS) {
		atomic_fetch_sub(&g_trace.n_events, 1);
		atomic_fetch_add(&g_trace.dropped, 1);
		return;
	}
	if (t->n == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 64;
		nrt_trace_event_t *ev2 = realloc(t->ev, cap * sizeof(*ev2));
		if (!ev2) {
			atomic_fetch_sub(&g_trace.n_events, 1);
			atomic_fetch_add(&g_trace.dropped, 1);
			return;
		}
		t->ev = ev2;
		t->cap = cap;
	}
	t->ev[t->n++] = *ev;
}

void nrt_trace_record(const nrt_trace_event_t *ev)
{
	if (!nrt_trace_on())
		return;
	trace_thread_t *t = thread_buf();
	if (!t) {
		atomic_fetch_add(&g_trace.dropped, 1);
		return;
	}
	pthread_mutex_lock(&t->lock);
	append_locked(t, ev);
	pthread_mutex_unlock(&t->lock);
}

NRT_STATUS nrt_trace_block_begin(const char *name)
{
	if (tls_depth >= NRT_TRACE_MAX_DEPTH) {
		NRT_LOGE("nrt_neuronsim_trace_begin: '%s': %u blocks are already open on this thread "
			 "(the limit); a trace_begin without its trace_end?", name, tls_depth);
		return NRT_INVALID;
	}
	uint64_t bit = 1ull << tls_depth;
	tls_recorded &= ~bit;
	if (nrt_trace_on()) {
		trace_thread_t *t = thread_buf();
		if (t) {
			pthread_mutex_lock(&t->lock);
			t->open[t->n_open].start_ns = ns_monotonic_ns();
			snprintf(t->open[t->n_open].name, NRT_TRACE_NAME_MAX, "%s", name);
			t->n_open++;
			pthread_mutex_unlock(&t->lock);
			tls_recorded |= bit;
		}
	}
	tls_depth++;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_trace_block_end(void)
{
	if (tls_depth == 0) {
		NRT_LOGE("nrt_neuronsim_trace_end: this thread has no open block "
			 "(nrt_neuronsim_trace_begin was not called on it, or already ended)");
		return NRT_INVALID;
	}
	tls_depth--;
	if (!(tls_recorded & (1ull << tls_depth)))
		return NRT_SUCCESS;
	uint64_t now = ns_monotonic_ns();
	trace_thread_t *t = tls_buf;
	pthread_mutex_lock(&t->lock);
	t->n_open--;
	if (nrt_trace_on()) {
		nrt_trace_event_t ev = {
			.start_ns = t->open[t->n_open].start_ns,
			.end_ns = now,
			.kind = NRT_TRACE_SPAN,
			.cat = NRT_TRACE_CAT_USER,
		};
		memcpy(ev.name, t->open[t->n_open].name, sizeof(ev.name));
		append_locked(t, &ev);
	}
	pthread_mutex_unlock(&t->lock);
	return NRT_SUCCESS;
}

static int cmp_event(const void *a, const void *b)
{
	const nrt_trace_event_t *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	/* The enclosing span first, so that nesting reads in order. */
	if (x->end_ns != y->end_ns)
		return x->end_ns > y->end_ns ? -1 : 1;
	return 0;
}

NRT_STATUS nrt_trace_snapshot(uint64_t from_ns, uint64_t to_ns, nrt_trace_snapshot_t *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&g_trace.lock);
	uint32_t n = 0;
	for (trace_thread_t *t = g_trace.threads; t; t = t->next)
		n++;
	out->threads = calloc(n ? n : 1, sizeof(*out->threads));
	if (!out->threads) {
		pthread_mutex_unlock(&g_trace.lock);
		return NRT_RESOURCE;
	}
	NRT_STATUS st = NRT_SUCCESS;
	for (trace_thread_t *t = g_trace.threads; t && !st; t = t->next) {
		pthread_mutex_lock(&t->lock);
		uint64_t k = 0;
		for (uint64_t i = 0; i < t->n; i++)
			k += t->ev[i].start_ns >= from_ns && t->ev[i].start_ns <= to_ns;
		if (k) {
			nrt_trace_thread_events_t *o = &out->threads[out->n_threads];
			o->events = malloc(k * sizeof(*o->events));
			if (!o->events) {
				st = NRT_RESOURCE;
			} else {
				o->tid = t->tid;
				memcpy(o->name, t->name, sizeof(o->name));
				for (uint64_t i = 0; i < t->n; i++)
					if (t->ev[i].start_ns >= from_ns && t->ev[i].start_ns <= to_ns)
						o->events[o->n++] = t->ev[i];
				out->n_threads++;
			}
		}
		pthread_mutex_unlock(&t->lock);
	}
	out->dropped = atomic_load(&g_trace.dropped);
	pthread_mutex_unlock(&g_trace.lock);
	if (st) {
		nrt_trace_snapshot_free(out);
		return st;
	}
	for (uint32_t i = 0; i < out->n_threads; i++)
		qsort(out->threads[i].events, out->threads[i].n, sizeof(nrt_trace_event_t), cmp_event);
	return NRT_SUCCESS;
}

void nrt_trace_snapshot_free(nrt_trace_snapshot_t *s)
{
	for (uint32_t i = 0; s->threads && i < s->n_threads; i++)
		free(s->threads[i].events);
	free(s->threads);
	memset(s, 0, sizeof(*s));
}

void nrt_trace_clear(void)
{
	pthread_mutex_lock(&g_trace.lock);
	trace_thread_t **pp = &g_trace.threads;
	while (*pp) {
		trace_thread_t *t = *pp;
		pthread_mutex_lock(&t->lock);
		free(t->ev);
		t->ev = NULL;
		t->n = t->cap = 0;
		bool retired = t->retired;
		pthread_mutex_unlock(&t->lock);
		if (retired) {
			*pp = t->next;
			pthread_mutex_destroy(&t->lock);
			free(t);
		} else {
			pp = &t->next;
		}
	}
	atomic_store(&g_trace.n_events, 0);
	atomic_store(&g_trace.dropped, 0);
	pthread_mutex_unlock(&g_trace.lock);
}
