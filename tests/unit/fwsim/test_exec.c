/* Execution semantics: OOB containment, NaN/Inf records, deadlines, semaphores, deadlock, threads, profiling. */
#include <pthread.h>
#include <sched.h>

#include "fwsim_test.h"
#include "pool.h"
#include "sched_pick.h"

static isa_insn_t add_f32(uint32_t r, uint64_t off_o, uint64_t off_a, uint64_t off_b, uint64_t n)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	in.n_ap = 3;
	uint64_t sh[1] = { n };
	in.ap[0] = isa_ap_contig(r, off_o, ISA_DT_F32, 1, sh);
	in.ap[1] = isa_ap_contig(r, off_a, ISA_DT_F32, 1, sh);
	in.ap[2] = isa_ap_contig(r, off_b, ISA_DT_F32, 1, sh);
	return in;
}

/* ---- OOB ---- */
static void expect_oob(isa_insn_t *prog, uint32_t n, uint32_t bad_insn, uint32_t ap_index, uint32_t region)
{
	tmem_t t;
	tmem_init(&t);
	/* recognisable contents everywhere the program might write */
	for (uint32_t r = 0; r < T_NREG; r++)
		memset(tmem_ptr(&t, r, 0), 0x11 * (r + 1), T_REGSZ);
	uint8_t *snap = malloc(t.size);
	memcpy(snap, t.mem, t.size);
	for (uint32_t i = 0; i < n; i++)
		prog[i].debug_id = 100 + i;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
	uint32_t c[ISA_ENGINE_COUNT] = { 0 };
	s[ISA_ENGINE_VECTOR] = prog;
	c[ISA_ENGINE_VECTOR] = n;
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OOB);
	ck_assert_int_eq(job.error.status, FWSIM_OOB);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_VECTOR);
	ck_assert_uint_eq(job.error.insn_index, bad_insn);
	ck_assert_uint_eq(job.error.debug_id, 100 + bad_insn);
	ck_assert_uint_eq(job.error.ap_index, ap_index);
	ck_assert_uint_eq(job.error.region, region);
	ck_assert(strlen(job.error.message) > 10);
	ck_assert_uint_eq(job.insns_executed, bad_insn);
	/* the bad instruction wrote nothing (earlier ones may have, in region 3 only) */
	for (uint64_t i = 0; i < t.size; i++)
		if (t.mem[i] != snap[i]) {
			uint64_t r3 = t.regions[3].addr;
			ck_assert_msg(i >= r3 && i < r3 + T_REGSZ, "byte %llu changed", (unsigned long long)i);
		}
	ck_assert(tmem_guards_intact(&t));
	free(snap);
	tmem_free(&t);
}

START_TEST(test_oob_output_past_region_end_writes_nothing)
{
	isa_insn_t p[2];
	p[0] = add_f32(3, 0, 64, 128, 16); /* fine, writes region 3 */
	p[1] = add_f32(0, T_REGSZ - 60, 0, 64, 16); /* 64 bytes at size-60: 4 past the end */
	expect_oob(p, 2, 1, 0, 0);
}
END_TEST

START_TEST(test_oob_negative_stride_before_region_start)
{
	isa_insn_t p[1];
	p[0] = add_f32(1, 0, 0, 64, 4);
	p[0].ap[2].stride[0] = -1;
	p[0].ap[2].offset = 8; /* elements at 8, 4, 0, -4 */
	expect_oob(p, 1, 0, 2, 1);
}
END_TEST

START_TEST(test_oob_input_with_huge_stride_does_not_wrap)
{
	isa_insn_t p[1];
	p[0] = add_f32(2, 0, 0, 64, 4);
	p[0].ap[1].stride[0] = (int64_t)1 << 58; /* stride x 4 bytes x 3 steps > 2^59 */
	expect_oob(p, 1, 0, 1, 2);
	p[0] = add_f32(2, 0, 0, 64, 4);
	p[0].ap[1].stride[0] = -((int64_t)1 << 58);
	expect_oob(p, 1, 0, 1, 2);
	/* strides whose byte span wraps in 64-bit arithmetic are refused before
	 * anything runs (docs/isa.md, validation rules) */
	const int64_t wrapping[2] = { INT64_MAX / 2, INT64_MIN / 3 };
	for (int i = 0; i < 2; i++) {
		p[0] = add_f32(2, 0, 0, 64, 4);
		p[0].ap[1].stride[0] = wrapping[i];
		const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = p };
		uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
		fwsim_program_t *prog = NULL;
		char err[200];
		ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &prog),
							   err, sizeof(err)),
				 NS_STATUS_INVALID_ARGUMENT);
		ck_assert_msg(strstr(err, "ap1") && strstr(err, "2^63"), "%s", err);
	}
}
END_TEST

START_TEST(test_oob_region_binding_outside_window)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = add_f32(1, 0, 64, 128, 4);
	in.debug_id = 7;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_program_t *p;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   NULL, 0), NS_STATUS_OK);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_region_t regs[T_NREG];
	memcpy(regs, t.regions, sizeof(regs));
	fwsim_job_t job = { .program = p, .mem = t.mem, .mem_size = t.size, .regions = regs, .n_regions = T_NREG };
	regs[1].addr = t.size - 16; /* region 1 sticks out of the window */
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OOB);
	ck_assert_uint_eq(job.error.region, 1);
	ck_assert_uint_eq(job.error.debug_id, 7);
	regs[1].addr = UINT64_MAX - 8; /* addr + size wraps */
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OOB);
	ck_assert(tmem_guards_intact(&t));
	/* a zero-element operand touches nothing, so any offset is fine */
	memcpy(regs, t.regions, sizeof(regs));
	in.ap[0].shape[0] = in.ap[1].shape[0] = in.ap[2].shape[0] = 0;
	fwsim_program_destroy(p);
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   NULL, 0), NS_STATUS_OK);
	job.program = p;
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	fwsim_program_destroy(p);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST


/* Regions bound at odd addresses: kernels must not assume alignment
 * (no misaligned loads under UBSan, BLAS fed only aligned pointers). */
START_TEST(test_unaligned_region_bindings)
{
	tmem_t t;
	tmem_init(&t);
	fwsim_region_t regs[T_NREG];
	memcpy(regs, t.regions, sizeof(regs));
	for (uint32_t r = 0; r < T_NREG; r++) {
		regs[r].addr += 1 + r;
		regs[r].size -= 8;
	}
	uint64_t sh[2] = { 7, 9 };
	float av[63], bv[63];
	for (int i = 0; i < 63; i++) {
		av[i] = (float)i;
		bv[i] = (float)(2 * i);
	}
	memcpy(t.mem + regs[1].addr, av, sizeof(av));
	memcpy(t.mem + regs[2].addr, bv, sizeof(bv));
	isa_insn_t p[2];
	p[0] = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	p[0].n_ap = 3;
	p[0].ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sh);
	p[0].ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sh);
	p[0].ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sh);
	uint64_t sa[2] = { 7, 9 }, sb[2] = { 9, 7 }, sc[2] = { 7, 7 };
	p[1] = isa_insn_init(ISA_OP_MATMUL, 0);
	p[1].n_ap = 3;
	p[1].ap[0] = isa_ap_contig(3, 0, ISA_DT_F32, 2, sc);
	p[1].ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	p[1].ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sb);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = p };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 2 };
	fwsim_program_t *prog;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &prog),
						   NULL, 0), NS_STATUS_OK);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_job_t job = { .program = prog, .mem = t.mem, .mem_size = t.size, .regions = regs,
			    .n_regions = T_NREG, .flags = FWSIM_JOB_CHECK_NAN };
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	float out[63], mm[49];
	memcpy(out, t.mem + regs[0].addr, sizeof(out));
	memcpy(mm, t.mem + regs[3].addr, sizeof(mm));
	for (int i = 0; i < 63; i++)
		ck_assert(out[i] == av[i] + bv[i]);
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 7; j++) {
			double w = 0;
			for (int k = 0; k < 9; k++)
				w += (double)av[i * 9 + k] * bv[k * 7 + j];
			ck_assert(fabs(mm[i * 7 + j] - w) <= 1e-3 * w + 1e-3);
		}
	fwsim_program_destroy(prog);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

