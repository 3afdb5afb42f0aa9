/* The profiler: NEURON_RT_INSPECT_* and nrt_profile_start/stop sessions, user blocks, what executions, loads and transfers record. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "env.h"
#include "internal.h"
#include "nrt/nrt_profile.h"
#include "observe.h"
#include "profile_state.h"
#include "sys_trace.h"
#include "trace.h"

/* The profiler's lock and what exists outside a runtime (profile_state.h). */
nrt_profile_global_t g_prof = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void cont_clear_locked(nrt_profile_state_t *p);

/* A session running now writes the system events. */
bool nrt_profile_sys_needed_locked(const nrt_profile_state_t *p)
{
	return (p->inspect && p->inspect_sys) || p->api_active || p->trace_active;
}

void nrt_profile_update_on_locked(void)
{
	nrt_profile_state_t *p = g_prof.live;
	nrt_trace_set_on(g_prof.pending || (p && nrt_profile_sys_needed_locked(p)));
}

/* ---- environment ---- */

/* The project's booleans (docs/env.md): 1/0, on/off, true/false, yes/no, any
 * case. -1 when v is none of them. */
static int env_bool(const char *name, bool dflt, bool *out)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	int b = nrt_env_parse_bool(v);
	if (b >= 0) {
		*out = b;
		return 0;
	}
	NRT_LOGE("nrt_init: %s='%s' is not valid: use 1 or 0 (on/off, true/false, yes/no)", name, v);
	return -1;
}

/* What nrt_init would decide about recording user blocks. */
static bool inspect_env_enabled(void)
{
	const char *v = getenv("NEURON_RT_INSPECT_ENABLE");
	const char *s = getenv("NEURON_RT_INSPECT_SYSTEM_PROFILE");
	return v && nrt_env_parse_bool(v) == 1 && !(s && *s && nrt_env_parse_bool(s) == 0);
}

static NRT_STATUS read_inspect_env(nrt_profile_state_t *p, const char *func);

/* Sets p->out_dir to dir, created (with parents) and writable now rather than
 * found wanting when the trace is written; what names the setting in
 * messages, hint says what to do. */
static NRT_STATUS set_out_dir(nrt_profile_state_t *p, const char *dir, const char *func, const char *what,
			      const char *hint)
{
	if (strlen(dir) >= sizeof(p->out_dir) - 128) {
		NRT_LOGE("%s: %s is too long (%zu bytes)", func, what, strlen(dir));
		return NRT_INVALID;
	}
	snprintf(p->out_dir, sizeof(p->out_dir), "%s", dir);
	if (nrt_trace_mkdirs(p->out_dir) != 0) {
		NRT_LOGE("%s: %s '%s' cannot be created: %s (%s)", func, what, p->out_dir, strerror(errno),
			 hint);
		return NRT_INVALID;
	}
	if (access(p->out_dir, W_OK) != 0) {
		NRT_LOGE("%s: %s '%s' is not writable: %s (%s)", func, what, p->out_dir, strerror(errno),
			 hint);
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}

static NRT_STATUS read_env(nrt_profile_state_t *p)
{
	if (env_bool("NEURON_RT_INSPECT_ENABLE", false, &p->inspect))
		return NRT_INVALID;
	p->max_spans = DEFAULT_MAX_SPANS;
	const char *v = getenv("NEURONSIM_PROFILE_MAX_SPANS");
	if (v && *v && (nrt_env_parse_size(v, &p->max_spans) != NRT_SUCCESS || !p->max_spans)) {
		NRT_LOGE("nrt_init: NEURONSIM_PROFILE_MAX_SPANS='%s' is not valid: use a positive count "
			 "(K/M/G suffixes allowed)", v);
		return NRT_INVALID;
	}
	if (!p->inspect)
		return NRT_SUCCESS;
	return read_inspect_env(p, "nrt_init");
}

/* The NEURON_RT_INSPECT_* settings of an inspection (all but _ENABLE), read
 * by nrt_init and nrt_inspect_begin (func names the caller in messages). */
static NRT_STATUS read_inspect_env(nrt_profile_state_t *p, const char *func)
{
	const char *v;
	if (env_bool("NEURON_RT_INSPECT_SYSTEM_PROFILE", true, &p->inspect_sys))
		return NRT_INVALID;
	v = getenv("NEURON_RT_INSPECT_DEVICE_PROFILE");
	if (!v || !*v || strcmp(v, "0") == 0) {
		p->inspect_dev = DEV_OFF;
	} else if (strcmp(v, "1") == 0 || strcmp(v, "model") == 0) {
		p->inspect_dev = DEV_MODEL;
	} else if (strcmp(v, "session") == 0) {
		p->inspect_dev = DEV_SESSION;
	} else {
		NRT_LOGE("%s: NEURON_RT_INSPECT_DEVICE_PROFILE='%s' is not valid: use 0, 1, model "
			 "or session", func, v);
		return NRT_INVALID;
	}
	/* neuronsim's own (the Neuron Runtime has no such variable); the old
	 * NEURON_RT_ name still works, with a warning. */
	const char *warmup_var = "NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP";
	v = getenv(warmup_var);
	if ((!v || !*v) && (v = getenv("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP")) && *v) {
		warmup_var = "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP";
		NRT_LOGW("%s: NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP is deprecated: set "
			 "NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP instead", func);
	}
	if (v && *v) {
		char *end;
		errno = 0;
		unsigned long long w = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-') {
			NRT_LOGE("%s: %s='%s' is not a non-negative integer", func, warmup_var, v);
			return NRT_INVALID;
		}
		p->warmup = w;
	}
	v = getenv("NEURON_RT_INSPECT_OUTPUT_DIR");
	if (!v || !*v)
		v = "./output";
	return set_out_dir(p, v, func, "NEURON_RT_INSPECT_OUTPUT_DIR",
			   "choose a writable directory, or unset NEURON_RT_INSPECT_ENABLE");
}

