/* Check tests of the process stats file (runtime/stats.c) as the tools read it (common/procstats.c): identity, executions, errors by kind, memory, stale files, consistency under concurrent executions. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "neuronsim/procstats.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "rt_fixture.h"
#include "test_neffs.h"

static char stats_dir[256];

/* Every test gets its own stats directory, removed afterwards. */
static void setup(void)
{
	test_env_default();
	unsetenv("NEURONSIM_STATS");
	unsetenv("NEURON_PROCESS_TAG");
	rt_tmpdir_create(stats_dir, sizeof(stats_dir), "nsim-stats-test");
	setenv("NEURONSIM_STATS_DIR", stats_dir, 1);
}

static void teardown(void)
{
	if (rt_tmpdir_remove(stats_dir) != 0)
		fprintf(stderr, "cannot remove %s: %s\n", stats_dir, strerror(errno));
}

static void self_path(char *buf, size_t len)
{
	ck_assert_int_eq(procstats_path(buf, len, stats_dir, geteuid(), getpid()), 0);
}

static uint64_t now_ms(void);

/* How long a reader may keep seeing NS_STATUS_ABORTED (busy) before a test calls it a
 * failure. BUSY means a writer held the seqlock through all of the reader's tries:
 * a tool shows the next refresh instead. On a loaded machine (QEMU's emulated
 * CPUs, the sanitizer build next to other builds) a writer thread can be
 * descheduled in the middle of an update for a long time, so only a seqlock that
 * stays busy for this long is a bug (a writer that never finishes its update). */
#define BUSY_DEADLINE_MS 30000

/* procstats_read_file() of path, again while it says NS_STATUS_ABORTED (up to
 * BUSY_DEADLINE_MS); *out_busy (may be NULL) counts the busy reads. */
static ns_status_code_t read_file_settled(const char *path, procstats_snap_t *s, char *err, size_t len,
					    int *out_busy)
{
	uint64_t deadline = now_ms() + BUSY_DEADLINE_MS;
	for (;;) {
		ns_status_code_t st = ns_status_consume_message(procstats_read_file(path, s),
								err, len);
		if (st != NS_STATUS_ABORTED || now_ms() > deadline)
			return st;
		if (out_busy)
			(*out_busy)++;
		usleep(1000);
	}
}

static procstats_snap_t *read_self(void)
{
	char path[512], err[512];
	self_path(path, sizeof(path));
	procstats_snap_t *s = malloc(sizeof(*s));
	ck_assert_ptr_nonnull(s);
	ns_status_code_t st = read_file_settled(path, s, err, sizeof(err), NULL);
	ck_assert_msg(st == NS_STATUS_OK, "reading %s: %s: %s", path, ns_status_code_str(st), err);
	return s;
}

static nrt_tensor_t *tensor_f32(nrt_tensor_placement_t pl, int nc, const char *name, float v, size_t n)
{
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(pl, nc, n * sizeof(float), name, &t), NRT_SUCCESS);
	float *buf = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		buf[i] = v;
	ck_assert_int_eq(nrt_tensor_write(t, buf, 0, n * sizeof(float)), NRT_SUCCESS);
	free(buf);
	return t;
}

/* A loaded single-input model (x -> y) with its tensors on core nc. */
typedef struct unary {
	void *neff;
	nrt_model_t *m;
	nrt_tensor_t *x, *y;
	nrt_tensor_set_t *in, *out;
} unary_t;

static void unary_setup(unary_t *u, void *neff, size_t size, int nc, float xv, uint64_t n)
{
	u->neff = neff;
	u->m = NULL;
	ck_assert_int_eq(nrt_load(neff, size, nc, -1, &u->m), NRT_SUCCESS);
	u->x = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, nc, "x", xv, n);
	u->y = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, nc, "y", 0, n);
	u->in = rt_tensor_set_of(1, "x", u->x);
	u->out = rt_tensor_set_of(1, "y", u->y);
}

static void unary_teardown(unary_t *u)
{
	nrt_destroy_tensor_set(&u->in);
	nrt_destroy_tensor_set(&u->out);
	nrt_tensor_free(&u->x);
	nrt_tensor_free(&u->y);
	ck_assert_int_eq(nrt_unload(u->m), NRT_SUCCESS);
	free(u->neff);
}

static void sqrt_setup(unary_t *u, int nc, float xv)
{
	size_t size;
	void *neff = test_neff_sqrt(16, &size);
	unary_setup(u, neff, size, nc, xv, 16);
}

static uint64_t err_sum(const procstats_snap_t *s)
{
	uint64_t sum = 0;
	for (int k = 0; k < PROCSTATS_ERR_KINDS; k++)
		sum += s->v[PROCSTATS_ERR_FIRST + k];
	return sum;
}

