/* The Neuron Runtime's documented settings (NEURON_RT_LOG_*, NEURON_RT_EXEC_TIMEOUT, documented but
 * unimplemented variables), its out-of-memory report, and the release version, through the public API. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_version.h"
#include "rt_fixture.h"
#include "test_neffs.h"
#include "uapi/linux/neuronsim_version.h"

static int count_of(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 16);
	size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	(void)n;
	fclose(f);
	return buf;
}

/* An error the runtime logs at ERROR (component NRT): a tensor on a core that
 * is not visible. */
static void provoke_nrt_error(void)
{
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 99, 64, "t", &t), NRT_INVALID);
}

static void env_clean(void)
{
	test_env_default();
	static const char *const vars[] = {
		"NEURON_RT_LOG_LOCATION", "NEURON_RT_LOG_LEVEL_NRT", "NEURON_RT_LOG_LEVEL_TDRV",
		"NEURON_RT_LOG_LEVEL_NMGR", "NEURON_RT_LOG_LOCATION_NRT", "NEURON_RT_LOG_LOCATION_TDRV",
		"NEURON_RT_LOG_LOCATION_NMGR", "NEURON_RT_VALIDATE_HASH", "NEURON_RT_ROOT_COMM_ID",
		"NEURON_RT_PROFILE_BUF_DMA_MB", "NEURON_RT_NOT_A_REAL_ONE", "NEURON_RT_LOG_LEVEL_FOO",
		"NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "NEURONSIM_MEM_TABLE_DIR",
		"NEURON_RT_INSPECT_ENABLE", "NEURON_RT_INSPECT_OUTPUT_DIR", "NEURON_RT_INSPECT_DEVICE_PROFILE",
		"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP",
		"NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* ---- item 1: documented settings ---- */

START_TEST(test_documented_values_do_not_stop_init)
{
	static const struct {
		const char *var, *val;
	} ok[] = {
		{ "NEURON_RT_LOG_LEVEL", "QUIET" },    { "NEURON_RT_LOG_LEVEL", "quiet" },
		{ "NEURON_RT_LOG_LEVEL", "WARNING" },  { "NEURON_RT_LOG_LEVEL", "TRACE" },
		{ "NEURON_RT_EXEC_TIMEOUT", "2147483647" }, /* INT_MAX, the documented maximum */
		{ "NEURON_RT_EXEC_TIMEOUT", "0" },
		{ "NEURON_RT_LOG_LOCATION", "console" }, { "NEURON_RT_LOG_LOCATION", "SYSLOG" },
		{ "NEURON_RT_LOG_LEVEL_TDRV", "DEBUG" }, { "NEURON_RT_LOG_LEVEL_NMGR", "ERROR" },
		{ "NEURON_RT_LOG_LEVEL_NRT", "info" },   { "NEURON_RT_VALIDATE_HASH", "TRUE" },
		{ "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "false" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		env_clean();
		setenv(ok[i].var, ok[i].val, 1);
		test_capture_begin();
		NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
		char *log = test_capture_end();
		ck_assert_msg(st == NRT_SUCCESS, "%s=%s stops nrt_init (%d): %s", ok[i].var, ok[i].val, st, log);
		ck_assert_msg(!strstr(log, "ERROR"), "%s=%s: %s", ok[i].var, ok[i].val, log);
		free(log);
		nrt_close();
	}
}
END_TEST

START_TEST(test_bad_log_and_timeout_values_are_refused_by_name)
{
	char long_path[1100];
	memset(long_path, 'x', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = '\0';
	static const char *const vars[] = { "NEURON_RT_EXEC_TIMEOUT", "NEURON_RT_LOG_LEVEL_TDRV",
					    "NEURON_RT_LOG_LEVEL", "NEURON_RT_LOG_LOCATION_NRT" };
	const char *vals[] = { "2147483648", "LOUD", "VERBOSE", long_path };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		env_clean();
		setenv(vars[i], vals[i], 1);
		test_capture_begin();
		NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
		char *log = test_capture_end();
		ck_assert_msg(st == NRT_INVALID, "%s: status %d", vars[i], st);
		ck_assert_msg(strstr(log, "nrt: ERROR") && strstr(log, vars[i]), "%s: %s", vars[i], log);
		if (i < 3)
			ck_assert_msg(strstr(log, vals[i]), "the message does not name the value: %s", log);
		free(log);
	}
}
END_TEST

START_TEST(test_quiet_silences_errors_and_component_levels_override)
{
	env_clean();
	setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	provoke_nrt_error();
	char *log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "QUIET still logs: %s", log);
	free(log);
	nrt_close();

	/* the component's own level wins over the global one, both ways */
	setenv("NEURON_RT_LOG_LEVEL_NRT", "ERROR", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	provoke_nrt_error();
	log = test_capture_end();
	ck_assert_msg(count_of(log, "nrt: ERROR") == 1, "%s", log);
	free(log);
	nrt_close();

	setenv("NEURON_RT_LOG_LEVEL", "INFO", 1);
	setenv("NEURON_RT_LOG_LEVEL_NRT", "QUIET", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	provoke_nrt_error();
	log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "NEURON_RT_LOG_LEVEL_NRT=QUIET still logs: %s", log);
	free(log);
	nrt_close();
}
END_TEST

/* The levels read at nrt_init hold while the runtime is up, whatever the
 * environment says later; after nrt_close the environment decides again. */
START_TEST(test_log_level_of_the_live_runtime_then_of_the_environment)
{
	env_clean();
	setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	test_capture_begin();
	provoke_nrt_error();
	char *log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "the runtime's QUIET did not hold: %s", log);
	free(log);
	nrt_close();

	nrt_tensor_t *t = NULL;
	test_capture_begin();
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_CLOSED);
	log = test_capture_end();
	ck_assert_msg(count_of(log, "nrt: ERROR nrt_tensor_allocate: the runtime was closed") == 1, "%s", log);
	free(log);
	setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_CLOSED);
	log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "QUIET after nrt_close still logs: %s", log);
	free(log);
	env_clean();
}
END_TEST