/* ---- writing ---- */

static void jobs_clear_locked(nrt_profile_state_t *p)
{
	nrt_trace_job_t *j = p->jobs;
	while (j) {
		nrt_trace_job_t *next = j->next;
		nrt_trace_job_free(j);
		j = next;
	}
	p->jobs = NULL;
	p->jobs_tail = &p->jobs;
	p->n_spans = 0;
	p->jobs_dropped = 0;
}

bool nrt_profile_ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *dev_mode_name(dev_mode_t m)
{
	return m == DEV_MODEL ? "model" : m == DEV_SESSION ? "session" : "off";
}

static NRT_STATUS write_api_locked(nrt_profile_state_t *p, const char *path, uint64_t to_ns)
{
	nrt_trace_write_args_t a = {
		.path = path,
		.gzip = nrt_profile_ends_with(path, ".gz"),
		.from_ns = p->api_start_ns,
		.to_ns = to_ns,
		.jobs = p->jobs,
		.jobs_dropped = p->jobs_dropped,
		.session = "nrt_profile_start",
		.device_profile = "api",
		.backend = p->backend,
	};
	return nrt_trace_write(&a);
}

/* <dir>/<host>_pid_<pid>/ntrace_session_<N>.json.gz: the Neuron Runtime's
 * layout, one directory per process named by its instance (the host name
 * here) and pid, one file per inspection (N from 0: nrt_inspect_begin/stop
 * windows, then the one nrt_close ends). Where the Neuron Runtime writes
 * ntrace.pb and one NTFF per NeuronCore, neuronsim writes one Chrome trace
 * with the system and the device tracks. func names who writes it (nrt_close,
 * nrt_inspect_stop, or the exit handler) in the message of a failure. */
static void write_inspect_locked(nrt_profile_state_t *p, const char *func)
{
	if (p->inspect_idle)
		return;
	char host[256] = "localhost";
	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	for (char *c = host; *c; c++)
		if (*c == '/')
			*c = '_';
	char dir[sizeof(p->out_dir) + sizeof(host) + 32];
	snprintf(dir, sizeof(dir), "%s/%s_pid_%ld", p->out_dir, host, (long)getpid());
	if (nrt_trace_mkdirs(dir) != 0) {
		NRT_LOGE("%s: cannot create the profile directory '%s': %s; the trace is lost", func,
			 dir, strerror(errno));
		return;
	}
	char path[sizeof(dir) + 64];
	for (unsigned n = p->inspect_first_session;; n++) {
		snprintf(path, sizeof(path), "%s/ntrace_session_%u.json.gz", dir, n);
		if (access(path, F_OK) != 0)
			break;
	}
	nrt_trace_write_args_t a = {
		.path = path,
		.gzip = true,
		.from_ns = p->inspect_start_ns,
		.to_ns = UINT64_MAX,
		.jobs = p->jobs,
		.jobs_dropped = p->jobs_dropped,
		.session = "inspect",
		.device_profile = dev_mode_name(p->inspect_dev),
		.backend = p->backend,
	};
	if (nrt_trace_write(&a) == NRT_SUCCESS)
		NRT_LOGI("profile written to %s", path);
}

/* ---- lifecycle ---- */

/* A process that never calls nrt_close (PyTorch/XLA keeps its PJRT client,
 * and so the runtime, until exit) would lose its NEURON_RT_INSPECT_* trace:
 * at exit, or when libnrt is unloaded (glibc runs a library's atexit
 * handlers at its dlclose), the inspection still running is written. It
 * only writes the file: tearing the runtime down under threads that may
 * still be executing is not safe at exit. nrt_close, if it comes first,
 * ends the inspection and leaves nothing for this. */