/* ---- NaN / Inf ---- */
START_TEST(test_nan_recorded_at_first_producing_insn)
{
	tmem_t t;
	tmem_init(&t);
	float *a = (float *)(void *)tmem_ptr(&t, 1, 0);
	uint64_t n = 3000;
	for (uint64_t i = 0; i < n; i++)
		a[i] = (float)i - 10;
	/* insn 0: log of negative numbers -> NaN at flat 0..10 (log(0) = -Inf at 10);
	 * insn 1: another NaN producer; insn 2: fine */
	isa_insn_t p[3];
	uint64_t sh2[2] = { 3, 1000 };
	p[0] = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_LOG);
	p[0].n_ap = 2;
	p[0].imm[0] = 1;
	p[0].ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sh2);
	p[0].ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sh2);
	p[0].debug_id = 42;
	p[1] = isa_insn_init(ISA_OP_ALU, ISA_ALU_SQRT);
	p[1].n_ap = 2;
	p[1].ap[0] = isa_ap_contig(3, 0, ISA_DT_F32, 2, sh2);
	p[1].ap[1] = p[0].ap[1];
	p[2] = add_f32(3, 20000, 0, 0, 8);
	p[2].ap[1].region = p[2].ap[2].region = 0;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_SCALAR] = p };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_SCALAR] = 3 };
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, FWSIM_JOB_CHECK_NAN, 0, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_SCALAR);
	ck_assert_uint_eq(job.error.insn_index, 0);
	ck_assert_uint_eq(job.error.debug_id, 42);
	ck_assert_uint_eq(job.error.ap_index, 0);
	ck_assert_uint_eq(job.error.region, 2);
	ck_assert_uint_eq(job.error.first_index, 0);
	ck_assert_uint_eq(job.error.count, 10); /* -10..-1 -> NaN; log(0) = -Inf not counted */
	ck_assert_uint_eq(job.error.is_inf, 0);
	ck_assert_uint_eq(job.error.num_err_insns, 2);
	ck_assert_uint_eq(job.insns_executed, 3); /* kept executing */
	/* with Inf checking too, log(0) counts */
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, 0, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 11);
	/* without checks: OK */
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.error.num_err_insns, 0);
	tmem_free(&t);
}
END_TEST

/* A COPY from a stride-0 source (the compiler's zero padding) checks the one
 * value instead of scanning the row it wrote; a NaN or Inf fill is still
 * every element of it. A contiguous f32 copy is scanned in place, one into
 * a strided output as staged. */
START_TEST(test_fill_copy_nan_check)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 3, 700 };
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sh);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sh);
	in.ap[1].stride[0] = in.ap[1].stride[1] = 0;
	float *src = (float *)(void *)tmem_ptr(&t, 1, 0), *dst = (float *)(void *)tmem_ptr(&t, 0, 0);
	fwsim_job_t job;
	*src = 0.0f;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	ck_assert(dst[0] == 0.0f && dst[2099] == 0.0f);
	*src = NAN;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 2100);
	ck_assert_uint_eq(job.error.first_index, 0);
	ck_assert(isnan(dst[2099]));
	*src = INFINITY;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 2100);
	ck_assert_uint_eq(job.error.is_inf, 1);
	/* a plain contiguous copy is scanned where it was written */
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sh);
	for (int i = 0; i < 2100; i++)
		src[i] = (float)i;
	src[1234] = NAN;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert_uint_eq(job.error.first_index, 1234);
	ck_assert(dst[1233] == 1233.0f && isnan(dst[1234]));
	/* into every other element (rows of 700, past the short-row path): the
	 * rows are staged, scanned and stored; the elements between stay */
	in.ap[0].stride[0] = 1400;
	in.ap[0].stride[1] = 2;
	for (int i = 0; i < 4200; i++)
		dst[i] = -1.0f;
	src[1234] = 5.0f;
	src[2000] = NAN;
	src[701] = NAN;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 2);
	ck_assert_uint_eq(job.error.first_index, 701);
	ck_assert(dst[2 * 1234] == 5.0f && dst[2 * 1234 + 1] == -1.0f && isnan(dst[2 * 2000]));
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

START_TEST(test_nan_first_index_is_row_major_flat_in_strided_output)
{
	tmem_t t;
	tmem_init(&t);
	/* out is a transposed [4,300] view; input NaN at logical [2,123] and [3,5] */
	uint64_t sh[2] = { 4, 300 }, idx[2];
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_MUL);
	in.n_ap = 3;
	in.ap[0] = tmk_ap(&t, 0, ISA_DT_BF16, 2, sh, L_TRANSPOSED);
	in.ap[1] = tmk_ap(&t, 1, ISA_DT_BF16, 2, sh, L_REVERSED);
	in.ap[2] = tmk_ap(&t, 2, ISA_DT_BF16, 2, sh, L_BCAST0);
	for (uint64_t f = 0; f < 1200; f++) {
		tunflat(f, 2, sh, idx);
		tset(ISA_DT_BF16, telem(&t, &in.ap[1], idx), 1.5);
		tset(ISA_DT_BF16, telem(&t, &in.ap[2], idx), 2);
	}
	uint64_t i1[2] = { 3, 5 }, i2[2] = { 2, 123 };
	uint16_t qnan = 0x7fc0;
	memcpy(telem(&t, &in.ap[1], i1), &qnan, 2);
	memcpy(telem(&t, &in.ap[1], i2), &qnan, 2);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 2 * 300 + 123);
	ck_assert_uint_eq(job.error.count, 2);
	tmem_free(&t);
}
END_TEST

