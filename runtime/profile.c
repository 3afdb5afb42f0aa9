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

/* What nrt_init would decide about recording user blocks. */
static bool inspect_env_enabled(void)
{
	const char *v = getenv("NEURON_RT_INSPECT_ENABLE");
	const char *s = getenv("NEURON_RT_INSPECT_SYSTEM_PROFILE");
	return v && nrt_env_parse_bool(v) == 1 && !(s && *s && nrt_env_parse_bool(s) == 0);
}

static ns_status_t read_inspect_env(nrt_profile_state_t *p, const char *func);

/* Sets p->out_dir to dir, created (with parents) and writable now rather than
 * found wanting when the trace is written; what names the setting in
 * messages, hint says what to do. */
static ns_status_t set_out_dir(nrt_profile_state_t *p, const char *dir, const char *what, const char *hint)
{
	if (strlen(dir) >= sizeof(p->out_dir) - 128)
		return nrt_status_make(NRT_INVALID, "%s is too long (%zu bytes)", what, strlen(dir));
	snprintf(p->out_dir, sizeof(p->out_dir), "%s", dir);
	if (nrt_trace_mkdirs(p->out_dir) != 0)
		return nrt_status_make(NRT_INVALID, "%s '%s' cannot be created: %s (%s)", what, p->out_dir,
				       strerror(errno), hint);
	if (access(p->out_dir, W_OK) != 0)
		return nrt_status_make(NRT_INVALID, "%s '%s' is not writable: %s (%s)", what, p->out_dir,
				       strerror(errno), hint);
	return NS_OK;
}

static ns_status_t read_env(nrt_profile_state_t *p)
{
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURON_RT_INSPECT_ENABLE", false, &p->inspect));
	p->max_spans = DEFAULT_MAX_SPANS;
	const char *v = getenv("NEURONSIM_PROFILE_MAX_SPANS");
	if (v && *v && (nrt_env_parse_size(v, &p->max_spans) != NRT_SUCCESS || !p->max_spans))
		return nrt_status_make(NRT_INVALID, "NEURONSIM_PROFILE_MAX_SPANS='%s' is not valid: use a "
				       "positive count (K/M/G suffixes allowed)", v);
	if (!p->inspect)
		return NS_OK;
	return read_inspect_env(p, "nrt_init");
}

/* The NEURON_RT_INSPECT_* settings of an inspection (all but _ENABLE), read
 * by nrt_init and nrt_inspect_begin (func names the caller in a warning). */