static void write_inspect_at_exit(void)
{
	pthread_mutex_lock(&g_prof.lock);
	nrt_profile_state_t *p = g_prof.live;
	if (p && p->inspect) {
		if (!p->inspect_idle)
			NRT_LOGI("exit without nrt_close or nrt_inspect_stop: writing the inspection's "
				 "trace");
		write_inspect_locked(p, "exit");
		p->inspect = false;
	}
	pthread_mutex_unlock(&g_prof.lock);
}

static void register_exit_writer(void)
{
	if (atexit(write_inspect_at_exit) != 0)
		NRT_LOGW("cannot register the exit handler of the inspection: its trace is written "
			 "by nrt_inspect_stop or nrt_close only");
}

/* Called as an inspection starts (nrt_init with NEURON_RT_INSPECT_ENABLE=1,
 * nrt_inspect_begin*): registers the exit writer once per process. */
static void arm_exit_writer(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	(void)pthread_once(&once, register_exit_writer);
}

NRT_STATUS nrt_profile_init(nrt_ctx_t *ctx)
{
	nrt_profile_state_t *p = calloc(1, sizeof(*p));
	if (!p)
		return NRT_RESOURCE;
	NRT_STATUS st = read_env(p);
	if (st) {
		free(p);
		return st;
	}
	p->jobs_tail = &p->jobs;
	p->backend = ctx->ops->name;
	pthread_mutex_lock(&g_prof.lock);
	if (p->inspect) {
		p->inspect_start_ns = g_prof.pending ? g_prof.pending_since : ns_monotonic_ns();
		atomic_store(&p->dev_mode, p->inspect_dev);
		if (!p->inspect_sys)
			nrt_trace_clear();
	} else if (g_prof.pending) {
		nrt_trace_clear();
	}
	g_prof.pending = false;
	g_prof.live = p;
	nrt_profile_update_on_locked();
	pthread_mutex_unlock(&g_prof.lock);
	ctx->profile = p;
	if (p->inspect)
		arm_exit_writer();
	return NRT_SUCCESS;
}

void nrt_profile_fini(nrt_ctx_t *ctx)
{
	nrt_profile_state_t *p = ctx->profile;
	if (!p)
		return;
	pthread_mutex_lock(&g_prof.lock);
	atomic_store(&p->dev_mode, DEV_OFF);
	atomic_store(&p->api_model, 0);
	uint64_t now = ns_monotonic_ns();
	if (p->api_active) {
		NRT_LOGW("nrt_close: the profile of model '%s' was not stopped (nrt_profile_stop); "
			 "writing it to '%s'", p->api_model_name, p->api_file);
		(void)write_api_locked(p, p->api_file, now);
		p->api_active = false;
	}
	if (p->inspect)
		write_inspect_locked(p, "nrt_close");
	nrt_profile_trace_discard_locked(p);
	jobs_clear_locked(p);
	cont_clear_locked(p);
	nrt_trace_clear();
	while (p->models) {
		nrt_trace_model_t *next = p->models->next;
		nrt_trace_model_free(p->models);
		p->models = next;
	}
	g_prof.live = NULL;
	nrt_profile_update_on_locked();
	pthread_mutex_unlock(&g_prof.lock);
	free(p);
	ctx->profile = NULL;
}

/* ---- executions ---- */

static nrt_trace_model_t *model_find_locked(nrt_profile_state_t *p, uint32_t executable_id)
{
	for (nrt_trace_model_t *tm = p->models; tm; tm = tm->next)
		if (tm->executable_id == executable_id)
			return tm;
	return NULL;
}

