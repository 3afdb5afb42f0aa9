/* Check tests of libnrt's metrics: what executions and transfers record, the public API, XLA_METRICS_FILE and the XLA_METRICS_* variables. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics_internal.h"
#include "neuronsim/metrics.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "rt_fixture.h"
#include "test_neffs.h"

#define N 16 /* elements of the add model: 64-byte tensors */

/* Every test runs in its own process (fork mode is forced in main), so the
 * process-wide registry starts empty and reads the environment set here. */
static void env_default(void)
{
	test_env_default();
	unsetenv("XLA_METRICS_FILE");
	unsetenv("XLA_METRICS_SAMPLES");
	unsetenv("XLA_METRICS_PERCENTILES");
}

static char *report(void)
{
	char *r = nrt_neuronsim_metrics_report();
	ck_assert_ptr_nonnull(r);
	return r;
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* The block of metric name in text, up to the next "Metric:"/"Counter:" line
 * (malloc'd), or NULL if the report has none. */
static char *block_of(const char *text, const char *name)
{
	char head[128];
	snprintf(head, sizeof(head), "Metric: %s\n", name);
	const char *b = strstr(text, head);
	if (!b)
		return NULL;
	const char *e = b + strlen(head);
	const char *nm = strstr(e, "\nMetric: "), *nc = strstr(e, "\nCounter: ");
	const char *end = nm && (!nc || nm < nc) ? nm + 1 : nc ? nc + 1 : e + strlen(e);
	return strndup(b, (size_t)(end - b));
}

/* An add model (out = a + b, f32[N]) with device tensors on core 0. */
typedef rt_add_model_t add_model_t;

static void add_setup(add_model_t *f, bool write_inputs)
{
	f->neff = test_neff_add(N, &f->size);
	ck_assert_int_eq(nrt_load(f->neff, f->size, 0, 1, &f->m), NRT_SUCCESS);
	float v[N];
	for (int i = 0; i < N; i++)
		v[i] = (float)i;
	nrt_tensor_t **t[3] = { &f->a, &f->b, &f->out };
	const char *names[3] = { "a", "b", "out" };
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof(v), names[i], t[i]),
				 NRT_SUCCESS);
		if (i < 2 && write_inputs)
			ck_assert_int_eq(nrt_tensor_write(*t[i], v, 0, sizeof(v)), NRT_SUCCESS);
	}
	rt_add_model_sets(f);
}

static void add_teardown(add_model_t *f)
{
	rt_add_model_free(f);
}

/* ---- what the runtime records ------------------------------------------------ */