static ns_status_t read_inspect_env(nrt_profile_state_t *p, const char *func)
{
	const char *v;
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURON_RT_INSPECT_SYSTEM_PROFILE", true, &p->inspect_sys));
	v = getenv("NEURON_RT_INSPECT_DEVICE_PROFILE");
	if (!v || !*v || strcmp(v, "0") == 0) {
		p->inspect_dev = DEV_OFF;
	} else if (strcmp(v, "1") == 0 || strcmp(v, "model") == 0) {
		p->inspect_dev = DEV_MODEL;
	} else if (strcmp(v, "session") == 0) {
		p->inspect_dev = DEV_SESSION;
	} else {
		return nrt_status_make(NRT_INVALID, "NEURON_RT_INSPECT_DEVICE_PROFILE='%s' is not valid: use 0, "
				       "1, model or session", v);
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
		if (errno || *end || v[0] == '-')
			return nrt_status_make(NRT_INVALID, "%s='%s' is not a non-negative integer", warmup_var, v);
		p->warmup = w;
	}
	v = getenv("NEURON_RT_INSPECT_OUTPUT_DIR");
	if (!v || !*v)
		v = "./output";
	return set_out_dir(p, v, "NEURON_RT_INSPECT_OUTPUT_DIR",
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

static ns_status_t write_api_locked(nrt_profile_state_t *p, const char *path, uint64_t to_ns)
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
		nrt_status_report(func, nrt_status_make(NRT_FAILURE, "cannot create the profile directory "
							"'%s': %s; the trace is lost", dir, strerror(errno)));
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
	if (!nrt_status_report(func, nrt_trace_write(&a)))
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

ns_status_t nrt_profile_init(nrt_ctx_t *ctx)
{
	nrt_profile_state_t *p = calloc(1, sizeof(*p));
	if (!p)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the profiler's state");
	ns_status_t st = read_env(p);
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
	return NS_OK;
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
	j->exec_start_ns = rec->start_ns;
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
	if (!name || !*name)
		return nrt_status_report(__func__, nrt_status_make(NRT_INVALID, "name is %s",
								   name ? "empty" : "NULL"));
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
ns_status_t nrt_profile_check_writable(const char *path, const char *missing_note)
{
	if (!path || !*path)
		return nrt_status_make(NRT_INVALID, "filename is %s: name the trace file to write (.json, or "
				       ".json.gz for gzip)%s", path ? "empty" : "NULL", missing_note);
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (strlen(path) >= PATH_MAX - 32)
		return nrt_status_make(NRT_INVALID, "file name '%.64s...' is too long", path);
	if (access(dir, W_OK) != 0)
		return nrt_status_make(NRT_INVALID, "cannot write '%s': directory '%s' %s", path, dir,
				       errno == ENOENT ? "does not exist" : strerror(errno));
	return NS_OK;
}

ns_status_t nrt_profile_enter(nrt_ctx_t **out_ctx, nrt_profile_state_t **out_p)
{
	NS_RETURN_IF_ERROR(nrt_ctx_enter(out_ctx));
	*out_p = (*out_ctx)->profile;
	pthread_mutex_lock(&g_prof.lock);
	return NS_OK;
}

ns_status_t nrt_profile_leave(ns_status_t st)
{
	pthread_mutex_unlock(&g_prof.lock);
	return st;
}

static ns_status_t profile_start(nrt_model_t *model, const char *filename)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!model)
		return nrt_status_make(NRT_INVALID, "model is NULL");
	NS_RETURN_IF_ERROR(nrt_profile_check_writable(filename, ""));
	/* NRT_INVALID for a handle that is not a model, as this call always returned */
	NS_RETURN_IF_ERROR(ns_status_with_detail(nrt_model_acquire(ctx, model, &m), NRT_INVALID));
	ns_status_t st = NS_OK;
	nrt_profile_state_t *p = ctx->profile;
	pthread_mutex_lock(&g_prof.lock);
	if (p->api_active) {
		st = nrt_status_make(NRT_INVALID, "model '%s' is already being profiled into '%s'; call "
				     "nrt_profile_stop first (one profile at a time)", p->api_model_name,
				     p->api_file);
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

NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename)
{
	return nrt_status_report(__func__, profile_start(model, filename));
}

static ns_status_t profile_stop(const char *filename)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	if (!p->api_active)
		return nrt_profile_leave(nrt_status_make(NRT_INVALID, "no profile is being recorded: call "
						  "nrt_profile_start first"));
	const char *path = filename && *filename ? filename : p->api_file;
	uint64_t now = ns_monotonic_ns();
	p->api_active = false;
	atomic_store(&p->api_model, 0);
	nrt_profile_update_on_locked();
	ns_status_t st = write_api_locked(p, path, now);
	/* What an inspect session or a trace still needs stays. */
	if (!nrt_profile_sys_needed_locked(p))
		nrt_trace_clear();
	if (!p->inspect || p->inspect_dev == DEV_OFF)
		jobs_clear_locked(p);
	return nrt_profile_leave(st);
}

NRT_STATUS nrt_profile_stop(const char *filename)
{
	return nrt_status_report(__func__, profile_stop(filename));
}

/* ---- nrt_inspect_begin / nrt_inspect_stop (inspect.c) ---- */

/* The runtime and a zeroed settings block for an inspection (inspect_start
 * frees it). */
static ns_status_t inspect_prepare(nrt_ctx_t **out_ctx, nrt_profile_state_t **out_cfg)
{
	NS_RETURN_IF_ERROR(nrt_ctx_enter(out_ctx));
	if (!(*out_cfg = calloc(1, sizeof(**out_cfg))))
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the inspection's settings");
	return NS_OK;
}

/* Starts the inspection cfg describes (inspect_sys, inspect_dev, warmup,
 * out_dir and the options-only fields) unless reading them failed (st, passed
 * on), one runs or continuous profiling forbids its device profile. Frees
 * cfg. */
static ns_status_t inspect_start(nrt_profile_state_t *p, nrt_profile_state_t *cfg, ns_status_t st,
				 const char *dev_setting)
{
	pthread_mutex_lock(&g_prof.lock);
	if (st) {
		/* the settings could not be read: passed on */
	} else if (p->inspect) {
		st = nrt_status_make(NRT_INVALID, "an inspection is already running (NEURON_RT_INSPECT_ENABLE at "
				     "nrt_init, or an earlier nrt_inspect_begin or "
				     "nrt_inspect_begin_with_options): call nrt_inspect_stop first");
	} else if (p->cont_active && cfg->inspect_dev != DEV_OFF) {
		st = nrt_status_make(NRT_INVALID, "continuous profiling is running; a device profile cannot be "
				     "inspected alongside (call nrt_profile_continuous_stop, or %s)", dev_setting);
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
	free(cfg);
	if (!st)
		arm_exit_writer();
	return st;
}

ns_status_t nrt_profile_inspect_begin(const char *func)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *cfg;
	NS_RETURN_IF_ERROR(inspect_prepare(&ctx, &cfg));
	return inspect_start(ctx->profile, cfg, read_inspect_env(cfg, func),
			     "set NEURON_RT_INSPECT_DEVICE_PROFILE=0");
}

ns_status_t nrt_profile_inspect_begin_with(const nrt_inspect_settings_t *s)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *cfg;
	NS_RETURN_IF_ERROR(inspect_prepare(&ctx, &cfg));
	ns_status_t st = set_out_dir(cfg, s->out_dir, "the output directory",
				     "choose a writable one with nrt_inspect_config_set_output_dir");
	cfg->inspect_idle = !s->record;
	cfg->inspect_sys = s->record && s->sys;
	cfg->inspect_dev = s->record ? (dev_mode_t)s->dev_mode : DEV_OFF;
	cfg->inspect_first_session = s->first_session;
	if (s->nc_off) {
		cfg->inspect_nc_filter = true;
		memcpy(cfg->inspect_nc_off, s->nc_off, sizeof(cfg->inspect_nc_off));
	}
	return inspect_start(ctx->profile, cfg, st, "disable the device profile in the options");
}