static uint64_t outcome_sum(const procstats_snap_t *s)
{
	return s->v[PROCSTATS_COMPLETED] + s->v[PROCSTATS_COMPLETED_WITH_ERR] +
	       s->v[PROCSTATS_COMPLETED_WITH_NUM_ERR] + s->v[PROCSTATS_TIMED_OUT] +
	       s->v[PROCSTATS_INCORRECT_INPUT] + s->v[PROCSTATS_FAILED_TO_QUEUE];
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Memory figures refresh every PROCSTATS_REFRESH_MS: polls until the file
 * shows what the API reports and returns the last read. The deadline only ends a
 * failing test: the refresh thread of a loaded machine may run late. */
static procstats_snap_t *read_mem_settled(nrt_neuronsim_mem_usage_t *out_usage)
{
	uint64_t deadline = now_ms() + 30000;
	for (;;) {
		ck_assert_int_eq(nrt_neuronsim_get_mem_usage(out_usage), NRT_SUCCESS);
		procstats_snap_t *s = read_self();
		bool same = s->v[PROCSTATS_MEM_IN_USE] == out_usage->in_use &&
			    s->v[PROCSTATS_HOST_TENSORS] == out_usage->host_tensors &&
			    s->v[PROCSTATS_HOST_SNAPSHOT] == out_usage->host_snapshot;
		for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
			same = same && s->v[PROCSTATS_MEM_FIRST + k] == out_usage->by_category[k];
		if (same || now_ms() > deadline)
			return s;
		free(s);
		usleep(20000);
	}
}

/* Writes a stats file by hand into the test directory. */
static void write_fake(const char *name, const procstats_file_t *f, size_t size)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", stats_dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, f, size), (ssize_t)size);
	close(fd);
}

static procstats_file_t *fake_of(pid_t pid)
{
	procstats_file_t *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	f->magic = PROCSTATS_MAGIC;
	f->version = PROCSTATS_VERSION;
	f->size = sizeof(*f);
	f->state = PROCSTATS_STATE_LIVE;
	f->pid = (uint32_t)pid;
	f->uid = (uint32_t)geteuid();
	f->n_cores = 2;
	uint64_t st = 0;
	procstats_proc_start_time(pid, &st);
	f->start_time = st;
	snprintf(f->backend, sizeof(f->backend), "embedded");
	f->v[PROCSTATS_EXECUTIONS] = 7;
	f->v[PROCSTATS_COMPLETED] = 7;
	return f;
}

static ns_status_code_t read_named(const char *name, procstats_snap_t *s, char *err, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", stats_dir, name);
	return ns_status_consume_message(procstats_read_file(path, s), err, len);
}

/* ---- identity and lifetime ---- */

START_TEST(test_stats_file_published_at_init_and_removed_at_close)
{
	setenv("NEURON_PROCESS_TAG", "my_app_1", 1);
	rt_init_ok();
	char path[512];
	self_path(path, sizeof(path));
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	ck_assert_int_eq(sb.st_size, (off_t)sizeof(procstats_file_t));
	procstats_snap_t *s = read_self();
	ck_assert_uint_eq(s->pid, (uint32_t)getpid());
	ck_assert_uint_eq(s->uid, (uint32_t)geteuid());
	/* As the API says (the kernel backend's sizes come from the driver). */
	uint32_t visible;
	nrt_neuronsim_mem_usage_t mu;
	ck_assert_int_eq(nrt_get_visible_nc_count(&visible), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&mu), NRT_SUCCESS);
	ck_assert_uint_eq(s->n_cores, visible);
	ck_assert_uint_ge(visible, 4);
	ck_assert_uint_eq(s->n_devices, 1);
	ck_assert_str_eq(s->backend, nrt_neuronsim_backend_name());
	ck_assert_str_eq(s->tag, "my_app_1");
	ck_assert_uint_eq(s->mem_total, mu.total);
	ck_assert_uint_gt(s->mem_total, 0);
	for (uint32_t c = 0; c < visible; c++)
		ck_assert_uint_eq(s->cores[c].global, c);
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], 0);
	ck_assert_uint_eq(s->n_lat, 0);
	free(s);
	nrt_close();
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);

	/* A second runtime in the same process publishes again; without a tag
	 * the reader names the process by its pid. */
	unsetenv("NEURON_PROCESS_TAG");
	setenv("NEURON_RT_VISIBLE_CORES", "1,3", 1);
	rt_init_ok();
	s = read_self();
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	ck_assert_str_eq(s->tag, pid);
	ck_assert_uint_eq(s->n_cores, 2);
	ck_assert_uint_eq(s->cores[0].global, 1);
	ck_assert_uint_eq(s->cores[1].global, 3);
	free(s);
	nrt_close();
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_stats_disabled_or_bad_switch)
{
	char path[512];
	self_path(path, sizeof(path));
	setenv("NEURONSIM_STATS", "off", 1);
	rt_init_ok();
	ck_assert_int_eq(access(path, F_OK), -1);
	nrt_close();

	setenv("NEURONSIM_STATS", "maybe", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "nrt_init: NEURONSIM_STATS=\"maybe\" is invalid"));
	free(log);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_stats_publish_failure_is_only_a_warning)
{
	setenv("NEURONSIM_STATS_DIR", "/nonexistent/neuronsim-stats", 1);
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "WARN"));
	ck_assert_ptr_nonnull(strstr(log, "cannot publish process stats"));
	ck_assert_ptr_nonnull(strstr(log, "/nonexistent/neuronsim-stats/neuronsim-stats."));
	ck_assert_ptr_nonnull(strstr(log, "NEURONSIM_STATS_DIR"));
	free(log);
	/* The runtime works without it. */
	unary_t u;
	sqrt_setup(&u, 0, 4.0f);
	ck_assert_int_eq(nrt_execute(u.m, u.in, u.out), NRT_SUCCESS);
	unary_teardown(&u);
	nrt_close();
}
END_TEST