START_TEST(test_inf_only_with_check_inf_and_from_narrowing)
{
	tmem_t t;
	tmem_init(&t);
	/* 1e5 is finite in f32 but Inf once stored as f16 */
	float *a = (float *)(void *)tmem_ptr(&t, 1, 0);
	for (int i = 0; i < 100; i++)
		a[i] = i == 37 ? 1e5f : 1.0f;
	uint64_t sh[1] = { 100 };
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F16, 1, sh);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 1, sh);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_INF, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.is_inf, 1);
	ck_assert_uint_eq(job.error.first_index, 37);
	ck_assert_uint_eq(job.error.count, 1);
	/* matmul producing Inf, checked in its output */
	float *m = (float *)(void *)tmem_ptr(&t, 2, 0);
	m[0] = 3e38f; m[1] = 3e38f;
	uint64_t s2[2] = { 1, 1 }, s3[2] = { 1, 2 }, s4[2] = { 2, 1 };
	isa_insn_t mm = isa_insn_init(ISA_OP_MATMUL, 0);
	mm.n_ap = 3;
	mm.ap[0] = isa_ap_contig(3, 0, ISA_DT_F32, 2, s2);
	mm.ap[1] = isa_ap_contig(2, 0, ISA_DT_F32, 2, s3);
	mm.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, s4);
	ck_assert_int_eq(trun1(&t, &mm, ISA_ENGINE_TENSOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	ck_assert_int_eq(trun1(&t, &mm, ISA_ENGINE_TENSOR, FWSIM_JOB_CHECK_INF | FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.is_inf, 1);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_TENSOR);
	tmem_free(&t);
}
END_TEST


START_TEST(test_fused_check_in_contiguous_f32_add)
{
	tmem_t t;
	tmem_init(&t);
	float *a = (float *)(void *)tmem_ptr(&t, 1, 0), *b = (float *)(void *)tmem_ptr(&t, 2, 0);
	for (int i = 0; i < 2000; i++) {
		a[i] = 1.0f;
		b[i] = 2.0f;
	}
	a[5] = INFINITY;       /* Inf at 5 */
	a[700] = INFINITY;     /* Inf + -Inf = NaN at 700 (second block) */
	b[700] = -INFINITY;
	a[1999] = NAN;         /* NaN at 1999 (last, partial block) */
	isa_insn_t in = add_f32(0, 0, 0, 0, 2000);
	in.ap[1].region = 1;
	in.ap[2].region = 2;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 700);
	ck_assert_uint_eq(job.error.count, 2);
	ck_assert_uint_eq(job.error.is_inf, 0);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_INF, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 5);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert_uint_eq(job.error.is_inf, 1);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_INF | FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 5);
	ck_assert_uint_eq(job.error.count, 3);
	a[5] = 1.0f;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_INF, &job), FWSIM_OK);
	/* large finite results stay finite in f32 but not in f16: 60000 + 60000 */
	uint64_t sh[1] = { 600 };
	isa_insn_t h = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	h.n_ap = 3;
	h.ap[0] = isa_ap_contig(3, 0, ISA_DT_F16, 1, sh);
	h.ap[1] = isa_ap_contig(3, 4096, ISA_DT_F16, 1, sh);
	h.ap[2] = h.ap[1];
	uint16_t *hv = (uint16_t *)(void *)tmem_ptr(&t, 3, 4096);
	for (int i = 0; i < 600; i++)
		hv[i] = 0x3c00; /* 1.0 */
	hv[513] = 0x7b53; /* 60000 */
	ck_assert_int_eq(trun1(&t, &h, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_INF, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 513);
	ck_assert_uint_eq(job.error.count, 1);
	tmem_free(&t);
}
END_TEST

/* ---- deadlines ---- */
START_TEST(test_timeout_stops_infinite_jump_loop)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t p[2];
	p[0] = add_f32(0, 0, 64, 128, 4);
	p[1] = isa_insn_init(ISA_OP_JUMP, 0);
	p[1].param = 0; /* forever */
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = p };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = 2 };
	fwsim_job_t job;
	uint64_t t0 = tnow_ns(), c0 = tcpu_ns();
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, t0 + 50000000ull, &job), FWSIM_TIMEOUT);
	uint64_t dt = tnow_ns() - t0, cpu = tcpu_ns() - c0;
	ck_assert_uint_ge(dt, 50000000ull);
	/* the loop runs in this thread: it stopped within 2 s of work */
	ck_assert_uint_lt(cpu, 2000000000ull);
	ck_assert_uint_gt(job.insns_executed, 10);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_GPSIMD);
	tmem_free(&t);
}
END_TEST

/* ---- bounded work inside one instruction (issue #11, item 2) ---- */

/* y = a + b over 2^33 f32 elements, every operand one element seen through
 * stride 0: 12 bytes of memory, about a minute of host time. */
static isa_insn_t huge_alu(void)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	uint64_t sh[2] = { 1u << 17, 1u << 16 };
	in.n_ap = 3;
	for (uint32_t i = 0; i < 3; i++) {
		in.ap[i] = isa_ap_contig(0, 64 * i, ISA_DT_F32, 2, sh);
		in.ap[i].stride[0] = in.ap[i].stride[1] = 0;
	}
	return in;
}

/* s32 [n, n] x [n, n], every operand one element through stride 0. */
static isa_insn_t huge_int_matmul(uint64_t n)
{
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	uint64_t sh[2] = { n, n };
	in.n_ap = 3;
	for (uint32_t i = 0; i < 3; i++) {
		in.ap[i] = isa_ap_contig(0, 64 * i, ISA_DT_S32, 2, sh);
		in.ap[i].stride[0] = in.ap[i].stride[1] = 0;
	}
	return in;
}

/* Runs one instruction on engine e with a deadline ms from now; returns the
 * wall time it took in ms and, in *cpu_ms, the process's CPU time (the
 * instruction runs in this thread). */
static uint64_t run_with_deadline(const isa_insn_t *in, uint32_t e, uint64_t ms, fwsim_job_t *job,
				  uint64_t *cpu_ms)
{
	tmem_t t;
	tmem_init(&t);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
	uint32_t c[ISA_ENGINE_COUNT] = { 0 };
	s[e] = in;
	c[e] = 1;
	uint64_t t0 = tnow_ns(), c0 = tcpu_ns();
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, FWSIM_JOB_CHECK_NAN, t0 + ms * 1000000ull, job),
			 FWSIM_TIMEOUT);
	uint64_t took = (tnow_ns() - t0) / 1000000ull;
	*cpu_ms = (tcpu_ns() - c0) / 1000000ull;
	tmem_free(&t);
	return took;
}

/* The deadline used to be checked only between instructions: one ALU op over
 * 2^33 stride-0 elements ran 62 s past a 1 s deadline and succeeded. */
START_TEST(test_deadline_stops_huge_stride0_alu_inside_the_instruction)
{
	isa_insn_t in = huge_alu();
	fwsim_job_t job;
	uint64_t cpu, took = run_with_deadline(&in, ISA_ENGINE_VECTOR, 300, &job, &cpu);
	/* Within a second of work past the deadline. In CPU time: a loaded
	 * machine stalls the wall clock for seconds; uninterrupted, the op
	 * would burn a minute. */
	ck_assert_msg(took >= 300 && cpu < 1300, "took %llu ms (%llu ms of CPU) for a 300 ms deadline",
		      (unsigned long long)took, (unsigned long long)cpu);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_VECTOR);
	ck_assert_uint_eq(job.error.insn_index, 0);
	ck_assert_uint_eq(job.insns_executed, 0);
	ck_assert_msg(strstr(job.error.message, "deadline passed during vector insn 0 (alu)"), "%s",
		      job.error.message);
}
END_TEST

START_TEST(test_deadline_stops_huge_stride0_int_matmul)
{
	/* 2^42 multiply-adds, under the validation bound: only the deadline
	 * can stop it */
	isa_insn_t in = huge_int_matmul(1u << 14);
	fwsim_job_t job;
	uint64_t cpu, took = run_with_deadline(&in, ISA_ENGINE_TENSOR, 300, &job, &cpu);
	ck_assert_msg(took >= 300 && cpu < 1300, "took %llu ms (%llu ms of CPU) for a 300 ms deadline",
		      (unsigned long long)took, (unsigned long long)cpu);
	ck_assert_msg(strstr(job.error.message, "deadline passed during tensor insn 0 (matmul)"),
		      "%s", job.error.message);
}
END_TEST

/* 2^20 x 2^20 x 2^20 is 2^60 multiply-adds from a few bytes of memory: refused
 * when the program is created, with the bound in the message. */