START_TEST(test_component_log_location_file)
{
	env_clean();
	char dir[256];
	rt_tmpdir_create(dir, sizeof(dir), "nrt-logloc");
	const char *path = rt_tmpdir_path(dir, "nrt.log");
	setenv("NEURON_RT_LOG_LOCATION_NRT", path, 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	provoke_nrt_error();
	provoke_nrt_error();
	nrt_close();
	char *console = test_capture_end();
	ck_assert_msg(console[0] == '\0', "the NRT error went to the console too: %s", console);
	free(console);
	char *file = read_all(path);
	ck_assert_ptr_nonnull(file);
	ck_assert_msg(count_of(file, "nrt: ERROR") == 2 && count_of(file, "\n") == 2, "%s", file);
	free(file);

	/* syslog: nothing on the console (syslog(3) itself is not read back here) */
	setenv("NEURON_RT_LOG_LOCATION_NRT", "syslog", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	provoke_nrt_error();
	console = test_capture_end();
	ck_assert_msg(console[0] == '\0', "syslog location wrote to the console: %s", console);
	free(console);
	nrt_close();

	/* a file that cannot be written: the line still reaches the console, with why */
	setenv("NEURON_RT_LOG_LOCATION_NRT", rt_tmpdir_path(dir, "missing/nrt.log"), 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	provoke_nrt_error();
	console = test_capture_end();
	ck_assert_msg(strstr(console, "cannot append to log file") && strstr(console, "missing/nrt.log") &&
		      strstr(console, "is not visible"), "%s", console);
	free(console);
	nrt_close();
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
}
END_TEST

START_TEST(test_unimplemented_documented_variables_said_once_at_info)
{
	env_clean();
	setenv("NEURON_RT_LOG_LEVEL", "INFO", 1);
	setenv("NEURON_RT_VALIDATE_HASH", "true", 1);
	setenv("NEURON_RT_ROOT_COMM_ID", "10.0.1.2:46820", 1);
	setenv("NEURON_RT_PROFILE_BUF_DMA_MB", "512", 1);
	setenv("NEURON_RT_NOT_A_REAL_ONE", "1", 1);
	setenv("NEURON_RT_LOG_LEVEL_FOO", "DEBUG", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_SUCCESS);
	nrt_tensor_free(&t);
	nrt_close();
	char *log = test_capture_end();
	static const char *const unimpl[] = { "NEURON_RT_VALIDATE_HASH", "NEURON_RT_ROOT_COMM_ID",
					      "NEURON_RT_PROFILE_BUF_DMA_MB" };
	for (size_t i = 0; i < 3; i++) {
		char want[128];
		snprintf(want, sizeof(want), "nrt: INFO  %s is set: neuronsim does not implement it", unimpl[i]);
		ck_assert_msg(count_of(log, want) == 1, "%s not said once: %s", unimpl[i], log);
	}
	ck_assert_msg(count_of(log, "NEURON_RT_NOT_A_REAL_ONE is set but is not a Neuron Runtime variable") == 1 &&
		      count_of(log, "NEURON_RT_LOG_LEVEL_FOO is set but is not") == 1, "%s", log);
	/* implemented ones are not reported */
	ck_assert_ptr_null(strstr(log, "NEURON_RT_LOG_LEVEL is set"));
	free(log);

	/* at the default level (ERROR) nothing is said */
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_close();
	log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "%s", log);
	free(log);
}
END_TEST

/* NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS, the legacy implicit async mode
 * the Neuron Runtime removed in 2.31.0: one warning naming the explicit API,
 * and nrt_execute stays synchronous (its output is there when it returns). */
START_TEST(test_implicit_async_variable_warns_removed)
{
	env_clean();
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	setenv("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "4", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(count_of(log, "nrt: WARN  NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS is set but is "
				    "deprecated and has no effect") == 1 &&
		      strstr(log, "removed from the Neuron Runtime in Neuron 2.31.0") &&
		      strstr(log, "nrta_execute_schedule"), "%s", log);
	ck_assert_ptr_null(strstr(log, "does not implement it"));
	free(log);
	rt_add_model_t f = { 0 };
	f.neff = test_neff_add(1024, &f.size);
	ck_assert_int_eq(nrt_load(f.neff, f.size, 0, -1, &f.m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "a", &f.a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "b", &f.b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "out", &f.out), NRT_SUCCESS);
	float ones[1024], got[1024];
	for (int i = 0; i < 1024; i++)
		ones[i] = 1.0f;
	ck_assert_int_eq(nrt_tensor_write(f.a, ones, 0, sizeof(ones)), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(f.b, ones, 0, sizeof(ones)), NRT_SUCCESS);
	rt_add_model_sets(&f);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(f.out, got, 0, sizeof(got)), NRT_SUCCESS);
	ck_assert(got[0] == 2.0f && got[1023] == 2.0f);
	rt_add_model_free(&f);
	nrt_close();
}
END_TEST