ns_status_t nrt_profile_inspect_stop(const char *func)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	if (!p->inspect)
		return nrt_profile_leave(nrt_status_make(NRT_INVALID, "no inspection is running: call "
						  "nrt_inspect_begin first (or set NEURON_RT_INSPECT_ENABLE=1 "
						  "before nrt_init)"));
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
	return nrt_profile_leave(NS_OK);
}

/* ---- continuous profiling (profile_continuous.c) ---- */

ns_status_t nrt_profile_continuous_begin(void)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	ns_status_t st = NS_OK;
	if (p->cont_active) {
		st = nrt_status_make(NRT_INVALID, "continuous profiling is already running");
	} else if (p->inspect && p->inspect_dev != DEV_OFF) {
		st = nrt_status_make(NRT_INVALID, "an inspection with a device profile is running "
				     "(NEURON_RT_INSPECT_DEVICE_PROFILE); continuous profiling does not start "
				     "alongside it");
	} else if (!(p->cont_latest = calloc(ctx->n_cores ? ctx->n_cores : 1, sizeof(*p->cont_latest)))) {
		st = nrt_status_make(NRT_RESOURCE, "out of host memory for the latest execution of %u cores",
				     ctx->n_cores);
	} else {
		p->cont_n = ctx->n_cores;
		p->cont_active = true;
		atomic_store(&p->cont_on, true);
	}
	return nrt_profile_leave(st);
}

/* Under g_prof.lock: writes the latest execution of core vnc into dir. */
static ns_status_t continuous_write_locked(nrt_profile_state_t *p, uint32_t vnc, const char *dir, char *out_path,
					  size_t out_len)
{
	static atomic_uint saves; /* names stay unique within the process */
	const nrt_trace_job_t *j;
	if (!p->cont_active)
		return nrt_status_make(NRT_INVALID, "continuous profiling is not running: call "
				       "nrt_profile_continuous_start first");
	if (vnc >= p->cont_n)
		return nrt_status_make(NRT_INVALID, "NeuronCore %u is not visible (%u visible)", vnc, p->cont_n);
	if (!(j = p->cont_latest[vnc]))
		return nrt_status_make(NRT_INVALID, "nothing executed on NeuronCore %u since continuous "
				       "profiling started", vnc);
	if (nrt_trace_mkdirs(dir) != 0)
		return nrt_status_make(NRT_FAILURE, "cannot create the output directory '%s': %s", dir,
				       strerror(errno));
	char model[64];
	snprintf(model, sizeof(model), "%.63s", j->model->name);
	for (char *c = model; *c; c++)
		if (*c == '/' || *c == ' ')
			*c = '_';
	int w = snprintf(out_path, out_len, "%s/%s_nc%u_exec%llu_pid%ld_%u.json.gz", dir, model, vnc,
			 (unsigned long long)j->exec_index, (long)getpid(), atomic_fetch_add(&saves, 1));
	if (w < 0 || (size_t)w >= out_len)
		return nrt_status_make(NRT_INVALID, "output directory name '%.64s...' is too long", dir);
	nrt_trace_write_args_t a = {
		.path = out_path,
		.gzip = true,
		.from_ns = j->exec_start_ns, /* the execution, from its nrt_execute call */
		.to_ns = j->end_ns,
		.jobs = j,
		.session = "continuous",
		.device_profile = "continuous",
		.backend = p->backend,
	};
	return nrt_trace_write(&a);
}

ns_status_t nrt_profile_continuous_write(uint32_t vnc, const char *dir, char *out_path, size_t out_len)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	return nrt_profile_leave(continuous_write_locked(p, vnc, dir, out_path, out_len));
}

ns_status_t nrt_profile_continuous_end(void)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	bool was = p->cont_active;
	cont_clear_locked(p);
	return nrt_profile_leave(was ? NS_OK : nrt_status_make(NRT_INVALID, "continuous profiling is not running"));
}