START_TEST(test_matmul_work_over_the_bound_is_refused)
{
	isa_insn_t in = huge_int_matmul(1u << 20);
	in.debug_id = 7;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = 1 };
	fwsim_program_t *p = (fwsim_program_t *)0x1;
	char err[200];
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(err, "tensor engine insn 0 (debug_id 7): matmul of 1.15e+18 "
			     "multiply-adds, more than the simulator's bound of 2^44"), "%s", err);
	/* at the bound it is accepted: K = 2^12 with a 2^16 x 2^16 output */
	in.ap[0].shape[0] = in.ap[0].shape[1] = 1u << 16;
	in.ap[1].shape[0] = 1u << 16;
	in.ap[1].shape[1] = in.ap[2].shape[0] = 1u << 12;
	in.ap[2].shape[1] = 1u << 16;
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	fwsim_program_destroy(p);
	in.ap[1].shape[1] = in.ap[2].shape[0] = (1u << 12) + 1;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
}
END_TEST

typedef struct cancel_arg {
	fwsim_core_t *core;
	fwsim_job_t *job;
	uint64_t end_cpu_ns;
} cancel_arg_t;

static void *cancel_runner(void *p)
{
	cancel_arg_t *a = p;
	fwsim_core_execute(a->core, a->job);
	a->end_cpu_ns = tcpu_ns();
	return NULL;
}

/* fwsim_job_cancel from another thread, with no deadline: the job stops
 * inside its instruction (neuronsim-fwd does this when the driver asks). */
START_TEST(test_cancel_stops_a_running_job)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = huge_alu();
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_program_t *p;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   NULL, 0), NS_STATUS_OK);
	fwsim_job_t job = { .program = p, .mem = t.mem, .mem_size = t.size, .regions = t.regions,
			    .n_regions = T_NREG };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	cancel_arg_t a = { core, &job, 0 };
	pthread_t th;
	uint64_t c0 = tcpu_ns();
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_runner, &a), 0);
	/* Cancel once the instruction runs, i.e. once the process has burnt
	 * 100 ms of CPU since (nothing else works meanwhile), not after a fixed
	 * sleep that a loaded machine can outlast before the thread starts. */
	struct timespec ms = { 0, 1000 * 1000 };
	while (tcpu_ns() - c0 < 100000000ull)
		nanosleep(&ms, NULL);
	c0 = tcpu_ns();
	fwsim_job_cancel(&job);
	pthread_join(th, NULL);
	/* within a second of work (CPU time: load stretches the wall clock) */
	uint64_t cpu = (a.end_cpu_ns - c0) / 1000000ull;
	ck_assert_msg(cpu < 1000, "stopped after %llu ms of CPU time past the cancel",
		      (unsigned long long)cpu);
	ck_assert_int_eq(job.error.status, FWSIM_TIMEOUT);
	ck_assert_msg(strstr(job.error.message, "cancelled during vector insn 0 (alu)"), "%s",
		      job.error.message);
	/* the flag stays: the same job runs nothing the next time */
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_TIMEOUT);
	ck_assert_msg(strstr(job.error.message, "cancelled before vector insn 0"), "%s",
		      job.error.message);
	ck_assert_uint_eq(job.insns_executed, 0);
	fwsim_job_cancel(NULL); /* harmless */
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	tmem_free(&t);
}
END_TEST

/* Another engine's fatal error stops a long instruction too (threaded
 * scheduler): the gpsimd engine's OOB ends the job at once, not after the
 * vector engine's minute-long add. */
START_TEST(test_other_engine_error_stops_a_long_instruction)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t v = huge_alu();
	isa_insn_t g[2];
	g[0] = isa_insn_init(ISA_OP_NOP, 0);
	g[1] = add_f32(1, T_REGSZ - 8, 0, 0, 4); /* 8 bytes past region 1 */
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &v, [ISA_ENGINE_GPSIMD] = g };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1, [ISA_ENGINE_GPSIMD] = 2 };
	fwsim_core_config_t cfg = { .sched = FWSIM_SCHED_THREADS };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	fwsim_job_t job;
	uint64_t t0 = tnow_ns();
	ck_assert_int_eq(trun_prog(&t, core, s, c, 0, 0, &job), FWSIM_OOB);
	uint64_t took = (tnow_ns() - t0) / 1000000ull;
	/* Uninterrupted, the add runs a minute; a loaded machine can stall the
	 * two engine threads for seconds, so only a far bound is checked. */
	ck_assert_msg(took < 20000, "the OOB ended the job after %llu ms", (unsigned long long)took);
	ck_assert_uint_eq(job.error.engine, ISA_ENGINE_GPSIMD);
	ck_assert_uint_eq(job.error.insn_index, 1);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

START_TEST(test_conditional_jump_loop_counts_down)
{
	/* r0: counter s32 = 5; loop: counter -= 1; acc += 1; jump to loop while counter != 0 */
	tmem_t t;
	tmem_init(&t);
	int32_t five = 5, one = 1;
	memcpy(tmem_ptr(&t, 0, 0), &five, 4);
	memcpy(tmem_ptr(&t, 0, 4), &one, 4);
	isa_insn_t p[3];
	p[0] = isa_insn_init(ISA_OP_ALU, ISA_ALU_SUB);
	p[0].n_ap = 3;
	p[0].ap[0] = p[0].ap[1] = isa_ap_contig(0, 0, ISA_DT_S32, 0, NULL);
	p[0].ap[2] = isa_ap_contig(0, 4, ISA_DT_S32, 0, NULL);
	p[1] = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	p[1].n_ap = 3;
	p[1].ap[0] = p[1].ap[1] = isa_ap_contig(0, 8, ISA_DT_S32, 0, NULL);
	p[1].ap[2] = isa_ap_contig(0, 4, ISA_DT_S32, 0, NULL);
	p[2] = isa_insn_init(ISA_OP_JUMP, 0);
	p[2].n_ap = 1;
	p[2].ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 0, NULL);
	p[2].param = 0;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = p };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = 3 };
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	int32_t acc;
	memcpy(&acc, tmem_ptr(&t, 0, 8), 4);
	ck_assert_int_eq(acc, 5);
	ck_assert_uint_eq(job.insns_executed, 15);
	/* inverted: jump while zero -> falls through at once */
	p[2].flags = ISA_F_INVERT;
	memcpy(tmem_ptr(&t, 0, 0), &five, 4);
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.insns_executed, 3);
	tmem_free(&t);
}
END_TEST

/* A loop that polls memory another engine writes (no semaphore orders
 * them: a race, but one a program may run) ends under the cooperative
 * scheduler too: an engine gives up its turn when it jumps back, so the
 * writer runs. The vector engine (its turn comes before the DMA engine's)
 * spins while go != 0; the DMA engine zeroes go after a copy. Without the
 * turn, the vector engine spins to the deadline. */
START_TEST(test_inline_polling_loop_lets_the_writer_run)
{
	tmem_t t;
	tmem_init(&t);
	int32_t one = 1, zero = 0;
	memcpy(tmem_ptr(&t, 0, 0), &one, 4);  /* go */
	memcpy(tmem_ptr(&t, 0, 4), &zero, 4); /* the value DMA writes */
	isa_insn_t v[2], d[2];
	v[0] = isa_insn_init(ISA_OP_JUMP, 0);
	v[0].n_ap = 1;
	v[0].ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 0, NULL);
	v[0].param = 0;
	v[1] = add_f32(1, 0, 0, 0, 16);
	d[0] = add_f32(2, 0, 0, 0, 1024);
	d[1] = isa_insn_init(ISA_OP_COPY, 0);
	d[1].n_ap = 2;
	d[1].ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 0, NULL);
	d[1].ap[1] = isa_ap_contig(0, 4, ISA_DT_S32, 0, NULL);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = v, [ISA_ENGINE_DMA] = d };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 2, [ISA_ENGINE_DMA] = 2 };
	fwsim_core_config_t cfg = { .sched = FWSIM_SCHED_INLINE };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, core, s, c, 0, tnow_ns() + 5000000000ull, &job), FWSIM_OK);
	int32_t go;
	memcpy(&go, tmem_ptr(&t, 0, 0), 4);
	ck_assert_int_eq(go, 0);
	/* the vector engine's first turn: one jump (taken), then the DMA
	 * engine's two instructions, then the jump falls through to the ADD */
	ck_assert_uint_eq(job.insns_executed, 5);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

