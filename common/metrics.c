/* The metrics registry: sample rings, counters, the PyTorch/XLA report text and its value formatters. */
#include "neuronsim/metrics.h"
#include "neuronsim/quantile.h"
#include "neuronsim/status.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct metrics_sample {
	int64_t ts;
	double value;
} metrics_sample_t;

#define UNIT_UNSET (-1)

struct metrics_metric {
	atomic_bool busy;           /* spin lock of the fields below (metric_lock) */
	int unit;                   /* metrics_unit_t, or UNIT_UNSET after a clear */
	uint32_t cap;               /* slots in ring (the registry's max_samples) */
	uint32_t pos;               /* next slot of ring */
	uint64_t count;             /* samples since creation or the last clear */
	double accumulator;         /* sum of those samples */
	char name[METRICS_NAME_MAX + 1];
	metrics_sample_t ring[];    /* cfg.max_samples slots */
};

struct metrics_counter {
	_Atomic uint64_t value;     /* int64 bits: unsigned so that overflow wraps */
	char name[METRICS_NAME_MAX + 1];
};

/* One sorted array of pointers per kind: binary search to find, and the report
 * walks it in name order. Entries are never freed before the registry, so handles
 * stay valid. */
typedef struct name_table {
	void **items;
	size_t n, cap;
} name_table_t;

struct metrics_registry {
	metrics_config_t cfg;
	pthread_mutex_t lock;       /* both tables: lookup, insertion, iteration */
	name_table_t metrics;       /* metrics_metric_t * */
	name_table_t counters;      /* metrics_counter_t * */
};

/* Both entry types start their name at a different offset; the table search
 * gets it through this. */
typedef const char *(*name_of_fn)(const void *item);

static const char *metric_name_of(const void *item) { return ((const metrics_metric_t *)item)->name; }
static const char *counter_name_of(const void *item) { return ((const metrics_counter_t *)item)->name; }

/* Index of name in t, or where it would be inserted (with *found false). */
static size_t table_find(const name_table_t *t, name_of_fn name_of, const char *name, bool *found)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name_of(t->items[mid]), name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static bool table_insert(name_table_t *t, size_t at, void *item)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		void **items = realloc(t->items, cap * sizeof(*items));
		if (!items)
			return false;
		t->items = items;
		t->cap = cap;
	}
	memmove(&t->items[at + 1], &t->items[at], (t->n - at) * sizeof(*t->items));
	t->items[at] = item;
	t->n++;
	return true;
}

/* A metric's lock is held for a few stores (a sample) or one copy of the window
 * (a report). Every execution takes it twice, so it is a spin lock: one atomic
 * exchange to take, a plain release store to give back, where a mutex costs an
 * atomic operation each way. A holder that is preempted is waited for with
 * sched_yield(), not by burning the waiter's time slice. */
static void metric_lock(metrics_metric_t *m)
{
	while (atomic_exchange_explicit(&m->busy, true, memory_order_acquire)) {
		for (unsigned spins = 0; atomic_load_explicit(&m->busy, memory_order_relaxed); spins++)
			if (spins >= 100) {
				sched_yield();
				spins = 0;
			}
	}
}

static void metric_unlock(metrics_metric_t *m)
{
	atomic_store_explicit(&m->busy, false, memory_order_release);
}

const char *metrics_unit_name(metrics_unit_t unit)
{
	static const char *const names[] = { "time", "bytes", "number" };
	return (unsigned)unit < METRICS_UNIT_COUNT ? names[unit] : "?";
}

/* ---- configuration ------------------------------------------------------- */

/* A bad configuration value: the message names the variable, its value and what
 * is accepted. */
#define config_fail(...) ns_status_make(NS_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