nrt_backend_trace_t *nrt_profile_exec_traces(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec)
{
	nrt_profile_state_t *p = ctx->profile;
	if (!p)
		return NULL;
	const nrt_model_obj_t *m = rec->model;
	uint32_t mode = atomic_load_explicit(&p->dev_mode, memory_order_relaxed);
	uint64_t api = atomic_load_explicit(&p->api_model, memory_order_relaxed);
	if (mode == DEV_OFF && api != (uint64_t)m->executable_id + 1 &&
	    !atomic_load_explicit(&p->cont_on, memory_order_relaxed))
		return NULL;
	uint32_t inst = rec->instance ? (uint32_t)(rec->instance - m->instances) : 0;
	uint32_t n = m->neff_cores;
	uint64_t hint[NEFF_MAX_CORES];
	pthread_mutex_lock(&g_prof.lock);
	nrt_trace_model_t *tm = model_find_locked(p, m->executable_id);
	bool api_want = p->api_active && p->api_model_id == m->executable_id;
	uint32_t core = rec->instance ? rec->instance->first_core : m->start_nc;
	bool nc_ok = !p->inspect_nc_filter ||
		     (core < NRT_INSPECT_MAX_NC && !(p->inspect_nc_off[core / 8] & (1u << (core % 8))));
	bool model_want = p->inspect && nc_ok && p->inspect_dev == DEV_MODEL && rec->exec_index >= p->warmup &&
			  !(tm && inst < tm->n_instances && tm->instance_traced[inst]);
	bool want = api_want || model_want || (p->inspect && nc_ok && p->inspect_dev == DEV_SESSION) ||
		    p->cont_active;
	if (want && !tm) {
		tm = nrt_trace_model_create(&m->view, m->executable_id, m->n_instances);
		if (tm) {
			tm->next = p->models;
			p->models = tm;
		} else {
			NRT_LOGW("profiler: out of memory for the device trace of model '%s'",
				 m->view.meta->model_name);
		}
	}
	if (want && tm && p->n_spans >= p->max_spans) {
		if (!p->warned_limit)
			NRT_LOGW("profiler: %llu device spans recorded (NEURONSIM_PROFILE_MAX_SPANS); later "
				 "executions are not device-traced", (unsigned long long)p->n_spans);
		p->warned_limit = true;
		p->jobs_dropped++;
		want = false;
	}
	if (want && tm) {
		if (model_want && inst < tm->n_instances)
			tm->instance_traced[inst] = true;
		for (uint32_t c = 0; c < n; c++)
			hint[c] = tm->span_hint[c] ? tm->span_hint[c] : 1;
	}
	pthread_mutex_unlock(&g_prof.lock);
	if (!want || !tm)
		return NULL;
	nrt_backend_trace_t *t = calloc(n, sizeof(*t));
	if (!t)
		return NULL;
	for (uint32_t c = 0; c < n; c++) {
		t[c].cap = hint[c];
		t[c].spans = malloc(hint[c] * sizeof(*t[c].spans));
		if (!t[c].spans) {
			while (c--)
				free(t[c].spans);
			free(t);
			return NULL;
		}
	}
	return t;
}

static int cmp_span(const void *a, const void *b)
{
	const nrt_backend_span_t *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->engine < y->engine ? -1 : x->engine > y->engine;
}

void nrt_trace_job_free(nrt_trace_job_t *j)
{
	if (!j)
		return;
	free(j->spans);
	free(j);
}

/* Turns core c's trace of rec into a job (takes its spans, also when it
 * fails); NULL if out of memory. */
static nrt_trace_job_t *job_from(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec, uint32_t c,
				 nrt_backend_trace_t *t)
{
	nrt_trace_job_t *j = calloc(1, sizeof(*j));
	if (!j) {
		free(t->spans);
		t->spans = NULL;
		return NULL;
	}
	uint32_t lnc = rec->instance->first_core + c;
	j->logical_nc = lnc;
	j->global_nc = lnc < ctx->n_cores ? ctx->cores[lnc].global : lnc;
	j->model_core = c;
	j->status = rec->status;
	j->exec_index = rec->exec_index;
	memcpy(j->busy_ns, t->engine_busy_ns, sizeof(j->busy_ns));
	j->insns_executed = t->insns_executed;
	j->dropped = t->dropped;
	j->n_spans = t->count <= t->cap ? t->count : t->cap;
	if (j->n_spans) {
		qsort(t->spans, j->n_spans, sizeof(*t->spans), cmp_span);
		nrt_backend_span_t *s = realloc(t->spans, j->n_spans * sizeof(*s));
		j->spans = s ? s : t->spans;
		j->start_ns = j->spans[0].start_ns;
		for (uint64_t i = 0; i < j->n_spans; i++)
			if (j->spans[i].end_ns > j->end_ns)
				j->end_ns = j->spans[i].end_ns;
	} else {
		free(t->spans);
		j->start_ns = j->end_ns = rec->device_start_ns;
	}
	t->spans = NULL;
	return j;
}

static nrt_trace_job_t *job_dup(const nrt_trace_job_t *j)
{
	nrt_trace_job_t *d = malloc(sizeof(*d));
	if (!d)
		return NULL;
	*d = *j;
	d->next = NULL;
	d->spans = NULL;
	if (j->n_spans) {
		d->spans = malloc(j->n_spans * sizeof(*d->spans));
		if (!d->spans) {
			free(d);
			return NULL;
		}
		memcpy(d->spans, j->spans, j->n_spans * sizeof(*d->spans));
	}
	return d;
}

/* Continuous profiling keeps j as its core's latest job. Returns what is left
 * for the session lists: j itself when a nrt_profile_start session of this
 * model wants it too (the kept one is then a copy), else NULL. Inspections
 * with a device profile do not run alongside (refused both ways). */
