/* Check tests of the metrics registry: golden report text, the value formatters'
 * edge cases, percentile picks, Rate lines, configuration parsing, threads and
 * allocation failures. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/metrics.h"

/* ---- allocation failure injection (linked with -Wl,--wrap) -------------- */

static atomic_long alloc_count;
static atomic_long fail_at; /* 0 = never */

void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void *__wrap_malloc(size_t);
void *__wrap_calloc(size_t, size_t);
void *__wrap_realloc(void *, size_t);

static int should_fail(void)
{
	long f = atomic_load(&fail_at);
	return f && atomic_fetch_add(&alloc_count, 1) + 1 == f;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return should_fail() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }

/* ---- helpers ------------------------------------------------------------- */

/* Checks a registry call's status: code, and needle in its message unless NULL. */
static void expect_status(ns_status_t st, ns_status_code_t code, const char *needle,
			  const char *call)
{
	char msg[400];
	ns_status_code_t got = ns_status_consume_message(st, msg, sizeof(msg));
	ck_assert_msg(got == code, "%s: %s '%s', expected %s", call, ns_status_code_str(got), msg,
		      ns_status_code_str(code));
	if (needle)
		ck_assert_msg(strstr(msg, needle), "%s: '%s' is not in '%s'", call, needle, msg);
}
#define EXPECT_OK(call) expect_status((call), NS_STATUS_OK, NULL, #call)
#define EXPECT_BAD(call, needle) expect_status((call), NS_STATUS_INVALID_ARGUMENT, needle, #call)

static metrics_registry_t *registry(uint32_t samples, const char *percentiles)
{
	metrics_config_t cfg;
	char err[256] = "";
	char s[32];
	snprintf(s, sizeof(s), "%u", samples);
	ck_assert_msg(ns_status_consume_message(metrics_config_parse(samples ? s : NULL, percentiles, &cfg),
						err, sizeof(err)) ==
		      NS_STATUS_OK, "%s", err);
	metrics_registry_t *r = NULL;
	EXPECT_OK(metrics_registry_create(&cfg, &r));
	ck_assert_ptr_nonnull(r);
	return r;
}

static metrics_metric_t *metric(metrics_registry_t *r, const char *name, metrics_unit_t unit)
{
	metrics_metric_t *m = NULL;
	EXPECT_OK(metrics_metric_get(r, name, unit, &m));
	ck_assert_ptr_nonnull(m);
	return m;
}

static void add(metrics_metric_t *m, metrics_unit_t unit, int64_t ts, double v)
{
	EXPECT_OK(metrics_metric_add(m, unit, ts, v));
}

static metrics_counter_t *counter(metrics_registry_t *r, const char *name)
{
	metrics_counter_t *c = NULL;
	EXPECT_OK(metrics_counter_get(r, name, &c));
	ck_assert_ptr_nonnull(c);
	return c;
}

/* Checks the report of r equals want, printing both when not. */
static void expect_report(metrics_registry_t *r, const char *want)
{
	char *text = NULL;
	size_t len = 0;
	EXPECT_OK(metrics_report(r, &text, &len));
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_msg(strcmp(text, want) == 0, "report:\n%s\nwanted:\n%s", text, want);
	free(text);
}

static char *report(metrics_registry_t *r)
{
	char *text = NULL;
	EXPECT_OK(metrics_report(r, &text, NULL));
	ck_assert_ptr_nonnull(text);
	return text;
}

/* ---- formatters ------------------------------------------------------------ */

