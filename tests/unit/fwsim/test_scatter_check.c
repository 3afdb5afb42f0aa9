/* The NaN/Inf check of SCATTER covers the rows it wrote, each once, smallest flat index first; rows it left alone are not its doing (nor its cost: a loop updating one row of a big table per iteration used to scan the whole table every time). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim/fwsim.h"

#define ROWS 8
#define COLS 4

typedef struct scat {
	float table[ROWS * COLS]; /* region 2 */
	float upd[5000 * COLS];   /* region 3 */
	int32_t idx[5000];        /* region 4 */
} scat_t;

/* Runs one SCATTER(SUM) of m update rows with NaN checking on; returns the job. */
static fwsim_job_t run_scatter(scat_t *s, uint64_t m)
{
	size_t sizes[3] = { sizeof(s->table), sizeof(s->upd), sizeof(s->idx) };
	const void *src[3] = { s->table, s->upd, s->idx };
	uint64_t total = 128 + sizes[0] + sizes[1] + sizes[2];
	uint8_t *mem = calloc(1, total);
	fwsim_region_t reg[5] = { { 0, 64 }, { 64, 64 } };
	uint64_t at = 128;
	for (int i = 0; i < 3; i++) {
		reg[2 + i].addr = at;
		reg[2 + i].size = sizes[i];
		memcpy(mem + at, src[i], sizes[i]);
		at += sizes[i];
	}
	isa_insn_t in = isa_insn_init(ISA_OP_SCATTER, ISA_RED_SUM);
	in.n_ap = 3;
	uint64_t t[2] = { ROWS, COLS }, u[2] = { m, COLS }, ix[1] = { m };
	in.ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 2, t);
	in.ap[1] = isa_ap_contig(3, 0, ISA_DT_F32, 2, u);
	in.ap[2] = isa_ap_contig(4, 0, ISA_DT_S32, 1, ix);
	in.debug_id = 7;
	const isa_insn_t *streams[ISA_ENGINE_COUNT] = { 0 };
	uint32_t counts[ISA_ENGINE_COUNT] = { 0 };
	streams[ISA_ENGINE_GPSIMD] = &in;
	counts[ISA_ENGINE_GPSIMD] = 1;
	fwsim_program_t *prog = NULL;
	char err[256];
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(streams, counts, 5, &prog),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	fwsim_core_config_t cfg = { 0 };
	fwsim_core_t *core = NULL;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	fwsim_job_t job;
	memset(&job, 0, sizeof(job));
	job.program = prog;
	job.mem = mem;
	job.mem_size = total;
	job.regions = reg;
	job.n_regions = 5;
	job.flags = FWSIM_JOB_CHECK_NAN;
	fwsim_core_execute(core, &job);
	memcpy(s->table, mem + reg[2].addr, sizeof(s->table));
	fwsim_core_destroy(core);
	fwsim_program_destroy(prog);
	free(mem);
	return job;
}

START_TEST(test_untouched_nan_is_not_the_scatters)
{
	scat_t *s = calloc(1, sizeof(*s));
	s->table[6 * COLS + 1] = NAN; /* there before, never written */
	s->idx[0] = 1;
	s->idx[1] = 3;
	s->idx[2] = 99; /* out of range: skipped */
	for (int i = 0; i < 3 * COLS; i++)
		s->upd[i] = 1;
	fwsim_job_t job = run_scatter(s, 3);
	ck_assert_int_eq(job.error.status, FWSIM_OK);
	ck_assert_float_eq(s->table[1 * COLS], 1);
	free(s);
}
END_TEST

START_TEST(test_written_nan_first_index_and_count)
{
	scat_t *s = calloc(1, sizeof(*s));
	/* updates in the order rows 5, 2, 2: the NaN in row 2 has the smaller flat
	 * index; row 2 is counted once although it is written twice */
	s->idx[0] = 5;
	s->idx[1] = 2;
	s->idx[2] = 2;
	s->upd[0 * COLS + 3] = NAN;
	s->upd[1 * COLS + 2] = NAN;
	fwsim_job_t job = run_scatter(s, 3);
	ck_assert_int_eq(job.error.status, FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.debug_id, 7);
	ck_assert_uint_eq(job.error.first_index, 2 * COLS + 2);
	ck_assert_uint_eq(job.error.count, 2);
	free(s);
}
END_TEST

START_TEST(test_many_updates_scan_the_table)
{
	scat_t *s = calloc(1, sizeof(*s));
	s->table[7 * COLS] = NAN;
	for (int i = 0; i < 5000; i++)
		s->idx[i] = i % 3;
	fwsim_job_t job = run_scatter(s, 5000);
	/* beyond the sorted-rows buffer the whole table is scanned, as before */
	ck_assert_int_eq(job.error.status, FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 7 * COLS);
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scatter_check");
	TCase *tc = tcase_create("check");
	tcase_add_test(tc, test_untouched_nan_is_not_the_scatters);
	tcase_add_test(tc, test_written_nan_first_index_and_count);
	tcase_add_test(tc, test_many_updates_scan_the_table);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