/* FLOPs (docs/isa.md): counted per executed instruction, so a loop counts
 * each pass; float data only. */
START_TEST(test_flops_count_executed_instructions)
{
	tmem_t t;
	tmem_init(&t);
	const uint64_t M = 3, K = 5, N = 7, E = 40;
	uint64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[2] = { M, N }, sv[1] = { E };
	isa_insn_t mm = isa_insn_init(ISA_OP_MATMUL, 0);
	mm.n_ap = 3;
	mm.ap[0] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sc);
	mm.ap[1] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sa);
	mm.ap[2] = isa_ap_contig(0, 4096, ISA_DT_F32, 2, sb);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = &mm };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = 1 };
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.flops, 2 * M * N * K);
	/* accumulating adds one per output */
	mm.flags = ISA_F_ACCUMULATE;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.flops, 2 * M * N * K + M * N);
	/* an integer matmul is no floating-point work */
	mm.ap[0].dtype = mm.ap[1].dtype = mm.ap[2].dtype = ISA_DT_S32;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.flops, 0);

	/* FMA counts 2 per element, ADD 1, a copy 0, a REDUCE 1 per input,
	 * ACTIVATE 3 (scale, bias, function) */
	isa_insn_t v[5];
	v[0] = isa_insn_init(ISA_OP_ALU, ISA_ALU_FMA);
	v[0].n_ap = 4;
	v[0].ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 1, sv);
	v[0].ap[1] = v[0].ap[2] = v[0].ap[3] = isa_ap_contig(0, 0, ISA_DT_F32, 1, sv);
	v[1] = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	v[1].n_ap = 3;
	v[1].ap[0] = v[0].ap[0];
	v[1].ap[1] = v[1].ap[2] = v[0].ap[1];
	v[2] = isa_insn_init(ISA_OP_COPY, 0);
	v[2].n_ap = 2;
	v[2].ap[0] = isa_ap_contig(2, 4096, ISA_DT_F32, 1, sv);
	v[2].ap[1] = v[0].ap[1];
	v[3] = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
	v[3].n_ap = 2;
	v[3].param = 1;
	uint64_t s1[1] = { 1 };
	v[3].ap[0] = isa_ap_contig(2, 8192, ISA_DT_F32, 1, s1);
	v[3].ap[1] = v[0].ap[1];
	v[4] = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_RELU);
	v[4].n_ap = 2;
	v[4].imm[0] = 1;
	v[4].ap[0] = v[2].ap[0];
	v[4].ap[1] = v[0].ap[1];
	const isa_insn_t *sv4[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = v };
	uint32_t cv[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 5 };
	ck_assert_int_eq(trun_prog(&t, NULL, sv4, cv, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.flops, 2 * E + E + 0 + E + 3 * E);

	/* a loop: counter -= 1; f32 add of E elements; jump back while counter
	 * != 0: 5 passes count 5 adds (the integer counter counts nothing) */
	int32_t five = 5, one = 1;
	memcpy(tmem_ptr(&t, 3, 0), &five, 4);
	memcpy(tmem_ptr(&t, 3, 4), &one, 4);
	isa_insn_t p[3];
	p[0] = isa_insn_init(ISA_OP_ALU, ISA_ALU_SUB);
	p[0].n_ap = 3;
	p[0].ap[0] = p[0].ap[1] = isa_ap_contig(3, 0, ISA_DT_S32, 0, NULL);
	p[0].ap[2] = isa_ap_contig(3, 4, ISA_DT_S32, 0, NULL);
	p[1] = v[1];
	p[2] = isa_insn_init(ISA_OP_JUMP, 0);
	p[2].n_ap = 1;
	p[2].ap[0] = p[0].ap[0];
	p[2].param = 0;
	const isa_insn_t *sl[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = p };
	uint32_t cl[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 3 };
	ck_assert_int_eq(trun_prog(&t, NULL, sl, cl, 0, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.insns_executed, 15);
	ck_assert_uint_eq(job.flops, 5 * E);
	tmem_free(&t);
}
END_TEST

/* ---- semaphores and scheduling ---- */

/* tensor: C = A x B, signal 0; vector: wait 0 >= 1, D = C + C, signal 1;
 * scalar: wait 1 >= 1, E = relu(D - 10); dma: wait 1 >= 1, copy D -> F (bf16) */
static void build_pipeline(isa_insn_t *tp, isa_insn_t *vp, isa_insn_t *sp, isa_insn_t *dp, uint64_t n)
{
	uint64_t sa[2] = { n, n };
	uint64_t bytes = n * n * 4;
	*tp = isa_insn_init(ISA_OP_MATMUL, 0);
	tp->n_ap = 3;
	tp->ap[0] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	tp->ap[1] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sa);
	tp->ap[2] = isa_ap_contig(0, bytes, ISA_DT_F32, 2, sa);
	tp->signal_sem = 0;
	*vp = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	vp->n_ap = 3;
	vp->ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sa);
	vp->ap[1] = vp->ap[2] = tp->ap[0];
	vp->wait_sem = 0;
	vp->wait_value = 1;
	vp->signal_sem = 1;
	*sp = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_RELU);
	sp->n_ap = 2;
	sp->imm[0] = 1;
	sp->imm[1] = -10;
	sp->ap[0] = isa_ap_contig(3, 0, ISA_DT_F32, 2, sa);
	sp->ap[1] = vp->ap[0];
	sp->wait_sem = 1;
	sp->wait_value = 1;
	*dp = isa_insn_init(ISA_OP_COPY, 0);
	dp->n_ap = 2;
	dp->ap[0] = isa_ap_contig(3, bytes, ISA_DT_BF16, 2, sa);
	dp->ap[1] = vp->ap[0];
	dp->wait_sem = 1;
	dp->wait_value = 1;
}

static void check_pipeline(tmem_t *t, uint64_t n)
{
	const float *A = (const float *)(const void *)tmem_ptr(t, 0, 0), *B = A + n * n;
	const float *E = (const float *)(const void *)tmem_ptr(t, 3, 0);
	const uint16_t *F = (const uint16_t *)(const void *)tmem_ptr(t, 3, n * n * 4);
	for (uint64_t i = 0; i < n; i += 7)
		for (uint64_t j = 0; j < n; j += 5) {
			double c = 0;
			for (uint64_t k = 0; k < n; k++)
				c += (double)A[i * n + k] * B[k * n + j];
			double d = 2 * c, e = d - 10 > 0 ? d - 10 : 0;
			ck_assert_msg(fabs(E[i * n + j] - e) <= 1e-3 * (fabs(e) + 1), "E[%llu,%llu] %g vs %g",
				      (unsigned long long)i, (unsigned long long)j, E[i * n + j], e);
			uint32_t fb = (uint32_t)F[i * n + j] << 16;
			float f;
			memcpy(&f, &fb, 4);
			ck_assert(fabs(f - d) <= fabs(d) / 128 + 1e-3);
		}
}

static void fill_ab(tmem_t *t, uint64_t n)
{
	float *A = (float *)(void *)tmem_ptr(t, 0, 0);
	for (uint64_t i = 0; i < 2 * n * n; i++)
		A[i] = (float)((i * 7919) % 13) / 4 - 1.5f;
}

