/* The runtime's metrics: the process registry behind the public API, what executions and transfers record, and XLA_METRICS_FILE. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "neuronsim/atomic_file.h"
#include "neuronsim/metrics.h"
#include "observe.h"
#include "rt_status.h"

_Static_assert((int)NRT_NEURONSIM_METRIC_TIME_NS == (int)METRICS_UNIT_TIME_NS &&
	       (int)NRT_NEURONSIM_METRIC_BYTES == (int)METRICS_UNIT_BYTES &&
	       (int)NRT_NEURONSIM_METRIC_NUMBER == (int)METRICS_UNIT_NUMBER,
	       "the public metric units are the registry's");

/* Names in the report (docs/metrics.md lists every one). */
#define M_EXECUTE_TIME "ExecuteTime"
#define M_DEVICE_MEMORY "DeviceMemoryInUse"
#define M_TO_DEVICE_TIME "TransferToDeviceTime"
#define M_FROM_DEVICE_TIME "TransferFromDeviceTime"
#define M_INBOUND "InboundData"
#define M_OUTBOUND "OutboundData"
#define C_EXECUTIONS "ExecuteComputation"
#define C_NUM_ERRORS "ExecuteNumericalError"
#define C_FAILED "ExecuteFailed"

/*
 * The process's metrics: unlike everything else in libnrt it is not part of the
 * nrt_ctx_t, because it must work before nrt_init (a tool records CompileTime
 * before loading) and survive nrt_close, as PyTorch/XLA's registry does. It is
 * created on first use and lives until the process exits.
 */
typedef struct nrt_metrics_process {
	pthread_mutex_t init_lock;        /* creation only */
	metrics_registry_t *_Atomic reg;  /* set (release) once everything below is */
	bool bad_env;                     /* XLA_METRICS_* unusable: metrics stay off */
	atomic_bool recording;            /* nrt_metrics_set_recording() */
	/* The built-in metrics, looked up once: the execution path does no
	 * name lookups. */
	metrics_metric_t *execute_time, *device_memory, *to_device_time, *from_device_time;
	metrics_metric_t *inbound, *outbound;
	metrics_counter_t *executions, *num_errors, *failed;
	char *file;                       /* XLA_METRICS_FILE (.ORDINAL added), or NULL;
					   * replaced by nrt_neuronsim_metrics_set_file (file_lock) */
	atomic_bool file_on;              /* file != NULL: the execution path's check */
	pthread_mutex_t file_lock;        /* one append at a time */
	uint64_t file_step;               /* [MetricsData; step=N] of the next report (file_lock) */
	atomic_bool file_warned;
} nrt_metrics_process_t;

static nrt_metrics_process_t g_metrics = {
	.init_lock = PTHREAD_MUTEX_INITIALIZER,
	.file_lock = PTHREAD_MUTEX_INITIALIZER,
	.recording = true,
};

void nrt_metrics_set_recording(bool on)
{
	atomic_store_explicit(&g_metrics.recording, on, memory_order_relaxed);
}

/* A non-negative integer environment variable, or -1 when unset or not one
 * (said once per variable at WARN). */
static long env_index(const char *name)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > INT32_MAX) {
		NRT_LOGW("%s=\"%s\" is not a process index (0, 1, ...): XLA_METRICS_FILE gets no ordinal from it",
			 name, s);
		return -1;
	}
	return v;
}

/* XLA_METRICS_FILE as torch_xla names it (metrics_saver): NAME.ORDINAL when
 * the job has several processes, so each writes its own file. The ordinal is
 * the process's local rank: PJRT_LOCAL_PROCESS_RANK when PJRT_LOCAL_PROCESS_COUNT
 * says more than one process, else LOCAL_RANK when WORLD_SIZE does (torchrun).
 * STDOUT and STDERR stay as they are. Returns a malloc'd name, NULL when out of memory. */