static nrt_trace_job_t *cont_keep_locked(nrt_profile_state_t *p, nrt_trace_model_t *tm, nrt_trace_job_t *j,
					 uint32_t executable_id)
{
	bool api = p->api_active && p->api_model_id == executable_id;
	if (j->logical_nc >= p->cont_n)
		return api ? j : (nrt_trace_job_free(j), NULL);
	nrt_trace_job_t *keep = api ? job_dup(j) : j;
	if (keep) {
		keep->model = tm;
		nrt_trace_job_free(p->cont_latest[j->logical_nc]);
		p->cont_latest[j->logical_nc] = keep;
	}
	return api ? j : NULL;
}

static void cont_clear_locked(nrt_profile_state_t *p)
{
	for (uint32_t i = 0; i < p->cont_n; i++)
		nrt_trace_job_free(p->cont_latest[i]);
	free(p->cont_latest);
	p->cont_latest = NULL;
	p->cont_n = 0;
	p->cont_active = false;
	atomic_store(&p->cont_on, false);
}

void nrt_profile_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec)
{
	if (nrt_sys_trace_capturing())
		nrt_sys_trace_record(rec->instance ? rec->instance->first_core : rec->model->start_nc,
				     NRT_SYS_TRACE_EXECUTE, "nrt_execute", rec->model->view.meta->model_name,
				     rec->start_ns, ns_monotonic_ns(), rec->status, rec->exec_index);
	if (nrt_trace_on()) {
		uint64_t now = ns_monotonic_ns();
		/* Ends now, not at rec->end_ns: snapshot writes after the jobs nest inside. */
		nrt_trace_event_t ev = {
			.start_ns = rec->start_ns,
			.end_ns = now,
			.value = rec->exec_index,
			.has_value = 1,
			.status = rec->status,
			.kind = NRT_TRACE_SPAN,
			.cat = NRT_TRACE_CAT_RUNTIME,
		};
		snprintf(ev.name, sizeof(ev.name), "nrt_execute");
		snprintf(ev.label, sizeof(ev.label), "%s", rec->model->view.meta->model_name);
		nrt_trace_record(&ev);
	}
	nrt_backend_trace_t *traces = rec->traces;
	nrt_profile_state_t *p = ctx->profile;
	if (!traces)
		return;
	const nrt_model_obj_t *m = rec->model;
	for (uint32_t c = 0; c < m->neff_cores; c++) {
		nrt_backend_trace_t *t = &traces[c];
		if (!t->recorded || !p || !rec->instance) {
			free(t->spans); /* a core after a failed one never ran */
			continue;
		}
		nrt_trace_job_t *j = job_from(ctx, rec, c, t);
		pthread_mutex_lock(&g_prof.lock);
		nrt_trace_model_t *tm = model_find_locked(p, m->executable_id);
		/* Loops run instructions more than once: size the next buffer by
		 * what this execution ran. */
		if (j && tm && t->insns_executed > tm->span_hint[c])
			tm->span_hint[c] = t->insns_executed;
		bool cont = j && tm && p->cont_active;
		if (cont)
			j = cont_keep_locked(p, tm, j, m->executable_id);
		if (cont && !j) {
			/* kept for continuous profiling only */
		} else if (!j || !tm) {
			p->jobs_dropped++;
			nrt_trace_job_free(j);
		} else {
			j->model = tm;
			*p->jobs_tail = j;
			p->jobs_tail = &j->next;
			p->n_spans += j->n_spans;
		}
		pthread_mutex_unlock(&g_prof.lock);
	}
	free(traces);
}

/* ---- what other runtime calls record ---- */

bool nrt_profile_sys_on(void)
{
	return nrt_trace_on();
}

/* One span of category cat (the value: bytes) into the trace when one records. */
static void record_span(nrt_trace_cat_t cat, const char *name, const char *label, uint64_t bytes,
			NRT_STATUS status, uint64_t start_ns, uint64_t end_ns)
{
	if (!nrt_trace_on())
		return;
	nrt_trace_event_t ev = {
		.start_ns = start_ns,
		.end_ns = end_ns,
		.value = bytes,
		.status = status,
		.kind = NRT_TRACE_SPAN,
		.cat = (uint8_t)cat,
	};
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	snprintf(ev.label, sizeof(ev.label), "%s", label ? label : "");
	nrt_trace_record(&ev);
}

void nrt_profile_call(const char *name, const char *label, uint64_t bytes, NRT_STATUS status,
		      uint64_t start_ns, uint64_t end_ns)
{
	record_span(NRT_TRACE_CAT_RUNTIME, name, label, bytes, status, start_ns, end_ns);
}