START_TEST(test_executions_and_transfers_are_recorded)
{
	env_default();
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	float out[N];
	ck_assert_int_eq(nrt_tensor_read(f.out, out, 0, sizeof(out)), NRT_SUCCESS);
	ck_assert_float_eq(out[3], 6.0f);
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);

	char *r = report();
	/* torch_xla's order: the lazy block (ExecuteComputation), then the
	 * runtime's metrics, each list sorted by name */
	const char *order[] = { "Counter: ExecuteComputation\n", "Metric: DeviceMemoryInUse\n",
				"Metric: ExecuteTime\n", "Metric: InboundData\n", "Metric: OutboundData\n",
				"Metric: TransferFromDeviceTime\n", "Metric: TransferToDeviceTime\n" };
	const char *prev = r;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const char *at = strstr(r, order[i]);
		ck_assert_msg(at && at >= prev, "'%s' missing or out of order in\n%s", order[i], r);
		prev = at;
	}
	ck_assert_msg(strncmp(r, "Counter: ExecuteComputation\n", 28) == 0, "%s", r);

	char *b = block_of(r, "ExecuteTime");
	ck_assert_ptr_nonnull(strstr(b, "  TotalSamples: 5\n  Accumulator: "));
	ck_assert_ptr_nonnull(strstr(b, "  Rate: "));          /* five executions span time */
	ck_assert_ptr_nonnull(strstr(b, "  Percentiles: 1%="));
	ck_assert_ptr_nonnull(strstr(b, "us; 99%="));
	free(b);
	/* the device memory in use, sampled at each execution: the same 5 times */
	char bytes[64], want[128];
	metrics_format_bytes((double)u.in_use, bytes, sizeof(bytes));
	b = block_of(r, "DeviceMemoryInUse");
	snprintf(want, sizeof(want), "  TotalSamples: 5\n");
	ck_assert_ptr_nonnull(strstr(b, want));
	snprintf(want, sizeof(want), "; 50%%=%s;", bytes);
	ck_assert_msg(strstr(b, want), "want '%s' in\n%s", want, b);
	free(b);
	ck_assert_ptr_nonnull(strstr(r, "Metric: InboundData\n  TotalSamples: 2\n  Accumulator: 128.00B\n"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: OutboundData\n  TotalSamples: 1\n  Accumulator: 64.00B\n"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: TransferToDeviceTime\n  TotalSamples: 2\n"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: TransferFromDeviceTime\n  TotalSamples: 1\n"));
	ck_assert_ptr_nonnull(strstr(r, "Counter: ExecuteComputation\n  Value: 5\n"));
	ck_assert_ptr_null(strstr(r, "ExecuteFailed"));        /* zero counters are left out */
	ck_assert_ptr_null(strstr(r, "ExecuteNumericalError"));
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteComputation"), 5);
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteFailed"), 0);
	free(r);
	add_teardown(&f);
	nrt_close();
}
END_TEST

START_TEST(test_numerical_error_is_counted)
{
	env_default();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	rt_init_ok();
	size_t sz;
	void *neff = test_neff_sqrt(8, &sz);
	nrt_model_t *m;
	ck_assert_int_eq(nrt_load(neff, sz, -1, -1, &m), NRT_SUCCESS);
	float x[8] = { 1, 4, 9, -1, 16, -2, 25, 36 };
	nrt_tensor_t *tx, *ty;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof(x), "x", &tx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof(x), "y", &ty), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(tx, x, 0, sizeof(x)), NRT_SUCCESS);
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, "x", tx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, "y", ty), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	char *r = report();
	ck_assert_msg(strstr(r, "Counter: ExecuteNumericalError\n  Value: 2\n"), "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "Counter: ExecuteComputation\n  Value: 2\n"));
	ck_assert_ptr_null(strstr(r, "ExecuteFailed"));
	free(r);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&ty);
	nrt_unload(m);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_refused_execution_counts_as_failed_not_executed)
{
	env_default();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, false);
	nrt_tensor_set_t *empty;
	ck_assert_int_eq(nrt_allocate_tensor_set(&empty), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, empty, f.outs), NRT_INVALID); /* inputs missing */
	char *r = report();
	ck_assert_msg(strstr(r, "Counter: ExecuteFailed\n  Value: 1\n"), "%s", r);
	ck_assert_ptr_null(strstr(r, "ExecuteComputation"));
	ck_assert_ptr_null(strstr(r, "Metric: ExecuteTime"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: DeviceMemoryInUse\n  TotalSamples: 1\n"));
	free(r);
	nrt_destroy_tensor_set(&empty);
	add_teardown(&f);
	nrt_close();
}
END_TEST

/* ---- threads ------------------------------------------------------------------- */

#define THREADS 4
#define EXECS 100

static nrt_model_t *shared_model;

static void *exec_thread(void *arg)
{
	(void)arg;
	nrt_tensor_t *t[3];
	nrt_tensor_set_t *in, *out;
	float v[N] = { 0 };
	const char *names[3] = { "a", "b", "out" };
	for (int i = 0; i < 3; i++)
		if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof(v), names[i], &t[i]) ||
		    nrt_tensor_write(t[i], v, 0, sizeof(v)))
			return (void *)1;
	if (nrt_allocate_tensor_set(&in) || nrt_allocate_tensor_set(&out) ||
	    nrt_add_tensor_to_tensor_set(in, "a", t[0]) || nrt_add_tensor_to_tensor_set(in, "b", t[1]) ||
	    nrt_add_tensor_to_tensor_set(out, "out", t[2]))
		return (void *)1;
	for (int i = 0; i < EXECS; i++)
		if (nrt_execute(shared_model, in, out) != NRT_SUCCESS)
			return (void *)1;
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	for (int i = 0; i < 3; i++)
		nrt_tensor_free(&t[i]);
	return NULL;
}