static char *metrics_file_name(const char *file)
{
	long ordinal = -1;
	if (strcmp(file, "STDOUT") != 0 && strcmp(file, "STDERR") != 0) {
		if (env_index("PJRT_LOCAL_PROCESS_COUNT") > 1)
			ordinal = env_index("PJRT_LOCAL_PROCESS_RANK");
		else if (env_index("WORLD_SIZE") > 1)
			ordinal = env_index("LOCAL_RANK");
		if (ordinal < 0 && (env_index("PJRT_LOCAL_PROCESS_COUNT") > 1 || env_index("WORLD_SIZE") > 1))
			ordinal = 0;
	}
	size_t len = strlen(file) + 24;
	char *name = malloc(len);
	if (!name)
		return NULL;
	if (ordinal >= 0)
		snprintf(name, len, "%s.%ld", file, ordinal);
	else
		snprintf(name, len, "%s", file);
	return name;
}

/* Whether a registry call worked; frees its status (the callers below only
 * branch on it: out of memory is all that can go wrong there). */
static bool worked(ns_status_t st)
{
	return ns_status_consume_code(st) == NS_STATUS_OK;
}

static NRT_STATUS create_locked(nrt_metrics_process_t *g)
{
	metrics_config_t cfg;
	ns_status_t cst = metrics_config_parse(getenv("XLA_METRICS_SAMPLES"),
					       getenv("XLA_METRICS_PERCENTILES"), &cfg);
	if (cst) {
		/* Logged once; from then on every metrics call says NRT_INVALID and
		 * executions record nothing, but run as usual. */
		NRT_LOGE("%s; metrics are off for this process", ns_status_message(cst));
		ns_status_free(cst);
		g->bad_env = true;
		return NRT_INVALID;
	}
	metrics_registry_t *r;
	if (!worked(metrics_registry_create(&cfg, &r)))
		return NRT_RESOURCE;
	const char *file = getenv("XLA_METRICS_FILE");
	char *file_copy = file && *file ? metrics_file_name(file) : NULL;
	bool ok = (!file || !*file || file_copy) &&
		  worked(metrics_metric_get(r, M_EXECUTE_TIME, METRICS_UNIT_TIME_NS, &g->execute_time)) &&
		  worked(metrics_metric_get(r, M_DEVICE_MEMORY, METRICS_UNIT_BYTES, &g->device_memory)) &&
		  worked(metrics_metric_get(r, M_TO_DEVICE_TIME, METRICS_UNIT_TIME_NS, &g->to_device_time)) &&
		  worked(metrics_metric_get(r, M_FROM_DEVICE_TIME, METRICS_UNIT_TIME_NS,
					    &g->from_device_time)) &&
		  worked(metrics_metric_get(r, M_INBOUND, METRICS_UNIT_BYTES, &g->inbound)) &&
		  worked(metrics_metric_get(r, M_OUTBOUND, METRICS_UNIT_BYTES, &g->outbound)) &&
		  worked(metrics_counter_get(r, C_EXECUTIONS, &g->executions)) &&
		  worked(metrics_counter_get(r, C_NUM_ERRORS, &g->num_errors)) &&
		  worked(metrics_counter_get(r, C_FAILED, &g->failed));
	if (!ok) {
		/* Out of memory: nothing is kept, the next call tries again. */
		free(file_copy);
		metrics_registry_destroy(r);
		return NRT_RESOURCE;
	}
	g->file = file_copy;
	atomic_store_explicit(&g->file_on, file_copy != NULL, memory_order_relaxed);
	atomic_store_explicit(&g->reg, r, memory_order_release);
	return NRT_SUCCESS;
}

/* The registry, created on first use; NULL with *out_status NRT_INVALID (bad
 * XLA_METRICS_* values, logged once) or NRT_RESOURCE (out of memory). */
static metrics_registry_t *registry(NRT_STATUS *out_status)
{
	metrics_registry_t *r = atomic_load_explicit(&g_metrics.reg, memory_order_acquire);
	if (r)
		return r;
	pthread_mutex_lock(&g_metrics.init_lock);
	NRT_STATUS st = NRT_SUCCESS;
	r = atomic_load_explicit(&g_metrics.reg, memory_order_acquire);
	if (!r) {
		st = g_metrics.bad_env ? NRT_INVALID : create_locked(&g_metrics);
		r = atomic_load_explicit(&g_metrics.reg, memory_order_acquire);
	}
	pthread_mutex_unlock(&g_metrics.init_lock);
	*out_status = st;
	return r;
}

/* ---- XLA_METRICS_FILE ----------------------------------------------------- */