void nrt_profile_transfer(bool to_device, const char *tensor, uint64_t bytes, uint64_t start_ns,
			  uint64_t end_ns)
{
	record_span(NRT_TRACE_CAT_TRANSFER, to_device ? "nrt_tensor_write" : "nrt_tensor_read", tensor,
		    bytes, NRT_SUCCESS, start_ns, end_ns);
}

/* ---- public API ---- */

/* Before nrt_init, with NEURON_RT_INSPECT_ENABLE=1: start recording so that
 * the runtime that comes next finds the blocks (e.g. the compilation). */
static void maybe_pending(void)
{
	if (!inspect_env_enabled())
		return;
	pthread_mutex_lock(&g_prof.lock);
	if (!g_prof.live && !g_prof.pending) {
		g_prof.pending = true;
		g_prof.pending_since = ns_monotonic_ns();
		nrt_profile_update_on_locked();
	}
	pthread_mutex_unlock(&g_prof.lock);
}

NRT_STATUS nrt_neuronsim_trace_begin(const char *name)
{
	if (!name || !*name) {
		NRT_LOGE("nrt_neuronsim_trace_begin: name is %s", name ? "empty" : "NULL");
		return NRT_INVALID;
	}
	if (!nrt_trace_on())
		maybe_pending();
	return nrt_trace_block_begin(name);
}

NRT_STATUS nrt_neuronsim_trace_end(void)
{
	return nrt_trace_block_end();
}

NRT_STATUS nrt_neuronsim_trace_step(uint64_t step)
{
	if (!nrt_trace_on())
		maybe_pending();
	if (!nrt_trace_on())
		return NRT_SUCCESS;
	uint64_t now = ns_monotonic_ns();
	nrt_trace_event_t ev = {
		.start_ns = now,
		.end_ns = now,
		.value = step,
		.kind = NRT_TRACE_INSTANT,
		.cat = NRT_TRACE_CAT_STEP,
	};
	snprintf(ev.name, sizeof(ev.name), "step %llu", (unsigned long long)step);
	nrt_trace_record(&ev);
	return NRT_SUCCESS;
}

/* The directory part of path must exist and be writable, so that a bad name
 * fails at start and not after the run. */
NRT_STATUS nrt_profile_check_writable(const char *func, const char *path,
				      const char *missing_note)
{
	if (!path || !*path) {
		NRT_LOGE("%s: filename is %s: name the trace file to write (.json, or .json.gz "
			 "for gzip)%s", func, path ? "empty" : "NULL", missing_note);
		return NRT_INVALID;
	}
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (strlen(path) >= PATH_MAX - 32) {
		NRT_LOGE("%s: file name '%.64s...' is too long", func, path);
		return NRT_INVALID;
	}
	if (access(dir, W_OK) != 0) {
		NRT_LOGE("%s: cannot write '%s': directory '%s' %s", func, path, dir,
			 errno == ENOENT ? "does not exist" : strerror(errno));
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!model) {
		NRT_LOGE("nrt_profile_start: model is NULL");
		return NRT_INVALID;
	}
	if ((st = nrt_profile_check_writable(__func__, filename, "")))
		return st;
	void *obj;
	if (nrt_handle_acquire(&ctx->models, nrt_handle_of(model), &obj)) {
		NRT_LOGE("nrt_profile_start: %p is not a loaded model (unloaded, or not a model handle)",
			 (void *)model);
		return NRT_INVALID;
	}
	nrt_model_obj_t *m = obj;
	nrt_profile_state_t *p = ctx->profile;
	pthread_mutex_lock(&g_prof.lock);
	if (p->api_active) {
		NRT_LOGE("nrt_profile_start: model '%s' is already being profiled into '%s'; call "
			 "nrt_profile_stop first (one profile at a time)", p->api_model_name, p->api_file);
		st = NRT_INVALID;
	} else {
		p->api_active = true;
		p->api_model_id = m->executable_id;
		snprintf(p->api_model_name, sizeof(p->api_model_name), "%s", m->view.meta->model_name);
		snprintf(p->api_file, sizeof(p->api_file), "%s", filename);
		p->api_start_ns = ns_monotonic_ns();
		atomic_store(&p->api_model, (uint64_t)m->executable_id + 1);
		nrt_profile_update_on_locked();
	}
	pthread_mutex_unlock(&g_prof.lock);
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
	return st;
}