/* ---- what executions publish ---- */

START_TEST(test_stats_track_executions_and_latencies)
{
	rt_init_ok();
	unary_t u;
	sqrt_setup(&u, 2, 4.0f);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(nrt_execute(u.m, u.in, u.out), NRT_SUCCESS);
	procstats_snap_t *s = read_self();
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], 10);
	ck_assert_uint_eq(s->v[PROCSTATS_COMPLETED], 10);
	ck_assert_uint_eq(err_sum(s), 0);
	ck_assert_uint_eq(s->v[PROCSTATS_LAT_HEAD], 10);
	ck_assert_uint_eq(s->n_lat, 10);
	for (uint32_t i = 0; i < 10; i++) {
		ck_assert_uint_eq(s->lat[i].index, i + 1);
		ck_assert_uint_gt(s->lat[i].device_ns, 0);
		ck_assert_uint_ne(s->lat[i].device_ns, UINT64_MAX);
		ck_assert_uint_ge(s->lat[i].total_ns, s->lat[i].device_ns);
	}
	/* Per core: the same numbers as the API, on the core the model runs on. */
	for (uint32_t c = 0; c < 4; c++) {
		nrt_neuronsim_core_stats_t cs;
		ck_assert_int_eq(nrt_neuronsim_get_core_stats(c, &cs), NRT_SUCCESS);
		ck_assert_uint_eq(s->cores[c].v[PROCSTATS_CORE_EXECUTIONS], cs.executions);
		ck_assert_uint_eq(s->cores[c].v[PROCSTATS_CORE_COMPLETED], cs.completed);
		ck_assert_uint_eq(s->cores[c].v[PROCSTATS_CORE_BUSY_NS], cs.busy_ns);
		ck_assert_uint_eq(cs.executions, c == 2 ? 10 : 0);
	}
	ck_assert_uint_gt(s->cores[2].v[PROCSTATS_CORE_BUSY_NS], 0);
	/* FLOPs (docs/isa.md): abs and sqrt of 16 f32 per execution, on the
	 * model's core only; on the kernel backend as neuronsim-fwd counted them
	 * (ABI 1.2's record extension), the same */
	for (uint32_t c = 0; c < 4; c++)
		ck_assert_uint_eq(s->cores[c].v[PROCSTATS_CORE_FLOPS], c != 2 ? 0 : 10 * 2 * 16);

	/* Percentiles of the samples after index 6: the last four. */
	double tot[PROCSTATS_LAT_RING], dev[PROCSTATS_LAT_RING];
	size_t nt, nd;
	procstats_latencies(s, 6, tot, &nt, dev, &nd);
	ck_assert_uint_eq(nt, 4);
	ck_assert_uint_eq(nd, 4);
	uint64_t max_ns = 0, min_ns = UINT64_MAX;
	for (int i = 6; i < 10; i++) {
		max_ns = s->lat[i].total_ns > max_ns ? s->lat[i].total_ns : max_ns;
		min_ns = s->lat[i].total_ns < min_ns ? s->lat[i].total_ns : min_ns;
	}
	ck_assert_double_eq_tol(procstats_quantile(tot, nt, 1.0), (double)max_ns * 1e-9, 1e-15);
	ck_assert_double_eq_tol(procstats_quantile(tot, nt, 0.0), (double)min_ns * 1e-9, 1e-15);
	free(s);
	unary_teardown(&u);
	nrt_close();
}
END_TEST

/* The same NEFFs on both backends count the same FLOPs per core (what
 * neuron-monitor's neuroncore_counters.flops reads): the kernel backend's
 * come from neuronsim-fwd through the driver (ABI 1.2). Without a kernel
 * device, the embedded backend alone against the count of docs/isa.md. */
START_TEST(test_stats_flops_equal_on_both_backends)
{
	static const char *const backends[2] = { "embedded", "kernel" };
	int n_backends = access("/dev/neuronsim0", F_OK) == 0 ? 2 : 1;
	uint64_t flops[2][4];
	for (int b = 0; b < n_backends; b++) {
		setenv("NEURONSIM_BACKEND", backends[b], 1);
		rt_init_ok();
		ck_assert_str_eq(nrt_neuronsim_backend_name(), backends[b]);
		unary_t u;
		sqrt_setup(&u, 3, 4.0f);
		size_t size;
		void *neff = test_neff_matmul(8, 16, 4, &size);
		nrt_model_t *mm = NULL;
		ck_assert_int_eq(nrt_load(neff, size, 1, -1, &mm), NRT_SUCCESS);
		nrt_tensor_t *x = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 1, "x", 0.5f, 8 * 16);
		nrt_tensor_t *w = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 1, "w", 2.0f, 16 * 4);
		nrt_tensor_t *y = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 1, "y", 0, 8 * 4);
		nrt_tensor_set_t *in = rt_tensor_set_of(2, "x", x, "w", w), *out = rt_tensor_set_of(1, "y", y);
		for (int i = 0; i < 7; i++)
			ck_assert_int_eq(nrt_execute(mm, in, out), NRT_SUCCESS);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(nrt_execute(u.m, u.in, u.out), NRT_SUCCESS);
		procstats_snap_t *s = read_self();
		for (uint32_t c = 0; c < 4; c++)
			flops[b][c] = s->cores[c].v[PROCSTATS_CORE_FLOPS];
		free(s);
		nrt_destroy_tensor_set(&in);
		nrt_destroy_tensor_set(&out);
		nrt_tensor_free(&x);
		nrt_tensor_free(&w);
		nrt_tensor_free(&y);
		ck_assert_int_eq(nrt_unload(mm), NRT_SUCCESS);
		free(neff);
		unary_teardown(&u);
		nrt_close();
		/* 2*M*N*K per matmul on core 1, abs and sqrt of 16 on core 3 */
		ck_assert_uint_eq(flops[b][0], 0);
		ck_assert_uint_eq(flops[b][1], 7 * 2 * 8 * 4 * 16);
		ck_assert_uint_eq(flops[b][2], 0);
		ck_assert_uint_eq(flops[b][3], 3 * 2 * 16);
	}
	if (n_backends == 2)
		for (uint32_t c = 0; c < 4; c++)
			ck_assert_msg(flops[0][c] == flops[1][c], "core %u: embedded %llu flops, kernel %llu",
				      c, (unsigned long long)flops[0][c], (unsigned long long)flops[1][c]);
}
END_TEST