static ns_status_t parse_percentiles(const char *s, metrics_config_t *out)
{
	static const char what[] =
		"expected ':'-separated fractions between 0 and 1 (exclusive), such as "
		METRICS_DEFAULT_PERCENTILES;
	uint32_t n = 0;
	const char *p = s;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (n == METRICS_MAX_PERCENTILES)
			return config_fail("XLA_METRICS_PERCENTILES=\"%s\" is not valid: more than %u values",
					   s, METRICS_MAX_PERCENTILES);
		if (len == 0)
			return config_fail("XLA_METRICS_PERCENTILES=\"%s\" is not valid: value %u is empty; %s",
					   s, n + 1, what);
		char item[64];
		if (len >= sizeof(item))
			return config_fail("XLA_METRICS_PERCENTILES=\"%s\" is not valid: value %u is too long; %s",
					   s, n + 1, what);
		memcpy(item, p, len);
		item[len] = '\0';
		char *stop;
		errno = 0;
		double v = strtod(item, &stop);
		if (stop == item || *stop || errno || !(v > 0.0 && v < 1.0))
			return config_fail("XLA_METRICS_PERCENTILES=\"%s\" is not valid: \"%s\" is not a number "
					   "between 0 and 1 (exclusive); %s", s, item, what);
		out->percentiles[n++] = v;
		if (!end)
			break;
		p = end + 1;
	}
	out->n_percentiles = n;
	qsort(out->percentiles, n, sizeof(out->percentiles[0]), ns_cmp_double);
	return NS_OK;
}

void metrics_config_default(metrics_config_t *out)
{
	memset(out, 0, sizeof(*out));
	out->max_samples = METRICS_DEFAULT_SAMPLES;
	static const double def[] = { 0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99 };
	out->n_percentiles = sizeof(def) / sizeof(def[0]);
	memcpy(out->percentiles, def, sizeof(def));
}

ns_status_t metrics_config_parse(const char *samples, const char *percentiles,
				 metrics_config_t *out)
{
	metrics_config_default(out);
	if (samples && *samples) {
		uint64_t v = 0;
		const char *p = samples;
		for (; *p >= '0' && *p <= '9' && v <= METRICS_MAX_SAMPLES; p++)
			v = v * 10 + (uint64_t)(*p - '0');
		if (p == samples || *p || v < 1 || v > METRICS_MAX_SAMPLES)
			return config_fail("XLA_METRICS_SAMPLES=\"%s\" is not valid: expected an integer "
					   "1..%u (the samples each metric keeps; default %u)",
					   samples, METRICS_MAX_SAMPLES, METRICS_DEFAULT_SAMPLES);
		out->max_samples = (uint32_t)v;
	}
	if (percentiles && *percentiles) {
		ns_status_t st = parse_percentiles(percentiles, out);
		if (st) {
			metrics_config_default(out);
			return st;
		}
	}
	return NS_OK;
}

static ns_status_t config_check(const metrics_config_t *c)
{
	if (c->max_samples < 1 || c->max_samples > METRICS_MAX_SAMPLES)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "metrics config: max_samples %u is not in 1..%u", c->max_samples,
				      METRICS_MAX_SAMPLES);
	if (c->n_percentiles < 1 || c->n_percentiles > METRICS_MAX_PERCENTILES)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "metrics config: n_percentiles %u is not in 1..%u",
				      c->n_percentiles, METRICS_MAX_PERCENTILES);
	for (uint32_t i = 0; i < c->n_percentiles; i++) {
		if (!(c->percentiles[i] > 0.0 && c->percentiles[i] < 1.0))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "metrics config: percentiles[%u] = %g is not in (0, 1)", i,
					      c->percentiles[i]);
		if (i && c->percentiles[i] < c->percentiles[i - 1])
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "metrics config: percentiles[%u] = %g is below the one "
					      "before it (%g): they must be ascending", i,
					      c->percentiles[i], c->percentiles[i - 1]);
	}
	return NS_OK;
}

/* ---- registry ------------------------------------------------------------ */

ns_status_t metrics_registry_create(const metrics_config_t *cfg, metrics_registry_t **out_reg)
{
	*out_reg = NULL;
	if (!cfg)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "metrics config: NULL");
	NS_RETURN_IF_ERROR(config_check(cfg));
	metrics_registry_t *r = calloc(1, sizeof(*r));
	if (!r)
		return ns_status_make_errno(ENOMEM, "out of memory creating the metrics registry");
	r->cfg = *cfg;
	pthread_mutex_init(&r->lock, NULL);
	*out_reg = r;
	return NS_OK;
}