START_TEST(test_semaphores_order_multi_engine_program)
{
	/* _i: 0 inline scheduler, 1 threads, 2 threads pinned */
	uint64_t n = 96;
	isa_insn_t tp, vp, sp, dp;
	build_pipeline(&tp, &vp, &sp, &dp, n);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { &tp, &vp, &sp, 0, &dp };
	uint32_t c[ISA_ENGINE_COUNT] = { 1, 1, 1, 0, 1 };
	fwsim_core_config_t cfg = { .core_index = 0, .pin_threads = _i == 2,
				    .sched = _i ? FWSIM_SCHED_THREADS : FWSIM_SCHED_INLINE };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	for (int rep = 0; rep < 20; rep++) {
		tmem_t t;
		tmem_init(&t);
		fill_ab(&t, n);
		fwsim_job_t job;
		ck_assert_int_eq(trun_prog(&t, core, s, c, FWSIM_JOB_CHECK_NAN, 0, &job), FWSIM_OK);
		ck_assert_uint_eq(job.insns_executed, 4);
		check_pipeline(&t, n);
		tmem_free(&t);
	}
	fwsim_core_destroy(core);
}
END_TEST

START_TEST(test_deadlock_detected)
{
	/* _i: 0 inline, 1 threads. tensor waits sem 0 (never signalled after
	 * vector waits sem 1 which tensor would signal) */
	tmem_t t;
	tmem_init(&t);
	isa_insn_t a = isa_insn_init(ISA_OP_NOP, 0), b = isa_insn_init(ISA_OP_NOP, 0), v0 = isa_insn_init(ISA_OP_NOP, 0);
	a.wait_sem = 0;
	a.wait_value = 1;
	a.signal_sem = 1;
	v0.signal_sem = 2; /* vector makes progress first */
	b.wait_sem = 1;
	b.wait_value = 1;
	b.signal_sem = 0;
	isa_insn_t vp[2] = { v0, b };
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { &a, vp };
	uint32_t c[ISA_ENGINE_COUNT] = { 1, 2 };
	fwsim_core_config_t cfg = { .sched = _i ? FWSIM_SCHED_THREADS : FWSIM_SCHED_INLINE };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, core, s, c, 0, tnow_ns() + 5000000000ull, &job), FWSIM_DEADLOCK);
	ck_assert_uint_eq(job.insns_executed, 1);
	ck_assert_ptr_nonnull(strstr(job.error.message, "deadlock"));
	ck_assert_ptr_nonnull(strstr(job.error.message, "tensor insn 0 waits sem 0"));
	ck_assert_ptr_nonnull(strstr(job.error.message, "vector insn 1 waits sem 1"));
	/* a single engine waiting on a semaphore nobody signals */
	const isa_insn_t *s2[ISA_ENGINE_COUNT] = { &a };
	uint32_t c2[ISA_ENGINE_COUNT] = { 1 };
	ck_assert_int_eq(trun_prog(&t, core, s2, c2, 0, 0, &job), FWSIM_DEADLOCK);
	/* the core is still usable and semaphores reset per job */
	isa_insn_t ok1 = isa_insn_init(ISA_OP_NOP, 0), ok2 = isa_insn_init(ISA_OP_NOP, 0);
	ok1.signal_sem = 3;
	ok2.wait_sem = 3;
	ok2.wait_value = 1;
	const isa_insn_t *s3[ISA_ENGINE_COUNT] = { &ok2, &ok1 };
	uint32_t c3[ISA_ENGINE_COUNT] = { 1, 1 };
	for (int rep = 0; rep < 50; rep++)
		ck_assert_int_eq(trun_prog(&t, core, s3, c3, 0, 0, &job), FWSIM_OK);
	ok2.wait_value = 2; /* would pass only if sem 3 leaked from the last job */
	ck_assert_int_eq(trun_prog(&t, core, s3, c3, 0, tnow_ns() + 5000000000ull, &job), FWSIM_DEADLOCK);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

START_TEST(test_threaded_wait_times_out)
{
	/* vector spins in a jump loop; tensor waits for a sem vector never signals */
	tmem_t t;
	tmem_init(&t);
	isa_insn_t a = isa_insn_init(ISA_OP_NOP, 0);
	a.wait_sem = 5;
	a.wait_value = 1;
	isa_insn_t loop = isa_insn_init(ISA_OP_JUMP, 0);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { &a, &loop };
	uint32_t c[ISA_ENGINE_COUNT] = { 1, 1 };
	for (int sched = 1; sched <= 2; sched++) {
		fwsim_core_config_t cfg = { .sched = (uint32_t)sched };
		fwsim_core_t *core;
		ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
		fwsim_job_t job;
		ck_assert_int_eq(trun_prog(&t, core, s, c, 0, tnow_ns() + 30000000ull, &job), FWSIM_TIMEOUT);
		fwsim_core_destroy(core);
	}
	tmem_free(&t);
}
END_TEST

typedef struct par_arg {
	fwsim_core_t *core;
	int id;
	int failures;
} par_arg_t;

static void *par_worker(void *p)
{
	par_arg_t *a = p;
	uint64_t n = 64;
	isa_insn_t tp, vp, sp, dp;
	build_pipeline(&tp, &vp, &sp, &dp, n);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { &tp, &vp, &sp, 0, &dp };
	uint32_t c[ISA_ENGINE_COUNT] = { 1, 1, 1, 0, 1 };
	for (int rep = 0; rep < 25; rep++) {
		tmem_t t;
		tmem_init(&t);
		float *A = (float *)(void *)tmem_ptr(&t, 0, 0);
		for (uint64_t i = 0; i < 2 * n * n; i++)
			A[i] = (float)(((i + (uint64_t)a->id * 31 + (uint64_t)rep) * 7919) % 13) / 4 - 1.5f;
		fwsim_job_t job;
		if (trun_prog(&t, a->core, s, c, 0, 0, &job) != FWSIM_OK)
			a->failures++;
		/* full check of E */
		const float *B = A + n * n, *E = (const float *)(const void *)tmem_ptr(&t, 3, 0);
		for (uint64_t i = 0; i < n; i++)
			for (uint64_t j = 0; j < n; j++) {
				double cc = 0;
				for (uint64_t k = 0; k < n; k++)
					cc += (double)A[i * n + k] * B[k * n + j];
				double e = 2 * cc - 10 > 0 ? 2 * cc - 10 : 0;
				if (fabs(E[i * n + j] - e) > 1e-3 * (fabs(e) + 1))
					a->failures++;
			}
		tmem_free(&t);
	}
	return NULL;
}

START_TEST(test_two_cores_four_threads_correct)
{
	fwsim_core_t *cores[2];
	for (int i = 0; i < 2; i++) {
		fwsim_core_config_t cfg = { .core_index = (uint32_t)i, .sched = i ? FWSIM_SCHED_THREADS : FWSIM_SCHED_AUTO };
		ck_assert_int_eq(fwsim_core_create(&cfg, &cores[i]), FWSIM_OK);
	}
	pthread_t th[4];
	par_arg_t args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (par_arg_t){ cores[i % 2], i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, par_worker, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(args[i].failures, 0);
	}
	fwsim_core_destroy(cores[0]);
	fwsim_core_destroy(cores[1]);
}
END_TEST