START_TEST(test_stats_count_errors_by_kind)
{
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	rt_init_ok();
	/* NaN: sqrt of a negative input. */
	unary_t bad;
	sqrt_setup(&bad, 0, -1.0f);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(bad.m, bad.in, bad.out), NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	/* Incorrect input: the input set lacks x. */
	nrt_tensor_set_t *empty = rt_tensor_set_of(0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_execute(bad.m, empty, bad.out), NRT_INVALID);
	/* A program that writes outside its output: a model error. */
	size_t size;
	unary_t oob;
	void *neff = test_neff_oob(&size);
	unary_setup(&oob, neff, size, 1, 1.0f, 4);
	ck_assert_int_eq(nrt_execute(oob.m, oob.in, oob.out), NRT_EXEC_OOB);
	unary_t good;
	sqrt_setup(&good, 3, 9.0f);
	ck_assert_int_eq(nrt_execute(good.m, good.in, good.out), NRT_SUCCESS);

	procstats_snap_t *s = read_self();
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], 7);
	ck_assert_uint_eq(s->v[PROCSTATS_COMPLETED], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_COMPLETED_WITH_NUM_ERR], 3);
	ck_assert_uint_eq(s->v[PROCSTATS_INCORRECT_INPUT], 2);
	ck_assert_uint_eq(s->v[PROCSTATS_COMPLETED_WITH_ERR], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_TIMED_OUT], 0);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_NUMERICAL], 3);
	ck_assert_uint_eq(s->v[PROCSTATS_NUM_NAN], 3);
	ck_assert_uint_eq(s->v[PROCSTATS_NUM_INF], 0);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_GENERIC], 2);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_MODEL], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_RUNTIME], 0);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_HARDWARE], 0);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_TRANSIENT], 0);
	ck_assert_uint_eq(outcome_sum(s), s->v[PROCSTATS_EXECUTIONS]);
	ck_assert_uint_eq(err_sum(s), s->v[PROCSTATS_EXECUTIONS] - s->v[PROCSTATS_COMPLETED]);
	/* Per core as the API counts it: the NaNs on core 0, the OOB on core 1. */
	ck_assert_uint_eq(s->cores[0].v[PROCSTATS_CORE_COMPLETED_WITH_NUM_ERR], 3);
	ck_assert_uint_eq(s->cores[0].v[PROCSTATS_CORE_INCORRECT_INPUT], 2);
	ck_assert_uint_eq(s->cores[1].v[PROCSTATS_CORE_COMPLETED_WITH_ERR], 1);
	ck_assert_uint_eq(s->cores[3].v[PROCSTATS_CORE_COMPLETED], 1);
	/* Refused executions never reached the device. */
	ck_assert_uint_eq(s->n_lat, 7);
	ck_assert_uint_eq(s->lat[3].device_ns, UINT64_MAX);
	ck_assert_uint_eq(s->lat[4].device_ns, UINT64_MAX);
	ck_assert_uint_ne(s->lat[5].device_ns, UINT64_MAX);
	double tot[PROCSTATS_LAT_RING], dev[PROCSTATS_LAT_RING];
	size_t nt, nd;
	procstats_latencies(s, 0, tot, &nt, dev, &nd);
	ck_assert_uint_eq(nt, 7);
	ck_assert_uint_eq(nd, 5);
	free(s);
	nrt_destroy_tensor_set(&empty);
	unary_teardown(&bad);
	unary_teardown(&oob);
	unary_teardown(&good);
	nrt_close();
}
END_TEST

