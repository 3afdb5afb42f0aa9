/* Check tests of libnrt internals: the device memory allocator, handle tables, env parsing and the NRT status boundary. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_mem.h"
#include "env.h"
#include "internal.h"
#include "rt_fixture.h"
#include "test_neffs.h"

START_TEST(test_dmem_best_fit_and_coalescing)
{
	nrt_dmem_t dm;
	ck_assert_int_eq(nrt_dmem_init(&dm, 4096, 1 << 20), NRT_SUCCESS);
	uint64_t a[4], sz, h[4], freeb;
	uint64_t sizes[4] = { 100, 1000, 64, 5000 };
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(nrt_dmem_alloc(&dm, sizes[i], &a[i], &sz, &h[i]), NRT_SUCCESS);
		ck_assert_uint_eq(a[i] % NRT_DMEM_ALIGN, 0);
		ck_assert_uint_ge(sz, sizes[i]);
		ck_assert_uint_ge(a[i], 4096);
	}
	ck_assert_uint_eq(a[0], 4096);
	ck_assert_uint_eq(a[1], 4096 + 128); /* 100 rounded to 128 */
	uint64_t in_use, peak;
	nrt_dmem_stats(&dm, &in_use, &peak, &freeb);
	ck_assert_uint_eq(in_use, 128 + 1024 + 64 + 5056);
	/* free the 1000-byte block; a 900-byte request fits it best (not the tail) */
	ck_assert_int_eq(nrt_dmem_free(&dm, h[1]), NRT_SUCCESS);
	uint64_t x, hx;
	ck_assert_int_eq(nrt_dmem_alloc(&dm, 900, &x, &sz, &hx), NRT_SUCCESS);
	ck_assert_uint_eq(x, a[1]);
	/* double free and garbage handles are rejected */
	ck_assert_int_eq(nrt_dmem_free(&dm, h[1]), NRT_SUCCESS); /* h[1]==hx block reused: freeing it is valid */
	ck_assert_int_eq(nrt_dmem_free(&dm, hx), NRT_INVALID);
	ck_assert_int_eq(nrt_dmem_free(&dm, 12345), NRT_INVALID);
	/* freeing everything coalesces back to one block */
	ck_assert_int_eq(nrt_dmem_free(&dm, h[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_dmem_free(&dm, h[3]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_dmem_free(&dm, h[2]), NRT_SUCCESS);
	nrt_dmem_stats(&dm, &in_use, &peak, &freeb);
	ck_assert_uint_eq(in_use, 0);
	ck_assert_uint_eq(freeb, 1);
	ck_assert_uint_ge(peak, 128 + 1024 + 64 + 5056);
	/* whole range, then nothing */
	ck_assert_int_eq(nrt_dmem_alloc(&dm, 1 << 20, &x, &sz, &hx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_dmem_alloc(&dm, 1, &a[0], &sz, &h[0]), NRT_RESOURCE);
	ck_assert_int_eq(nrt_dmem_alloc(&dm, 0, &a[0], &sz, &h[0]), NRT_INVALID);
	ck_assert_int_eq(nrt_dmem_alloc(&dm, UINT64_MAX, &a[0], &sz, &h[0]), NRT_INVALID);
	nrt_dmem_fini(&dm);
}
END_TEST

START_TEST(test_dmem_random_stress_keeps_accounting)
{
	nrt_dmem_t dm;
	ck_assert_int_eq(nrt_dmem_init(&dm, 0, 1 << 24), NRT_SUCCESS);
	enum { N = 256 };
	uint64_t addr[N] = { 0 }, size[N] = { 0 }, h[N] = { 0 };
	unsigned seed = 1;
	for (int it = 0; it < 20000; it++) {
		int i = rand_r(&seed) % N;
		if (h[i]) {
			ck_assert_int_eq(nrt_dmem_free(&dm, h[i]), NRT_SUCCESS);
			h[i] = 0;
		} else {
			uint64_t want = 1 + (uint64_t)(rand_r(&seed) % 100000);
			if (nrt_dmem_alloc(&dm, want, &addr[i], &size[i], &h[i]) != NRT_SUCCESS)
				h[i] = 0;
			/* no overlap with any live block (asserted only on a failure: a
			 * passing Check assertion writes its location to Check's message
			 * file, and these 1.2 million were most of the suite's time) */
			for (int j = 0; h[i] && j < N; j++)
				if (j != i && h[j] && !(addr[i] + size[i] <= addr[j] || addr[j] + size[j] <= addr[i]))
					ck_abort_msg("block %d [%#llx, +%llu) overlaps block %d [%#llx, +%llu)", i,
						     (unsigned long long)addr[i], (unsigned long long)size[i], j,
						     (unsigned long long)addr[j], (unsigned long long)size[j]);
		}
	}
	for (int i = 0; i < N; i++)
		if (h[i])
			ck_assert_int_eq(nrt_dmem_free(&dm, h[i]), NRT_SUCCESS);
	uint64_t in_use, freeb;
	nrt_dmem_stats(&dm, &in_use, NULL, &freeb);
	ck_assert_uint_eq(in_use, 0);
	ck_assert_uint_eq(freeb, 1);
	nrt_dmem_fini(&dm);
}
END_TEST

START_TEST(test_handles_generation_and_type)
{
	static nrt_handle_table_t t, u;
	nrt_handle_table_init(&t, NRT_HANDLE_TENSOR, 77);
	nrt_handle_table_init(&u, NRT_HANDLE_MODEL, 77);
	int objs[3000];
	uint64_t h[3000];
	for (int i = 0; i < 3000; i++) /* crosses chunk boundaries */
		ck_assert_int_eq(nrt_handle_create(&t, &objs[i], &h[i]), NRT_SUCCESS);
	void *o;
	ck_assert_int_eq(nrt_handle_acquire(&t, h[2500], &o), NRT_SUCCESS);
	ck_assert_ptr_eq(o, &objs[2500]);
	nrt_handle_release(&t, h[2500]);
	ck_assert_int_eq(nrt_handle_acquire(&u, h[0], &o), NRT_INVALID_HANDLE); /* wrong type */
	ck_assert_int_eq(nrt_handle_acquire(&t, 0, &o), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_handle_acquire(&t, h[0] + 100000, &o), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_handle_destroy(&t, h[5], &o), NRT_SUCCESS);
	ck_assert_ptr_eq(o, &objs[5]);
	ck_assert_int_eq(nrt_handle_destroy(&t, h[5], &o), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_handle_acquire(&t, h[5], &o), NRT_INVALID_HANDLE);
	uint64_t again;
	ck_assert_int_eq(nrt_handle_create(&t, &objs[5], &again), NRT_SUCCESS);
	ck_assert_uint_ne(again, h[5]); /* same slot, new generation */
	ck_assert_uint_eq(again & 0xffffffffu, h[5] & 0xffffffffu);
	ck_assert_int_eq(nrt_handle_acquire(&t, h[5], &o), NRT_INVALID_HANDLE);
	nrt_handle_table_fini(&t);
	nrt_handle_table_fini(&u);
}
END_TEST

START_TEST(test_parse_cores)
{
	uint32_t ids[NRT_MAX_CORES], n = 0;
	ck_assert_ptr_null(nrt_env_parse_cores("0-3", 8, ids, &n));
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(ids[3], 3);
	ck_assert_ptr_null(nrt_env_parse_cores("5,1-2", 8, ids, &n));
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ids[0], 1);
	ck_assert_uint_eq(ids[2], 5);
	/* Each failure says what is wrong and what is accepted. */
	static const struct { const char *s, *why, *accepted; } bad[] = {
		{ "", "empty core list", "0,2,5-6" },
		{ "-1", "expected a core number at \"-1\"", "0,2,5-6" },
		{ "1-", "expected the end of a range", "0,2,5-6" },
		{ "3-1", "range 3-1 is reversed", "write it 1-3" },
		{ "1,,2", "expected a core number at \",2\"", "0,2,5-6" },
		{ "1,1", "core 1 is listed twice", "list each core once" },
		{ "8", "core 8 does not exist", "8 cores: 0-7" },
		{ "0-8", "core 8 does not exist", "8 cores: 0-7" },
		{ "x", "expected a core number at \"x\"", "0,2,5-6" },
		{ "1;2", "unexpected ';'", "0,2,5-6" },
		{ "99999999999999999999999", "expected a core number", "0,2,5-6" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 99;
		ns_status_t st = nrt_env_parse_cores(bad[i].s, 8, ids, &n);
		ck_assert_msg(st, "accepted \"%s\"", bad[i].s);
		ck_assert_int_eq(ns_status_code(st), NS_STATUS_INVALID_ARGUMENT);
		ck_assert_int_eq(nrt_status_code(st), NRT_INVALID);
		const char *msg = ns_status_message(st);
		ck_assert_msg(strstr(msg, bad[i].why) && strstr(msg, bad[i].accepted),
			      "\"%s\": message \"%s\" lacks \"%s\" or \"%s\"", bad[i].s, msg, bad[i].why,
			      bad[i].accepted);
		ck_assert_uint_eq(n, 99); /* untouched on failure */
		ns_status_free(st);
	}
}
END_TEST

/* The NEURON_RT_LOG_* variables: a bad one is a status naming it, its value
 * and what is accepted; the configuration is filled all the same. */
START_TEST(test_log_config_from_env)
{
	static const char *const vars[] = {
		"NEURON_RT_LOG_LEVEL", "NEURON_RT_LOG_LOCATION", "NEURON_RT_LOG_LEVEL_NRT",
		"NEURON_RT_LOG_LEVEL_TDRV", "NEURON_RT_LOG_LEVEL_NMGR", "NEURON_RT_LOG_LOCATION_NRT",
		"NEURON_RT_LOG_LOCATION_TDRV", "NEURON_RT_LOG_LOCATION_NMGR",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	nrt_log_config_t cfg;
	setenv("NEURON_RT_LOG_LEVEL", "info", 1);
	setenv("NEURON_RT_LOG_LEVEL_TDRV", "trace", 1);
	setenv("NEURON_RT_LOG_LOCATION_NMGR", "nmgr.log", 1);
	ck_assert_ptr_null(nrt_log_config_from_env(&cfg));
	ck_assert_int_eq(cfg.level[NRT_LOG_NRT], NRT_LOG_INFO);
	ck_assert_int_eq(cfg.level[NRT_LOG_TDRV], NRT_LOG_TRACE);
	ck_assert_int_eq(cfg.location[NRT_LOG_NMGR], NRT_LOG_TO_FILE);
	ck_assert_str_eq(cfg.path[NRT_LOG_NMGR], "nmgr.log");
	ck_assert_int_eq(cfg.location[NRT_LOG_NRT], NRT_LOG_TO_CONSOLE);

	/* Two bad values: the first is reported, the good ones still read. */
	setenv("NEURON_RT_LOG_LEVEL_NRT", "LOUD", 1);
	setenv("NEURON_RT_LOG_LEVEL_NMGR", "QUIETER", 1);
	ns_status_t st = nrt_log_config_from_env(&cfg);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(nrt_status_code(st), NRT_INVALID);
	ck_assert_str_eq(ns_status_message(st), "NEURON_RT_LOG_LEVEL_NRT=\"LOUD\" is invalid: expected ERROR, "
			 "WARNING (or WARN), INFO, DEBUG, TRACE or QUIET");
	ns_status_free(st);
	ck_assert_int_eq(cfg.level[NRT_LOG_NRT], NRT_LOG_INFO); /* the global level stands */
	ck_assert_int_eq(cfg.level[NRT_LOG_TDRV], NRT_LOG_TRACE);
	ck_assert_int_eq(cfg.level[NRT_LOG_NMGR], NRT_LOG_INFO);
	unsetenv("NEURON_RT_LOG_LEVEL_NRT");
	unsetenv("NEURON_RT_LOG_LEVEL_NMGR");

	char long_path[NRT_LOG_PATH_MAX + 8];
	memset(long_path, 'p', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = '\0';
	setenv("NEURON_RT_LOG_LOCATION", long_path, 1);
	st = nrt_log_config_from_env(&cfg);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(ns_status_message(st), "NEURON_RT_LOG_LOCATION=\"pppp"));
	ck_assert_ptr_nonnull(strstr(ns_status_message(st), "expected console, syslog or a file name shorter "
						    "than 1024 bytes"));
	ns_status_free(st);
	ck_assert_int_eq(cfg.location[NRT_LOG_NRT], NRT_LOG_TO_CONSOLE);
	ck_assert_int_eq(cfg.location[NRT_LOG_NMGR], NRT_LOG_TO_FILE);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}
END_TEST

START_TEST(test_parse_size)
{
	uint64_t v;
	ck_assert_int_eq(nrt_env_parse_size("4096", &v), NRT_SUCCESS);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(nrt_env_parse_size("16G", &v), NRT_SUCCESS);
	ck_assert_uint_eq(v, 16ull << 30);
	ck_assert_int_eq(nrt_env_parse_size("256MiB", &v), NRT_SUCCESS);
	ck_assert_uint_eq(v, 256ull << 20);
	ck_assert_int_eq(nrt_env_parse_size("1k", &v), NRT_SUCCESS);
	ck_assert_uint_eq(v, 1024);
	ck_assert_int_eq(nrt_env_parse_size("", &v), NRT_INVALID);
	ck_assert_int_eq(nrt_env_parse_size("12Q", &v), NRT_INVALID);
	ck_assert_int_eq(nrt_env_parse_size("99999999999T", &v), NRT_INVALID);
	ck_assert_int_eq(nrt_env_parse_size("-5", &v), NRT_INVALID);
}
END_TEST


/* The NRT boundary: a status's own NRT_STATUS wins, else its canonical code's;
 * the message is logged once as "FUNC: MESSAGE"; success logs nothing. */
START_TEST(test_status_boundary_maps_and_logs_once)
{
	ck_assert_int_eq(nrt_status_code(NS_OK), NRT_SUCCESS);
	static const struct { ns_status_code_t c; NRT_STATUS want; } map[] = {
		{ NS_STATUS_INVALID_ARGUMENT, NRT_INVALID }, { NS_STATUS_OUT_OF_RANGE, NRT_INVALID },
		{ NS_STATUS_NOT_FOUND, NRT_INVALID },        { NS_STATUS_DATA_LOSS, NRT_INVALID },
		{ NS_STATUS_UNIMPLEMENTED, NRT_INVALID },    { NS_STATUS_RESOURCE_EXHAUSTED, NRT_RESOURCE },
		{ NS_STATUS_DEADLINE_EXCEEDED, NRT_TIMEOUT }, { NS_STATUS_INTERNAL, NRT_FAILURE },
		{ NS_STATUS_UNKNOWN, NRT_FAILURE },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		ns_status_t st = ns_status_make(map[i].c, "x");
		ck_assert_msg(nrt_status_code(st) == map[i].want, "%s", ns_status_code_str(map[i].c));
		ns_status_free(st);
	}
	ns_status_t st = nrt_status_make(NRT_EXEC_OOB, "insn %d reads past region %d", 7, 2);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_OUT_OF_RANGE);
	st = ns_status_annotate(st, "model 'm'");
	test_capture_begin();
	ck_assert_int_eq(nrt_status_report("nrt_execute", st), NRT_EXEC_OOB);
	ck_assert_int_eq(nrt_status_report("nrt_execute", NS_OK), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_str_eq(log, "nrt: ERROR nrt_execute: model 'm': insn 7 reads past region 2\n");
	free(log);
	st = nrt_status_make(NRT_UNSUPPORTED_NEFF_VERSION, "v");
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_UNIMPLEMENTED);
	ck_assert_int_eq(nrt_status_code(st), NRT_UNSUPPORTED_NEFF_VERSION);
	ns_status_free(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_internal");
	TCase *tc = tcase_create("internal");
	tcase_add_test(tc, test_dmem_best_fit_and_coalescing);
	tcase_add_test(tc, test_dmem_random_stress_keeps_accounting);
	tcase_add_test(tc, test_handles_generation_and_type);
	tcase_add_test(tc, test_parse_cores);
	tcase_add_test(tc, test_log_config_from_env);
	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_status_boundary_maps_and_logs_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