void metrics_registry_destroy(metrics_registry_t *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->metrics.n; i++) {
		metrics_metric_t *m = reg->metrics.items[i];
		free(m);
	}
	for (size_t i = 0; i < reg->counters.n; i++)
		free(reg->counters.items[i]);
	free(reg->metrics.items);
	free(reg->counters.items);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

void metrics_registry_clear(metrics_registry_t *reg)
{
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->metrics.n; i++) {
		metrics_metric_t *m = reg->metrics.items[i];
		metric_lock(m);
		m->unit = UNIT_UNSET;
		m->pos = 0;
		m->count = 0;
		m->accumulator = 0.0;
		metric_unlock(m);
	}
	for (size_t i = 0; i < reg->counters.n; i++)
		atomic_store_explicit(&((metrics_counter_t *)reg->counters.items[i])->value, 0,
				      memory_order_relaxed);
	pthread_mutex_unlock(&reg->lock);
}

const char *metrics_shown_name(const char *name, char buf[static METRICS_SHOWN_NAME_SIZE])
{
	size_t n = 0;
	for (; name[n] && n < 64; n++)
		buf[n] = (unsigned char)name[n] < 0x20 || name[n] == 0x7f ? '?' : name[n];
	snprintf(buf + n, METRICS_SHOWN_NAME_SIZE - n, "%s", name[n] ? "..." : "");
	return buf;
}

/* Checks a metric's or counter's name (kind says which, for the message). */
static ns_status_t name_check(const char *kind, const char *name)
{
	if (!name || !*name)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s name is NULL or empty", kind);
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++, n++)
		if (*p < 0x20 || *p == 0x7f || n >= METRICS_NAME_MAX) {
			char shown[METRICS_SHOWN_NAME_SIZE];
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "%s name '%s' is invalid: names are 1..%u bytes without "
					      "control characters", kind, metrics_shown_name(name, shown),
					      METRICS_NAME_MAX);
		}
	return NS_OK;
}

static ns_status_t unit_check(const char *name, metrics_unit_t unit)
{
	if ((unsigned)unit < METRICS_UNIT_COUNT)
		return NS_OK;
	char shown[METRICS_SHOWN_NAME_SIZE];
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
			      "metric '%s': unit %d is not one of time (0), bytes (1), number (2)",
			      metrics_shown_name(name, shown), (int)unit);
}

/* Takes the metric's unit, or checks it. Called with the metric locked. */
static ns_status_t claim_unit(metrics_metric_t *m, metrics_unit_t unit)
{
	if (m->unit == (int)unit)
		return NS_OK;
	if (m->unit != UNIT_UNSET)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "metric '%s' already records another unit than %s (%s, the unit "
				      "of its first sample until the registry is cleared): use another "
				      "name", m->name, metrics_unit_name(unit),
				      metrics_unit_name((metrics_unit_t)m->unit));
	m->unit = (int)unit;
	return NS_OK;
}

ns_status_t metrics_metric_get(metrics_registry_t *reg, const char *name, metrics_unit_t unit,
			       metrics_metric_t **out_metric)
{
	*out_metric = NULL;
	if (!reg)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: registry is NULL", __func__);
	NS_RETURN_IF_ERROR(name_check("metric", name));
	NS_RETURN_IF_ERROR(unit_check(name, unit));
	pthread_mutex_lock(&reg->lock);
	bool found;
	size_t at = table_find(&reg->metrics, metric_name_of, name, &found);
	metrics_metric_t *m;
	if (found) {
		m = reg->metrics.items[at];
	} else {
		m = calloc(1, sizeof(*m) + (size_t)reg->cfg.max_samples * sizeof(m->ring[0]));
		if (!m || !table_insert(&reg->metrics, at, m)) {
			pthread_mutex_unlock(&reg->lock);
			free(m);
			return ns_status_make_errno(ENOMEM, "out of memory creating metric '%s' (%u "
						    "samples)", name, reg->cfg.max_samples);
		}
		m->unit = UNIT_UNSET;
		m->cap = reg->cfg.max_samples;
		snprintf(m->name, sizeof(m->name), "%s", name);
	}
	pthread_mutex_unlock(&reg->lock);
	metric_lock(m);
	ns_status_t st = claim_unit(m, unit);
	metric_unlock(m);
	if (!st)
		*out_metric = m;
	return st;
}