START_TEST(test_stats_count_timeouts)
{
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	rt_init_ok();
	size_t size;
	void *neff = test_neff_spin(&size);
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(neff, size, 0, -1, &m), NRT_SUCCESS);
	nrt_tensor_t *x = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", 1, 1);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", x), *out = rt_tensor_set_of(0);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_TIMEOUT);
	procstats_snap_t *s = read_self();
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_TIMED_OUT], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_ERR_GENERIC], 1);
	ck_assert_uint_eq(s->cores[0].v[PROCSTATS_CORE_TIMED_OUT], 1);
	ck_assert_uint_ge(s->lat[0].total_ns, 1000000000ull);
	free(s);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&x);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_stats_latency_ring_keeps_the_newest)
{
	rt_init_ok();
	unary_t u;
	sqrt_setup(&u, 0, 1.0f);
	int n = PROCSTATS_LAT_RING + 100;
	ck_assert_int_eq(nrt_execute_repeat(u.m, u.in, u.out, n), NRT_SUCCESS);
	procstats_snap_t *s = read_self();
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], (uint64_t)n);
	ck_assert_uint_eq(s->n_lat, PROCSTATS_LAT_RING);
	ck_assert_uint_eq(s->lat[0].index, 101);
	ck_assert_uint_eq(s->lat[PROCSTATS_LAT_RING - 1].index, (uint64_t)n);
	free(s);
	unary_teardown(&u);
	nrt_close();
}
END_TEST

/* ---- memory ---- */

START_TEST(test_stats_track_memory_by_category)
{
	rt_init_ok();
	unary_t u;
	size_t size;
	void *neff = test_neff_const_scratch(&size);
	unary_setup(&u, neff, size, 0, 1.0f, 4);
	nrt_tensor_t *h = tensor_f32(NRT_TENSOR_PLACEMENT_HOST, 0, "h", 0, 1000);
	ck_assert_int_eq(nrt_execute(u.m, u.in, u.out), NRT_SUCCESS);
	nrt_neuronsim_mem_usage_t mu;
	procstats_snap_t *s = read_mem_settled(&mu);
	ck_assert_uint_gt(mu.by_category[NRT_NEURONSIM_MEM_TENSORS], 0);
	ck_assert_uint_gt(mu.by_category[NRT_NEURONSIM_MEM_CONSTANTS], 0);
	ck_assert_uint_gt(mu.by_category[NRT_NEURONSIM_MEM_CODE], 0);
	ck_assert_uint_ge(mu.host_tensors, 4000);
	for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
		ck_assert_uint_eq(s->v[PROCSTATS_MEM_FIRST + k], mu.by_category[k]);
	ck_assert_uint_eq(s->v[PROCSTATS_MEM_IN_USE], mu.in_use);
	ck_assert_uint_eq(s->v[PROCSTATS_HOST_TENSORS], mu.host_tensors);
	ck_assert_uint_ge(s->v[PROCSTATS_MEM_PEAK], mu.in_use);
	uint64_t before_snapshot = s->v[PROCSTATS_MEM_SNAPSHOT];
	free(s);

	/* Snapshot input copies (ON_NRT_ERROR*) as the snapshot code accounts
	 * them: device memory of their own category, and host bytes. */
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	ck_assert_ptr_nonnull(ctx);
	nrt_backend_mem_t copy;
	ck_assert_int_eq(nrt_devmem_alloc(ctx, 0, 1 << 20, NRT_NEURONSIM_MEM_SNAPSHOT, &copy), NRT_SUCCESS);
	atomic_fetch_add(&ctx->host_snapshot_bytes, 12345);
	s = read_mem_settled(&mu);
	ck_assert_uint_eq(s->v[PROCSTATS_MEM_SNAPSHOT], before_snapshot + copy.size);
	ck_assert_uint_ge(copy.size, 1 << 20);
	ck_assert_uint_eq(s->v[PROCSTATS_HOST_SNAPSHOT], mu.host_snapshot);
	ck_assert_uint_eq(s->v[PROCSTATS_MEM_IN_USE], mu.in_use);
	free(s);
	nrt_devmem_free(ctx, 0, NRT_NEURONSIM_MEM_SNAPSHOT, &copy);
	atomic_fetch_sub(&ctx->host_snapshot_bytes, 12345);
	s = read_mem_settled(&mu);
	ck_assert_uint_eq(s->v[PROCSTATS_MEM_SNAPSHOT], before_snapshot);
	ck_assert_uint_eq(s->v[PROCSTATS_HOST_SNAPSHOT], mu.host_snapshot);
	free(s);

	nrt_tensor_free(&h);
	unary_teardown(&u);
	nrt_close();
}
END_TEST

/* The file once every core's memory adds up to the process's by category
 * and the process's matches the API (the refresher copies both). */
static procstats_snap_t *read_cores_settled(void)
{
	uint64_t deadline = now_ms() + 30000;
	for (;;) {
		nrt_neuronsim_mem_usage_t mu;
		procstats_snap_t *s = read_mem_settled(&mu);
		bool same = true;
		for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++) {
			uint64_t sum = 0;
			for (uint32_t c = 0; c < s->n_cores; c++)
				sum += s->cores[c].mem[k];
			same = same && sum == s->v[PROCSTATS_MEM_FIRST + k];
		}
		if (same || now_ms() > deadline)
			return s;
		free(s);
		usleep(20000);
	}
}

#define CORE_MEM(s, c, cat) ((s)->cores[c].mem[NRT_NEURONSIM_MEM_##cat])

/* Memory per core (each allocation charged to the core it was made for) and
 * the loaded-model list, as neuron-monitor shows them. */
