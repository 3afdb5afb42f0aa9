/* Large MATMULs split across host threads (pool.c): bit-identical results and NaN records for 1 and N threads, the work reaching a worker, idle workers sleeping, deadline and cancel inside the split work. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fwsim_test.h"
#include "neuronsim/proc_stat.h"
#include "pool.h"

#define P_NREG 4
#define P_REGSZ (16u << 20)

typedef struct pmem {
	uint8_t *mem;
	uint64_t size;
	fwsim_region_t regions[P_NREG];
} pmem_t;

static void pmem_init(pmem_t *m)
{
	m->size = (uint64_t)P_NREG * P_REGSZ;
	m->mem = calloc(1, m->size);
	ck_assert_ptr_nonnull(m->mem);
	for (uint32_t r = 0; r < P_NREG; r++)
		m->regions[r] = (fwsim_region_t){ (uint64_t)r * P_REGSZ, P_REGSZ };
}

static float *pf32(pmem_t *m, uint32_t r, uint64_t off)
{
	return (float *)(void *)(m->mem + m->regions[r].addr + off);
}

static fwsim_status_t prun(pmem_t *m, const isa_insn_t *in, uint32_t flags, uint64_t deadline_ns,
			   fwsim_job_t *job)
{
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = in };
	uint32_t n[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = 1 };
	fwsim_program_t *p = NULL;
	char err[200];
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(s, n, P_NREG, &p),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	*job = (fwsim_job_t){ .program = p, .mem = m->mem, .mem_size = m->size, .regions = m->regions,
			      .n_regions = P_NREG, .flags = flags, .deadline_ns = deadline_ns };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_status_t st = fwsim_core_execute(core, job);
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	job->program = NULL;
	return st;
}

/* A 3-D AP [B, R, C] in region r at offset off with the given element strides. */
static isa_ap_t pap(uint32_t r, uint64_t off, uint32_t dt, uint64_t B, uint64_t R, uint64_t C,
		    int64_t sb, int64_t sr, int64_t sc)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = r;
	ap.offset = off;
	ap.dtype = (uint8_t)dt;
	ap.rank = 3;
	ap.shape[0] = B;
	ap.shape[1] = R;
	ap.shape[2] = C;
	ap.stride[0] = sb;
	ap.stride[1] = sr;
	ap.stride[2] = sc;
	return ap;
}

/* A 1-D contiguous f32 AP of n elements in region r. */
static isa_ap_t pap1(uint32_t r, uint64_t n)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = r;
	ap.dtype = ISA_DT_F32;
	ap.rank = 1;
	ap.shape[0] = n;
	ap.stride[0] = 1;
	return ap;
}

typedef struct mm_case {
	const char *name;
	isa_insn_t in;
} mm_case_t;

/* The MATMUL forms the compiler emits for GEMMs and lowered convolutions, each
 * at least FWSIM_PAR_MIN_WORK multiply-adds. Region 1: A, 2: B, 0: C. */
static int make_cases(mm_case_t *c)
{
	int n = 0;
	isa_insn_t in;
	/* dense layer: [512, 256] x [256, 64], contiguous */
	in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = pap(0, 0, ISA_DT_F32, 1, 512, 64, 0, 64, 1);
	in.ap[1] = pap(1, 0, ISA_DT_F32, 1, 512, 256, 0, 256, 1);
	in.ap[2] = pap(2, 0, ISA_DT_F32, 1, 256, 64, 0, 64, 1);
	c[n++] = (mm_case_t){ "dense", in };
	/* weight-gradient form: A transposed in memory, B transposed, accumulate */
	in.flags = ISA_F_ACCUMULATE;
	in.ap[1] = pap(1, 0, ISA_DT_F32, 1, 512, 256, 0, 1, 512);
	in.ap[2] = pap(2, 0, ISA_DT_F32, 1, 256, 64, 0, 1, 256);
	c[n++] = (mm_case_t){ "transposed+accumulate", in };
	/* conv, channel-major: acc[n] [Cout, Y] += W^T [Cout, C] (batch stride 0,
	 * strided: packed) x T[n] [C, Y] */
	in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.flags = ISA_F_ACCUMULATE;
	in.n_ap = 3;
	in.ap[0] = pap(0, 0, ISA_DT_F32, 8, 64, 784, 64 * 784, 784, 1);
	in.ap[1] = pap(1, 0, ISA_DT_F32, 8, 64, 64, 0, 1, 64 * 9);
	in.ap[2] = pap(2, 0, ISA_DT_F32, 8, 64, 784, 64 * 784, 784, 1);
	c[n++] = (mm_case_t){ "conv channel-major", in };
	/* conv, grouped per kernel position: 32 groups of [M, 4] x [4, 4], output
	 * with a row stride (not in place: stored through the tile buffer) */
	in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = pap(0, 0, ISA_DT_F32, 32, 8192, 4, 4, 130, 1);
	in.ap[1] = pap(1, 0, ISA_DT_F32, 32, 8192, 4, 4, 128, 1);
	in.ap[2] = pap(2, 0, ISA_DT_F32, 32, 4, 4, 4 * 128, 128, 1);
	c[n++] = (mm_case_t){ "conv grouped", in };
	/* bf16 operands (converted blockwise), wide N: split along N */
	in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = pap(0, 0, ISA_DT_F32, 1, 16, 8192, 0, 8192, 1);
	in.ap[1] = pap(1, 0, ISA_DT_BF16, 1, 16, 512, 0, 512, 1);
	in.ap[2] = pap(2, 0, ISA_DT_BF16, 1, 512, 8192, 0, 8192, 1);
	c[n++] = (mm_case_t){ "bf16 wide", in };
	return n;
}