/* Appends the whole report framed as torch_xla's metrics_saver frames each
 * step's ("[MetricsData; step=N]", the report, an empty line; print() adds one
 * more on STDOUT/STDERR); here a step is an execution and N counts this
 * process's reports from 0. STDOUT and STDERR name the streams (its convention
 * too). A file is opened for each report so it may be removed or rotated
 * while the process runs; one write() with O_APPEND keeps reports of several
 * processes from interleaving, and atomic_file_append makes a report all or
 * nothing (a full disk never leaves half of one for later reports to follow). */
static void append_report(metrics_registry_t *r)
{
	char *text = NULL, *framed = NULL;
	size_t len;
	int err = 0;
	/* The report is taken under the lock too, so that step N+1 never shows
	 * fewer executions than step N. */
	pthread_mutex_lock(&g_metrics.file_lock);
	const char *file = g_metrics.file;
	if (!file) {
		/* nrt_neuronsim_metrics_set_file(NULL) since the check */
		pthread_mutex_unlock(&g_metrics.file_lock);
		return;
	}
	FILE *stream = strcmp(file, "STDOUT") == 0 ? stdout : strcmp(file, "STDERR") == 0 ? stderr : NULL;
	if (!worked(metrics_report(r, &text, &len))) {
		err = ENOMEM;
		goto out;
	}
	size_t cap = len + 64;
	framed = malloc(cap);
	int n = framed ? snprintf(framed, cap, "[MetricsData; step=%" PRIu64 "]\n%s\n%s", g_metrics.file_step++,
				  text, stream ? "\n" : "") : -1;
	if (n < 0 || (size_t)n >= cap) {
		err = ENOMEM;
	} else if (stream) {
		if (fwrite(framed, 1, (size_t)n, stream) != (size_t)n || fflush(stream) != 0)
			err = errno ? errno : EIO;
	} else if (atomic_file_append(file, framed, (size_t)n, 0644, NULL) != 0) {
		/* whole report or none: a full disk leaves the file as it was, and
		 * a symlink planted at the name is not followed */
		err = errno ? errno : EIO;
	}
out:
	if (err && !atomic_exchange(&g_metrics.file_warned, true))
		NRT_LOGE("cannot append the metrics report to XLA_METRICS_FILE '%s': %s (said once; "
			 "executions are not affected)", file,
			 err == ELOOP ? "it is a symbolic link, which is not followed" : strerror(err));
	pthread_mutex_unlock(&g_metrics.file_lock);
	free(framed);
	free(text);
}

/* ---- what the runtime records -------------------------------------------------- */

void nrt_metrics_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec)
{
	if (!atomic_load_explicit(&g_metrics.recording, memory_order_relaxed))
		return;
	NRT_STATUS st;
	metrics_registry_t *r = registry(&st);
	if (!r)
		return;
	int64_t ts = (int64_t)rec->end_ns;
	/* A failed add (a caller's nrt_neuronsim_metric_add took one of these
	 * names with another unit after a clear) drops the sample, as documented. */
	if (rec->ran) {
		ns_status_ignore(metrics_metric_add(g_metrics.execute_time, METRICS_UNIT_TIME_NS, ts,
						    (double)(rec->end_ns - rec->start_ns)));
		metrics_counter_add(g_metrics.executions, 1);
	}
	ns_status_ignore(metrics_metric_add(g_metrics.device_memory, METRICS_UNIT_BYTES, ts,
					    (double)atomic_load_explicit(&ctx->mem_in_use,
									 memory_order_relaxed)));
	/* By what was found, not by the status: under
	 * NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=warning a NaN still returns success. */
	if (rec->error.kind == NRT_NEURONSIM_ERROR_NAN || rec->error.kind == NRT_NEURONSIM_ERROR_INF)
		metrics_counter_add(g_metrics.num_errors, 1);
	else if (rec->status != NRT_SUCCESS)
		metrics_counter_add(g_metrics.failed, 1);
	if (atomic_load_explicit(&g_metrics.file_on, memory_order_relaxed))
		append_report(r);
}