START_TEST(test_stats_memory_per_core_and_loaded_models)
{
	rt_init_ok();
	unary_t a, b;
	sqrt_setup(&a, 0, 4.0f);
	size_t size;
	void *neff = test_neff_const_scratch(&size);
	unary_setup(&b, neff, size, 2, 1.0f, 4);
	procstats_snap_t *s = read_cores_settled();
	ck_assert_uint_ge(s->n_cores, 4);
	for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++) {
		uint64_t sum = 0;
		for (uint32_t c = 0; c < s->n_cores; c++)
			sum += s->cores[c].mem[k];
		ck_assert_uint_eq(sum, s->v[PROCSTATS_MEM_FIRST + k]);
		/* nothing on the cores without a model or tensor */
		ck_assert_uint_eq(s->cores[1].mem[k], 0);
		ck_assert_uint_eq(s->cores[3].mem[k], 0);
	}
	/* x and y of 16 floats on core 0, of 4 floats on core 2 (aligned alike) */
	ck_assert_uint_gt(CORE_MEM(s, 0, TENSORS), 0);
	ck_assert_uint_eq(CORE_MEM(s, 0, TENSORS), CORE_MEM(s, 2, TENSORS));
	ck_assert_uint_gt(CORE_MEM(s, 0, CODE), 0);
	ck_assert_uint_gt(CORE_MEM(s, 2, CODE), 0);
	ck_assert_uint_gt(CORE_MEM(s, 2, CONSTANTS), 0);
	ck_assert_uint_eq(CORE_MEM(s, 0, CONSTANTS), 0);
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_LOADED], 2);
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_UNLISTED], 0);
	ck_assert_uint_eq(s->n_models, 2);
	const procstats_model_info_t *m0 = &s->models[0], *m1 = &s->models[1];
	ck_assert_uint_eq(m0->id, 1);
	ck_assert_str_eq(m0->name, "sqrt");
	ck_assert_uint_eq(m0->first_core, 0);
	ck_assert_uint_eq(m0->neff_cores, 1);
	ck_assert_uint_eq(m0->n_instances, 1);
	ck_assert_uint_eq(m0->mem_code, CORE_MEM(s, 0, CODE));
	ck_assert_uint_eq(m0->mem_constants + m0->mem_scratch,
			  CORE_MEM(s, 0, CONSTANTS) + CORE_MEM(s, 0, SCRATCH));
	ck_assert_uint_eq(m1->id, 2);
	ck_assert_str_eq(m1->name, "const_scratch");
	ck_assert_uint_eq(m1->first_core, 2);
	ck_assert_uint_eq(m1->mem_code, CORE_MEM(s, 2, CODE));
	ck_assert_uint_eq(m1->mem_constants, CORE_MEM(s, 2, CONSTANTS));
	ck_assert_uint_eq(m1->mem_scratch, CORE_MEM(s, 2, SCRATCH));
	free(s);

	/* More models than the list holds: counted, not listed; unloads in any order. */
	enum { EXTRA = PROCSTATS_MAX_MODELS };
	nrt_model_t *extra[EXTRA];
	size_t sq_size;
	void *sq = test_neff_sqrt(16, &sq_size);
	for (int i = 0; i < EXTRA; i++)
		ck_assert_int_eq(nrt_load(sq, sq_size, 1, -1, &extra[i]), NRT_SUCCESS);
	s = read_self();
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_LOADED], 2 + EXTRA);
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_UNLISTED], 2);
	ck_assert_uint_eq(s->n_models, PROCSTATS_MAX_MODELS);
	free(s);
	for (int i = 0; i < EXTRA; i++)
		ck_assert_int_eq(nrt_unload(extra[i]), NRT_SUCCESS);
	free(sq);

	unary_teardown(&b);
	s = read_cores_settled();
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_LOADED], 1);
	ck_assert_uint_eq(s->v[PROCSTATS_MODELS_UNLISTED], 0);
	ck_assert_uint_eq(s->n_models, 1);
	ck_assert_str_eq(s->models[0].name, "sqrt");
	for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++) {
		ck_assert_uint_eq(s->cores[1].mem[k], 0);
		ck_assert_uint_eq(s->cores[2].mem[k], 0);
	}
	ck_assert_uint_gt(CORE_MEM(s, 0, CODE), 0);
	free(s);
	unary_teardown(&a);
	nrt_close();
}
END_TEST

/* ---- stale and foreign files ---- */