static void fill_inputs(pmem_t *m, uint64_t seed, int nan_at)
{
	/* 16-bit words that are each a bf16 in [-0.5, 0.5): read as f32 (a pair)
	 * or as bf16 every element is finite and small */
	for (uint32_t r = 0; r < P_NREG; r++) {
		uint16_t *h = (uint16_t *)(void *)pf32(m, r, 0);
		for (uint64_t i = 0; i < P_REGSZ / 2; i++) {
			float f = (float)((double)(trand(&seed) >> 11) / 9007199254740992.0 - 0.5);
			uint32_t u;
			memcpy(&u, &f, 4);
			h[i] = (uint16_t)(u >> 16);
		}
	}
	if (nan_at >= 0)
		pf32(m, 1, 0)[nan_at] = NAN;
}

/* Every case gives the same bytes (and the same NaN record) with 1, 2 and 4
 * threads, and matches a double-precision reference. */
START_TEST(test_split_matmul_bit_identical_across_thread_counts)
{
	mm_case_t cases[8];
	int n = make_cases(cases);
	pmem_t ref, got;
	pmem_init(&ref);
	pmem_init(&got);
	static const uint32_t threads[] = { 2, 4, 3 };
	for (int ci = 0; ci < n; ci++) {
		const isa_insn_t *in = &cases[ci].in;
		for (int with_nan = 0; with_nan < 2; with_nan++) {
			fwsim_job_t j1, jn;
			fill_inputs(&ref, 17 + (uint64_t)ci, with_nan ? 577 : -1);
			fwsim_set_threads(1);
			fwsim_status_t s1 = prun(&ref, in, FWSIM_JOB_CHECK_NAN, 0, &j1);
			ck_assert_int_eq(s1, (with_nan ? FWSIM_NUM_ERR : FWSIM_OK));
			for (uint32_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
				fill_inputs(&got, 17 + (uint64_t)ci, with_nan ? 577 : -1);
				fwsim_set_threads(threads[t]);
				ck_assert_int_eq(prun(&got, in, FWSIM_JOB_CHECK_NAN, 0, &jn), s1);
				ck_assert_msg(memcmp(ref.mem, got.mem, ref.size) == 0,
					      "%s: %u threads differ from 1", cases[ci].name, threads[t]);
				if (with_nan) {
					ck_assert_uint_eq(jn.error.count, j1.error.count);
					ck_assert_uint_eq(jn.error.first_index, j1.error.first_index);
				}
			}
		}
		/* against a reference in double (no NaN): the split computes the product */
		fill_inputs(&got, 99, -1);
		memcpy(ref.mem, got.mem, ref.size);
		fwsim_job_t j;
		fwsim_set_threads(2);
		ck_assert_int_eq(prun(&got, in, 0, 0, &j), FWSIM_OK);
		const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
		int acc = !!(in->flags & ISA_F_ACCUMULATE);
		uint64_t K = a->shape[2];
		for (uint64_t bi = 0; bi < c->shape[0]; bi += 3)
			for (uint64_t mi = 0; mi < c->shape[1]; mi += 7)
				for (uint64_t ni = 0; ni < c->shape[2]; ni += 5) {
					uint64_t ci_ = c->offset + (bi * c->stride[0] + mi * c->stride[1] +
								    ni * c->stride[2]) * 4;
					double s = acc ? tget(c->dtype, ref.mem + ref.regions[0].addr + ci_) : 0;
					for (uint64_t kk = 0; kk < K; kk++) {
						uint64_t ea = isa_dtype_size(a->dtype);
						const uint8_t *pa = ref.mem + ref.regions[1].addr + a->offset +
							(bi * a->stride[0] + mi * a->stride[1] + kk * a->stride[2]) * ea;
						const uint8_t *pb = ref.mem + ref.regions[2].addr + b->offset +
							(bi * b->stride[0] + kk * b->stride[1] + ni * b->stride[2]) * ea;
						s += tget(a->dtype, pa) * tget(b->dtype, pb);
					}
					double g = tget(c->dtype, got.mem + got.regions[0].addr + ci_);
					T_CHECK(fabs(g - s) <= 1e-4 * (1 + fabs(s)), "%s [%llu,%llu,%llu]: %g, want %g",
						cases[ci].name, (unsigned long long)bi, (unsigned long long)mi,
						(unsigned long long)ni, g, s);
				}
	}
	fwsim_set_threads(0);
	free(ref.mem);
	free(got.mem);
}
END_TEST