NRT_STATUS nrt_profile_stop(const char *filename)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_profile_state_t *p = ctx->profile;
	pthread_mutex_lock(&g_prof.lock);
	if (!p->api_active) {
		pthread_mutex_unlock(&g_prof.lock);
		NRT_LOGE("nrt_profile_stop: no profile is being recorded: call nrt_profile_start first");
		return NRT_INVALID;
	}
	const char *path = filename && *filename ? filename : p->api_file;
	uint64_t now = ns_monotonic_ns();
	p->api_active = false;
	atomic_store(&p->api_model, 0);
	nrt_profile_update_on_locked();
	st = write_api_locked(p, path, now);
	/* What an inspect session or a trace still needs stays. */
	if (!nrt_profile_sys_needed_locked(p))
		nrt_trace_clear();
	if (!p->inspect || p->inspect_dev == DEV_OFF)
		jobs_clear_locked(p);
	pthread_mutex_unlock(&g_prof.lock);
	return st;
}

/* ---- nrt_inspect_begin / nrt_inspect_stop (inspect.c) ---- */

/* Starts the inspection cfg describes (inspect_sys, inspect_dev, warmup,
 * out_dir and the options-only fields) unless one runs or continuous
 * profiling forbids its device profile. */
static NRT_STATUS inspect_start(nrt_profile_state_t *p, const nrt_profile_state_t *cfg, const char *func,
				const char *dev_setting)
{
	NRT_STATUS st = NRT_SUCCESS;
	pthread_mutex_lock(&g_prof.lock);
	if (p->inspect) {
		NRT_LOGE("%s: an inspection is already running (NEURON_RT_INSPECT_ENABLE at nrt_init, or "
			 "an earlier nrt_inspect_begin or nrt_inspect_begin_with_options): call "
			 "nrt_inspect_stop first", func);
		st = NRT_INVALID;
	} else if (p->cont_active && cfg->inspect_dev != DEV_OFF) {
		NRT_LOGE("%s: continuous profiling is running; a device profile cannot be inspected "
			 "alongside (call nrt_profile_continuous_stop, or %s)", func, dev_setting);
		st = NRT_INVALID;
	} else {
		p->inspect = true;
		p->inspect_sys = cfg->inspect_sys;
		p->inspect_dev = cfg->inspect_dev;
		p->warmup = cfg->warmup;
		p->inspect_idle = cfg->inspect_idle;
		p->inspect_first_session = cfg->inspect_first_session;
		p->inspect_nc_filter = cfg->inspect_nc_filter;
		memcpy(p->inspect_nc_off, cfg->inspect_nc_off, sizeof(p->inspect_nc_off));
		memcpy(p->out_dir, cfg->out_dir, sizeof(p->out_dir));
		p->inspect_start_ns = ns_monotonic_ns();
		/* DEVICE_PROFILE=model traces each instance once per inspection. */
		for (nrt_trace_model_t *tm = p->models; tm; tm = tm->next)
			memset(tm->instance_traced, 0, tm->n_instances * sizeof(*tm->instance_traced));
		atomic_store(&p->dev_mode, p->inspect_dev);
		nrt_profile_update_on_locked();
	}
	pthread_mutex_unlock(&g_prof.lock);
	if (st == NRT_SUCCESS)
		arm_exit_writer();
	return st;
}

NRT_STATUS nrt_profile_inspect_begin(nrt_ctx_t *ctx, const char *func)
{
	nrt_profile_state_t *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NRT_RESOURCE;
	NRT_STATUS st = read_inspect_env(cfg, func);
	if (!st)
		st = inspect_start(ctx->profile, cfg, func, "set NEURON_RT_INSPECT_DEVICE_PROFILE=0");
	free(cfg);
	return st;
}

NRT_STATUS nrt_profile_inspect_begin_with(nrt_ctx_t *ctx, const char *func, const nrt_inspect_settings_t *s)
{
	nrt_profile_state_t *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NRT_RESOURCE;
	NRT_STATUS st = set_out_dir(cfg, s->out_dir, func, "the output directory",
				    "choose a writable one with nrt_inspect_config_set_output_dir");
	cfg->inspect_idle = !s->record;
	cfg->inspect_sys = s->record && s->sys;
	cfg->inspect_dev = s->record ? (dev_mode_t)s->dev_mode : DEV_OFF;
	cfg->inspect_first_session = s->first_session;
	if (s->nc_off) {
		cfg->inspect_nc_filter = true;
		memcpy(cfg->inspect_nc_off, s->nc_off, sizeof(cfg->inspect_nc_off));
	}
	if (!st)
		st = inspect_start(ctx->profile, cfg, func,
				   "disable the device profile in the options");
	free(cfg);
	return st;
}