START_TEST(test_stats_file_of_killed_process_is_stale_and_removed)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* Publishes, says so, and waits to be killed (nrt_close never runs). */
		close(fds[0]);
		if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
			_exit(1);
		if (write(fds[1], "k", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	char c;
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);

	char err[512];
	procstats_list_t l;
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, 0, 0, &l),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_uint_eq(l.procs[0].pid, (uint32_t)child);
	procstats_list_free(&l);

	kill(child, SIGKILL);
	int status;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	char path[512];
	ck_assert_int_eq(procstats_path(path, sizeof(path), stats_dir, geteuid(), child), 0);
	ck_assert_int_eq(access(path, F_OK), 0);

	/* Ignored, and only removed when asked. */
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, 0, 0, &l),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_uint_eq(l.n_stale, 1);
	procstats_list_free(&l);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, PROCSTATS_SCAN_REMOVE_STALE, 0, &l),
						   err, sizeof(err)),
			 NS_STATUS_OK);
	ck_assert_uint_eq(l.n_stale, 1);
	procstats_list_free(&l);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_stats_reader_rejects_bad_files)
{
	char name[128], err[512];
	procstats_snap_t *s = malloc(sizeof(*s));
	pid_t me = getpid();
	uid_t uid = geteuid();
	snprintf(name, sizeof(name), "%s%u.%d", PROCSTATS_FILE_PREFIX, (unsigned)uid, (int)me);

	/* A well-formed file of a live process (this one) reads fine. */
	procstats_file_t *f = fake_of(me);
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], 7);
	ck_assert_uint_eq(s->n_cores, 2);

	/* The same pid with another start time: the pid was reused. */
	f->start_time += 1;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err, "is gone"));
	f->start_time -= 1;

	/* Closed, or still being created. */
	f->state = PROCSTATS_STATE_CLOSED;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_NOT_FOUND);
	f->state = PROCSTATS_STATE_INIT;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_UNAVAILABLE);
	/* ... also when caught before its writer stored start_time: a scan that
	 * removes stale files must leave it alone (it once deleted the file of a
	 * runtime starting next to neuron-monitor, which then never saw it). */
	uint64_t start = f->start_time;
	f->start_time = 0;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_UNAVAILABLE);
	procstats_list_t scanned;
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, PROCSTATS_SCAN_REMOVE_STALE, 0, &scanned),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(scanned.n_stale, 0);
	procstats_list_free(&scanned);
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_UNAVAILABLE);
	f->start_time = start;
	f->state = PROCSTATS_STATE_LIVE;

	/* Another layout version, a wrong size, garbage. */
	f->version = PROCSTATS_VERSION + 1;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_UNAVAILABLE);
	ck_assert_ptr_nonnull(strstr(err, "layout version"));
	f->version = PROCSTATS_VERSION;
	write_fake(name, f, sizeof(*f) - 8);
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_UNAVAILABLE);
	write_fake(name, f, 3);
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	f->magic ^= 1;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "magic"));
	f->magic ^= 1;
	f->n_cores = PROCSTATS_MAX_CORES + 1;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	f->n_cores = 2;
	f->pid = (uint32_t)me + 1;
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "header says"));
	f->pid = (uint32_t)me;
	unsigned char *g = (unsigned char *)f;
	for (size_t i = 0; i < sizeof(*f); i++)
		g[i] = (unsigned char)(i * 131u + 7u);
	write_fake(name, f, sizeof(*f));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);

	/* Names: not ours, or a symlink to a valid file. */
	ck_assert_int_eq(read_named("neuronsim-stats.x.1", s, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	free(f);
	f = fake_of(me);
	write_fake("real", f, sizeof(*f));
	char target[512], link[512];
	snprintf(target, sizeof(target), "%s/real", stats_dir);
	snprintf(link, sizeof(link), "%s/%s", stats_dir, name);
	unlink(link);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_ne(read_named(name, s, err, sizeof(err)), NS_STATUS_OK);
	unlink(link);

	/* pid 1 is alive but never wrote this file: its start time differs. */
	procstats_file_t *p1 = fake_of(1);
	p1->start_time += 12345;
	snprintf(name, sizeof(name), "%s%u.1", PROCSTATS_FILE_PREFIX, (unsigned)uid);
	write_fake(name, p1, sizeof(*p1));
	ck_assert_int_eq(read_named(name, s, err, sizeof(err)), NS_STATUS_NOT_FOUND);

	/* A scan over all of it lists nothing and removes only what is stale. */
	procstats_list_t l;
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, PROCSTATS_SCAN_REMOVE_STALE, 0, &l),
						   err, sizeof(err)),
			 NS_STATUS_OK);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_uint_eq(l.n_stale, 1);
	procstats_list_free(&l);
	char p1path[512];
	snprintf(p1path, sizeof(p1path), "%s/%s", stats_dir, name);
	ck_assert_int_eq(access(p1path, F_OK), -1);
	free(p1);
	free(f);
	free(s);

	/* A directory that does not exist is an error that names it. */
	ck_assert_int_eq(ns_status_consume_message(procstats_scan("/nonexistent/dir", 0, 0, &l),
						   err, sizeof(err)), NS_STATUS_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dir"));
	ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_stats_scan_lists_processes_and_excludes_one)
{
	rt_init_ok();
	char err[512];
	procstats_list_t l;
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, 0, 0, &l),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_uint_eq(l.procs[0].pid, (uint32_t)getpid());
	ck_assert_uint_eq(l.n_skipped, 0);
	procstats_list_free(&l);
	ck_assert_int_eq(ns_status_consume_message(procstats_scan(stats_dir, 0, getpid(), &l),
						   err, sizeof(err)), NS_STATUS_OK);
	ck_assert_uint_eq(l.n, 0);
	procstats_list_free(&l);
	nrt_close();
}
END_TEST

/* ---- consistency ---- */

typedef struct worker {
	unary_t u;
	int iterations;
	int done;             /* successful executions */
	atomic_int *running;
	atomic_bool *stop;
} worker_t;

static void *worker_main(void *arg)
{
	worker_t *w = arg;
	for (int i = 0; i < w->iterations && !atomic_load(w->stop); i++) {
		if (nrt_execute(w->u.m, w->u.in, w->u.out) != NRT_SUCCESS)
			break;
		w->done++;
	}
	atomic_fetch_sub(w->running, 1);
	return NULL;
}