/* Elementwise instructions over FWSIM_PAR_MIN_EW elements or more are cut into row
 * ranges: a depthwise-like FMA with a broadcast operand, a batched transpose
 * (COPY's tiled path), an im2col-like strided COPY and a one-row ADD (cut
 * into ranges of the row) give the same bytes and NaN record for 1, 2 and 4
 * threads. */
START_TEST(test_split_elementwise_bit_identical_across_thread_counts)
{
	pmem_t ref, got;
	pmem_init(&ref);
	pmem_init(&got);
	isa_insn_t fma = isa_insn_init(ISA_OP_ALU, ISA_ALU_FMA);
	fma.n_ap = 4;
	fma.ap[0] = pap(0, 0, ISA_DT_F32, 8, 576, 240, 576 * 240, 240, 1);
	fma.ap[1] = pap(1, 0, ISA_DT_F32, 8, 576, 240, 576 * 256, 256, 1);
	fma.ap[2] = pap(2, 0, ISA_DT_F32, 8, 576, 240, 0, 1, 0);
	fma.ap[3] = fma.ap[0];
	isa_insn_t copy = isa_insn_init(ISA_OP_COPY, 0);
	copy.n_ap = 2;
	copy.ap[0] = pap(0, 0, ISA_DT_F32, 64, 8, 3136, 8 * 3136, 3136, 1);
	copy.ap[1] = pap(1, 0, ISA_DT_F32, 64, 8, 3136, 3364, 64 * 3364, 1);
	/* a transposing copy (the tiled path): [4, 515, 521] from [4, 521, 515] */
	isa_insn_t tr = isa_insn_init(ISA_OP_COPY, 0);
	tr.n_ap = 2;
	tr.ap[0] = pap(0, 0, ISA_DT_F32, 4, 515, 521, 515 * 521, 521, 1);
	tr.ap[1] = pap(1, 0, ISA_DT_F32, 4, 515, 521, 515 * 521, 1, 515);
	/* one row (every operand runs on): ranges of whole blocks */
	isa_insn_t add = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	add.n_ap = 3;
	add.ap[0] = pap1(0, 1200000);
	add.ap[1] = pap1(1, 1200000);
	add.ap[2] = pap1(2, 1200000);
	const isa_insn_t *ins[4] = { &fma, &tr, &add, &copy }; /* the copy last: checked after */
	static const uint32_t threads[] = { 2, 4 };
	for (int ci = 0; ci < 4; ci++)
		for (int with_nan = 0; with_nan < 2; with_nan++) {
			fwsim_job_t j1, jn;
			fill_inputs(&ref, 3 + (uint64_t)ci, with_nan ? 577 : -1);
			fwsim_set_threads(1);
			fwsim_status_t s1 = prun(&ref, ins[ci], FWSIM_JOB_CHECK_NAN, 0, &j1);
			ck_assert_int_eq(s1, (with_nan ? FWSIM_NUM_ERR : FWSIM_OK));
			for (uint32_t t = 0; t < 2; t++) {
				fill_inputs(&got, 3 + (uint64_t)ci, with_nan ? 577 : -1);
				fwsim_set_threads(threads[t]);
				ck_assert_int_eq(prun(&got, ins[ci], FWSIM_JOB_CHECK_NAN, 0, &jn), s1);
				ck_assert_msg(memcmp(ref.mem, got.mem, ref.size) == 0,
					      "case %d: %u threads differ from 1", ci, threads[t]);
				if (with_nan) {
					ck_assert_uint_eq(jn.error.count, j1.error.count);
					ck_assert_uint_eq(jn.error.first_index, j1.error.first_index);
				}
			}
			/* the transpose's values: element [b, i, j] is source [b, j, i] */
			if (ins[ci] == &tr)
				ck_assert(pf32(&got, 0, 0)[(3 * 515 + 200) * 521 + 77] ==
					  pf32(&got, 1, 0)[3 * 515 * 521 + 77 * 515 + 200]);
		}
	/* the copy's values: element [a, b, c] of the source */
	float *dst = pf32(&got, 0, 0), *src = pf32(&got, 1, 0);
	ck_assert(dst[(5 * 8 + 3) * 3136 + 77] == src[5 * 3364 + 3 * 64 * 3364 + 77]);
	fwsim_set_threads(0);
	free(ref.mem);
	free(got.mem);
}
END_TEST