NRT_STATUS nrt_profile_inspect_stop(nrt_ctx_t *ctx, const char *func)
{
	nrt_profile_state_t *p = ctx->profile;
	pthread_mutex_lock(&g_prof.lock);
	if (!p->inspect) {
		pthread_mutex_unlock(&g_prof.lock);
		NRT_LOGE("%s: no inspection is running: call nrt_inspect_begin first (or set "
			 "NEURON_RT_INSPECT_ENABLE=1 before nrt_init)", func);
		return NRT_INVALID;
	}
	write_inspect_locked(p, func);
	p->inspect = false;
	p->inspect_idle = false;
	p->inspect_first_session = 0;
	p->inspect_nc_filter = false;
	atomic_store(&p->dev_mode, DEV_OFF);
	nrt_profile_update_on_locked();
	/* What a nrt_profile_start session or a trace still needs stays. */
	if (!nrt_profile_sys_needed_locked(p))
		nrt_trace_clear();
	if (!p->api_active)
		jobs_clear_locked(p);
	pthread_mutex_unlock(&g_prof.lock);
	return NRT_SUCCESS;
}

/* ---- continuous profiling (profile_continuous.c) ---- */

NRT_STATUS nrt_profile_continuous_begin(nrt_ctx_t *ctx, const char *func)
{
	nrt_profile_state_t *p = ctx->profile;
	NRT_STATUS st = NRT_SUCCESS;
	pthread_mutex_lock(&g_prof.lock);
	if (p->cont_active) {
		NRT_LOGE("%s: continuous profiling is already running", func);
		st = NRT_INVALID;
	} else if (p->inspect && p->inspect_dev != DEV_OFF) {
		NRT_LOGE("%s: an inspection with a device profile is running (NEURON_RT_INSPECT_DEVICE_PROFILE); "
			 "continuous profiling does not start alongside it", func);
		st = NRT_INVALID;
	} else {
		p->cont_latest = calloc(ctx->n_cores ? ctx->n_cores : 1, sizeof(*p->cont_latest));
		if (!p->cont_latest) {
			NRT_LOGE("%s: out of host memory", func);
			st = NRT_RESOURCE;
		} else {
			p->cont_n = ctx->n_cores;
			p->cont_active = true;
			atomic_store(&p->cont_on, true);
		}
	}
	pthread_mutex_unlock(&g_prof.lock);
	return st;
}

NRT_STATUS nrt_profile_continuous_write(nrt_ctx_t *ctx, const char *func, uint32_t vnc, const char *dir,
				       char *out_path, size_t out_len)
{
	nrt_profile_state_t *p = ctx->profile;
	static atomic_uint saves; /* names stay unique within the process */
	NRT_STATUS st = NRT_SUCCESS;
	pthread_mutex_lock(&g_prof.lock);
	const nrt_trace_job_t *j = NULL;
	if (!p->cont_active) {
		NRT_LOGE("%s: continuous profiling is not running: call nrt_profile_continuous_start first", func);
		st = NRT_INVALID;
	} else if (vnc >= p->cont_n) {
		NRT_LOGE("%s: NeuronCore %u is not visible (%u visible)", func, vnc, p->cont_n);
		st = NRT_INVALID;
	} else if (!(j = p->cont_latest[vnc])) {
		NRT_LOGE("%s: nothing executed on NeuronCore %u since continuous profiling started", func, vnc);
		st = NRT_INVALID;
	} else if (nrt_trace_mkdirs(dir) != 0) {
		NRT_LOGE("%s: cannot create the output directory '%s': %s", func, dir, strerror(errno));
		st = NRT_FAILURE;
	} else {
		char model[64];
		snprintf(model, sizeof(model), "%.63s", j->model->name);
		for (char *c = model; *c; c++)
			if (*c == '/' || *c == ' ')
				*c = '_';
		int w = snprintf(out_path, out_len, "%s/%s_nc%u_exec%llu_pid%ld_%u.json.gz", dir, model, vnc,
				 (unsigned long long)j->exec_index, (long)getpid(), atomic_fetch_add(&saves, 1));
		if (w < 0 || (size_t)w >= out_len) {
			NRT_LOGE("%s: output directory name '%.64s...' is too long", func, dir);
			st = NRT_INVALID;
		} else {
			nrt_trace_write_args_t a = {
				.path = out_path,
				.gzip = true,
				.from_ns = j->start_ns,
				.to_ns = j->end_ns,
				.jobs = j,
				.session = "continuous",
				.device_profile = "continuous",
				.backend = p->backend,
			};
			st = nrt_trace_write(&a);
		}
	}
	pthread_mutex_unlock(&g_prof.lock);
	return st;
}

NRT_STATUS nrt_profile_continuous_end(nrt_ctx_t *ctx, const char *func)
{
	nrt_profile_state_t *p = ctx->profile;
	pthread_mutex_lock(&g_prof.lock);
	bool was = p->cont_active;
	cont_clear_locked(p);
	pthread_mutex_unlock(&g_prof.lock);
	if (!was) {
		NRT_LOGE("%s: continuous profiling is not running", func);
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}