START_TEST(test_executions_on_several_threads_lose_nothing)
{
	env_default();
	rt_init_ok();
	size_t sz;
	void *neff = test_neff_add(N, &sz);
	ck_assert_int_eq(nrt_load(neff, sz, 0, 4, &shared_model), NRT_SUCCESS); /* 4 replicas */
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, exec_thread, NULL), 0);
	for (int i = 0; i < 20; i++) { /* reports while executions record */
		char *r = report();
		free(r);
		usleep(1000);
	}
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		ck_assert_ptr_null(ret);
	}
	char *r = report();
	char want[128];
	snprintf(want, sizeof(want), "Metric: ExecuteTime\n  TotalSamples: %d\n", THREADS * EXECS);
	ck_assert_msg(strstr(r, want), "%s", r);
	snprintf(want, sizeof(want), "Counter: ExecuteComputation\n  Value: %d\n", THREADS * EXECS);
	ck_assert_ptr_nonnull(strstr(r, want));
	snprintf(want, sizeof(want), "Metric: InboundData\n  TotalSamples: %d\n", THREADS * 3);
	ck_assert_ptr_nonnull(strstr(r, want));
	free(r);
	nrt_unload(shared_model);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- public API --------------------------------------------------------------------- */

START_TEST(test_api_works_before_init_and_survives_close)
{
	env_default();
	ck_assert_int_eq(nrt_neuronsim_metric_add("CompileTime", NRT_NEURONSIM_METRIC_TIME_NS, 1228773), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_counter_add("UncachedCompile", 1), NRT_SUCCESS);
	rt_init_ok();
	ck_assert_int_eq(nrt_neuronsim_counter_add("CachedCompile", 2), NRT_SUCCESS);
	nrt_close();
	ck_assert_int_eq(nrt_neuronsim_counter_add("CachedCompile", 1), NRT_SUCCESS);
	char *r = report();
	ck_assert_str_eq(r,
		"Counter: CachedCompile\n"
		"  Value: 3\n"
		"Counter: UncachedCompile\n"
		"  Value: 1\n"
		"Metric: CompileTime\n"
		"  TotalSamples: 1\n"
		"  Accumulator: 001ms228.773us\n"
		"  Percentiles: 1%=001ms228.773us; 5%=001ms228.773us; 10%=001ms228.773us; "
		"20%=001ms228.773us; 50%=001ms228.773us; 80%=001ms228.773us; 90%=001ms228.773us; "
		"95%=001ms228.773us; 99%=001ms228.773us\n");
	free(r);
	ck_assert_int_eq(nrt_neuronsim_counter_value("CachedCompile"), 3);
	ck_assert_int_eq(nrt_neuronsim_counter_value("Missing"), 0);
	ck_assert_int_eq(nrt_neuronsim_counter_value(NULL), 0);
}
END_TEST