/* FUSED programs of FWSIM_PAR_MIN_EW elements or more are cut into items as well
 * (kernels_fused.c, fz_run_par): a batch norm's (x - m) * s with m and s one
 * value per channel feeding a mask-select, its variance's sum of (x - m)^2
 * per channel (the reducing form, cut by channels), and a one-dim program
 * cut into ranges of whole blocks; and a REDUCE (kernels_reduce.c,
 * reduce_par), the batch norm's sum(x), cut by channels. Each gives the same bytes and NaN record (count,
 * first index, the step blamed) for 1, 2 and 4 threads, and the split
 * reaches a pool worker. The descriptor lives in region 0 (the constants),
 * rewritten after every fill; the output in region 3. */
static isa_insn_t par_fused(pmem_t *m, int which)
{
	fbuild_t b;
	fb_init(&b);
	isa_ap_t out;
	if (which == 3) {
		/* not FUSED: a REDUCE, the batch norm's sum(x) over dims 0 and 2 */
		isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
		in.n_ap = 2;
		in.param = 1u << 0 | 1u << 2;
		in.ap[0] = pap(3, 0, ISA_DT_F32, 1, 96, 1, 96, 1, 1);
		in.ap[1] = pap(1, 0, ISA_DT_F32, 8, 96, 1400, 96 * 1400, 1400, 1);
		return in;
	}
	if (which == 0) {
		out = pap(3, 0, ISA_DT_F32, 8, 96, 1400, 96 * 1400, 1400, 1);
		fb_input(&b, pap(1, 0, ISA_DT_F32, 8, 96, 1400, 96 * 1400, 1400, 1));   /* x */
		fb_input(&b, pap(2, 0, ISA_DT_F32, 8, 96, 1400, 0, 1, 0));               /* m */
		fb_input(&b, pap(2, 4096, ISA_DT_F32, 8, 96, 1400, 0, 1, 0));            /* s */
		fb_input(&b, pap(2, 8192, ISA_DT_F32, 8, 96, 1400, 96 * 1400, 1400, 1)); /* g */
		fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 0, 1, -1, 0);
		fb_op(&b, ISA_ALU_MUL, 5, ISA_DT_F32, 5, 2, -1, 0);
		fb_op(&b, ISA_FUSED_CONST, 6, ISA_DT_F32, -1, -1, -1, fimm(0.0));
		fb_op(&b, ISA_ALU_CMP_GE, 7, ISA_DT_PRED, 5, 6, -1, 0);
		fb_op(&b, ISA_ALU_SELECT, 8, ISA_DT_F32, 7, 3, 5, 0);
		b.h.out_reg = 8;
	} else if (which == 2) {
		/* the reducing form: sum over dims 0 and 2 of (x - m)^2, per channel */
		out = pap(3, 0, ISA_DT_F32, 8, 96, 1400, 0, 1, 0);
		fb_input(&b, pap(1, 0, ISA_DT_F32, 8, 96, 1400, 96 * 1400, 1400, 1));
		fb_input(&b, pap(2, 0, ISA_DT_F32, 8, 96, 1400, 0, 1, 0));
		fb_op(&b, ISA_ALU_SUB, 2, ISA_DT_F32, 0, 1, -1, 0);
		fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_F32, 2, 2, -1, 0);
		b.h.out_reg = 2;
		b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
		b.h.reduce_axes = 1u << 0 | 1u << 2;
	} else {
		out = pap1(3, 1200000);
		fb_input(&b, pap1(1, 1200000));
		fb_input(&b, pap1(2, 1200000));
		fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_F32, 0, 0, -1, 0);
		fb_op(&b, ISA_ALU_ADD, 2, ISA_DT_F32, 2, 1, -1, 0);
		b.h.out_reg = 2;
	}
	isa_insn_t in = fb_insn(&b, (uint8_t *)pf32(m, 0, 0), 0, 0, out);
	in.param = ISA_FUSED_STEPS_DEBUG(40);
	return in;
}

