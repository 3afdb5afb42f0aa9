/* A metrics registry in the manner of PyTorch/XLA's: named metrics that keep the
 * last N samples, named integer counters, and the metrics_report() text. */
#ifndef NEURONSIM_METRICS_H
#define NEURONSIM_METRICS_H

/*
 * Pure and self-contained: no globals, no clock, no environment. The caller owns
 * the registry, passes timestamps with every sample and the environment variables'
 * values to metrics_config_parse(); libnrt keeps the process-wide registry behind
 * the public nrt_neuronsim_metric_* API (runtime/metrics.c). The report format and
 * every rule of it are in docs/metrics.md.
 *
 * Threads: everything may be called from any thread at any time. A metric or
 * counter handle stays valid until metrics_registry_destroy(), also across
 * metrics_registry_clear(), so hot paths look a name up once and keep the handle.
 *
 * Errors: a function that can fail returns a status (status.h) whose message says
 * what is wrong with which metric or counter ("metric 'Taken' already records
 * another unit than bytes (time, ...): use another name"): NS_STATUS_INVALID_ARGUMENT
 * for a bad argument (name, unit, config, or a unit other than the metric's),
 * NS_STATUS_RESOURCE_EXHAUSTED with ns_status_errno ENOMEM when out of memory.
 */

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a metric's values print. Same values as nrt_neuronsim_metric_unit_t. */
typedef enum metrics_unit {
	METRICS_UNIT_TIME_NS = 0,  /* nanoseconds, as 01s002ms003.004us */
	METRICS_UNIT_BYTES = 1,    /* as 12.50MB */
	METRICS_UNIT_NUMBER = 2,   /* as 3.14 */
	METRICS_UNIT_COUNT
} metrics_unit_t;

#define METRICS_DEFAULT_SAMPLES 1024u
#define METRICS_MAX_SAMPLES (1u << 20)     /* 16 MiB of samples per metric */
#define METRICS_MAX_PERCENTILES 64u
#define METRICS_DEFAULT_PERCENTILES "0.01:0.05:0.1:0.2:0.5:0.8:0.9:0.95:0.99"
#define METRICS_NAME_MAX 255u              /* bytes, without the NUL */
#define METRICS_SHOWN_NAME_SIZE 68u        /* metrics_shown_name()'s buffer */

typedef struct metrics_config {
	uint32_t max_samples;      /* samples kept per metric, 1..METRICS_MAX_SAMPLES */
	uint32_t n_percentiles;    /* 1..METRICS_MAX_PERCENTILES */
	double percentiles[METRICS_MAX_PERCENTILES]; /* ascending, each in (0, 1) */
} metrics_config_t;

typedef struct metrics_registry metrics_registry_t;
typedef struct metrics_metric metrics_metric_t;
typedef struct metrics_counter metrics_counter_t;

/* Short name of a unit ("time", "bytes", "number"); "?" when out of range. */
const char *metrics_unit_name(metrics_unit_t unit);

/* name (non-NULL) as a message shows it, in buf: cut at 64 bytes ("..." added),
 * control characters as '?', so that a bad name still makes one readable line.
 * Returns buf. */
const char *metrics_shown_name(const char *name, char buf[static METRICS_SHOWN_NAME_SIZE]);

/* The defaults: METRICS_DEFAULT_SAMPLES and METRICS_DEFAULT_PERCENTILES. */
void metrics_config_default(metrics_config_t *out);

/* Parses the values of XLA_METRICS_SAMPLES (a decimal integer
 * 1..METRICS_MAX_SAMPLES) and XLA_METRICS_PERCENTILES (':'-separated numbers in
 * (0, 1), sorted ascending afterwards, as PyTorch/XLA does). NULL or "" means the
 * default. A bad value is NS_STATUS_INVALID_ARGUMENT (status.h) with a one-line
 * message naming the variable, its value and what is accepted; *out is then the
 * default config. */
ns_status_t metrics_config_parse(const char *samples, const char *percentiles,
				 metrics_config_t *out);

/* Creates an empty registry that the caller owns and releases with
 * metrics_registry_destroy(). The config is copied. INVALID_ARGUMENT naming the
 * field if the config is out of range; *out_reg is NULL on failure. */
ns_status_t metrics_registry_create(const metrics_config_t *cfg, metrics_registry_t **out_reg);
/* Frees the registry and every handle it gave out. NULL is a no-op. */
void metrics_registry_destroy(metrics_registry_t *reg);

/* Resets every metric and counter: they leave the report, counters read 0 and a
 * metric name may then be used with another unit. Handles stay valid. */
void metrics_registry_clear(metrics_registry_t *reg);

/* The metric called name, created with unit on first use (its sample ring is
 * allocated then, once). INVALID_ARGUMENT for a NULL or empty name, a name longer
 * than METRICS_NAME_MAX or containing control characters, a bad unit, or when it
 * has another unit (a metric takes the unit it is first used with, and again
 * after metrics_registry_clear()). */
ns_status_t metrics_metric_get(metrics_registry_t *reg, const char *name, metrics_unit_t unit,
			       metrics_metric_t **out_metric);
/* Adds one sample taken at timestamp_ns (any monotonic clock; only differences
 * matter). Once the ring is full the oldest sample is overwritten; TotalSamples
 * and Accumulator still count every sample. No allocation on success; one short
 * lock. INVALID_ARGUMENT for a bad unit or one other than the metric's. */
ns_status_t metrics_metric_add(metrics_metric_t *m, metrics_unit_t unit, int64_t timestamp_ns,
			       double value);

/* The counter called name, created at 0 on first use. Same name rules as metrics;
 * counters and metrics have separate name spaces. */
ns_status_t metrics_counter_get(metrics_registry_t *reg, const char *name,
				metrics_counter_t **out_counter);
/* Adds delta (atomic; wraps around like int64 two's complement). */
void metrics_counter_add(metrics_counter_t *c, int64_t delta);
int64_t metrics_counter_read(const metrics_counter_t *c);
/* Value of the counter called name; 0 if there is none. */
int64_t metrics_counter_value(metrics_registry_t *reg, const char *name);

/* Renders the report (docs/metrics.md) into a malloc'd NUL-terminated string the
 * caller frees; *out_len (may be NULL) gets its length. An empty registry gives "".
 * On failure (out of memory) *out_text is NULL. */
ns_status_t metrics_report(metrics_registry_t *reg, char **out_text, size_t *out_len);

/* The value formatters of the report. Each writes at most len bytes including the
 * NUL (truncating, never overflowing) and returns the length the whole text needs,
 * as snprintf does.
 * time: ns as d/h/m/s/ms whole units (truncated, from the first non-zero one,
 *       zero-padded to 2 digits, ms to 3) then microseconds with three decimals,
 *       zero-padded to 7 characters: 0 -> 000.000us, 1228773 -> 001ms228.773us.
 * bytes: divided by 1024 while >= 1024 (up to PB), two decimals: 12.50MB.
 * number: two decimals. */
size_t metrics_format_time(double ns, char *buf, size_t len);
size_t metrics_format_bytes(double bytes, char *buf, size_t len);
size_t metrics_format_number(double value, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_METRICS_H */