ns_status_t metrics_metric_add(metrics_metric_t *m, metrics_unit_t unit, int64_t timestamp_ns,
			       double value)
{
	NS_RETURN_IF_ERROR(unit_check(m->name, unit));
	metric_lock(m);
	ns_status_t st = claim_unit(m, unit);
	if (!st) {
		m->ring[m->pos] = (metrics_sample_t){ timestamp_ns, value };
		if (++m->pos == m->cap)
			m->pos = 0;
		m->count++;
		m->accumulator += value;
	}
	metric_unlock(m);
	return st;
}

ns_status_t metrics_counter_get(metrics_registry_t *reg, const char *name,
				metrics_counter_t **out_counter)
{
	*out_counter = NULL;
	if (!reg)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: registry is NULL", __func__);
	NS_RETURN_IF_ERROR(name_check("counter", name));
	pthread_mutex_lock(&reg->lock);
	bool found;
	size_t at = table_find(&reg->counters, counter_name_of, name, &found);
	metrics_counter_t *c;
	if (found) {
		c = reg->counters.items[at];
	} else {
		c = calloc(1, sizeof(*c));
		if (!c || !table_insert(&reg->counters, at, c)) {
			pthread_mutex_unlock(&reg->lock);
			free(c);
			return ns_status_make_errno(ENOMEM, "out of memory creating counter '%s'",
						    name);
		}
		snprintf(c->name, sizeof(c->name), "%s", name);
	}
	pthread_mutex_unlock(&reg->lock);
	*out_counter = c;
	return NS_OK;
}

void metrics_counter_add(metrics_counter_t *c, int64_t delta)
{
	atomic_fetch_add_explicit(&c->value, (uint64_t)delta, memory_order_relaxed);
}

int64_t metrics_counter_read(const metrics_counter_t *c)
{
	return (int64_t)atomic_load_explicit(&((metrics_counter_t *)c)->value, memory_order_relaxed);
}

int64_t metrics_counter_value(metrics_registry_t *reg, const char *name)
{
	if (!reg || !name)
		return 0;
	int64_t v = 0;
	pthread_mutex_lock(&reg->lock);
	bool found;
	size_t at = table_find(&reg->counters, counter_name_of, name, &found);
	if (found)
		v = metrics_counter_read(reg->counters.items[at]);
	pthread_mutex_unlock(&reg->lock);
	return v;
}

/* ---- value formatters ---------------------------------------------------- */

/* Room for any double through any formatter: "%.0f" of DBL_MAX is 309 digits and
 * a time has six parts. */
#define FMT_MAX 4096

/* Appends s right-aligned to width with '0' in front, as a C++ stream with
 * fill('0') and width(w) pads (the fill goes before a sign too). */
static size_t put_padded(char *out, size_t at, const char *s, size_t width)
{
	size_t l = strlen(s);
	for (; l < width; width--)
		out[at++] = '0';
	memcpy(out + at, s, l);
	return at + l;
}

static size_t put_str(char *out, size_t at, const char *s)
{
	size_t l = strlen(s);
	memcpy(out + at, s, l);
	return at + l;
}

/* PyTorch/XLA's MetricFnTime layout: whole days, hours, minutes and seconds (2
 * digits) and milliseconds (3 digits) from the first unit that is at least 1,
 * then the rest in microseconds with 3 decimals in 7 characters. Whole units are
 * truncated, as in the reports torch_xla prints (07s703ms868.692us). */