START_TEST(test_split_fused_and_reduce_bit_identical_across_thread_counts)
{
	pmem_t ref, got;
	pmem_init(&ref);
	pmem_init(&got);
	static const uint32_t threads[] = { 2, 4 };
	/* in a later item than the first: batch 5, channel 50 */
	const int nan_at = (5 * 96 + 50) * 1400 + 7;
	for (int which = 0; which < 4; which++)
		for (int with_nan = 0; with_nan < 2; with_nan++) {
			fwsim_job_t j1, jn;
			fill_inputs(&ref, 11 + (uint64_t)which, with_nan ? nan_at : -1);
			isa_insn_t in = par_fused(&ref, which);
			fwsim_set_threads(1);
			fwsim_status_t s1 = prun(&ref, &in, FWSIM_JOB_CHECK_NAN, 0, &j1);
			ck_assert_int_eq(s1, (with_nan ? FWSIM_NUM_ERR : FWSIM_OK));
			if (with_nan) {
				ck_assert_uint_eq(j1.error.first_index, which >= 2 ? 50 : (uint64_t)nan_at);
				if (which < 3)
					ck_assert_uint_eq(j1.error.debug_id, 40); /* the SUB, or the MUL */
			}
			for (uint32_t t = 0; t < 2; t++) {
				fill_inputs(&got, 11 + (uint64_t)which, with_nan ? nan_at : -1);
				in = par_fused(&got, which);
				fwsim_set_threads(threads[t]);
				ck_assert_int_eq(prun(&got, &in, FWSIM_JOB_CHECK_NAN, 0, &jn), s1);
				ck_assert_msg(memcmp(ref.mem, got.mem, ref.size) == 0,
					      "program %d: %u threads differ from 1", which, threads[t]);
				ck_assert_uint_eq(jn.error.count, j1.error.count);
				ck_assert_uint_eq(jn.error.first_index, j1.error.first_index);
				ck_assert_uint_eq(jn.error.debug_id, j1.error.debug_id);
			}
		}
	/* the values: element [5, 7, 300] of the first program */
	fill_inputs(&got, 11, -1);
	isa_insn_t in = par_fused(&got, 0);
	fwsim_job_t j;
	uint64_t before = fwsim_par_worker_items();
	fwsim_set_threads(2);
	for (int i = 0; i < 200 && fwsim_par_worker_items() == before; i++)
		ck_assert_int_eq(prun(&got, &in, 0, 0, &j), FWSIM_OK);
	ck_assert_uint_gt(fwsim_par_worker_items(), before);
	uint64_t e = (5 * 96 + 7) * 1400 + 300;
	float xm = (pf32(&got, 1, 0)[e] - pf32(&got, 2, 0)[7]) * pf32(&got, 2, 4096)[7];
	float want = xm >= 0 ? pf32(&got, 2, 8192)[e] : xm;
	ck_assert(memcmp(&pf32(&got, 3, 0)[e], &want, 4) == 0);
	fwsim_set_threads(0);
	free(ref.mem);
	free(got.mem);
}
END_TEST

typedef struct core_arg {
	pmem_t m;
	const isa_insn_t *in;
	fwsim_status_t st;
} core_arg_t;

static void *core_runner(void *v)
{
	core_arg_t *a = v;
	for (int i = 0; i < 4 && a->st == FWSIM_OK; i++) {
		fwsim_job_t j;
		fill_inputs(&a->m, 41, -1);
		a->st = prun(&a->m, a->in, FWSIM_JOB_CHECK_NAN, 0, &j);
	}
	return NULL;
}

/* Two cores splitting MATMULs at once share the one pool: whichever finds it
 * busy runs its items itself, and both get the 1-thread bytes. */