START_TEST(test_api_units_print_as_documented)
{
	env_default();
	ck_assert_int_eq(nrt_neuronsim_metric_add("Bytes", NRT_NEURONSIM_METRIC_BYTES, 13107200), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_metric_add("Loss", NRT_NEURONSIM_METRIC_NUMBER, 0.125), NRT_SUCCESS);
	char *r = report();
	ck_assert_ptr_nonnull(strstr(r, "Metric: Bytes\n  TotalSamples: 1\n  Accumulator: 12.50MB\n"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: Loss\n  TotalSamples: 1\n  Accumulator: 0.12\n"));
	free(r);
}
END_TEST

static const struct {
	const char *name;
	int unit;
	double value;
	const char *says;
} bad_adds[] = {
	{ NULL, 0, 1, "metric name is NULL or empty" },
	{ "", 0, 1, "metric name is NULL or empty" },
	{ "U", 3, 1, "unit 3 is not one of" },
	{ "U", -1, 1, "unit -1 is not one of" },
	{ "V", 0, __builtin_nan(""), "is not a finite number" },
	{ "V", 0, __builtin_inf(), "is not a finite number" },
	{ "two\nlines", 0, 1, "names are 1..255 bytes without control characters" },
	{ "Taken", 1, 1, "metric 'Taken' already records another unit than bytes" },
};

START_TEST(test_api_rejects_bad_metric_adds)
{
	env_default();
	ck_assert_int_eq(nrt_neuronsim_metric_add("Taken", NRT_NEURONSIM_METRIC_TIME_NS, 5), NRT_SUCCESS);
	char *before = report();
	test_capture_begin();
	NRT_STATUS st = nrt_neuronsim_metric_add(bad_adds[_i].name, (nrt_neuronsim_metric_unit_t)bad_adds[_i].unit,
						 bad_adds[_i].value);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_INVALID);
	ck_assert_msg(strstr(log, "nrt: ERROR") && strstr(log, "nrt_neuronsim_metric_add") &&
		      strstr(log, bad_adds[_i].says), "log: %s", log);
	char *after = report();
	ck_assert_str_eq(after, before); /* nothing recorded */
	free(log);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_api_rejects_bad_counter_names)
{
	env_default();
	char longname[300];
	memset(longname, 'c', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *bad[] = { NULL, "", "tab\there", longname };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		test_capture_begin();
		NRT_STATUS st = nrt_neuronsim_counter_add(bad[i], 1);
		char *log = test_capture_end();
		ck_assert_int_eq(st, NRT_INVALID);
		ck_assert_msg(strstr(log, "nrt_neuronsim_counter_add: counter name"), "log: %s", log);
		free(log);
	}
	char *r = report();
	ck_assert_str_eq(r, "");
	free(r);
}
END_TEST

START_TEST(test_clear_drops_metrics_and_counters)
{
	env_default();
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_metric_add("Mine", NRT_NEURONSIM_METRIC_TIME_NS, 1), NRT_SUCCESS);
	nrt_neuronsim_metrics_clear();
	char *r = report();
	ck_assert_str_eq(r, "");
	free(r);
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteComputation"), 0);
	/* a cleared name takes a new unit, and executions record again */
	ck_assert_int_eq(nrt_neuronsim_metric_add("Mine", NRT_NEURONSIM_METRIC_BYTES, 1024), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	r = report();
	ck_assert_ptr_nonnull(strstr(r, "Metric: ExecuteTime\n  TotalSamples: 1\n"));
	ck_assert_ptr_nonnull(strstr(r, "Metric: Mine\n  TotalSamples: 1\n  Accumulator: 1.00KB\n"));
	ck_assert_ptr_nonnull(strstr(r, "Counter: ExecuteComputation\n  Value: 1\n"));
	free(r);
	add_teardown(&f);
	nrt_close();
}
END_TEST

START_TEST(test_recording_switch_stops_runtime_samples_only)
{
	env_default();
	rt_init_ok();
	nrt_metrics_set_recording(false);
	add_model_t f;
	add_setup(&f, true); /* the writes record nothing either */
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_counter_add("Mine", 1), NRT_SUCCESS);
	char *r = report();
	ck_assert_str_eq(r, "Counter: Mine\n  Value: 1\n");
	free(r);
	nrt_metrics_set_recording(true);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteComputation"), 1);
	add_teardown(&f);
	nrt_close();
}
END_TEST

/* ---- environment ------------------------------------------------------------------ */