START_TEST(test_stats_reads_are_consistent_during_concurrent_executions)
{
	rt_init_ok();
	/* ITER executions per worker, or as many as STOP_MS allow: the kernel
	 * backend under QEMU's emulated CPUs runs a few hundred per second, where
	 * 4 x 20000 outlasted the test's timeout. The counts are checked against
	 * what the workers did either way. */
	enum { N = 4, ITER = 20000, STOP_MS = 10000 };
	worker_t w[N];
	pthread_t th[N];
	atomic_int running = N;
	atomic_bool stop = false;
	for (int i = 0; i < N; i++) {
		sqrt_setup(&w[i].u, i, 4.0f);
		w[i].iterations = ITER;
		w[i].done = 0;
		w[i].running = &running;
		w[i].stop = &stop;
	}
	uint64_t stop_at = now_ms() + STOP_MS;
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	char path[512], err[512];
	self_path(path, sizeof(path));
	procstats_snap_t *s = malloc(sizeof(*s));
	uint64_t last_exec = 0, last_lat = 0;
	int reads = 0, busy = 0;
	while (atomic_load(&running) > 0 || reads == 0) {
		if (now_ms() > stop_at)
			atomic_store(&stop, true);
		/* Four writers on a loaded machine may keep the seqlock busy through one
		 * read's tries: that read is retried, not counted (read_file_settled). */
		ns_status_code_t st = read_file_settled(path, s, err, sizeof(err), &busy);
		ck_assert_msg(st == NS_STATUS_OK, "%s (after %d busy reads)", err, busy);
		reads++;
		/* One consistent moment: every execution counted once. */
		ck_assert_uint_eq(outcome_sum(s), s->v[PROCSTATS_EXECUTIONS]);
		ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], s->v[PROCSTATS_LAT_HEAD]);
		ck_assert_uint_ge(s->v[PROCSTATS_EXECUTIONS], last_exec);
		last_exec = s->v[PROCSTATS_EXECUTIONS];
		for (uint32_t i = 1; i < s->n_lat; i++)
			ck_assert_uint_gt(s->lat[i].index, s->lat[i - 1].index);
		if (s->n_lat) {
			ck_assert_uint_ge(s->lat[s->n_lat - 1].index, last_lat);
			last_lat = s->lat[s->n_lat - 1].index;
		}
	}
	int total = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_gt(w[i].done, 0);
		total += w[i].done;
	}
	/* No writer left: the seqlock must be free at once. */
	ns_status_code_t st = ns_status_consume_message(procstats_read_file(path, s),
							err, sizeof(err));
	ck_assert_msg(st == NS_STATUS_OK, "%s", err);
	if (busy)
		fprintf(stderr, "%d of %d reads found the seqlock busy and were retried\n", busy, reads + busy);
	ck_assert_uint_eq(s->v[PROCSTATS_EXECUTIONS], (uint64_t)total);
	ck_assert_uint_eq(s->v[PROCSTATS_COMPLETED], (uint64_t)total);
	for (uint32_t c = 0; c < N; c++)
		ck_assert_uint_eq(s->cores[c].v[PROCSTATS_CORE_EXECUTIONS], (uint64_t)w[c].done);
	ck_assert_int_gt(reads, 1);
	free(s);
	for (int i = 0; i < N; i++)
		unary_teardown(&w[i].u);
	nrt_close();
}
END_TEST

START_TEST(test_stats_quantiles)
{
	double v[] = { 5, 1, 4, 2, 3 };
	ck_assert_double_eq(procstats_quantile(v, 5, 0.0), 1);
	ck_assert_double_eq(procstats_quantile(v, 5, 0.5), 3);
	ck_assert_double_eq(procstats_quantile(v, 5, 0.25), 2);
	ck_assert_double_eq(procstats_quantile(v, 5, 0.99), 5);
	ck_assert_double_eq(procstats_quantile(v, 5, 1.0), 5);
	ck_assert_double_eq(procstats_quantile(v, 0, 0.5), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_stats");
	TCase *tc = tcase_create("stats");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stats_file_published_at_init_and_removed_at_close);
	tcase_add_test(tc, test_stats_disabled_or_bad_switch);
	tcase_add_test(tc, test_stats_publish_failure_is_only_a_warning);
	tcase_add_test(tc, test_stats_track_executions_and_latencies);
	tcase_add_test(tc, test_stats_flops_equal_on_both_backends);
	tcase_add_test(tc, test_stats_count_errors_by_kind);
	tcase_add_test(tc, test_stats_count_timeouts);
	tcase_add_test(tc, test_stats_latency_ring_keeps_the_newest);
	tcase_add_test(tc, test_stats_track_memory_by_category);
	tcase_add_test(tc, test_stats_memory_per_core_and_loaded_models);
	tcase_add_test(tc, test_stats_file_of_killed_process_is_stale_and_removed);
	tcase_add_test(tc, test_stats_reader_rejects_bad_files);
	tcase_add_test(tc, test_stats_scan_lists_processes_and_excludes_one);
	tcase_add_test(tc, test_stats_reads_are_consistent_during_concurrent_executions);
	tcase_add_test(tc, test_stats_quantiles);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