START_TEST(test_two_cores_share_the_pool)
{
	mm_case_t cases[8];
	make_cases(cases);
	pmem_t ref;
	pmem_init(&ref);
	fill_inputs(&ref, 41, -1);
	fwsim_set_threads(1);
	fwsim_job_t j;
	ck_assert_int_eq(prun(&ref, &cases[2].in, FWSIM_JOB_CHECK_NAN, 0, &j), FWSIM_OK);
	fwsim_set_threads(2);
	core_arg_t a[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		pmem_init(&a[i].m);
		a[i].in = &cases[2].in;
		a[i].st = FWSIM_OK;
		ck_assert_int_eq(pthread_create(&th[i], NULL, core_runner, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(a[i].st, FWSIM_OK);
		ck_assert_msg(memcmp(a[i].m.mem, ref.mem, ref.size) == 0, "core %d differs", i);
		free(a[i].m.mem);
	}
	fwsim_set_threads(0);
	free(ref.mem);
}
END_TEST

/* Runs a split MATMUL on 2 threads until a pool worker has taken some of
 * its items (a loaded host may let the caller finish alone now and then,
 * so a few tries); m holds its inputs, *c the cases. */
static void split_until_a_worker_joins(pmem_t *m, mm_case_t c[8])
{
	make_cases(c);
	pmem_init(m);
	fill_inputs(m, 5, -1);
	fwsim_set_threads(2);
	uint64_t before = fwsim_par_worker_items();
	for (int i = 0; i < 200 && fwsim_par_worker_items() == before; i++) {
		fwsim_job_t j;
		ck_assert_int_eq(prun(m, &c[0].in, 0, 0, &j), FWSIM_OK);
	}
	ck_assert_uint_gt(fwsim_par_worker_items(), before);
}

/* With 2 threads a pool worker really takes items (else the test above
 * proves nothing). */
START_TEST(test_split_matmul_reaches_a_worker)
{
	mm_case_t cases[8];
	pmem_t m;
	split_until_a_worker_joins(&m, cases);
	/* 1 thread: nothing is handed over */
	fwsim_set_threads(1);
	uint64_t before = fwsim_par_worker_items();
	fwsim_job_t j;
	ck_assert_int_eq(prun(&m, &cases[0].in, 0, 0, &j), FWSIM_OK);
	ck_assert_uint_eq(fwsim_par_worker_items(), before);
	fwsim_set_threads(0);
	free(m.mem);
}
END_TEST

/* CPU time (clock ticks) the pool's workers (threads named fwsim-par*) have
 * run since they started, from /proc; *found their number. */
static uint64_t pool_worker_ticks(int *found)
{
	uint64_t ticks = 0;
	*found = 0;
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], buf[1024];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		const char *name = strchr(buf, '(');
		if (!name || strncmp(name + 1, "fwsim-par", 9) != 0)
			continue;
		ns_proc_stat_t ps;
		ck_assert_int_eq(ns_proc_stat_parse(buf, &ps), 0);
		ticks += ps.utime + ps.stime;
		(*found)++;
	}
	closedir(d);
	return ticks;
}

/* A worker looks for the next job for a while after each one (pool.c), then
 * sleeps: with no job for 300 ms, the workers run for none of it. A looker
 * that never stopped would run the whole time (30 ticks a worker at
 * USER_HZ 100; 60 were seen). */
START_TEST(test_pool_workers_sleep_between_jobs)
{
	mm_case_t cases[8];
	pmem_t m;
	split_until_a_worker_joins(&m, cases);
	struct timespec settle = { 0, 50 * 1000 * 1000 }, idle = { 0, 300 * 1000 * 1000 };
	nanosleep(&settle, NULL);
	int found;
	uint64_t t0 = pool_worker_ticks(&found);
	ck_assert_int_ge(found, 1);
	nanosleep(&idle, NULL);
	uint64_t t1 = pool_worker_ticks(&found);
	ck_assert_msg(t1 - t0 <= 3, "the idle pool workers ran %llu ticks in 300 ms",
		      (unsigned long long)(t1 - t0));
	fwsim_set_threads(0);
	free(m.mem);
}
END_TEST

/* Runs an f32 ADD of n elements on the vector engine, with a one-element ADD
 * on the GpSimd engine beside it when sched is FWSIM_SCHED_THREADS (two
 * engines on threads of their own), alone (inline) otherwise; reps times.
 * Returns the items pool workers ran meanwhile. */
static uint64_t run_add_beside(pmem_t *m, uint64_t n, uint32_t sched, int reps)
{
	isa_insn_t v = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD), g;
	v.n_ap = 3;
	v.ap[0] = isa_ap_contig(3, 0, ISA_DT_F32, 1, &n);
	v.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 1, &n);
	v.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 1, &n);
	g = v;
	uint64_t one = 1;
	g.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 1, &one);
	g.ap[1] = g.ap[2] = g.ap[0];
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &v, [ISA_ENGINE_GPSIMD] = &g };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1,
					 [ISA_ENGINE_GPSIMD] = sched == FWSIM_SCHED_THREADS };
	fwsim_program_t *p = NULL;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, P_NREG, &p), NULL, 0),
			 NS_STATUS_OK);
	fwsim_core_config_t cfg = { .sched = sched };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(&cfg, &core), FWSIM_OK);
	uint64_t before = fwsim_par_worker_items();
	for (int i = 0; i < reps && fwsim_par_worker_items() == before; i++) {
		fwsim_job_t j = { .program = p, .mem = m->mem, .mem_size = m->size,
				  .regions = m->regions, .n_regions = P_NREG };
		ck_assert_int_eq(fwsim_core_execute(core, &j), FWSIM_OK);
	}
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	return fwsim_par_worker_items() - before;
}

/* Elementwise instructions are cut for the pool from fewer elements when a
 * core's engines run inline (FWSIM_PAR_MIN_EW_INLINE) than when they run on
 * threads (FWSIM_PAR_MIN_EW: there a split copy would take the pool from
 * another engine's GEMM): an ADD between the two sizes reaches a worker
 * inline and never on threads; one of FWSIM_PAR_MIN_EW elements does both. */