/* Threads of this process (/proc/self/status), or -1. */
static int proc_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The automatic scheduler runs engines on threads of their own only when the
 * calling thread may use two CPUs or more: on one they would take turns,
 * each hand-off a futex wake and a context switch. Two engines of 6 ADDs of
 * 2^18 elements each (past FWSIM_THREAD_MIN_WORK): no thread is created
 * with the caller pinned to one CPU; one at least is with its whole mask. */
START_TEST(test_auto_sched_inline_on_one_cpu)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t n = T_REGSZ / 4;
	isa_insn_t v[6], g[6];
	for (int i = 0; i < 6; i++) {
		v[i] = add_f32(1, 0, 0, 0, n);
		g[i] = add_f32(2, 0, 0, 0, n);
	}
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = v, [ISA_ENGINE_GPSIMD] = g };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 6, [ISA_ENGINE_GPSIMD] = 6 };
	cpu_set_t all, one;
	ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof(all), &all), 0);
	CPU_ZERO(&one);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &all)) {
			CPU_SET(cpu, &one);
			break;
		}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && CPU_COUNT(&all) < 2)
			break; /* a one-CPU machine: nothing to compare */
		ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(one),
							pass ? &all : &one), 0);
		fwsim_core_t *core;
		ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
		int before = proc_threads();
		fwsim_job_t job;
		ck_assert_int_eq(trun_prog(&t, core, s, c, 0, 0, &job), FWSIM_OK);
		int after = proc_threads();
		fwsim_core_destroy(core);
		ck_assert_int_ge(before, 1);
		if (pass == 0)
			ck_assert_msg(after == before, "one CPU: %d threads before, %d after", before, after);
		else
			ck_assert_msg(after > before, "%d CPUs: %d threads before, %d after",
				      CPU_COUNT(&all), before, after);
	}
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(all), &all), 0);
	tmem_free(&t);
}
END_TEST

/* The automatic scheduler's pick between inline and threaded engines
 * (sched_pick.h), on made-up times: the first execution threaded and
 * untimed, the opening probe alternating, the faster mode kept, the other
 * re-probed after 4, 8, ... executions (at most FWSIM_PICK_GAP_MAX), a
 * switch when the machine changes, a failed (unrecorded) probe tried again. */
static uint64_t pick_until_probe(fwsim_sched_pick_t *p, uint64_t steady_ns, uint64_t *run)
{
	uint32_t choice = fwsim_sched_pick_choice(p, NULL);
	for (int i = 0; i <= (int)FWSIM_PICK_GAP_MAX; i++) {
		uint32_t mode = fwsim_sched_pick_next(p, run);
		if (mode != choice)
			return mode;
		fwsim_sched_pick_record(p, *run, mode, steady_ns);
	}
	ck_abort_msg("no probe of the other mode in %u executions", FWSIM_PICK_GAP_MAX + 1);
	return 0;
}

START_TEST(test_sched_pick_policy)
{
	fwsim_sched_pick_t p;
	fwsim_sched_pick_init(&p);
	uint64_t run, sw;
	ck_assert_uint_eq(fwsim_sched_pick_next(&p, &run), FWSIM_PICK_THREADS);
	ck_assert_uint_eq(run, 0);
	fwsim_sched_pick_record(&p, run, FWSIM_PICK_THREADS, 1); /* ignored */
	const uint32_t opening[4] = { FWSIM_PICK_THREADS, FWSIM_PICK_INLINE, FWSIM_PICK_THREADS,
				      FWSIM_PICK_INLINE };
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(fwsim_sched_pick_choice(&p, NULL), FWSIM_PICK_THREADS);
		uint32_t mode = fwsim_sched_pick_next(&p, &run);
		ck_assert_uint_eq(mode, opening[i]);
		ck_assert_uint_eq(run, (uint64_t)i + 1);
		/* inline 10% faster, one threaded time lower than any inline one */
		fwsim_sched_pick_record(&p, run, mode, mode == FWSIM_PICK_INLINE ? 90 : i == 0 ? 85 : 100);
	}
	/* min of each mode decides: threaded's 85 beats inline's 90 */
	ck_assert_uint_eq(fwsim_sched_pick_choice(&p, &sw), FWSIM_PICK_THREADS);
	ck_assert_uint_eq(sw, 0);
	/* threads stay while they are as fast; inline is probed at run 9 (5 + 4)
	 * and wins with 80 */
	ck_assert_uint_eq(pick_until_probe(&p, 85, &run), FWSIM_PICK_INLINE);
	ck_assert_uint_eq(run, FWSIM_PICK_PROBES + 1 + FWSIM_PICK_GAP_MIN);
	fwsim_sched_pick_record(&p, run, FWSIM_PICK_INLINE, 80);
	ck_assert_uint_eq(fwsim_sched_pick_choice(&p, &sw), FWSIM_PICK_INLINE);
	ck_assert_uint_eq(sw, 1);
	/* a switch resets the gap: the next probe (threads, 95: slower) 4 later,
	 * then 8, 16, ... up to FWSIM_PICK_GAP_MAX */
	uint64_t last = run, gap = FWSIM_PICK_GAP_MIN;
	for (int i = 0; i < 10; i++) {
		ck_assert_uint_eq(pick_until_probe(&p, 80, &run), FWSIM_PICK_THREADS);
		ck_assert_msg(run - last == gap + 1,
			      "probe %d at %llu, %llu after the last (gap %llu)", i,
			      (unsigned long long)run, (unsigned long long)(run - last),
			      (unsigned long long)gap);
		fwsim_sched_pick_record(&p, run, FWSIM_PICK_THREADS, 95);
		ck_assert_uint_eq(fwsim_sched_pick_choice(&p, NULL), FWSIM_PICK_INLINE);
		last = run;
		gap = gap * 2 < FWSIM_PICK_GAP_MAX ? gap * 2 : FWSIM_PICK_GAP_MAX;
	}
	ck_assert_uint_eq(gap, FWSIM_PICK_GAP_MAX);
	/* the machine changes: inline now takes 150 (its recent times all 150
	 * once it has run FWSIM_PICK_KEEP times), a threaded probe 120 moves
	 * the choice back, and the gap restarts at 4 */
	ck_assert_uint_eq(pick_until_probe(&p, 150, &run), FWSIM_PICK_THREADS);
	fwsim_sched_pick_record(&p, run, FWSIM_PICK_THREADS, 120);
	ck_assert_uint_eq(fwsim_sched_pick_choice(&p, &sw), FWSIM_PICK_THREADS);
	ck_assert_uint_eq(sw, 2);
	last = run;
	/* a probe that fails is not recorded: the next comes a gap later */
	ck_assert_uint_eq(pick_until_probe(&p, 120, &run), FWSIM_PICK_INLINE);
	ck_assert_uint_eq(run - last, FWSIM_PICK_GAP_MIN + 1);
	last = run;
	ck_assert_uint_eq(pick_until_probe(&p, 120, &run), FWSIM_PICK_INLINE);
	ck_assert_uint_eq(run - last, FWSIM_PICK_GAP_MIN);
	fwsim_sched_pick_record(&p, run, FWSIM_PICK_INLINE, 150);
	ck_assert_uint_eq(fwsim_sched_pick_choice(&p, &sw), FWSIM_PICK_THREADS);
	ck_assert_uint_eq(sw, 2);
	fwsim_sched_pick_destroy(&p);
}
END_TEST

/* Engines that take turns, each instruction waiting for the other engine's
 * last (1024 ADDs of 2^11 elements each, past FWSIM_THREAD_MIN_WORK): no
 * two instructions can overlap, so engine threads only add hand-offs, and
 * the automatic scheduler, having timed both modes, runs it inline. With one
 * CPU it never times anything (always inline). */