static size_t fmt_time(double v, char *out)
{
	static const struct {
		const char *suffix;
		double scaler;
		size_t width;
	} parts[] = {
		{ "d", 86400.0 * 1e9, 2 }, { "h", 3600.0 * 1e9, 2 }, { "m", 60.0 * 1e9, 2 },
		{ "s", 1e9, 2 }, { "ms", 1e6, 3 },
	};
	char num[400];
	size_t n = 0;
	bool started = false;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		double c = v / parts[i].scaler;
		if (!(c >= 1.0 || started))
			continue;
		double whole = floor(c);
		snprintf(num, sizeof(num), "%.0f", whole);
		n = put_padded(out, n, num, parts[i].width);
		n = put_str(out, n, parts[i].suffix);
		v -= whole * parts[i].scaler;
		if (v < 0) /* rounding of whole * scaler */
			v = 0;
		started = true;
	}
	snprintf(num, sizeof(num), "%.3f", v / 1e3);
	n = put_padded(out, n, num, 7);
	n = put_str(out, n, "us");
	out[n] = '\0';
	return n;
}

static size_t fmt_bytes(double v, char *out)
{
	static const char *const suffix[] = { "B", "KB", "MB", "GB", "TB", "PB" };
	size_t s = 0;
	for (; s + 1 < sizeof(suffix) / sizeof(suffix[0]) && v >= 1024.0; s++)
		v /= 1024.0;
	return (size_t)snprintf(out, FMT_MAX, "%.2f%s", v, suffix[s]);
}

static size_t fmt_number(double v, char *out)
{
	return (size_t)snprintf(out, FMT_MAX, "%.2f", v);
}

static size_t fmt_unit(int unit, double v, char *out)
{
	switch (unit) {
	case METRICS_UNIT_TIME_NS: return fmt_time(v, out);
	case METRICS_UNIT_BYTES: return fmt_bytes(v, out);
	default: return fmt_number(v, out);
	}
}

static size_t copy_out(const char *s, size_t n, char *buf, size_t len)
{
	if (buf && len)
		snprintf(buf, len, "%s", s);
	return n;
}

size_t metrics_format_time(double ns, char *buf, size_t len)
{
	char tmp[FMT_MAX];
	return copy_out(tmp, fmt_time(ns, tmp), buf, len);
}

size_t metrics_format_bytes(double bytes, char *buf, size_t len)
{
	char tmp[FMT_MAX];
	return copy_out(tmp, fmt_bytes(bytes, tmp), buf, len);
}

size_t metrics_format_number(double value, char *buf, size_t len)
{
	char tmp[FMT_MAX];
	return copy_out(tmp, fmt_number(value, tmp), buf, len);
}

/* ---- the report ----------------------------------------------------------- */

/* Growable text; a failed allocation sets oom and drops what follows. */
typedef struct text {
	char *p;
	size_t len, cap;
	bool oom;
} text_t;