static const struct {
	double ns;
	const char *text;
} time_cases[] = {
	{ 0, "000.000us" },
	{ 0.4, "000.000us" },                 /* below the last decimal */
	{ 1, "000.001us" },
	{ 500, "000.500us" },                 /* sub-microsecond */
	{ 999, "000.999us" },
	{ 999.9996, "001.000us" },            /* the microseconds round, as in torch_xla */
	{ 1000, "001.000us" },
	{ 1890, "001.890us" },
	{ 999999, "999.999us" },
	{ 999999.9996, "1000.000us" },        /* under 1 ms, so no ms field: 7 chars is a minimum */
	{ 1e6, "001ms000.000us" },
	{ 1228773, "001ms228.773us" },
	{ 999999999, "999ms999.999us" },
	{ 1e9, "01s000ms000.000us" },         /* exactly one second */
	{ 7703868692, "07s703ms868.692us" },  /* whole units truncate: not 08s */
	{ 9969486408, "09s969ms486.408us" },
	{ 41970754699, "41s970ms754.699us" },
	{ 59999999999, "59s999ms999.999us" },
	{ 60e9, "01m00s000ms000.000us" },
	{ 369401746001, "06m09s401ms746.001us" },
	{ 3600e9, "01h00m00s000ms000.000us" },
	{ 86399999999999, "23h59m59s999ms999.999us" },
	{ 86400e9, "01d00h00m00s000ms000.000us" },  /* one day */
	{ 90061001001001, "01d01h01m01s001ms001.001us" },
	{ 8640000000001000, "100d00h00m00s000ms001.000us" }, /* the day field grows past 2 digits */
	{ -1000, "0-1.000us" },               /* negative: the stream's fill goes before the sign */
};

START_TEST(test_format_time_golden)
{
	char buf[128];
	size_t n = metrics_format_time(time_cases[_i].ns, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, time_cases[_i].text) == 0, "%.4f ns: got '%s', want '%s'",
		      time_cases[_i].ns, buf, time_cases[_i].text);
	ck_assert_uint_eq(n, strlen(time_cases[_i].text));
}
END_TEST

static const struct {
	double bytes;
	const char *text;
} byte_cases[] = {
	{ 0, "0.00B" },
	{ 1, "1.00B" },
	{ 1023, "1023.00B" },
	{ 1024, "1.00KB" },
	{ 1536, "1.50KB" },
	{ 1048575, "1024.00KB" },            /* 1023.999 KB rounds in the decimals only */
	{ 13107200, "12.50MB" },
	{ 1073741824, "1.00GB" },
	{ 1099511627776.0, "1.00TB" },
	{ 1688849860263936.0, "1.50PB" },
	{ 1152921504606846976.0, "1024.00PB" }, /* PB is the largest unit */
};

START_TEST(test_format_bytes_golden)
{
	char buf[64];
	size_t n = metrics_format_bytes(byte_cases[_i].bytes, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, byte_cases[_i].text) == 0, "%.0f bytes: got '%s', want '%s'",
		      byte_cases[_i].bytes, buf, byte_cases[_i].text);
	ck_assert_uint_eq(n, strlen(byte_cases[_i].text));
}
END_TEST

START_TEST(test_format_number_and_truncation)
{
	char buf[8];
	ck_assert_uint_eq(metrics_format_number(3.14159, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "3.14");
	ck_assert_uint_eq(metrics_format_number(-2.5, buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "-2.50");
	/* A short buffer is truncated and terminated; the return is the full length. */
	ck_assert_uint_eq(metrics_format_time(9969486408, buf, sizeof(buf)), 17);
	ck_assert_str_eq(buf, "09s969m");
	ck_assert_uint_eq(metrics_format_bytes(13107200, NULL, 0), 7);
	/* The largest double fits (309 digits of days), and so do Inf and NaN. */
	char big[4096];
	size_t n = metrics_format_time(1.7976931348623157e308, big, sizeof(big));
	ck_assert_uint_eq(n, strlen(big));
	ck_assert_uint_gt(n, 300);
	metrics_format_time(__builtin_inf(), big, sizeof(big));
	metrics_format_time(__builtin_nan(""), big, sizeof(big));
	metrics_format_bytes(-__builtin_inf(), big, sizeof(big));
}
END_TEST

/* ---- configuration --------------------------------------------------------- */

START_TEST(test_config_defaults)
{
	metrics_config_t c;
	char err[256] = "x";
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse(NULL, NULL, &c),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(c.max_samples, 1024);
	ck_assert_uint_eq(c.n_percentiles, 9);
	static const double want[] = { 0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99 };
	for (int i = 0; i < 9; i++)
		ck_assert_double_eq(c.percentiles[i], want[i]);
	/* empty is the same as unset */
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse("", "", &c),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(c.max_samples, 1024);
	ck_assert_uint_eq(c.n_percentiles, 9);
}
END_TEST

START_TEST(test_config_custom_values_are_sorted)
{
	metrics_config_t c;
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse("16", "0.9:0.5:0.999", &c),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(c.max_samples, 16);
	ck_assert_uint_eq(c.n_percentiles, 3);
	ck_assert_double_eq(c.percentiles[0], 0.5);
	ck_assert_double_eq(c.percentiles[1], 0.9);
	ck_assert_double_eq(c.percentiles[2], 0.999);
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse("1", "0.5", &c),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(c.max_samples, 1);
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse("1048576", NULL, &c),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(c.max_samples, METRICS_MAX_SAMPLES);
}
END_TEST

static const char *const bad_samples[] = {
	"abc", "0", "-1", "+5", " 5", "5 ", "12x", "1.5", "1048577", "99999999999999999999999",
};

START_TEST(test_config_rejects_bad_samples)
{
	metrics_config_t c;
	char err[256] = "";
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse(bad_samples[_i], NULL, &c),
						   err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strstr(err, "XLA_METRICS_SAMPLES") && strstr(err, bad_samples[_i]) &&
		      strstr(err, "1..1048576"), "message: %s", err);
	/* the config is left at the defaults */
	ck_assert_uint_eq(c.max_samples, 1024);
}
END_TEST

static const char *const bad_percentiles[] = {
	"1", "0", "1.5", "-0.5", "abc", "0.5:", ":0.5", "0.5::0.9", "nan", "0.5x", "0.5,0.9",
	"inf", "0.00000000000000000000000000000000000000000000000000000000000000001",
};

START_TEST(test_config_rejects_bad_percentiles)
{
	metrics_config_t c;
	char err[512] = "";
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse("8", bad_percentiles[_i], &c),
						   err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strstr(err, "XLA_METRICS_PERCENTILES") && strstr(err, bad_percentiles[_i]),
		      "message: %s", err);
	ck_assert_uint_eq(c.max_samples, 1024);
	ck_assert_uint_eq(c.n_percentiles, 9);
}
END_TEST