START_TEST(test_warmup_variable_renamed_old_name_deprecated)
{
	env_clean();
	char dir[256];
	rt_tmpdir_create(dir, sizeof(dir), "nrt-warmup");
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", rt_tmpdir_path(dir, "o"), 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "1", 1);
	setenv("NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "2", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_close();
	char *log = test_capture_end();
	ck_assert_msg(!strstr(log, "deprecated"), "%s", log);
	free(log);

	unsetenv("NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP");
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "2", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_close();
	log = test_capture_end();
	ck_assert_msg(count_of(log, "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP is deprecated: set "
				    "NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP") == 1, "%s", log);
	free(log);

	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "-1", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
	log = test_capture_end();
	ck_assert_msg(strstr(log, "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP='-1'"), "%s", log);
	free(log);
	env_clean();
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
}
END_TEST

/* ---- item 8: out of device memory ---- */

START_TEST(test_oom_reports_size_core_and_usage_by_category)
{
	env_clean();
	char dir[256];
	rt_tmpdir_create(dir, sizeof(dir), "nrt-oom");
	setenv("NEURONSIM_MEM_TABLE_DIR", dir, 1);
	/* one device, 4 cores; its size is the backend's (256 MiB embedded, the
	 * module's mem_size on the kernel backend) */
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_eq(u.in_use, 0);
	const uint64_t mib = 1ull << 20;
	uint64_t big_sz = u.total / 4 * 3 / mib * mib, more_sz = u.total / 2 / mib * mib;
	ck_assert(big_sz + more_sz > u.total && u.total < (1ull << 30));
	nrt_tensor_t *big = NULL, *more = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, big_sz, "big", &big), NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, more_sz, "more", &more),
			 NRT_RESOURCE);
	char *log = test_capture_end();
	ck_assert_ptr_null(more);
	char want[512];
	snprintf(want, sizeof(want), "nrt: ERROR TDRV: Failed to allocate %.3fMB (alignment: none, usage: "
		 "tensors) on ND 0:NC 2 (logical NeuronCore 2): %.3fMB of the device's %.3fMB are in use",
		 (double)more_sz / mib, (double)big_sz / mib, (double)u.total / mib);
	ck_assert_msg(strstr(log, want), "want: %s\nlog: %s", want, log);
	ck_assert_msg(strstr(log, "Displaying Current Memory Utilization:"), "%s", log);
	/* the table: a header naming the categories, then the device's row */
	ck_assert_msg(strstr(log, "TOTAL") && strstr(log, "Tensors") && strstr(log, "Constants") &&
		      strstr(log, "Scratchpad") && strstr(log, "Free"), "%s", log);
	/* cells are right-aligned in 9 columns: " 72.000MB" on the kernel
	 * backend's 96 MiB device, "192.000MB" on the embedded 256 MiB one */
	char cell[32], row[128];
	snprintf(cell, sizeof(cell), "%.3fMB", (double)big_sz / mib);
	snprintf(row, sizeof(row), "ND 0 Overall  |%9s |%9s |  0.000B  |", cell, cell);
	ck_assert_msg(strstr(log, row), "want row: %s\nlog: %s", row, log);
	char free_cell[48];
	snprintf(cell, sizeof(cell), "%.3fMB", (double)(u.total - big_sz) / mib);
	snprintf(free_cell, sizeof(free_cell), "%9s |\n", cell);
	ck_assert_msg(strstr(strstr(log, row), free_cell), "free column %s: %s", free_cell, log);
	char *file = read_all(rt_tmpdir_path(dir, "neuron_mem_table_device_0_hbm_0.log"));
	ck_assert_msg(file && strstr(file, row), "file: %s", file);
	ck_assert_msg(strstr(log, "The table is also in") && strstr(log, "neuron_mem_table_device_0_hbm_0.log"),
		      "%s", log);
	free(file);
	free(log);

	/* the freed memory is usable again */
	nrt_tensor_free(&big);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, more_sz, "more", &more),
			 NRT_SUCCESS);
	nrt_tensor_free(&more);
	nrt_close();
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
}
END_TEST