void nrt_metrics_transfer(bool to_device, uint64_t bytes, uint64_t ns)
{
	if (!atomic_load_explicit(&g_metrics.recording, memory_order_relaxed))
		return;
	NRT_STATUS st;
	if (!registry(&st))
		return;
	int64_t ts = (int64_t)ns_monotonic_ns();
	ns_status_ignore(metrics_metric_add(to_device ? g_metrics.to_device_time
						      : g_metrics.from_device_time,
					    METRICS_UNIT_TIME_NS, ts, (double)ns));
	ns_status_ignore(metrics_metric_add(to_device ? g_metrics.inbound : g_metrics.outbound,
					    METRICS_UNIT_BYTES, ts, (double)bytes));
}

/* ---- public API (nrt_neuronsim.h) ------------------------------------------------ */

NRT_STATUS nrt_neuronsim_metric_add(const char *name, nrt_neuronsim_metric_unit_t unit, double value)
{
	if (!name || !*name) {
		NRT_LOGE("%s: metric name is NULL or empty", __func__);
		return NRT_INVALID;
	}
	char shown[METRICS_SHOWN_NAME_SIZE];
	if ((unsigned)unit >= METRICS_UNIT_COUNT) {
		NRT_LOGE("%s: metric '%s': unit %d is not one of NRT_NEURONSIM_METRIC_TIME_NS (0), "
			 "_BYTES (1), _NUMBER (2)", __func__, metrics_shown_name(name, shown), (int)unit);
		return NRT_INVALID;
	}
	if (!isfinite(value)) {
		NRT_LOGE("%s: metric '%s': value %g is not a finite number", __func__,
			 metrics_shown_name(name, shown), value);
		return NRT_INVALID;
	}
	NRT_STATUS st;
	metrics_registry_t *r = registry(&st);
	if (!r)
		return st;
	metrics_metric_t *m;
	ns_status_t ms = metrics_metric_get(r, name, (metrics_unit_t)unit, &m);
	if (!ms)
		ms = metrics_metric_add(m, (metrics_unit_t)unit, (int64_t)ns_monotonic_ns(), value);
	return nrt_status_report(__func__, ms);
}

NRT_STATUS nrt_neuronsim_counter_add(const char *name, int64_t delta)
{
	if (!name || !*name) {
		NRT_LOGE("%s: counter name is NULL or empty", __func__);
		return NRT_INVALID;
	}
	NRT_STATUS st;
	metrics_registry_t *r = registry(&st);
	if (!r)
		return st;
	metrics_counter_t *c;
	st = nrt_status_report(__func__, metrics_counter_get(r, name, &c));
	if (st != NRT_SUCCESS)
		return st;
	metrics_counter_add(c, delta);
	return NRT_SUCCESS;
}

int64_t nrt_neuronsim_counter_value(const char *name)
{
	NRT_STATUS st;
	metrics_registry_t *r = registry(&st);
	return r ? metrics_counter_value(r, name) : 0;
}

char *nrt_neuronsim_metrics_report(void)
{
	NRT_STATUS st;
	metrics_registry_t *r = registry(&st);
	if (!r)
		return st == NRT_RESOURCE ? NULL : strdup("");
	char *text;
	return worked(metrics_report(r, &text, NULL)) ? text : NULL;
}

NRT_STATUS nrt_neuronsim_metrics_set_file(const char *file)
{
	NRT_STATUS st;
	if (!registry(&st))
		return st;  /* bad XLA_METRICS_* (said once) or out of memory */
	char *name = NULL;
	if (file && *file && !(name = metrics_file_name(file))) {
		NRT_LOGE("%s: out of memory", __func__);
		return NRT_RESOURCE;
	}
	pthread_mutex_lock(&g_metrics.file_lock);
	char *old = g_metrics.file;
	g_metrics.file = name;
	atomic_store_explicit(&g_metrics.file_on, name != NULL, memory_order_relaxed);
	/* a new file gets its own "said once" */
	atomic_store(&g_metrics.file_warned, false);
	pthread_mutex_unlock(&g_metrics.file_lock);
	free(old);
	return NRT_SUCCESS;
}

void nrt_neuronsim_metrics_clear(void)
{
	metrics_registry_t *r = atomic_load_explicit(&g_metrics.reg, memory_order_acquire);
	if (r)
		metrics_registry_clear(r);
}