static void text_add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_t *t, const char *fmt, ...)
{
	if (t->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->p && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap : 4096;
		while (cap - t->len <= (size_t)n)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (!p) {
			t->oom = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
}

/* One "Metric:" block, as PyTorch/XLA's EmitMetricInfo lays it out. win holds
 * the n >= 1 samples of the window, oldest first; vals is scratch for n values. */
static void emit_metric(text_t *t, const metrics_config_t *cfg, const char *name, int unit,
			uint64_t count, double accumulator, const metrics_sample_t *win, size_t n,
			double *vals)
{
	char v[FMT_MAX];
	text_add(t, "Metric: %s\n", name);
	text_add(t, "  TotalSamples: %llu\n", (unsigned long long)count);
	fmt_unit(unit, accumulator, v);
	text_add(t, "  Accumulator: %s\n", v);
	/* The rates cover the window only: its values over the time from its first
	 * to its last sample, in the order they were added. Same arithmetic as
	 * torch_xla, so the digits agree. */
	double total = 0.0;
	for (size_t i = 0; i < n; i++)
		total += win[i].value;
	int64_t delta = (int64_t)((uint64_t)win[n - 1].ts - (uint64_t)win[0].ts);
	if (delta > 0) {
		double value_sec = 1e6 * (total / ((double)delta / 1000.0));
		fmt_unit(unit, value_sec, v);
		text_add(t, "  ValueRate: %s / second\n", v);
		double count_sec = 1e6 * ((double)n / ((double)delta / 1000.0));
		text_add(t, "  Rate: %g / second\n", count_sec);
	}
	for (size_t i = 0; i < n; i++)
		vals[i] = win[i].value;
	qsort(vals, n, sizeof(*vals), ns_cmp_double);
	text_add(t, "  Percentiles: ");
	for (uint32_t i = 0; i < cfg->n_percentiles; i++) {
		/* Nearest rank, rounded down: index floor(p * n) of the sorted window. */
		size_t idx = (size_t)(cfg->percentiles[i] * (double)n);
		if (idx >= n)
			idx = n - 1;
		fmt_unit(unit, vals[idx], v);
		text_add(t, "%s%g%%=%s", i ? "; " : "", cfg->percentiles[i] * 100.0, v);
	}
	text_add(t, "\n");
}

/* PyTorch/XLA prints two registries one after the other, each as its metrics
 * then its counters, by name: first the lazy-tensor core's (torch::lazy: the
 * compile-cache counters, ExecuteComputation, and the per-op counters named
 * like aten::add or xla::mul), then its runtime's (CompileTime, ExecuteTime,
 * the transfers). One registry here: its names go to the block of the
 * registry that holds them in PyTorch/XLA; every other name (neuronsim's own
 * and the caller's) goes to the runtime block. */
static bool in_lazy_block(const char *name)
{
	static const char *const lazy_names[] = { "CachedCompile", "ExecuteComputation", "UncachedCompile" };
	for (size_t i = 0; i < sizeof(lazy_names) / sizeof(lazy_names[0]); i++)
		if (strcmp(name, lazy_names[i]) == 0)
			return true;
	return strstr(name, "::") != NULL;
}

ns_status_t metrics_report(metrics_registry_t *reg, char **out_text, size_t *out_len)
{
	*out_text = NULL;
	if (out_len)
		*out_len = 0;
	if (!reg)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s: registry is NULL", __func__);
	size_t cap = reg->cfg.max_samples;
	metrics_sample_t *win = malloc(cap * sizeof(*win));
	double *vals = malloc(cap * sizeof(*vals));
	text_t t = { 0 };
	if (!win || !vals)
		t.oom = true;
	text_add(&t, "%s", "");
	pthread_mutex_lock(&reg->lock);
	for (int block = 0; block < 2; block++) {
		bool lazy = block == 0;
		for (size_t i = 0; i < reg->metrics.n && !t.oom; i++) {
			metrics_metric_t *m = reg->metrics.items[i];
			if (in_lazy_block(m->name) != lazy)
				continue;
			/* Copy under the metric's lock, format outside it: executions
			 * keep adding samples while the report is written. */
			metric_lock(m);
			uint64_t count = m->count;
			double acc = m->accumulator;
			int unit = m->unit;
			size_t n = count < m->cap ? (size_t)count : m->cap;
			if (count <= m->cap) {
				memcpy(win, m->ring, n * sizeof(*win));
			} else {
				size_t tail = m->cap - m->pos;
				memcpy(win, m->ring + m->pos, tail * sizeof(*win));
				memcpy(win + tail, m->ring, m->pos * sizeof(*win));
			}
			metric_unlock(m);
			if (count)
				emit_metric(&t, &reg->cfg, m->name, unit, count, acc, win, n, vals);
		}
		for (size_t i = 0; i < reg->counters.n && !t.oom; i++) {
			metrics_counter_t *c = reg->counters.items[i];
			int64_t v = metrics_counter_read(c);
			if (v > 0 && in_lazy_block(c->name) == lazy)
				text_add(&t, "Counter: %s\n  Value: %lld\n", c->name, (long long)v);
		}
	}
	pthread_mutex_unlock(&reg->lock);
	free(win);
	free(vals);
	if (t.oom) {
		free(t.p);
		return ns_status_make_errno(ENOMEM, "out of memory writing the metrics report");
	}
	*out_text = t.p;
	if (out_len)
		*out_len = t.len;
	return NS_OK;
}