START_TEST(test_oom_log_can_be_turned_down)
{
	env_clean();
	char dir[256];
	rt_tmpdir_create(dir, sizeof(dir), "nrt-oom-quiet");
	setenv("NEURONSIM_MEM_TABLE_DIR", dir, 1);
	setenv("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "0", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_tensor_t *t = NULL;
	test_capture_begin();
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 300ull << 20, "t", &t), NRT_RESOURCE);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "Failed to allocate 300.000MB") && !strstr(log, "Overall"), "%s", log);
	ck_assert_int_eq(access(rt_tmpdir_path(dir, "neuron_mem_table_device_0_hbm_0.log"), F_OK), -1);
	free(log);
	nrt_close();

	/* NEURON_RT_LOG_LEVEL_TDRV=QUIET hides the report, NRT's errors stay */
	unsetenv("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG");
	setenv("NEURON_RT_LOG_LEVEL_TDRV", "QUIET", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 300ull << 20, "t", &t), NRT_RESOURCE);
	log = test_capture_end();
	ck_assert_msg(!strstr(log, "TDRV"), "%s", log);
	free(log);
	nrt_close();
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
}
END_TEST

START_TEST(test_load_logs_per_neff_memory_at_tdrv_info)
{
	env_clean();
	setenv("NEURON_RT_LOG_LEVEL_TDRV", "info", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t size;
	void *neff = test_neff_add(1024, &size);
	nrt_model_t *m = NULL;
	test_capture_begin();
	ck_assert_int_eq(nrt_load(neff, size, 1, 1, &m), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "nrt: INFO  TDRV: [ND 0:NC 1] Current Usage Total: ") &&
		      strstr(log, "nrt: INFO  TDRV: Per NEFF memory usage breakdown for [") &&
		      strstr(log, "TDRV:         Total: ") && strstr(log, "TDRV:         * model constants: ") &&
		      strstr(log, "TDRV:         * scratchpad: "), "%s", log);
	const char *code = strstr(log, "* model code: ");
	ck_assert_msg(code && strncmp(code, "* model code: 0.000B", 20) != 0, "%s", log);
	/* the NRT component at its default (ERROR) says nothing of the load */
	ck_assert_ptr_null(strstr(log, "loaded model"));
	free(log);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	nrt_close();

	unsetenv("NEURON_RT_LOG_LEVEL_TDRV");
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_load(neff, size, 1, 1, &m), NRT_SUCCESS);
	log = test_capture_end();
	ck_assert_msg(log[0] == '\0', "%s", log);
	free(log);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	nrt_close();
	free(neff);
}
END_TEST

/* ---- item 9: the release version ---- */

START_TEST(test_version_names_the_release)
{
	nrt_version_t v;
	ck_assert_int_eq(nrt_get_version(&v, sizeof(v)), NRT_SUCCESS);
	ck_assert_uint_eq(v.rt_major, NRT_MAJOR_VERSION);
	char want[64];
	snprintf(want, sizeof(want), "neuronsim %s ", NEURONSIM_VERSION);
	ck_assert_msg(!strncmp(v.rt_detail, want, strlen(want)), "rt_detail: %s", v.rt_detail);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime-config");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, test_documented_values_do_not_stop_init);
	tcase_add_test(tc, test_bad_log_and_timeout_values_are_refused_by_name);
	tcase_add_test(tc, test_quiet_silences_errors_and_component_levels_override);
	tcase_add_test(tc, test_log_level_of_the_live_runtime_then_of_the_environment);
	tcase_add_test(tc, test_component_log_location_file);
	tcase_add_test(tc, test_unimplemented_documented_variables_said_once_at_info);
	tcase_add_test(tc, test_implicit_async_variable_warns_removed);
	tcase_add_test(tc, test_warmup_variable_renamed_old_name_deprecated);
	tcase_add_test(tc, test_oom_reports_size_core_and_usage_by_category);
	tcase_add_test(tc, test_oom_log_can_be_turned_down);
	tcase_add_test(tc, test_load_logs_per_neff_memory_at_tdrv_info);
	tcase_add_test(tc, test_version_names_the_release);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