START_TEST(test_split_threshold_follows_the_scheduler)
{
	pmem_t m;
	pmem_init(&m);
	fill_inputs(&m, 3, -1);
	fwsim_set_threads(2);
	uint64_t mid = (FWSIM_PAR_MIN_EW_INLINE + FWSIM_PAR_MIN_EW) / 2;
	ck_assert_uint_gt(run_add_beside(&m, mid, FWSIM_SCHED_INLINE, 200), 0);
	ck_assert_uint_eq(run_add_beside(&m, mid, FWSIM_SCHED_THREADS, 20), 0);
	ck_assert_uint_gt(run_add_beside(&m, FWSIM_PAR_MIN_EW, FWSIM_SCHED_THREADS, 200), 0);
	fwsim_set_threads(0);
	free(m.mem);
}
END_TEST

/* f32 [n, n] x [n, n] with every operand one element through stride 0:
 * hours of sgemm from 12 bytes, split into items across the threads. */
static isa_insn_t huge_f32_matmul(uint64_t n)
{
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	uint64_t sh[2] = { n, n };
	in.n_ap = 3;
	for (uint32_t i = 0; i < 3; i++) {
		in.ap[i] = isa_ap_contig(i, 0, ISA_DT_F32, 2, sh);
		in.ap[i].stride[0] = in.ap[i].stride[1] = 0;
	}
	return in;
}

START_TEST(test_deadline_stops_split_matmul)
{
	pmem_t m;
	pmem_init(&m);
	fwsim_set_threads(2);
	isa_insn_t in = huge_f32_matmul(1u << 14);
	fwsim_job_t j;
	uint64_t t0 = tnow_ns(), c0 = tcpu_ns();
	ck_assert_int_eq(prun(&m, &in, 0, t0 + 300000000ull, &j), FWSIM_TIMEOUT);
	uint64_t took = (tnow_ns() - t0) / 1000000ull, cpu = (tcpu_ns() - c0) / 1000000ull;
	/* one poll per sgemm tile (up to 2^33 multiply-adds, a few seconds) on
	 * each of the two threads; uninterrupted it would run for hours */
	ck_assert_msg(took >= 300 && cpu < 20000, "took %llu ms (%llu ms of CPU)",
		      (unsigned long long)took, (unsigned long long)cpu);
	ck_assert_msg(strstr(j.error.message, "deadline passed during tensor insn 0 (matmul)"), "%s",
		      j.error.message);
	fwsim_set_threads(0);
	free(m.mem);
}
END_TEST

typedef struct cancel_arg {
	pmem_t *m;
	const isa_insn_t *in;
	fwsim_job_t job;
	fwsim_program_t *p;
	fwsim_core_t *core;
	fwsim_status_t st;
} cancel_arg_t;

static void *cancel_runner(void *v)
{
	cancel_arg_t *a = v;
	a->st = fwsim_core_execute(a->core, &a->job);
	return NULL;
}

START_TEST(test_cancel_stops_split_matmul)
{
	pmem_t m;
	pmem_init(&m);
	fwsim_set_threads(2);
	isa_insn_t in = huge_f32_matmul(1u << 14);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = &in };
	uint32_t n[ISA_ENGINE_COUNT] = { [ISA_ENGINE_TENSOR] = 1 };
	cancel_arg_t a = { .m = &m, .in = &in };
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, n, P_NREG, &a.p),
						   NULL, 0), NS_STATUS_OK);
	a.job = (fwsim_job_t){ .program = a.p, .mem = m.mem, .mem_size = m.size, .regions = m.regions,
			       .n_regions = P_NREG };
	ck_assert_int_eq(fwsim_core_create(NULL, &a.core), FWSIM_OK);
	pthread_t th;
	uint64_t c0 = tcpu_ns();
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_runner, &a), 0);
	struct timespec ms = { 0, 1000 * 1000 };
	while (tcpu_ns() - c0 < 100000000ull)
		nanosleep(&ms, NULL);
	fwsim_job_cancel(&a.job);
	pthread_join(th, NULL);
	ck_assert_int_eq(a.st, FWSIM_TIMEOUT);
	ck_assert_msg(strstr(a.job.error.message, "cancelled during tensor insn 0 (matmul)"), "%s",
		      a.job.error.message);
	fwsim_core_destroy(a.core);
	fwsim_program_destroy(a.p);
	fwsim_set_threads(0);
	free(m.mem);
}
END_TEST

/* A product with a large C and short sums (kernels_matmul.c, mm_streams):
 * 3 x [700 x 1000] over K = 40, rows 1003 floats apart (so most rows start
 * unaligned), cut into items of 240 rows and chunks of 131. Its C, computed
 * in chunks and streamed out, equals the same product accumulated onto
 * zeros (sgemm's own stores: not streamed) bit for bit, on 1 and 2 threads;
 * the 3 floats between rows keep their bytes; a NaN in A's row 620 of
 * product 2 (the second chunk of its item) is reported at that row's first
 * element. */