START_TEST(test_samples_and_percentiles_from_environment)
{
	env_default();
	setenv("XLA_METRICS_SAMPLES", "2", 1);
	setenv("XLA_METRICS_PERCENTILES", "0.9:0.5", 1);
	for (int i = 1; i <= 3; i++)
		ck_assert_int_eq(nrt_neuronsim_metric_add("N", NRT_NEURONSIM_METRIC_NUMBER, i), NRT_SUCCESS);
	char *r = report();
	/* the window keeps 2 and 3; the percentiles are sorted */
	ck_assert_msg(strstr(r, "  TotalSamples: 3\n  Accumulator: 6.00\n"), "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "  Percentiles: 50%=3.00; 90%=3.00\n"));
	free(r);
}
END_TEST

static const struct {
	const char *var, *value;
} bad_env[] = {
	{ "XLA_METRICS_SAMPLES", "abc" },
	{ "XLA_METRICS_SAMPLES", "0" },
	{ "XLA_METRICS_SAMPLES", "-4" },
	{ "XLA_METRICS_SAMPLES", "2000000" },
	{ "XLA_METRICS_PERCENTILES", "0.5:2" },
	{ "XLA_METRICS_PERCENTILES", "x" },
	{ "XLA_METRICS_PERCENTILES", "0.5::0.9" },
	{ "XLA_METRICS_PERCENTILES", "1" },
};

START_TEST(test_bad_environment_is_one_clear_error)
{
	env_default();
	setenv(bad_env[_i].var, bad_env[_i].value, 1);
	test_capture_begin();
	NRT_STATUS st1 = nrt_neuronsim_metric_add("X", NRT_NEURONSIM_METRIC_NUMBER, 1);
	NRT_STATUS st2 = nrt_neuronsim_counter_add("C", 1);
	char *log = test_capture_end();
	ck_assert_int_eq(st1, NRT_INVALID);
	ck_assert_int_eq(st2, NRT_INVALID);
	char want[128];
	snprintf(want, sizeof(want), "%s=\"%s\" is not valid", bad_env[_i].var, bad_env[_i].value);
	ck_assert_msg(strstr(log, want) && strstr(log, "metrics are off for this process"), "log: %s", log);
	ck_assert_int_eq(count_of(log, "nrt: ERROR"), 1); /* said once */
	free(log);
	/* executions do not care */
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	test_capture_begin();
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	log = test_capture_end();
	ck_assert_str_eq(log, "");
	free(log);
	char *r = report();
	ck_assert_str_eq(r, "");
	free(r);
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteComputation"), 0);
	add_teardown(&f);
	nrt_close();
}
END_TEST

/* ---- XLA_METRICS_FILE -------------------------------------------------------------- */

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char *buf = calloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(test_metrics_file_gets_a_report_per_execution)
{
	env_default();
	char path[] = "/tmp/nrt-metrics-file-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "earlier\n", 8), 8); /* appended to, never truncated */
	close(fd);
	setenv("XLA_METRICS_FILE", path, 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *text = read_text(path);
	/* framed as torch_xla's metrics_saver: a header per report, steps from 0,
	 * the report, an empty line; the lazy block (ExecuteComputation) first */
	static const char head[] = "earlier\n[MetricsData; step=0]\nCounter: ExecuteComputation\n  Value: 1\n"
				   "Metric: DeviceMemoryInUse\n";
	ck_assert_msg(strncmp(text, head, strlen(head)) == 0, "%s", text);
	ck_assert_int_eq(count_of(text, "Metric: ExecuteTime\n"), 3);
	ck_assert_int_eq(count_of(text, "[MetricsData; step="), 3);
	const char *s1 = strstr(text, "\n\n[MetricsData; step=1]\nCounter: ExecuteComputation\n  Value: 2\n");
	const char *s2 = strstr(text, "\n\n[MetricsData; step=2]\nCounter: ExecuteComputation\n  Value: 3\n");
	ck_assert_msg(s1 && s2 && s1 < s2, "%s", text);
	const char *p1 = strstr(text, "Metric: ExecuteTime\n  TotalSamples: 1\n");
	const char *p2 = strstr(text, "Metric: ExecuteTime\n  TotalSamples: 2\n");
	const char *p3 = strstr(text, "Metric: ExecuteTime\n  TotalSamples: 3\n");
	ck_assert_msg(p1 && p2 && p3 && p1 < p2 && p2 < p3, "%s", text);
	/* the last report is the report of now, then the empty line */
	char *r = report();
	size_t rl = strlen(r), tl = strlen(text);
	ck_assert_uint_ge(tl, rl + 1);
	ck_assert_str_eq(text + tl - 1, "\n");
	text[tl - 1] = '\0';
	ck_assert_str_eq(text + tl - 1 - rl, r);
	free(r);
	free(text);
	add_teardown(&f);
	nrt_close();
	unlink(path);
}
END_TEST

START_TEST(test_metrics_file_stderr)
{
	env_default();
	setenv("XLA_METRICS_FILE", "STDERR", 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	test_capture_begin();
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "Metric: ExecuteTime\n  TotalSamples: 1\n"), "%s", log);
	/* print() in torch_xla adds a second newline on the streams */
	ck_assert_msg(strncmp(log, "[MetricsData; step=0]\n", 22) == 0, "%s", log);
	ck_assert_msg(strlen(log) > 2 && strcmp(log + strlen(log) - 3, "\n\n\n") == 0, "%s", log);
	ck_assert_ptr_null(strstr(log, "nrt: ERROR"));
	ck_assert_int_eq(access("STDERR", F_OK), -1); /* not a file of that name */
	free(log);
	add_teardown(&f);
	nrt_close();
}
END_TEST

/* torch_xla's metrics_saver: NAME.ORDINAL when the job has several processes. */
START_TEST(test_metrics_file_gets_the_process_ordinal_in_a_multi_process_job)
{
	env_default();
	char dir[] = "/tmp/nrt-metrics-ord-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char base[256], mine[300];
	snprintf(base, sizeof(base), "%s/metrics.txt", dir);
	snprintf(mine, sizeof(mine), "%s.3", base);
	setenv("XLA_METRICS_FILE", base, 1);
	setenv("PJRT_LOCAL_PROCESS_COUNT", "4", 1);
	setenv("PJRT_LOCAL_PROCESS_RANK", "3", 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(access(base, F_OK), -1);
	char *text = read_text(mine);
	ck_assert_msg(strncmp(text, "[MetricsData; step=0]\n", 22) == 0, "%s", text);
	free(text);
	add_teardown(&f);
	nrt_close();
	unlink(mine);
	rmdir(dir);
	unsetenv("PJRT_LOCAL_PROCESS_COUNT");
	unsetenv("PJRT_LOCAL_PROCESS_RANK");
}
END_TEST

/* What the PJRT plugin does under torch_xla, whose metrics_saver owns
 * XLA_METRICS_FILE: nrt_neuronsim_metrics_set_file(NULL) leaves that file to
 * it; another name gets the runtime's reports instead, steps counting on. */
START_TEST(test_metrics_set_file_moves_or_stops_the_runtime_reports)
{
	env_default();
	char dir[] = "/tmp/nrt-metrics-set-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char xla[256], own[256];
	snprintf(xla, sizeof(xla), "%s/metrics.txt", dir);
	snprintf(own, sizeof(own), "%s/runtime-metrics.txt", dir);
	setenv("XLA_METRICS_FILE", xla, 1);
	/* before nrt_init, as the plugin calls it */
	ck_assert_int_eq(nrt_neuronsim_metrics_set_file(NULL), NRT_SUCCESS);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(access(xla, F_OK), -1);
	ck_assert_int_eq(nrt_neuronsim_metrics_set_file(own), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(access(xla, F_OK), -1);
	char *text = read_text(own);
	ck_assert_int_eq(count_of(text, "[MetricsData; step="), 2);
	const char *s0 = strstr(text, "[MetricsData; step=0]\nCounter: ExecuteComputation\n  Value: 2\n");
	const char *s1 = strstr(text, "[MetricsData; step=1]\nCounter: ExecuteComputation\n  Value: 3\n");
	ck_assert_msg(s0 == text && s1 > s0, "%s", text);
	free(text);
	ck_assert_int_eq(nrt_neuronsim_metrics_set_file(""), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	text = read_text(own);
	ck_assert_int_eq(count_of(text, "[MetricsData; step="), 2);
	free(text);
	/* the report itself is still there for whoever asks */
	char *r = report();
	ck_assert_msg(strstr(r, "Counter: ExecuteComputation\n  Value: 4\n"), "%s", r);
	free(r);
	add_teardown(&f);
	nrt_close();
	unlink(own);
	rmdir(dir);
}
END_TEST

START_TEST(test_metrics_file_failure_warns_once_and_does_not_fail_executions)
{
	env_default();
	const char *path = "/nonexistent-nrt-dir/sub/metrics.txt";
	setenv("XLA_METRICS_FILE", path, 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	test_capture_begin();
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_int_eq(count_of(log, "\n"), 1);
	ck_assert_msg(strstr(log, "XLA_METRICS_FILE '/nonexistent-nrt-dir/sub/metrics.txt'") &&
		      strstr(log, "No such file or directory") && strstr(log, "executions are not affected"),
		      "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_neuronsim_counter_value("ExecuteComputation"), 3);
	add_teardown(&f);
	nrt_close();
}
END_TEST

/* Issue #11, item 4: XLA_METRICS_FILE was opened with O_APPEND | O_CREAT,
 * following a symlink planted at its name: every report went into the link's
 * target. The name's last component is never followed now (an error, said
 * once), the target stays as it was. */
START_TEST(test_metrics_file_never_follows_planted_symlink)
{
	env_default();
	char dir[] = "/tmp/nrt-metrics-link-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char victim[128], path[128];
	snprintf(victim, sizeof(victim), "%s/victim.txt", dir);
	snprintf(path, sizeof(path), "%s/metrics.txt", dir);
	FILE *vf = fopen(victim, "w");
	ck_assert_ptr_nonnull(vf);
	fputs("precious\n", vf);
	fclose(vf);
	ck_assert_int_eq(symlink(victim, path), 0);
	setenv("XLA_METRICS_FILE", path, 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	test_capture_begin();
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "nrt: ERROR") && strstr(log, path) && count_of(log, "\n") == 1,
		      "log: %s", log);
	free(log);
	char *text = read_text(victim);
	ck_assert_str_eq(text, "precious\n");
	free(text);
	add_teardown(&f);
	nrt_close();
	unlink(path);
	unlink(victim);
	rmdir(dir);
}
END_TEST

/* Issue #11, item 12: on a full disk a report was written in part, and the
 * next report followed the torn piece. A file size limit (RLIMIT_FSIZE) stands
 * in for the full disk: the report that does not fit must leave the file as it
 * was, with one error line, and the next one (with room again) must follow the
 * last whole report. */
START_TEST(test_metrics_file_full_disk_leaves_no_torn_report)
{
	env_default();
	char path[] = "/tmp/nrt-metrics-full-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("XLA_METRICS_FILE", path, 1);
	rt_init_ok();
	add_model_t f;
	add_setup(&f, true);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	off_t one = sb.st_size; /* one whole report */
	ck_assert_int_gt(one, 200);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim.rlim_cur = (rlim_t)(one + one / 2);
	lim.rlim_max = old.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	test_capture_begin();
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	ck_assert_msg(strstr(log, "nrt: ERROR") && strstr(log, path), "log: %s", log);
	free(log);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, one); /* no half report */
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *text = read_text(path);
	ck_assert_int_eq(count_of(text, "Metric: ExecuteTime\n"), 2);
	/* the report that did not fit took step 1, as torch_xla counts a step
	 * before writing it */
	ck_assert_msg(strncmp(text + one, "[MetricsData; step=2]\n", 22) == 0, "%s", text + one);
	char *r = report();
	size_t tl = strlen(text);
	ck_assert_str_eq(text + tl - 1, "\n");
	text[tl - 1] = '\0';
	ck_assert_str_eq(text + one + 22, r); /* the third execution's whole report */
	free(r);
	free(text);
	add_teardown(&f);
	nrt_close();
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_metrics");
	TCase *tc = tcase_create("record");
	tcase_add_test(tc, test_executions_and_transfers_are_recorded);
	tcase_add_test(tc, test_numerical_error_is_counted);
	tcase_add_test(tc, test_refused_execution_counts_as_failed_not_executed);
	tcase_add_test(tc, test_executions_on_several_threads_lose_nothing);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_test(tc, test_api_works_before_init_and_survives_close);
	tcase_add_test(tc, test_api_units_print_as_documented);
	tcase_add_loop_test(tc, test_api_rejects_bad_metric_adds, 0, sizeof(bad_adds) / sizeof(bad_adds[0]));
	tcase_add_test(tc, test_api_rejects_bad_counter_names);
	tcase_add_test(tc, test_clear_drops_metrics_and_counters);
	tcase_add_test(tc, test_recording_switch_stops_runtime_samples_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("env");
	tcase_add_test(tc, test_samples_and_percentiles_from_environment);
	tcase_add_loop_test(tc, test_bad_environment_is_one_clear_error, 0, sizeof(bad_env) / sizeof(bad_env[0]));
	tcase_add_test(tc, test_metrics_file_gets_a_report_per_execution);
	tcase_add_test(tc, test_metrics_file_stderr);
	tcase_add_test(tc, test_metrics_file_gets_the_process_ordinal_in_a_multi_process_job);
	tcase_add_test(tc, test_metrics_set_file_moves_or_stops_the_runtime_reports);
	tcase_add_test(tc, test_metrics_file_failure_warns_once_and_does_not_fail_executions);
	tcase_add_test(tc, test_metrics_file_never_follows_planted_symlink);
	tcase_add_test(tc, test_metrics_file_full_disk_leaves_no_torn_report);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	/* The registry is per process and reads the environment once: each test
	 * needs its own process, whatever CK_FORK says. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