START_TEST(test_auto_sched_times_and_picks_inline_for_ping_pong)
{
	enum { N = 1024, E = 1 << 11 };
	tmem_t t;
	tmem_init(&t);
	isa_insn_t *v = calloc(N, sizeof(*v)), *g = calloc(N, sizeof(*g));
	for (uint32_t i = 0; i < N; i++) {
		v[i] = add_f32(1, 0, 0, 0, E);
		g[i] = add_f32(2, 0, 0, 0, E);
		if (i) {
			v[i].wait_sem = 0;
			v[i].wait_value = i;
		}
		v[i].signal_sem = 1;
		g[i].wait_sem = 1;
		g[i].wait_value = i + 1;
		g[i].signal_sem = 0;
	}
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = v, [ISA_ENGINE_GPSIMD] = g };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = N, [ISA_ENGINE_GPSIMD] = N };
	fwsim_program_t *p = NULL;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p), NULL, 0),
			 NS_STATUS_OK);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_job_t job = { .program = p, .mem = t.mem, .mem_size = t.size, .regions = t.regions,
			    .n_regions = T_NREG };
	/* the opening probe and one re-probe: a wrong first choice (a preempted
	 * inline run) gets its second chance */
	uint32_t runs = FWSIM_PICK_PROBES + 2 + FWSIM_PICK_GAP_MIN;
	for (uint32_t r = 0; r < runs; r++)
		ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	uint64_t switches;
	uint32_t choice = fwsim_sched_pick_choice(p->pick, &switches);
	if (fwsim_affinity_cpus() >= 2) {
		ck_assert_uint_eq(p->pick->runs, runs);
#ifndef NEURONSIM_TSAN
		/* ThreadSanitizer's cost per synchronisation (and meson running
		 * its other tests on the same two CPUs) makes the timings say
		 * nothing about the policy: there both modes run, race-free, and
		 * the choice is left to the other builds */
		ck_assert_msg(choice == FWSIM_PICK_INLINE, "threads picked for a ping-pong (%llu switches)",
			      (unsigned long long)switches);
#else
		(void)choice;
		(void)switches;
#endif
	} else {
		ck_assert_uint_eq(p->pick->runs, 0);
	}
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	free(v);
	free(g);
	tmem_free(&t);
}
END_TEST

/* ---- profiling ---- */
START_TEST(test_profile_spans_and_drops)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t p[5];
	for (int i = 0; i < 5; i++) {
		p[i] = add_f32(0, 0, 64, 128, 16);
		p[i].debug_id = (uint32_t)(10 + i);
	}
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = p };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 5 };
	fwsim_program_t *prog;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &prog),
						   NULL, 0), NS_STATUS_OK);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_span_t spans[3];
	fwsim_trace_t tr = { spans, 3, 99, 99 };
	fwsim_job_t job = { .program = prog, .mem = t.mem, .mem_size = t.size, .regions = t.regions,
			    .n_regions = T_NREG, .flags = FWSIM_JOB_PROFILE, .trace = &tr };
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	ck_assert_uint_eq(tr.count, 3);
	ck_assert_uint_eq(tr.dropped, 2);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(spans[i].engine, ISA_ENGINE_VECTOR);
		ck_assert_uint_eq(spans[i].insn_index, (uint32_t)i);
		ck_assert_uint_eq(spans[i].debug_id, (uint32_t)(10 + i));
		ck_assert_uint_le(spans[i].start_ns, spans[i].end_ns);
		if (i)
			ck_assert_uint_le(spans[i - 1].end_ns, spans[i].start_ns);
	}
	ck_assert_uint_eq(job.insns_executed, 5);
	ck_assert_uint_gt(job.engine_busy_ns[ISA_ENGINE_VECTOR], 0);
	ck_assert_uint_eq(job.engine_busy_ns[ISA_ENGINE_TENSOR], 0);
	/* profiling without a trace buffer is a bad job */
	job.trace = NULL;
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_INVALID);
	fwsim_program_destroy(prog);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

START_TEST(test_bad_jobs_rejected)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = add_f32(3, 0, 64, 128, 4);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_program_t *prog;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &prog),
						   NULL, 0), NS_STATUS_OK);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_job_t job = { .program = prog, .mem = t.mem, .mem_size = t.size, .regions = t.regions,
			    .n_regions = 3 };
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_INVALID);
	ck_assert_int_eq(job.error.status, FWSIM_INVALID);
	job.n_regions = T_NREG;
	job.flags = 1u << 7;
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_INVALID);
	job.flags = 0;
	job.program = NULL;
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_INVALID);
	job.program = prog;
	ck_assert_int_eq(fwsim_core_execute(NULL, &job), FWSIM_INVALID);
	ck_assert_int_eq(fwsim_core_execute(core, NULL), FWSIM_INVALID);
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	fwsim_core_config_t bad = { .sched = 9 };
	fwsim_core_t *c2 = (fwsim_core_t *)0x1;
	ck_assert_int_eq(fwsim_core_create(&bad, &c2), FWSIM_INVALID);
	ck_assert_ptr_null(c2);
	ck_assert_str_eq(fwsim_status_str(FWSIM_OOB), "out-of-bounds access");
	fwsim_program_destroy(prog);
	fwsim_core_destroy(core);
	tmem_free(&t);
}
END_TEST

static Suite *exec_suite(void)
{
	Suite *s = suite_create("fwsim-exec");
	TCase *tc = tcase_create("exec");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_oob_output_past_region_end_writes_nothing);
	tcase_add_test(tc, test_oob_negative_stride_before_region_start);
	tcase_add_test(tc, test_oob_input_with_huge_stride_does_not_wrap);
	tcase_add_test(tc, test_oob_region_binding_outside_window);
	tcase_add_test(tc, test_unaligned_region_bindings);
	tcase_add_test(tc, test_nan_recorded_at_first_producing_insn);
	tcase_add_test(tc, test_nan_first_index_is_row_major_flat_in_strided_output);
	tcase_add_test(tc, test_fill_copy_nan_check);
	tcase_add_test(tc, test_inf_only_with_check_inf_and_from_narrowing);
	tcase_add_test(tc, test_fused_check_in_contiguous_f32_add);
	tcase_add_test(tc, test_timeout_stops_infinite_jump_loop);
	tcase_add_test(tc, test_conditional_jump_loop_counts_down);
	tcase_add_test(tc, test_inline_polling_loop_lets_the_writer_run);
	tcase_add_test(tc, test_flops_count_executed_instructions);
	tcase_add_test(tc, test_deadline_stops_huge_stride0_alu_inside_the_instruction);
	tcase_add_test(tc, test_deadline_stops_huge_stride0_int_matmul);
	tcase_add_test(tc, test_matmul_work_over_the_bound_is_refused);
	tcase_add_test(tc, test_cancel_stops_a_running_job);
	tcase_add_test(tc, test_other_engine_error_stops_a_long_instruction);
	tcase_add_loop_test(tc, test_semaphores_order_multi_engine_program, 0, 3);
	tcase_add_loop_test(tc, test_deadlock_detected, 0, 2);
	tcase_add_test(tc, test_threaded_wait_times_out);
	tcase_add_test(tc, test_two_cores_four_threads_correct);
	tcase_add_test(tc, test_auto_sched_inline_on_one_cpu);
	tcase_add_test(tc, test_sched_pick_policy);
	tcase_add_test(tc, test_auto_sched_times_and_picks_inline_for_ping_pong);
	tcase_add_test(tc, test_profile_spans_and_drops);
	tcase_add_test(tc, test_bad_jobs_rejected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(exec_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