START_TEST(test_streamed_matmul_matches_sgemm_stores)
{
	const uint64_t B = 3, M = 700, N = 1000, K = 40, ldc = 1003;
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = pap(0, 0, ISA_DT_F32, B, M, N, (int64_t)(M * ldc), (int64_t)ldc, 1);
	in.ap[1] = pap(1, 0, ISA_DT_F32, B, M, K, (int64_t)(M * K), (int64_t)K, 1);
	in.ap[2] = pap(2, 0, ISA_DT_F32, B, K, N, (int64_t)(K * N), (int64_t)N, 1);
	isa_insn_t acc = in;
	acc.flags = ISA_F_ACCUMULATE;
	pmem_t ref, got;
	pmem_init(&ref);
	pmem_init(&got);
	const uint64_t nc = B * M * ldc;
	fill_inputs(&ref, 5, -1);
	memset(ref.mem, 0, nc * 4);
	fwsim_job_t j;
	fwsim_set_threads(1);
	uint64_t before = fwsim_matmul_streamed_rows();
	ck_assert_int_eq(prun(&ref, &acc, 0, 0, &j), FWSIM_OK);
	ck_assert_uint_eq(fwsim_matmul_streamed_rows(), before); /* accumulating: sgemm's stores */
	static const uint32_t threads[] = { 1, 2 };
	for (uint32_t t = 0; t < 2; t++) {
		fill_inputs(&got, 5, -1);
		float *c = pf32(&got, 0, 0);
		for (uint64_t i = 0; i < nc; i++)
			c[i] = -7.0f; /* the gaps between rows must keep it */
		fwsim_set_threads(threads[t]);
		uint64_t rows0 = fwsim_matmul_streamed_rows();
		ck_assert_int_eq(prun(&got, &in, FWSIM_JOB_CHECK_NAN, 0, &j), FWSIM_OK);
		ck_assert_uint_eq(fwsim_matmul_streamed_rows() - rows0, B * M);
		const float *r = pf32(&ref, 0, 0);
		for (uint64_t row = 0; row < B * M; row++) {
			ck_assert_msg(memcmp(c + row * ldc, r + row * ldc, N * 4) == 0,
				      "%u threads: C row %llu differs from sgemm's stores", threads[t],
				      (unsigned long long)row);
			for (uint64_t g = N; g < ldc; g++)
				ck_assert_msg(c[row * ldc + g] == -7.0f, "%u threads: gap of row %llu written",
					      threads[t], (unsigned long long)row);
		}
		fill_inputs(&got, 5, -1);
		pf32(&got, 1, 0)[(2 * M + 620) * K + 3] = NAN;
		ck_assert_int_eq(prun(&got, &in, FWSIM_JOB_CHECK_NAN, 0, &j), FWSIM_NUM_ERR);
		ck_assert_uint_eq(j.error.count, N);
		ck_assert_uint_eq(j.error.first_index, (2 * M + 620) * N);
	}
	fwsim_set_threads(0);
	free(ref.mem);
	free(got.mem);
}
END_TEST

START_TEST(test_thread_count_setting)
{
	fwsim_set_threads(3);
	ck_assert_uint_eq(fwsim_get_threads(), 3);
	fwsim_set_threads(1000);
	ck_assert_uint_eq(fwsim_get_threads(), FWSIM_PAR_MAX_THREADS);
	fwsim_set_threads(0); /* auto: the affinity mask's CPUs */
	ck_assert_uint_ge(fwsim_get_threads(), 1);
	ck_assert_uint_le(fwsim_get_threads(), FWSIM_PAR_MAX_THREADS);
}
END_TEST

static Suite *par_suite(void)
{
	Suite *s = suite_create("fwsim-par");
	TCase *tc = tcase_create("par");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_split_matmul_bit_identical_across_thread_counts);
	tcase_add_test(tc, test_split_matmul_reaches_a_worker);
	tcase_add_test(tc, test_pool_workers_sleep_between_jobs);
	tcase_add_test(tc, test_streamed_matmul_matches_sgemm_stores);
	tcase_add_test(tc, test_two_cores_share_the_pool);
	tcase_add_test(tc, test_split_elementwise_bit_identical_across_thread_counts);
	tcase_add_test(tc, test_split_fused_and_reduce_bit_identical_across_thread_counts);
	tcase_add_test(tc, test_split_threshold_follows_the_scheduler);
	tcase_add_test(tc, test_deadline_stops_split_matmul);
	tcase_add_test(tc, test_cancel_stops_split_matmul);
	tcase_add_test(tc, test_thread_count_setting);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(par_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