START_TEST(test_config_rejects_too_many_percentiles)
{
	char s[2048] = "";
	for (int i = 0; i < 65; i++)
		strcat(s, i ? ":0.5" : "0.5");
	metrics_config_t c;
	char err[4096] = "";
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse(NULL, s, &c),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "more than 64"));
	s[strlen(s) - 4] = '\0'; /* 64 is the limit */
	ck_assert_int_eq(ns_status_consume_message(metrics_config_parse(NULL, s, &c),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(c.n_percentiles, 64);
}
END_TEST

START_TEST(test_registry_create_rejects_bad_config)
{
	metrics_config_t c;
	metrics_registry_t *r = (metrics_registry_t *)0x1;
	metrics_config_default(&c);
	c.max_samples = 0;
	EXPECT_BAD(metrics_registry_create(&c, &r), "metrics config: max_samples 0 is not in 1..1048576");
	ck_assert_ptr_null(r);
	metrics_config_default(&c);
	c.percentiles[0] = 0.5; /* no longer ascending */
	EXPECT_BAD(metrics_registry_create(&c, &r),
		   "percentiles[1] = 0.05 is below the one before it (0.5): they must be ascending");
	metrics_config_default(&c);
	c.percentiles[8] = 1.0;
	EXPECT_BAD(metrics_registry_create(&c, &r), "metrics config: percentiles[8] = 1 is not in (0, 1)");
	metrics_config_default(&c);
	c.n_percentiles = 0;
	EXPECT_BAD(metrics_registry_create(&c, &r), "metrics config: n_percentiles 0 is not in 1..64");
	EXPECT_BAD(metrics_registry_create(NULL, &r), "metrics config: NULL");
	metrics_registry_destroy(NULL);
}
END_TEST

/* ---- reports ----------------------------------------------------------------- */

START_TEST(test_report_golden)
{
	metrics_registry_t *r = registry(4, NULL);
	metrics_metric_t *t = metric(r, "ExecuteTime", METRICS_UNIT_TIME_NS);
	add(t, METRICS_UNIT_TIME_NS, 0, 1e6);
	add(t, METRICS_UNIT_TIME_NS, 1000000000, 2e6);
	add(t, METRICS_UNIT_TIME_NS, 2000000000, 3e6);
	metrics_metric_t *b = metric(r, "AData", METRICS_UNIT_BYTES);
	add(b, METRICS_UNIT_BYTES, 5, 13107200);
	metric(r, "Empty", METRICS_UNIT_NUMBER);        /* no samples: left out */
	metrics_counter_add(counter(r, "Zeta"), 3);
	counter(r, "Alpha");                            /* zero: left out */
	metrics_counter_add(counter(r, "Neg"), -2);     /* negative: left out, as torch_xla */
	metrics_counter_add(counter(r, "Beta"), 5);
	metrics_counter_add(counter(r, "Beta"), 2);
	expect_report(r,
		"Metric: AData\n"
		"  TotalSamples: 1\n"
		"  Accumulator: 12.50MB\n"
		"  Percentiles: 1%=12.50MB; 5%=12.50MB; 10%=12.50MB; 20%=12.50MB; 50%=12.50MB; "
		"80%=12.50MB; 90%=12.50MB; 95%=12.50MB; 99%=12.50MB\n"
		"Metric: ExecuteTime\n"
		"  TotalSamples: 3\n"
		"  Accumulator: 006ms000.000us\n"
		"  ValueRate: 003ms000.000us / second\n"
		"  Rate: 1.5 / second\n"
		"  Percentiles: 1%=001ms000.000us; 5%=001ms000.000us; 10%=001ms000.000us; "
		"20%=001ms000.000us; 50%=002ms000.000us; 80%=003ms000.000us; 90%=003ms000.000us; "
		"95%=003ms000.000us; 99%=003ms000.000us\n"
		"Counter: Beta\n"
		"  Value: 7\n"
		"Counter: Zeta\n"
		"  Value: 3\n");
	ck_assert_int_eq(metrics_counter_value(r, "Beta"), 7);
	ck_assert_int_eq(metrics_counter_value(r, "Neg"), -2);
	ck_assert_int_eq(metrics_counter_value(r, "Nope"), 0);
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_report_empty_registry_is_empty_string)
{
	metrics_registry_t *r = registry(0, NULL);
	expect_report(r, "");
	metric(r, "Unused", METRICS_UNIT_TIME_NS);
	counter(r, "Zero");
	expect_report(r, "");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_report_sorts_by_byte_order)
{
	metrics_registry_t *r = registry(0, "0.5");
	const char *names[] = { "b", "B", "a_x", "A", "aa", "a" };
	for (int i = 0; i < 6; i++)
		add(metric(r, names[i], METRICS_UNIT_NUMBER), METRICS_UNIT_NUMBER, 0, i);
	for (int i = 0; i < 6; i++)
		metrics_counter_add(counter(r, names[i]), i + 1);
	expect_report(r,
		"Metric: A\n  TotalSamples: 1\n  Accumulator: 3.00\n  Percentiles: 50%=3.00\n"
		"Metric: B\n  TotalSamples: 1\n  Accumulator: 1.00\n  Percentiles: 50%=1.00\n"
		"Metric: a\n  TotalSamples: 1\n  Accumulator: 5.00\n  Percentiles: 50%=5.00\n"
		"Metric: a_x\n  TotalSamples: 1\n  Accumulator: 2.00\n  Percentiles: 50%=2.00\n"
		"Metric: aa\n  TotalSamples: 1\n  Accumulator: 4.00\n  Percentiles: 50%=4.00\n"
		"Metric: b\n  TotalSamples: 1\n  Accumulator: 0.00\n  Percentiles: 50%=0.00\n"
		"Counter: A\n  Value: 4\n"
		"Counter: B\n  Value: 2\n"
		"Counter: a\n  Value: 6\n"
		"Counter: a_x\n  Value: 3\n"
		"Counter: aa\n  Value: 5\n"
		"Counter: b\n  Value: 1\n");
	metrics_registry_destroy(r);
}
END_TEST

/* PyTorch/XLA's order: the lazy-tensor registry's metrics then counters
 * (compile-cache counters, ExecuteComputation, op counters like xla::mul), then
 * the runtime registry's (everything else), each by name. */
START_TEST(test_report_puts_the_lazy_block_first_as_torch_xla)
{
	metrics_registry_t *r = registry(0, "0.5");
	add(metric(r, "CompileTime", METRICS_UNIT_NUMBER), METRICS_UNIT_NUMBER, 0, 1);
	add(metric(r, "aten::x", METRICS_UNIT_NUMBER), METRICS_UNIT_NUMBER, 0, 2);
	const char *counters[] = { "MarkStep", "UncachedCompile", "xla::mul", "ExecuteComputation", "CachedCompile",
				   "ExecuteFailed" };
	for (int i = 0; i < 6; i++)
		metrics_counter_add(counter(r, counters[i]), i + 1);
	expect_report(r,
		"Metric: aten::x\n  TotalSamples: 1\n  Accumulator: 2.00\n  Percentiles: 50%=2.00\n"
		"Counter: CachedCompile\n  Value: 5\n"
		"Counter: ExecuteComputation\n  Value: 4\n"
		"Counter: UncachedCompile\n  Value: 2\n"
		"Counter: xla::mul\n  Value: 3\n"
		"Metric: CompileTime\n  TotalSamples: 1\n  Accumulator: 1.00\n  Percentiles: 50%=1.00\n"
		"Counter: ExecuteFailed\n  Value: 6\n"
		"Counter: MarkStep\n  Value: 1\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_percentiles_two_samples_same_time_no_rate)
{
	metrics_registry_t *r = registry(0, NULL);
	metrics_metric_t *m = metric(r, "Score", METRICS_UNIT_NUMBER);
	add(m, METRICS_UNIT_NUMBER, 10, 1.25);
	add(m, METRICS_UNIT_NUMBER, 10, 0.5); /* same timestamp: the window spans no time */
	expect_report(r,
		"Metric: Score\n"
		"  TotalSamples: 2\n"
		"  Accumulator: 1.75\n"
		"  Percentiles: 1%=0.50; 5%=0.50; 10%=0.50; 20%=0.50; 50%=1.25; 80%=1.25; 90%=1.25; "
		"95%=1.25; 99%=1.25\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_rate_absent_when_window_goes_back_in_time)
{
	/* Samples from several threads can be added out of timestamp order: only
	 * the first and the last of the window count, and a negative span prints
	 * no rates. */
	metrics_registry_t *r = registry(0, "0.5");
	metrics_metric_t *m = metric(r, "T", METRICS_UNIT_TIME_NS);
	add(m, METRICS_UNIT_TIME_NS, 100, 1000);
	add(m, METRICS_UNIT_TIME_NS, 500, 1000);
	add(m, METRICS_UNIT_TIME_NS, 50, 1000);
	expect_report(r,
		"Metric: T\n"
		"  TotalSamples: 3\n"
		"  Accumulator: 003.000us\n"
		"  Percentiles: 50%=001.000us\n");
	add(m, METRICS_UNIT_TIME_NS, 101, 1000); /* now last - first = 1 ns */
	expect_report(r,
		"Metric: T\n"
		"  TotalSamples: 4\n"
		"  Accumulator: 004.000us\n"
		"  ValueRate: 01h06m40s000ms000.000us / second\n"
		"  Rate: 4e+09 / second\n"
		"  Percentiles: 50%=001.000us\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_one_sample_has_no_rate)
{
	metrics_registry_t *r = registry(0, "0.01:0.99");
	add(metric(r, "T", METRICS_UNIT_TIME_NS), METRICS_UNIT_TIME_NS, 123, 1890);
	expect_report(r,
		"Metric: T\n"
		"  TotalSamples: 1\n"
		"  Accumulator: 001.890us\n"
		"  Percentiles: 1%=001.890us; 99%=001.890us\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_ring_keeps_last_n_samples)
{
	metrics_registry_t *r = registry(4, NULL);
	metrics_metric_t *m = metric(r, "N", METRICS_UNIT_NUMBER);
	for (int i = 1; i <= 6; i++)
		add(m, METRICS_UNIT_NUMBER, i, i);
	/* window 3, 4, 5, 6 over 3 ns; the accumulator and count cover all six */
	expect_report(r,
		"Metric: N\n"
		"  TotalSamples: 6\n"
		"  Accumulator: 21.00\n"
		"  ValueRate: 6000000000.00 / second\n"
		"  Rate: 1.33333e+09 / second\n"
		"  Percentiles: 1%=3.00; 5%=3.00; 10%=3.00; 20%=3.00; 50%=5.00; 80%=6.00; 90%=6.00; "
		"95%=6.00; 99%=6.00\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_percentiles_over_full_window_of_1024)
{
	metrics_registry_t *r = registry(0, NULL); /* the default 1024 */
	metrics_metric_t *m = metric(r, "Step", METRICS_UNIT_NUMBER);
	/* 2000 samples i at i us: the window holds 976..1999 */
	for (int i = 0; i < 2000; i++)
		add(m, METRICS_UNIT_NUMBER, (int64_t)i * 1000, i);
	expect_report(r,
		"Metric: Step\n"
		"  TotalSamples: 2000\n"
		"  Accumulator: 1999000.00\n"
		"  ValueRate: 1488954056.70 / second\n"
		"  Rate: 1.00098e+06 / second\n"
		"  Percentiles: 1%=986.00; 5%=1027.00; 10%=1078.00; 20%=1180.00; 50%=1488.00; "
		"80%=1795.00; 90%=1897.00; 95%=1948.00; 99%=1989.00\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_percentiles_exactly_1024_samples_reversed)
{
	metrics_registry_t *r = registry(0, "0.001:0.5:0.999");
	metrics_metric_t *m = metric(r, "Rev", METRICS_UNIT_BYTES);
	for (int i = 0; i < 1024; i++)
		add(m, METRICS_UNIT_BYTES, i, 1023 - i); /* added in descending order */
	char *text = report(r);
	/* index floor(p * 1024) of the sorted values: 1, 512, 1022 */
	ck_assert_msg(strstr(text, "  Percentiles: 0.1%=1.00B; 50%=512.00B; 99.9%=1022.00B\n"), "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "  TotalSamples: 1024\n  Accumulator: 511.50KB\n"));
	free(text);
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_clear_drops_everything_and_frees_units)
{
	metrics_registry_t *r = registry(8, NULL);
	metrics_metric_t *m = metric(r, "X", METRICS_UNIT_TIME_NS);
	metrics_counter_t *c = counter(r, "C");
	add(m, METRICS_UNIT_TIME_NS, 1, 5);
	metrics_counter_add(c, 4);
	metrics_metric_t *other;
	EXPECT_BAD(metrics_metric_get(r, "X", METRICS_UNIT_BYTES, &other),
		   "metric 'X' already records another unit than bytes (time, the unit of its first "
		   "sample until the registry is cleared): use another name");
	ck_assert_ptr_null(other);
	EXPECT_BAD(metrics_metric_add(m, METRICS_UNIT_NUMBER, 2, 1),
		   "metric 'X' already records another unit than number (time");
	metrics_registry_clear(r);
	expect_report(r, "");
	ck_assert_int_eq(metrics_counter_value(r, "C"), 0);
	/* the handles stay valid, and the name may take another unit now */
	EXPECT_OK(metrics_metric_get(r, "X", METRICS_UNIT_BYTES, &other));
	ck_assert_ptr_eq(other, m);
	add(m, METRICS_UNIT_BYTES, 3, 2048);
	metrics_counter_add(c, 1);
	expect_report(r,
		"Metric: X\n  TotalSamples: 1\n  Accumulator: 2.00KB\n"
		"  Percentiles: 1%=2.00KB; 5%=2.00KB; 10%=2.00KB; 20%=2.00KB; 50%=2.00KB; 80%=2.00KB; "
		"90%=2.00KB; 95%=2.00KB; 99%=2.00KB\n"
		"Counter: C\n  Value: 1\n");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_bad_names_and_units_are_rejected)
{
	metrics_registry_t *r = registry(2, NULL);
	metrics_metric_t *m = (metrics_metric_t *)0x1;
	metrics_counter_t *c = (metrics_counter_t *)0x1;
	char longname[METRICS_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *bad[] = { NULL, "", "two\nlines", "tab\there", "del\x7f", longname };
	const char *says[] = { "metric name is NULL or empty", "metric name is NULL or empty",
			       "metric name 'two?lines' is invalid: names are 1..255 bytes without "
			       "control characters",
			       "'tab?here' is invalid", "'del?' is invalid",
			       "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is "
			       "invalid" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_BAD(metrics_metric_get(r, bad[i], METRICS_UNIT_NUMBER, &m), says[i]);
		ck_assert_ptr_null(m);
		EXPECT_BAD(metrics_counter_get(r, bad[i], &c), i < 2 ? "counter name is NULL or empty"
								   : "counter name '");
		ck_assert_ptr_null(c);
	}
	longname[METRICS_NAME_MAX] = '\0'; /* 255 bytes is allowed */
	m = metric(r, longname, METRICS_UNIT_NUMBER);
	EXPECT_BAD(metrics_metric_get(r, "u", (metrics_unit_t)3, &m),
		   "metric 'u': unit 3 is not one of time (0), bytes (1), number (2)");
	EXPECT_BAD(metrics_metric_get(r, "u", (metrics_unit_t)-1, &m), "unit -1 is not one of");
	m = metric(r, "u", METRICS_UNIT_NUMBER);
	EXPECT_BAD(metrics_metric_add(m, (metrics_unit_t)7, 0, 1), "metric 'u': unit 7 is not one of");
	ck_assert_str_eq(metrics_unit_name(METRICS_UNIT_TIME_NS), "time");
	ck_assert_str_eq(metrics_unit_name(METRICS_UNIT_BYTES), "bytes");
	ck_assert_str_eq(metrics_unit_name(METRICS_UNIT_NUMBER), "number");
	ck_assert_str_eq(metrics_unit_name((metrics_unit_t)9), "?");
	expect_report(r, "");
	ck_assert_int_eq(metrics_counter_value(r, NULL), 0);
	EXPECT_BAD(metrics_report(NULL, (char **)&c, NULL), "metrics_report: registry is NULL");
	metrics_registry_destroy(r);
}
END_TEST

START_TEST(test_counter_wraps_instead_of_trapping)
{
	metrics_registry_t *r = registry(2, NULL);
	metrics_counter_t *c = counter(r, "Big");
	metrics_counter_add(c, INT64_MAX);
	metrics_counter_add(c, 1);
	ck_assert_int_eq(metrics_counter_read(c), INT64_MIN);
	expect_report(r, ""); /* negative now: left out */
	metrics_registry_destroy(r);
}
END_TEST

/* ---- threads ------------------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 20000

typedef struct worker_arg {
	metrics_registry_t *r;
	int id;
} worker_arg_t;

static void *worker(void *p)
{
	worker_arg_t *a = p;
	for (int i = 0; i < PER_THREAD; i++) {
		metrics_metric_t *m;
		metrics_counter_t *c;
		/* look up every time: creation races with the other threads */
		if (ns_status_consume_code(metrics_metric_get(a->r, i % 2 ? "Odd" : "Even",
							      METRICS_UNIT_NUMBER, &m)) ||
		    ns_status_consume_code(metrics_counter_get(a->r, "Calls", &c)) ||
		    ns_status_consume_code(metrics_metric_add(m, METRICS_UNIT_NUMBER, i, 1.0)))
			return (void *)1;
		metrics_counter_add(c, 1);
		if (a->id == 0 && i % 1000 == 0) {
			char *text = NULL;
			if (ns_status_consume_code(metrics_report(a->r, &text, NULL)))
				return (void *)1;
			free(text);
		}
	}
	return NULL;
}

START_TEST(test_threads_lose_nothing)
{
	metrics_registry_t *r = registry(64, "0.5");
	pthread_t th[THREADS];
	worker_arg_t args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (worker_arg_t){ r, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		ck_assert_ptr_null(ret);
	}
	ck_assert_int_eq(metrics_counter_value(r, "Calls"), THREADS * PER_THREAD);
	char *text = report(r);
	char want[256];
	snprintf(want, sizeof(want), "Metric: Even\n  TotalSamples: %d\n  Accumulator: %d.00\n",
		 THREADS * PER_THREAD / 2, THREADS * PER_THREAD / 2);
	ck_assert_msg(strstr(text, want), "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "Counter: Calls\n  Value: 80000\n"));
	free(text);
	metrics_registry_destroy(r);
}
END_TEST

/* ---- allocation failures --------------------------------------------------------- */

/* One pass of everything that allocates; any failure must be out of memory
 * (RESOURCE_EXHAUSTED, with its message) and leave nothing behind (ASan's leak
 * check runs over the whole loop). Returns the failure's code. */
static ns_status_code_t alloc_pass(void)
{
	metrics_config_t cfg;
	metrics_config_default(&cfg);
	cfg.max_samples = 8;
	metrics_registry_t *r;
	ns_status_t st = metrics_registry_create(&cfg, &r);
	if (st)
		goto out;
	char name[16];
	for (int i = 0; i < 40 && !st; i++) {
		metrics_metric_t *m;
		metrics_counter_t *c;
		snprintf(name, sizeof(name), "m%02d", i);
		st = metrics_metric_get(r, name, METRICS_UNIT_TIME_NS, &m);
		if (!st)
			st = metrics_metric_add(m, METRICS_UNIT_TIME_NS, i, 1000.0 * i);
		if (!st)
			st = metrics_counter_get(r, name, &c);
		if (!st)
			metrics_counter_add(c, 1);
	}
	char *text = NULL;
	if (!st) {
		st = metrics_report(r, &text, NULL);
		if (st && text) /* the output must stay NULL on failure */
			st = ns_status_make(NS_STATUS_INTERNAL, "report text on failure");
	}
	if (!st && !strstr(text, "Metric: m39\n"))
		st = ns_status_make(NS_STATUS_INTERNAL, "m39 missing from the report");
	free(text);
	metrics_registry_destroy(r);
out:
	if (st)
		ck_assert_msg(strstr(ns_status_message(st), "out of memory"), "%s",
			      ns_status_message(st));
	return ns_status_consume_code(st);
}

START_TEST(test_every_allocation_failure_is_reported)
{
	long n;
	for (n = 1;; n++) {
		atomic_store(&alloc_count, 0);
		atomic_store(&fail_at, n);
		ns_status_code_t st = alloc_pass();
		int fired = atomic_load(&alloc_count) >= n;
		atomic_store(&fail_at, 0);
		if (!fired) {
			ck_assert_int_eq(st, NS_STATUS_OK);
			break;
		}
		ck_assert_msg(st == NS_STATUS_RESOURCE_EXHAUSTED, "allocation %ld: %s", n,
			      ns_status_code_str(st));
		ck_assert_int_lt(n, 10000);
	}
	ck_assert_int_gt(n, 40); /* the loop did inject failures */
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("format");
	tcase_add_loop_test(tc, test_format_time_golden, 0, sizeof(time_cases) / sizeof(time_cases[0]));
	tcase_add_loop_test(tc, test_format_bytes_golden, 0, sizeof(byte_cases) / sizeof(byte_cases[0]));
	tcase_add_test(tc, test_format_number_and_truncation);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_test(tc, test_config_defaults);
	tcase_add_test(tc, test_config_custom_values_are_sorted);
	tcase_add_loop_test(tc, test_config_rejects_bad_samples, 0,
			    sizeof(bad_samples) / sizeof(bad_samples[0]));
	tcase_add_loop_test(tc, test_config_rejects_bad_percentiles, 0,
			    sizeof(bad_percentiles) / sizeof(bad_percentiles[0]));
	tcase_add_test(tc, test_config_rejects_too_many_percentiles);
	tcase_add_test(tc, test_registry_create_rejects_bad_config);
	suite_add_tcase(s, tc);
	tc = tcase_create("report");
	tcase_add_test(tc, test_report_golden);
	tcase_add_test(tc, test_report_empty_registry_is_empty_string);
	tcase_add_test(tc, test_report_sorts_by_byte_order);
	tcase_add_test(tc, test_report_puts_the_lazy_block_first_as_torch_xla);
	tcase_add_test(tc, test_percentiles_two_samples_same_time_no_rate);
	tcase_add_test(tc, test_rate_absent_when_window_goes_back_in_time);
	tcase_add_test(tc, test_one_sample_has_no_rate);
	tcase_add_test(tc, test_ring_keeps_last_n_samples);
	tcase_add_test(tc, test_percentiles_over_full_window_of_1024);
	tcase_add_test(tc, test_percentiles_exactly_1024_samples_reversed);
	tcase_add_test(tc, test_clear_drops_everything_and_frees_units);
	tcase_add_test(tc, test_bad_names_and_units_are_rejected);
	tcase_add_test(tc, test_counter_wraps_instead_of_trapping);
	suite_add_tcase(s, tc);
	tc = tcase_create("robustness");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads_lose_nothing);
	tcase_add_test(tc, test_every_allocation_failure_is_reported);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(metrics_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
