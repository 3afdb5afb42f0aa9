/* FUSED: random programs against the same steps run op by op (ALU/COPY), scalar references, the reducing form and IOTA, descriptor validation, OOB and NaN records. */
#include <inttypes.h>

#include "fused_plan.h"
#include "fused_tree.h"
#include "fwsim_test.h"
#include "internal.h"
#include "neuronsim/half.h"

/* Serialises the descriptor into region 0 and returns the instruction. */
static isa_insn_t fb_emit(fbuild_t *b, tmem_t *t, isa_ap_t out)
{
	uint64_t off = tmem_alloc(t, 0, fb_size(b));
	return fb_insn(b, tmem_ptr(t, 0, off), 0, off, out);
}

static void fill_random(tmem_t *t, const isa_ap_t *ap, uint64_t *seed)
{
	uint64_t n = tnumel(ap->rank, ap->shape), idx[ISA_MAX_RANK];
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, ap->rank, ap->shape, idx);
		uint8_t *p = telem(t, ap, idx);
		uint64_t r = trand(seed);
		if (isa_dtype_is_float(ap->dtype))
			tset(ap->dtype, p, (double)((int64_t)(r % 129) - 64) / 16.0);
		else if (ap->dtype == ISA_DT_PRED)
			tset(ap->dtype, p, (double)(r & 1));
		else if (r & 1)
			tseti(ap->dtype, p, (int64_t)(r >> 8)); /* large: wraps */
		else
			tseti(ap->dtype, p, (int64_t)(r % 19) - 9);
	}
}

/* ---- random programs vs op by op ---- */

static const uint32_t f_types[] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16 };
static const uint32_t i_types[] = { ISA_DT_S32, ISA_DT_S64, ISA_DT_U32, ISA_DT_U8,
				    ISA_DT_S8, ISA_DT_S16, ISA_DT_U16, ISA_DT_U64 };
static const uint32_t f_bin[] = { ISA_ALU_ADD, ISA_ALU_SUB, ISA_ALU_MUL, ISA_ALU_DIV,
				  ISA_ALU_MAX, ISA_ALU_MIN, ISA_ALU_POW, ISA_ALU_REM };
static const uint32_t f_un[] = { ISA_ALU_NEG, ISA_ALU_ABS, ISA_ALU_EXP, ISA_ALU_TANH,
				 ISA_ALU_FLOOR, ISA_ALU_LOGISTIC, ISA_ALU_RSQRT, ISA_ALU_SIGN };
static const uint32_t i_bin[] = { ISA_ALU_ADD, ISA_ALU_SUB, ISA_ALU_MUL, ISA_ALU_AND,
				  ISA_ALU_XOR, ISA_ALU_MAX, ISA_ALU_DIV, ISA_ALU_SHL,
				  ISA_ALU_SHR_ARITH, ISA_ALU_REM };
static const uint32_t cmps[] = { ISA_ALU_CMP_EQ, ISA_ALU_CMP_LT, ISA_ALU_CMP_GE, ISA_ALU_CMP_NE };
#define PICK(a, s) (a[trand(s) % (sizeof(a) / sizeof(a[0]))])

typedef struct reg {
	uint32_t dt;
	isa_ap_t ap; /* op-by-op: where the value lives */
} reg_t;

static int find_reg(reg_t *r, uint32_t n, int want_float, int want_pred, uint32_t dt,
		    uint64_t *s)
{
	int cand[ISA_FUSED_MAX_REGS], nc = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!r[i].dt)
			continue;
		if (dt && r[i].dt != dt)
			continue;
		if (want_pred ? r[i].dt != ISA_DT_PRED
			      : (want_float ? !isa_dtype_is_float(r[i].dt)
					    : !isa_dtype_is_int(r[i].dt)))
			continue;
		cand[nc++] = (int)i;
	}
	return nc ? cand[trand(s) % (uint64_t)nc] : -1;
}

START_TEST(test_random_programs_match_op_by_op)
{
	uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(_i + 1) * 7919;
	tmem_t t;
	tmem_init(&t);
	uint32_t rank = 1 + (uint32_t)(trand(&seed) % 3);
	uint64_t shape[3] = { 1 + trand(&seed) % 4, 1 + trand(&seed) % 5, 1 + trand(&seed) % 140 };
	if (_i % 5 == 0) { /* crosses block boundaries */
		rank = 2;
		shape[0] = 3;
		shape[1] = 700;
	}
	uint32_t fdt = PICK(f_types, &seed), idt = PICK(i_types, &seed);

	fbuild_t b;
	fb_init(&b);
	reg_t regs[ISA_FUSED_MAX_REGS];
	memset(regs, 0, sizeof(regs));
	uint32_t nin = 1 + (uint32_t)(trand(&seed) % 6);
	for (uint32_t i = 0; i < nin; i++) {
		uint32_t dt = i == 0 ? fdt : (trand(&seed) % 3 == 0 ? ISA_DT_PRED
					    : (trand(&seed) & 1) ? fdt : idt);
		tlayout_t l = (tlayout_t)(trand(&seed) % L_COUNT);
		isa_ap_t ap = tmk_ap(&t, 2 + (i & 1), dt, rank, shape, l);
		fill_random(&t, &ap, &seed);
		fb_input(&b, ap);
		regs[i].dt = dt;
		regs[i].ap = ap;
	}
	/* op-by-op program: one instruction per step into scratch buffers */
	isa_insn_t ref[ISA_FUSED_MAX_CODE];
	uint32_t nref = 0;
	uint32_t nsteps = 2 + (uint32_t)(trand(&seed) % 14);
	int last = 0;
	for (uint32_t s = 0; s < nsteps; s++) {
		uint32_t kind = (uint32_t)(trand(&seed) % 10);
		/* fresh register, or reuse one (even an input, even changing class) */
		uint32_t n_used = b.h.n_regs > nin ? b.h.n_regs : nin;
		uint32_t dst = (trand(&seed) % 4 == 0 || n_used >= ISA_FUSED_MAX_REGS)
				       ? (uint32_t)(trand(&seed) % n_used) : n_used;
		int a = -1, c = -1, d = -1;
		uint32_t op = 0, dt = 0;
		uint64_t imm = 0;
		switch (kind) {
		case 0: case 1: /* float binary */
			a = find_reg(regs, n_used, 1, 0, 0, &seed);
			if (a < 0)
				break;
			c = find_reg(regs, n_used, 1, 0, regs[a].dt, &seed);
			op = PICK(f_bin, &seed);
			dt = regs[a].dt;
			break;
		case 2: /* float unary */
			a = find_reg(regs, n_used, 1, 0, 0, &seed);
			op = PICK(f_un, &seed);
			dt = a >= 0 ? regs[a].dt : 0;
			break;
		case 3: /* integer binary */
			a = find_reg(regs, n_used, 0, 0, 0, &seed);
			if (a < 0)
				break;
			c = find_reg(regs, n_used, 0, 0, regs[a].dt, &seed);
			op = PICK(i_bin, &seed);
			dt = regs[a].dt;
			break;
		case 4: /* compare */
			a = find_reg(regs, n_used, (int)(trand(&seed) & 1), 0, 0, &seed);
			if (a < 0)
				break;
			c = find_reg(regs, n_used, isa_dtype_is_float(regs[a].dt), 0, regs[a].dt,
				     &seed);
			op = PICK(cmps, &seed);
			dt = ISA_DT_PRED;
			break;
		case 5: /* select */
			a = find_reg(regs, n_used, 0, 1, 0, &seed);
			c = find_reg(regs, n_used, (int)(trand(&seed) & 1), 0, 0, &seed);
			if (a < 0 || c < 0)
				break;
			d = find_reg(regs, n_used, isa_dtype_is_float(regs[c].dt), 0, regs[c].dt,
				     &seed);
			op = ISA_ALU_SELECT;
			dt = regs[c].dt;
			break;
		case 6: case 7: { /* convert */
			int src = (int)(trand(&seed) % n_used);
			if (!regs[src].dt)
				break;
			a = src;
			op = ISA_FUSED_CONVERT;
			uint32_t pick = (uint32_t)(trand(&seed) % 3);
			dt = pick == 0 ? PICK(f_types, &seed) : pick == 1 ? PICK(i_types, &seed)
								     : ISA_DT_PRED;
			break;
		}
		case 8: /* constant */
			op = ISA_FUSED_CONST;
			dt = (trand(&seed) & 1) ? fdt : idt;
			imm = isa_dtype_is_float(dt) ? fimm(-1.25) : (uint64_t)(int64_t)-3;
			a = -2;
			break;
		default: { /* clamp / fma (float ternary) */
			a = find_reg(regs, n_used, 1, 0, 0, &seed);
			if (a < 0)
				break;
			c = find_reg(regs, n_used, 1, 0, regs[a].dt, &seed);
			d = find_reg(regs, n_used, 1, 0, regs[a].dt, &seed);
			op = (trand(&seed) & 1) ? ISA_ALU_CLAMP : ISA_ALU_FMA;
			dt = regs[a].dt;
		}
		}
		if (a == -1 || dt == 0)
			continue; /* no register of the kind the step needs */
		int arity = op >= ISA_FUSED_CONVERT ? 0 : isa_alu_arity(op);
		if ((arity >= 2 && c < 0) || (arity == 3 && d < 0))
			continue;
		fb_op(&b, op, dst, dt, a < 0 ? 0 : a, c, d, imm);
		/* the reference step */
		isa_ap_t out = tmk_ap(&t, 1, dt, rank, shape, L_CONTIG);
		if (op == ISA_FUSED_CONST) {
			uint64_t idx[3] = { 0, 0, 0 };
			tset(dt, telem(&t, &out, idx), isa_dtype_is_float(dt) ? -1.25 : -3);
			for (uint32_t k = 0; k < rank; k++)
				out.stride[k] = 0;
		} else if (op == ISA_FUSED_CONVERT) {
			isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
			in.n_ap = 2;
			in.ap[0] = out;
			in.ap[1] = regs[a].ap;
			ref[nref++] = in;
		} else {
			isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
			int ar = isa_alu_arity(op);
			in.n_ap = (uint8_t)(1 + ar);
			in.ap[0] = out;
			in.ap[1] = regs[a].ap;
			if (ar > 1)
				in.ap[2] = regs[c].ap;
			if (ar > 2)
				in.ap[3] = regs[d].ap;
			ref[nref++] = in;
		}
		regs[dst].dt = dt;
		regs[dst].ap = out;
		last = (int)dst;
	}
	if (b.h.n_code == 0) { /* every pick failed: at least a negate */
		fb_op(&b, ISA_ALU_NEG, nin, fdt, 0, -1, -1, 0);
		isa_ap_t out = tmk_ap(&t, 1, fdt, rank, shape, L_CONTIG);
		isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_NEG);
		in.n_ap = 2;
		in.ap[0] = out;
		in.ap[1] = regs[0].ap;
		ref[nref++] = in;
		regs[nin].dt = fdt;
		regs[nin].ap = out;
		last = (int)nin;
	}
	b.h.out_reg = (uint8_t)last;
	isa_ap_t fout = tmk_ap(&t, 3, regs[last].dt, rank, shape,
			       (_i & 1) ? L_STRIDED : L_REVERSED);
	isa_insn_t fz = fb_emit(&b, &t, fout);
	if (getenv("FUSED_DEBUG"))
		for (uint32_t q = 0; q < b.h.n_code; q++)
			fprintf(stderr, "case %d step %u: r%u:%s = op %u (r%u r%u r%u) nin %u\n", _i, q,
				b.code[q].dst, isa_dtype_name(b.code[q].dtype), b.code[q].op,
				b.code[q].src[0], b.code[q].src[1], b.code[q].src[2], nin);
	char err[200];
	ck_assert_msg(t_insn_check(&fz, T_NREG, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(t_fused_check(&fz, tmem_ptr(&t, 0, fz.ap[1].offset),
					      fz.ap[1].shape[0], T_NREG, err, sizeof(err)) == 0,
		      "%s", err);
	fwsim_job_t job;
	if (nref) {
		const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
		uint32_t n[ISA_ENGINE_COUNT] = { 0 };
		s[ISA_ENGINE_VECTOR] = ref;
		n[ISA_ENGINE_VECTOR] = nref;
		ck_assert_int_eq(trun_prog(&t, NULL, s, n, 0, 0, &job), FWSIM_OK);
	}
	ck_assert_int_eq(trun1(&t, &fz, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	uint64_t nel = tnumel(rank, shape), idx[3];
	size_t es = isa_dtype_size(regs[last].dt);
	for (uint64_t f = 0; f < nel; f++) {
		tunflat(f, rank, shape, idx);
		const uint8_t *want = telem(&t, &regs[last].ap, idx), *got = telem(&t, &fout, idx);
		/* NaN payloads may differ where the compiler commutes an operation */
		int both_nan = isa_dtype_is_float(regs[last].dt) &&
			       isnan(tget(regs[last].dt, want)) && isnan(tget(regs[last].dt, got));
		T_CHECK(both_nan || memcmp(want, got, es) == 0,
			      "case %d (%s, %u steps): element %llu: fused %g, op by op %g", _i,
			      isa_dtype_name(regs[last].dt), b.h.n_code, (unsigned long long)f,
			      tget(regs[last].dt, got), tget(regs[last].dt, want));
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* ---- a scalar reference: y = bf16(gelu-ish expression), with a broadcast
 * bias and an s64 -> f32 conversion, 5 inputs (3 in the descriptor) ---- */

START_TEST(test_scalar_reference_five_inputs)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 7, 300 };
	uint64_t seed = 42;
	isa_ap_t x = tmk_ap(&t, 2, ISA_DT_F32, 2, sh, L_TRANSPOSED);
	isa_ap_t bias = tmk_ap(&t, 2, ISA_DT_BF16, 2, sh, L_BCAST0);
	isa_ap_t k = tmk_ap(&t, 3, ISA_DT_S64, 2, sh, L_REVERSED);
	isa_ap_t m = tmk_ap(&t, 3, ISA_DT_PRED, 2, sh, L_STRIDED);
	isa_ap_t w = tmk_ap(&t, 1, ISA_DT_F16, 2, sh, L_CONTIG);
	isa_ap_t *ins[5] = { &x, &bias, &k, &m, &w };
	for (int i = 0; i < 5; i++)
		fill_random(&t, ins[i], &seed);
	isa_ap_t out = tmk_ap(&t, 3, ISA_DT_BF16, 2, sh, L_CONTIG);
	fbuild_t b;
	fb_init(&b);
	for (int i = 0; i < 5; i++)
		fb_input(&b, *ins[i]);
	/* r5 = f32(bias); r6 = x + r5; r7 = f32(k); r6 = r6 * r7;
	 * r8 = tanh(r6); r9 = f32(w); r10 = m ? r8 : r9; r11 = bf16(r10) */
	fb_op(&b, ISA_FUSED_CONVERT, 5, ISA_DT_F32, 1, -1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 6, ISA_DT_F32, 0, 5, -1, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 7, ISA_DT_F32, 2, -1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 6, ISA_DT_F32, 6, 7, -1, 0);
	fb_op(&b, ISA_ALU_TANH, 8, ISA_DT_F32, 6, -1, -1, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 9, ISA_DT_F32, 4, -1, -1, 0);
	fb_op(&b, ISA_ALU_SELECT, 10, ISA_DT_F32, 3, 8, 9, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 11, ISA_DT_BF16, 10, -1, -1, 0);
	b.h.out_reg = 11;
	isa_insn_t in = fb_emit(&b, &t, out);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	uint64_t idx[2];
	for (uint64_t f = 0; f < 7 * 300; f++) {
		tunflat(f, 2, sh, idx);
		double xv = tget(ISA_DT_F32, telem(&t, &x, idx));
		double bv = tget(ISA_DT_BF16, telem(&t, &bias, idx));
		double kv = (double)tgeti(ISA_DT_S64, telem(&t, &k, idx));
		double mv = tget(ISA_DT_PRED, telem(&t, &m, idx));
		double wv = tget(ISA_DT_F16, telem(&t, &w, idx));
		double want = mv != 0 ? tanh((double)(float)((float)(xv + bv) * (float)kv)) : wv;
		double got = tget(ISA_DT_BF16, telem(&t, &out, idx));
		T_CHECK(fabs(got - want) <= 1e-2 * fabs(want) + 1e-6,
			"element %llu: %g, want %g", (unsigned long long)f, got, want);
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* Integer wrap of intermediates: s8 (100 + 100) = -56, then widened. */
START_TEST(test_integer_intermediates_wrap)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[1] = { 4 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_S8, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 2, ISA_DT_S32, 1, sh, L_CONTIG);
	int8_t av[4] = { 100, -100, 1, 127 };
	memcpy(tmem_ptr(&t, 2, a.offset), av, 4);
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_op(&b, ISA_ALU_ADD, 1, ISA_DT_S8, 0, 0, -1, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 2, ISA_DT_S32, 1, -1, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 3, ISA_DT_S32, -1, -1, -1, (uint64_t)1000);
	fb_op(&b, ISA_ALU_ADD, 2, ISA_DT_S32, 2, 3, -1, 0);
	b.h.out_reg = 2;
	isa_insn_t in = fb_emit(&b, &t, o);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	int32_t ov[4];
	memcpy(ov, tmem_ptr(&t, 2, o.offset), 16);
	ck_assert_int_eq(ov[0], 1000 - 56);
	ck_assert_int_eq(ov[1], 1000 + 56);
	ck_assert_int_eq(ov[2], 1002);
	ck_assert_int_eq(ov[3], 1000 - 2);
	ck_assert_uint_eq(job.flops, 0); /* integer steps are no FLOPs */
	tmem_free(&t);
}
END_TEST

/* FLOPs of a program (docs/isa.md): per element, FMA 2, MUL 1, a compare of
 * floats 1; CONST and SELECT 0. */
START_TEST(test_flops_per_step_per_element)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[1] = { 10 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	memset(tmem_ptr(&t, 2, a.offset), 0, 40);
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_op(&b, ISA_ALU_FMA, 1, ISA_DT_F32, 0, 0, 0, 0);
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(2.0));
	fb_op(&b, ISA_ALU_MUL, 3, ISA_DT_F32, 1, 2, -1, 0);
	fb_op(&b, ISA_ALU_CMP_LT, 4, ISA_DT_PRED, 3, 0, -1, 0);
	fb_op(&b, ISA_ALU_SELECT, 5, ISA_DT_F32, 4, 3, 0, 0);
	b.h.out_reg = 5;
	isa_insn_t in = fb_emit(&b, &t, o);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ck_assert_uint_eq(job.flops, 10 * (2 + 1 + 1));
	tmem_free(&t);
}
END_TEST

/* A program without inputs (a filled constant) and rank 0. */
START_TEST(test_no_inputs_rank0_and_empty)
{
	tmem_t t;
	tmem_init(&t);
	isa_ap_t o = tmk_ap(&t, 2, ISA_DT_F16, 0, NULL, L_CONTIG);
	fbuild_t b;
	fb_init(&b);
	fb_op(&b, ISA_FUSED_CONST, 0, ISA_DT_F16, -1, -1, -1, fimm(2.5));
	b.h.out_reg = 0;
	isa_insn_t in = fb_emit(&b, &t, o);
	ck_assert_uint_eq(in.n_ap, 2);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ck_assert(tget(ISA_DT_F16, tmem_ptr(&t, 2, o.offset)) == 2.5);
	/* empty output: nothing is touched */
	uint64_t sh[2] = { 3, 0 };
	isa_ap_t e = tmk_ap(&t, 2, ISA_DT_F32, 2, sh, L_CONTIG);
	fb_init(&b);
	fb_op(&b, ISA_FUSED_CONST, 0, ISA_DT_F32, -1, -1, -1, fimm(1));
	in = fb_emit(&b, &t, e);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* ---- NaN / Inf records ---- */

START_TEST(test_nan_location_in_fused_output)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 4, 200 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_F32, 2, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_BF16, 2, sh, L_TRANSPOSED);
	float *av = (float *)(void *)tmem_ptr(&t, 2, a.offset);
	for (int i = 0; i < 800; i++)
		av[i] = 1.0f + (float)i;
	av[517] = -3.0f; /* log(-3) = NaN at flat 517 */
	av[700] = -1.0f;
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_op(&b, ISA_ALU_LOG, 1, ISA_DT_F32, 0, -1, -1, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 1, ISA_DT_BF16, 1, -1, -1, 0);
	b.h.out_reg = 1;
	isa_insn_t in = fb_emit(&b, &t, o);
	in.debug_id = 77;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 517);
	ck_assert_uint_eq(job.error.count, 2);
	ck_assert_uint_eq(job.error.debug_id, 77);
	ck_assert_uint_eq(job.error.is_inf, 0);
	ck_assert_ptr_nonnull(strstr(job.error.message, "fused"));
	/* without the flag: completes */
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	tmem_free(&t);
}
END_TEST

/* Steps whose result is overwritten before any step reads it are skipped: a
 * dead LOG making a NaN at the same element as the live SQRT after it is not
 * blamed (the op-by-op program, after DCE, has no such instruction), and two
 * dead CONSTs sharing the live one's register leave the results alone. */
START_TEST(test_dead_steps_skipped_and_not_blamed)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[1] = { 1300 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
	float *av = (float *)(void *)tmem_ptr(&t, 2, a.offset);
	float *ov = (float *)(void *)tmem_ptr(&t, 3, o.offset);
	for (int i = 0; i < 1300; i++)
		av[i] = (float)(i % 37) + 0.25f;
	av[700] = -4.0f; /* log and sqrt: NaN */
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_op(&b, ISA_ALU_LOG, 1, ISA_DT_F32, 0, -1, -1, 0);     /* step 0: dead */
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0)); /* 1: dead */
	fb_op(&b, ISA_ALU_SQRT, 1, ISA_DT_F32, 0, -1, -1, 0);    /* 2 */
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(6.0)); /* 3: dead */
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(2.0)); /* 4 */
	fb_op(&b, ISA_ALU_MUL, 3, ISA_DT_F32, 1, 2, -1, 0);      /* 5 */
	b.h.out_reg = 3;
	isa_insn_t in = fb_emit(&b, &t, o);
	in.param = ISA_FUSED_STEPS_DEBUG(100); /* step s: debug id 100 + s */
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 700);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert_uint_eq(job.error.debug_id, 102);
	for (int i = 0; i < 1300; i++)
		if (i != 700)
			ck_assert_msg(ov[i] == sqrtf(av[i]) * 2.0f, "out %d: %g", i, ov[i]);
	tmem_free(&t);
}
END_TEST

/* Mask-selects (fused_plan.h): selects by trees of float compares, as the
 * compiler emits ReLU and hardtanh backward (a compare writing over its own
 * operand's register, as its register allocation does), a three-leaf tree of
 * AND, XOR and NOT whose SELECT overwrites an operand, and a compare also read
 * by a CONVERT (not a tree: run step by step); ReLU backward and hardtanh
 * backward as one pass (fz_plan_t.tree), and a compare whose operand register
 * is overwritten before the SELECT (not one pass). Checked bit for bit against
 * scalar references over NaN, signed zeros and the boundaries 0 and 6, with
 * the plan each program gets; and a NaN picked by the SELECT is blamed on it. */
static void check_mask_program(fbuild_t *b, tmem_t *t, isa_ap_t o, const float *x,
			       const float *g, const float *ov, uint32_t n, int kind)
{
	isa_insn_t in = fb_emit(b, t, o);
	in.param = ISA_FUSED_STEPS_DEBUG(200);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	for (uint32_t i = 0; i < n; i++) {
		float w;
		if (kind == 0) /* hardtanh backward */
			w = (x[i] <= 0 || x[i] >= 6) ? 0.0f : g[i];
		else if (kind == 1) /* ((x < g) & !(x == 1)) ^ (g != g) ? g : x */
			w = (((x[i] < g[i]) && !(x[i] == 1)) != (g[i] != g[i]) ? g[i] : x[i]);
		else if (kind == 2) /* (x > 0 ? g : 0) + (x > 0) */
			w = (x[i] > 0 ? g[i] : 0.0f) + (x[i] > 0 ? 1.0f : 0.0f);
		else if (kind == 3) /* ReLU backward: x > 0 ? g : 0 */
			w = x[i] > 0 ? g[i] : 0.0f;
		else /* x's register overwritten after the compare: x > 0 ? x - 1 : g */
			w = x[i] > 0 ? x[i] - 1.0f : g[i];
		ck_assert_msg(memcmp(&ov[i], &w, 4) == 0, "program %d element %u (x %a g %a): %a, want %a",
			      kind, i, x[i], g[i], ov[i], w);
	}
}

START_TEST(test_mask_select_trees)
{
	const uint32_t n = 1300;
	uint64_t sh[1] = { n };
	for (int kind = 0; kind < 5; kind++) {
		tmem_t t;
		tmem_init(&t);
		isa_ap_t xa = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
		isa_ap_t ga = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
		isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
		float *x = (float *)(void *)tmem_ptr(&t, 2, xa.offset);
		float *g = (float *)(void *)tmem_ptr(&t, 2, ga.offset);
		float *ov = (float *)(void *)tmem_ptr(&t, 3, o.offset);
		static const float special[] = { 0.0f, -0.0f, 6.0f, 1.0f, NAN, -NAN, INFINITY, -INFINITY };
		uint64_t seed = 91 + (uint64_t)kind;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t r = trand(&seed);
			x[i] = r % 5 == 0 ? special[(r >> 8) % 8] : (float)((int64_t)(r >> 16) % 161 - 40) / 8;
			g[i] = r % 7 == 0 ? special[(r >> 12) % 8] : (float)((int64_t)(r >> 24) % 97 - 48) / 4;
		}
		fbuild_t b;
		fb_init(&b);
		fb_input(&b, xa);
		fb_input(&b, ga);
		fz_plan_t mp;
		uint8_t in_dt[2] = { ISA_DT_F32, ISA_DT_F32 };
		bool live[8] = { true, true, true, true, true, true, true, true };
		if (kind == 0) {
			fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
			fb_op(&b, ISA_FUSED_CONST, 3, ISA_DT_F32, -1, -1, -1, fimm(6.0));
			fb_op(&b, ISA_ALU_CMP_LE, 4, ISA_DT_PRED, 0, 2, -1, 0);
			fb_op(&b, ISA_ALU_CMP_GE, 0, ISA_DT_PRED, 0, 3, -1, 0); /* over x */
			fb_op(&b, ISA_ALU_OR, 0, ISA_DT_PRED, 4, 0, -1, 0);
			fb_op(&b, ISA_ALU_SELECT, 0, ISA_DT_F32, 0, 2, 1, 0);
			b.h.out_reg = 0;
			fz_plan(b.code, b.h.n_code, live, in_dt, 2, 0, &mp);
			ck_assert(mp.folded[2] && mp.folded[3] && mp.folded[4] && mp.select[5]);
			ck_assert(!mp.folded[0] && !mp.folded[1] && !mp.folded[5]);
			ck_assert_uint_eq(mp.n_slots, 3);
			/* one pass: both compares and the OR evaluated by the SELECT */
			ck_assert(mp.tree[5][0] == 2 && mp.tree[5][1] == 3 && mp.tree[5][2] == 4);
			ck_assert(mp.fast_skip[2] && mp.fast_skip[3] && mp.fast_skip[4] && !mp.fast_skip[5]);
		} else if (kind == 1) {
			fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(1.0));
			fb_op(&b, ISA_ALU_CMP_LT, 3, ISA_DT_PRED, 0, 1, -1, 0);
			fb_op(&b, ISA_ALU_CMP_EQ, 4, ISA_DT_PRED, 0, 2, -1, 0);
			fb_op(&b, ISA_ALU_NOT, 4, ISA_DT_PRED, 4, -1, -1, 0);
			fb_op(&b, ISA_ALU_AND, 3, ISA_DT_PRED, 3, 4, -1, 0);
			fb_op(&b, ISA_ALU_CMP_NE, 4, ISA_DT_PRED, 1, 1, -1, 0);
			fb_op(&b, ISA_ALU_XOR, 3, ISA_DT_PRED, 3, 4, -1, 0);
			fb_op(&b, ISA_ALU_SELECT, 1, ISA_DT_F32, 3, 1, 0, 0); /* over g */
			b.h.out_reg = 1;
			fz_plan(b.code, b.h.n_code, live, in_dt, 2, 1, &mp);
			for (int s = 1; s < 7; s++)
				ck_assert_msg(mp.folded[s], "step %d", s);
			ck_assert(mp.select[7] && mp.n_slots == 6);
			ck_assert(mp.tree[7][0] == -1); /* XOR, NOT, EQ, NE: step by step */
		} else if (kind == 2) {
			fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
			fb_op(&b, ISA_ALU_CMP_GT, 3, ISA_DT_PRED, 0, 2, -1, 0);
			fb_op(&b, ISA_ALU_SELECT, 4, ISA_DT_F32, 3, 1, 2, 0);
			fb_op(&b, ISA_FUSED_CONVERT, 3, ISA_DT_F32, 3, -1, -1, 0); /* reads the pred */
			fb_op(&b, ISA_ALU_ADD, 4, ISA_DT_F32, 4, 3, -1, 0);
			b.h.out_reg = 4;
			fz_plan(b.code, b.h.n_code, live, in_dt, 2, 4, &mp);
			ck_assert(!mp.folded[1] && !mp.select[2] && mp.n_slots == 0);
		} else if (kind == 3) {
			fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
			fb_op(&b, ISA_ALU_CMP_GT, 3, ISA_DT_PRED, 0, 2, -1, 0);
			fb_op(&b, ISA_ALU_SELECT, 0, ISA_DT_F32, 3, 1, 2, 0); /* over x */
			b.h.out_reg = 0;
			fz_plan(b.code, b.h.n_code, live, in_dt, 2, 0, &mp);
			ck_assert(mp.tree[2][0] == 1 && mp.tree[2][1] == -1 && mp.fast_skip[1]);
		} else {
			fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
			fb_op(&b, ISA_FUSED_CONST, 4, ISA_DT_F32, -1, -1, -1, fimm(1.0));
			fb_op(&b, ISA_ALU_CMP_GT, 3, ISA_DT_PRED, 0, 2, -1, 0);
			fb_op(&b, ISA_ALU_SUB, 0, ISA_DT_F32, 0, 4, -1, 0); /* over x */
			fb_op(&b, ISA_ALU_SELECT, 0, ISA_DT_F32, 3, 0, 1, 0);
			b.h.out_reg = 0;
			fz_plan(b.code, b.h.n_code, live, in_dt, 2, 0, &mp);
			/* a mask-select, but its compare's operand is gone by the SELECT */
			ck_assert(mp.select[4] && mp.tree[4][0] == -1 && !mp.fast_skip[2]);
		}
		check_mask_program(&b, &t, o, x, g, ov, n, kind);
		tmem_free(&t);
	}
}
END_TEST

/* Op pairs (fused_plan.h): every ADD/SUB/MUL pair on both sides of the
 * second step, bit for bit the two steps' f32 roundings over NaN, Inf, signed
 * zeros and values whose product or sum rounds; the first step writing over
 * its own operand (as the compiler's register reuse does) still pairs, its
 * result register never written. Not paired: a first step whose value is read
 * twice, whose operand a step in between overwrites, or that rounds to bf16. */
static float pair_ref(uint32_t op, float x, float y)
{
	return op == ISA_ALU_ADD ? x + y : op == ISA_ALU_SUB ? x - y : x * y;
}

START_TEST(test_op_pairs)
{
	static const uint32_t ops[3] = { ISA_ALU_ADD, ISA_ALU_SUB, ISA_ALU_MUL };
	const uint32_t n = 1100;
	uint64_t sh[1] = { n };
	for (int f = 0; f < 3; f++)
		for (int g = 0; g < 3; g++)
			for (int side = 0; side < 2; side++) {
				tmem_t t;
				tmem_init(&t);
				isa_ap_t ap[3];
				float *v[3];
				uint64_t seed = 7 + (uint64_t)(f * 6 + g * 2 + side);
				static const float special[] = { 0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e30f, 3.0f };
				for (int i = 0; i < 3; i++) {
					ap[i] = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
					v[i] = (float *)(void *)tmem_ptr(&t, 2, ap[i].offset);
					for (uint32_t e = 0; e < n; e++) {
						uint64_t r = trand(&seed);
						v[i][e] = r % 9 == 0 ? special[(r >> 8) % 7]
								     : (float)((int64_t)(r >> 16) % 20001 - 10000) / 37.0f;
					}
				}
				isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
				float *ov = (float *)(void *)tmem_ptr(&t, 3, o.offset);
				fbuild_t b;
				fb_init(&b);
				for (int i = 0; i < 3; i++)
					fb_input(&b, ap[i]);
				/* step 0 writes over its operand register 0; step 1's result over c's */
				fb_op(&b, ops[f], 0, ISA_DT_F32, 0, 1, -1, 0);
				if (side)
					fb_op(&b, ops[g], 2, ISA_DT_F32, 2, 0, -1, 0);
				else
					fb_op(&b, ops[g], 2, ISA_DT_F32, 0, 2, -1, 0);
				b.h.out_reg = 2;
				fz_plan_t mp;
				uint8_t in_dt[3] = { ISA_DT_F32, ISA_DT_F32, ISA_DT_F32 };
				bool live[2] = { true, true };
				fz_plan(b.code, b.h.n_code, live, in_dt, 3, 2, &mp);
				ck_assert(mp.paired[0] && mp.pair_first[1] == 0 && mp.pair_side[1] == side);
				isa_insn_t in = fb_emit(&b, &t, o);
				fwsim_job_t job;
				ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
				uint64_t bad = 0, first = UINT64_MAX;
				for (uint32_t e = 0; e < n; e++) {
					float x = pair_ref(ops[f], v[0][e], v[1][e]);
					float w = side ? pair_ref(ops[g], v[2][e], x) : pair_ref(ops[g], x, v[2][e]);
					ck_assert_msg(memcmp(&ov[e], &w, 4) == 0 || (isnan(ov[e]) && isnan(w)),
						      "pair %d %d side %d element %u: %a, want %a", f, g, side, e,
						      ov[e], w);
					if (!isfinite(w)) {
						bad++;
						first = first < e ? first : e;
					}
				}
				/* the pair scans what it writes: the check's record is exact */
				fwsim_status_t st = trun1(&t, &in, ISA_ENGINE_VECTOR,
							  FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, &job);
				ck_assert_int_eq(st, bad ? FWSIM_NUM_ERR : FWSIM_OK);
				if (bad) {
					ck_assert_uint_eq(job.error.count, bad);
					ck_assert_uint_eq(job.error.first_index, first);
				}
				tmem_free(&t);
			}
	/* not pairs */
	fbuild_t b;
	fz_plan_t mp;
	uint8_t in_dt[3] = { ISA_DT_F32, ISA_DT_F32, ISA_DT_F32 };
	bool live[4] = { true, true, true, true };
	fb_init(&b); /* read twice */
	fb_op(&b, ISA_ALU_MUL, 3, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 4, ISA_DT_F32, 3, 2, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 4, ISA_DT_F32, 4, 3, -1, 0);
	fz_plan(b.code, 3, live, in_dt, 3, 4, &mp);
	ck_assert(!mp.paired[0]);
	fb_init(&b); /* an operand overwritten in between */
	fb_op(&b, ISA_ALU_MUL, 3, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_NEG, 1, ISA_DT_F32, 2, -1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 4, ISA_DT_F32, 3, 1, -1, 0);
	fz_plan(b.code, 3, live, in_dt, 3, 4, &mp);
	ck_assert(!mp.paired[0] && mp.pair_first[2] < 0);
	fb_init(&b); /* rounds to bf16 */
	fb_op(&b, ISA_ALU_MUL, 3, ISA_DT_BF16, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 4, ISA_DT_F32, 3, 2, -1, 0);
	fz_plan(b.code, 2, live, in_dt, 3, 4, &mp);
	ck_assert(!mp.paired[0]);
}
END_TEST

/* ---- one-pass trees (fused_tree.h) ---- */

typedef struct tgen {
	fbuild_t *b;
	tmem_t *t;
	uint64_t *seed;
	uint32_t rank, nin, next_reg;
	const uint64_t *shape;
	isa_ap_t in_ap[6]; /* the reference's: an f32 copy of a bf16 input */
	bool bf16[6];       /* read through a CONVERT to f32 */
	isa_insn_t ref[64];
	uint32_t nref;
} tgen_t;

static uint32_t tg_tree(tgen_t *g, int d, bool force, bool simple, isa_ap_t *ap);

/* An op-by-op reference instruction: ALU op of srcs into a new tensor. */
static isa_ap_t tg_ref(tgen_t *g, uint32_t op, uint32_t dt, const isa_ap_t *s0, const isa_ap_t *s1,
		       const isa_ap_t *s2)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
	in.n_ap = (uint8_t)(2 + (s1 != NULL) + (s2 != NULL));
	in.ap[0] = tmk_ap(g->t, 1, dt, g->rank, g->shape, L_CONTIG);
	in.ap[1] = *s0;
	if (s1)
		in.ap[2] = *s1;
	if (s2)
		in.ap[3] = *s2;
	g->ref[g->nref++] = in;
	return in.ap[0];
}

/* CLAMP(lo, x, hi) of a subtree x with leaf bounds, or a select by one or
 * two compares (joined by AND or OR) of a subtree's value v with leaves, v
 * on either side, selecting v or leaves: the forms fz_tree_plan takes. */
static uint32_t tg_masked(tgen_t *g, uint32_t op, int d, bool simple, uint64_t r, isa_ap_t *ap)
{
	isa_ap_t v_ap, l_ap[4];
	uint32_t v = tg_tree(g, d - 1, false, simple, &v_ap), l[4];
	for (int i = 0; i < 4; i++)
		l[i] = tg_tree(g, 0, false, true, &l_ap[i]);
	uint32_t dst = g->next_reg++;
	if (op == ISA_ALU_CLAMP) {
		fb_op(g->b, op, dst, ISA_DT_F32, (int)l[0], (int)v, (int)l[1], 0);
		*ap = tg_ref(g, op, ISA_DT_F32, &l_ap[0], &v_ap, &l_ap[1]);
		return dst;
	}
	static const uint32_t cmp6[6] = { ISA_ALU_CMP_EQ, ISA_ALU_CMP_NE, ISA_ALU_CMP_LT,
					  ISA_ALU_CMP_LE, ISA_ALU_CMP_GT, ISA_ALU_CMP_GE };
	uint32_t ncmp = 1 + (uint32_t)(r >> 20) % 2, c[2];
	isa_ap_t c_ap[2];
	for (uint32_t i = 0; i < ncmp; i++) {
		uint32_t cop = cmp6[(r >> (24 + 3 * i)) % 6];
		bool v_first = (r >> (32 + i)) & 1;
		c[i] = g->next_reg++;
		fb_op(g->b, cop, c[i], ISA_DT_PRED, (int)(v_first ? v : l[i]), (int)(v_first ? l[i] : v),
		      -1, 0);
		c_ap[i] = tg_ref(g, cop, ISA_DT_PRED, v_first ? &v_ap : &l_ap[i],
				 v_first ? &l_ap[i] : &v_ap, NULL);
	}
	uint32_t p = c[0];
	isa_ap_t p_ap = c_ap[0];
	if (ncmp == 2) {
		uint32_t jop = (r >> 40) & 1 ? ISA_ALU_AND : ISA_ALU_OR;
		p = g->next_reg++;
		fb_op(g->b, jop, p, ISA_DT_PRED, (int)c[0], (int)c[1], -1, 0);
		p_ap = tg_ref(g, jop, ISA_DT_PRED, &c_ap[0], &c_ap[1], NULL);
	}
	/* y, z: v or a leaf each */
	uint32_t pick = (uint32_t)(r >> 44) % 3;
	uint32_t y = pick == 1 ? v : l[2], z = pick == 2 ? v : l[3];
	const isa_ap_t *y_ap = pick == 1 ? &v_ap : &l_ap[2], *z_ap = pick == 2 ? &v_ap : &l_ap[3];
	fb_op(g->b, ISA_ALU_SELECT, dst, ISA_DT_F32, (int)p, (int)y, (int)z, 0);
	*ap = tg_ref(g, ISA_ALU_SELECT, ISA_DT_F32, &p_ap, y_ap, z_ap);
	return dst;
}

/* Emits a random tree of ADD, SUB, MUL, MAX, MIN, CLAMP and selects of depth d at most over the
 * inputs and CONSTs; returns the register with its value and, in *ap, where
 * the op-by-op reference keeps it (force: a step, not a leaf). The second
 * operand's subtree is simple (no step with two steps' values as operands;
 * in a simple tree itself, a leaf), so that the tree needs the temporary
 * once at a time (fused_tree.h); test_one_pass_tree_plans has the others.
 * A step writes over its first operand's
 * register when that holds a step's value (consumed here), as the
 * compiler's register reuse does; a few steps read one value twice. */
static uint32_t tg_tree(tgen_t *g, int d, bool force, bool simple, isa_ap_t *ap)
{
	uint64_t r = trand(g->seed);
	bool full = g->next_reg >= ISA_FUSED_MAX_REGS - 1;
	if (!force && (d == 0 || r % 5 == 0 || full)) {
		if (r % 7 == 0 && !full) {
			uint32_t k = g->next_reg++;
			double v = (double)((int64_t)(r >> 8) % 41 - 20) / 8.0;
			fb_op(g->b, ISA_FUSED_CONST, k, ISA_DT_F32, 0, -1, -1, fimm(v));
			*ap = tmk_ap(g->t, 1, ISA_DT_F32, g->rank, g->shape, L_CONTIG);
			uint64_t idx[3] = { 0, 0, 0 };
			tset(ISA_DT_F32, telem(g->t, ap, idx), v);
			for (uint32_t q = 0; q < g->rank; q++)
				ap->stride[q] = 0;
			return k;
		}
		uint32_t i = (uint32_t)((r >> 16) % g->nin);
		*ap = g->in_ap[i];
		if (!g->bf16[i])
			return i;
		if (full) /* no register for the CONVERT: another leaf */
			return tg_tree(g, 0, false, simple, ap);
		uint32_t k = g->next_reg++;
		fb_op(g->b, ISA_FUSED_CONVERT, k, ISA_DT_F32, (int)i, -1, -1, 0);
		return k;
	}
	static const uint32_t ops[8] = { ISA_ALU_ADD, ISA_ALU_SUB, ISA_ALU_MUL, ISA_ALU_MAX,
					 ISA_ALU_MIN, ISA_ALU_CLAMP, ISA_ALU_SELECT, ISA_ALU_SELECT };
	uint32_t op = ops[(r >> 4) % 8];
	isa_ap_t a_ap, b_ap;
	if ((op == ISA_ALU_CLAMP || op == ISA_ALU_SELECT) && g->next_reg + 10 < ISA_FUSED_MAX_REGS)
		return tg_masked(g, op, d, simple, r, ap);
	if (op == ISA_ALU_CLAMP || op == ISA_ALU_SELECT)
		op = ISA_ALU_MAX;
	uint32_t a = tg_tree(g, d - 1, false, simple, &a_ap), b;
	if ((r >> 8) % 6 == 0) {
		b = a;
		b_ap = a_ap;
	} else {
		b = tg_tree(g, simple ? 0 : d - 1, false, true, &b_ap);
	}
	uint32_t dst = a >= g->nin && ((r >> 12) % 2 || full) ? a : g->next_reg++;
	fb_op(g->b, op, dst, ISA_DT_F32, (int)a, (int)b, -1, 0);
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
	in.n_ap = 3;
	in.ap[0] = tmk_ap(g->t, 1, ISA_DT_F32, g->rank, g->shape, L_CONTIG);
	in.ap[1] = a_ap;
	in.ap[2] = b_ap;
	g->ref[g->nref++] = in;
	*ap = in.ap[0];
	return dst;
}

/* The output written in place (kernels_fused.c, fz_segment): the step that
 * last writes the output register writes a contiguous f32 output block
 * directly when the block overlaps none of its inputs. Bit for bit against
 * the scalar ops over NaN, infinities and signed zeros: a program writing its
 * output register four times (a CONST first, whose lane is kept across
 * blocks), a broadcast input, an input register overwritten and read again,
 * 1100 elements (blocks of 512, 512 and 76); the same with the output over an
 * input (not in place); and a NaN blamed on its step with the output apart
 * and over an input, where running the block again from its inputs must not
 * see the output. */
/* The program below, element by element: x, y, z (broadcast), w. */
static float ip_ref(float x, float y, float z, float w)
{
	float r4 = (x - y) * z;
	float r0 = fmaf(r4, 0.75f, x);
	float r6 = t_fmin(t_fmax(r0, y), w);
	float r7 = t_fmin(t_fmax(r6, 0.75f), w) / y;
	float r9 = fabsf(1.5f * -r7);
	return r9 * r9 + r0;
}

static void ip_program(fbuild_t *b)
{
	fb_op(b, ISA_FUSED_CONST, 9, ISA_DT_F32, -1, -1, -1, fimm(1.5));
	fb_op(b, ISA_ALU_SUB, 4, ISA_DT_F32, 0, 1, -1, 0);                /* x - y */
	fb_op(b, ISA_ALU_MUL, 4, ISA_DT_F32, 4, 2, -1, 0);                /* * z */
	fb_op(b, ISA_FUSED_CONST, 5, ISA_DT_F32, -1, -1, -1, fimm(0.75));
	fb_op(b, ISA_ALU_FMA, 0, ISA_DT_F32, 4, 5, 0, 0);                 /* over x's register */
	fb_op(b, ISA_ALU_MAX, 6, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(b, ISA_ALU_MIN, 6, ISA_DT_F32, 6, 3, -1, 0);
	fb_op(b, ISA_ALU_CLAMP, 7, ISA_DT_F32, 5, 6, 3, 0);
	fb_op(b, ISA_ALU_DIV, 7, ISA_DT_F32, 7, 1, -1, 0);
	fb_op(b, ISA_ALU_NEG, 8, ISA_DT_F32, 7, -1, -1, 0);
	fb_op(b, ISA_ALU_MUL, 9, ISA_DT_F32, 9, 8, -1, 0);                /* the CONST's register */
	fb_op(b, ISA_ALU_ABS, 9, ISA_DT_F32, 9, -1, -1, 0);
	fb_op(b, ISA_ALU_SQUARE, 9, ISA_DT_F32, 9, -1, -1, 0);
	fb_op(b, ISA_ALU_ADD, 9, ISA_DT_F32, 9, 0, -1, 0);
	b->h.out_reg = 9;
}

START_TEST(test_output_written_in_place)
{
	const uint32_t n = 1100;
	uint64_t sh[1] = { n };
	static const float special[] = { 0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e30f, 0.5f };
	fbuild_t b;
	for (int over_input = 0; over_input < 2; over_input++) {
		tmem_t t;
		tmem_init(&t);
		isa_ap_t ap[4];
		float *v[4], orig[4][1100];
		uint64_t seed = 31 + (uint64_t)over_input;
		for (int i = 0; i < 4; i++) {
			ap[i] = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
			v[i] = (float *)(void *)tmem_ptr(&t, 2, ap[i].offset);
			for (uint32_t e = 0; e < n; e++) {
				uint64_t r = trand(&seed);
				v[i][e] = r % 7 == 0 ? special[(r >> 8) % 7]
						     : (float)((int64_t)(r >> 16) % 20001 - 10000) / 37.0f;
			}
			memcpy(orig[i], v[i], sizeof(orig[i]));
		}
		ap[2].stride[0] = 0; /* z: one value for every element */
		isa_ap_t o = over_input ? ap[0] : tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
		float *ov = over_input ? v[0] : (float *)(void *)tmem_ptr(&t, 3, o.offset);
		fb_init(&b);
		for (int i = 0; i < 4; i++)
			fb_input(&b, ap[i]);
		ip_program(&b);
		isa_insn_t in = fb_emit(&b, &t, o);
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
		for (uint32_t e = 0; e < n; e++) {
			float want = ip_ref(orig[0][e], orig[1][e], orig[2][0], orig[3][e]);
			T_CHECK(memcmp(&ov[e], &want, 4) == 0 || (isnan(ov[e]) && isnan(want)),
				"output over an input %d, element %u: %a, want %a", over_input, e,
				ov[e], want);
		}
		tmem_free(&t);
	}

	/* out = (x * 2 - y) / z: z = 0 where x * 2 = y makes 0 / 0 at flat 700,
	 * blamed on the DIV (step 3); over x, running the block again from an
	 * x the output had overwritten would blame the MUL */
	for (int over_input = 0; over_input < 2; over_input++) {
		tmem_t t;
		tmem_init(&t);
		isa_ap_t ap[3];
		float *v[3];
		for (int i = 0; i < 3; i++) {
			ap[i] = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
			v[i] = (float *)(void *)tmem_ptr(&t, 2, ap[i].offset);
			for (uint32_t e = 0; e < n; e++)
				v[i][e] = 1.0f + (float)(e % 13) + (float)i;
		}
		v[0][700] = 2.0f;
		v[1][700] = 4.0f;
		v[2][700] = 0.0f;
		fb_init(&b);
		for (int i = 0; i < 3; i++)
			fb_input(&b, ap[i]);
		fb_op(&b, ISA_FUSED_CONST, 3, ISA_DT_F32, -1, -1, -1, fimm(2.0));
		fb_op(&b, ISA_ALU_MUL, 0, ISA_DT_F32, 0, 3, -1, 0);
		fb_op(&b, ISA_ALU_SUB, 0, ISA_DT_F32, 0, 1, -1, 0);
		fb_op(&b, ISA_ALU_DIV, 4, ISA_DT_F32, 0, 2, -1, 0);
		b.h.out_reg = 4;
		isa_ap_t o = over_input ? ap[0] : tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
		float *ov = over_input ? v[0] : (float *)(void *)tmem_ptr(&t, 3, o.offset);
		isa_insn_t in = fb_emit(&b, &t, o);
		in.param = ISA_FUSED_STEPS_DEBUG(100);
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
				 FWSIM_NUM_ERR);
		ck_assert_uint_eq(job.error.first_index, 700);
		ck_assert_uint_eq(job.error.count, 1);
		ck_assert_uint_eq(job.error.debug_id, 103);
		for (uint32_t e = 0; e < n; e++) {
			float x = 1.0f + (float)(e % 13), y = x + 1.0f, z = x + 2.0f;
			float want = (x * 2.0f - y) / z;
			T_CHECK(e == 700 ? isnan(ov[e]) : memcmp(&ov[e], &want, 4) == 0,
				"blame, output over an input %d, element %u: %a, want %a", over_input,
				e, ov[e], want);
		}
		tmem_free(&t);
	}
}
END_TEST

/* +0, -0, 1, -1, two NaNs (payloads 0x11 and 0x22), 2, -Inf as f32 bits. */
static const uint32_t mz_vals[8] = { 0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u,
				     0x7fc00011u, 0xffc00022u, 0x40000000u, 0xff800000u };

/* FUSED's float MAX, MIN and CLAMP steps and its reducing MAX and MIN are
 * the IEEE maximum and minimum: bit for bit t_fmax/t_fmin, +0 above -0
 * whichever operand each is, the first NaN's bits. Programs MAX(x, y),
 * MIN(x, y), CLAMP(x, y, z) and min(max(+0, x), 6) over 1100 elements (every
 * triple of the values each block of 512, the last block's tail of 76), with
 * and without the NaN check (which scans the last step as it writes); then
 * MAX(MIN(x, y)) and MIN(MAX(x, y)) reduced over rows of 3 (several rows a
 * segment) and of 600, of zeros of both signs. */
START_TEST(test_fused_minmax_signed_zeros_ieee)
{
	const uint32_t n = 1100;
	uint64_t sh[1] = { n };
	for (int prog = 0; prog < 4; prog++)
		for (int chk = 0; chk < 2; chk++) {
			tmem_t t;
			tmem_init(&t);
			isa_ap_t ap[3];
			float *v[3];
			for (int i = 0; i < 3; i++) {
				ap[i] = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
				v[i] = (float *)(void *)tmem_ptr(&t, 2, ap[i].offset);
				for (uint32_t e = 0; e < n; e++)
					v[i][e] = ns_bits_f32(mz_vals[(e >> (3 * i)) & 7]);
			}
			isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
			const float *ov = (const float *)(const void *)tmem_ptr(&t, 3, o.offset);
			fbuild_t b;
			fb_init(&b);
			for (int i = 0; i < 3; i++)
				fb_input(&b, ap[i]);
			if (prog == 0) {
				fb_op(&b, ISA_ALU_MAX, 3, ISA_DT_F32, 0, 1, -1, 0);
			} else if (prog == 1) {
				fb_op(&b, ISA_ALU_MIN, 3, ISA_DT_F32, 0, 1, -1, 0);
			} else if (prog == 2) {
				fb_op(&b, ISA_ALU_CLAMP, 3, ISA_DT_F32, 0, 1, 2, 0);
			} else {
				fb_op(&b, ISA_FUSED_CONST, 4, ISA_DT_F32, -1, -1, -1, fimm(0.0));
				fb_op(&b, ISA_FUSED_CONST, 5, ISA_DT_F32, -1, -1, -1, fimm(6.0));
				fb_op(&b, ISA_ALU_MAX, 3, ISA_DT_F32, 4, 0, -1, 0);
				fb_op(&b, ISA_ALU_MIN, 3, ISA_DT_F32, 3, 5, -1, 0);
			}
			b.h.out_reg = 3;
			isa_insn_t in = fb_emit(&b, &t, o);
			fwsim_job_t job;
			fwsim_status_t st = trun1(&t, &in, ISA_ENGINE_VECTOR, chk ? FWSIM_JOB_CHECK_NAN : 0, &job);
			ck_assert(st == FWSIM_OK || (chk && st == FWSIM_NUM_ERR));
			for (uint32_t e = 0; e < n; e++) {
				float x = v[0][e], y = v[1][e], z = v[2][e];
				float w = prog == 0 ? t_fmax(x, y) : prog == 1 ? t_fmin(x, y)
					: prog == 2 ? t_fmin(t_fmax(y, x), z) : t_fmin(t_fmax(0.0f, x), 6.0f);
				T_CHECK(ns_f32_bits(ov[e]) == ns_f32_bits(w), "program %d check %d element %u (%a, %a, %a): "
					"%a, want %a", prog, chk, e, x, y, z, ov[e], w);
			}
			tmem_free(&t);
		}

	static const uint64_t lens[2] = { 3, 600 };
	for (int max = 0; max < 2; max++)
		for (int li = 0; li < 2; li++) {
			const uint64_t rows = 37, L = lens[li];
			uint64_t rsh[2] = { rows, L };
			tmem_t t;
			tmem_init(&t);
			isa_ap_t x = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
			isa_ap_t y = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
			/* the reducing form's output: the operands' shape, stride 0
			 * along the reduced dim */
			isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 2, rsh, L_CONTIG);
			o.stride[0] = 1;
			o.stride[1] = 0;
			float *xv = (float *)(void *)tmem_ptr(&t, 2, x.offset);
			float *yv = (float *)(void *)tmem_ptr(&t, 2, y.offset);
			const float *ov = (const float *)(const void *)tmem_ptr(&t, 3, o.offset);
			for (uint64_t r = 0; r < rows; r++)
				for (uint64_t i = 0; i < L; i++) {
					/* row r's sign pattern over i: rows 0 and 7 all +0 and all -0 */
					xv[r * L + i] = (r % 8 >> i % 3) & 1 ? -0.0f : 0.0f;
					yv[r * L + i] = (r / 8 + i) % 5 ? xv[r * L + i] : -xv[r * L + i];
				}
			fbuild_t b;
			fb_init(&b);
			fb_input(&b, x);
			fb_input(&b, y);
			fb_op(&b, max ? ISA_ALU_MIN : ISA_ALU_MAX, 2, ISA_DT_F32, 0, 1, -1, 0);
			b.h.out_reg = 2;
			b.h.reduce = ISA_FUSED_REDUCE(max ? ISA_RED_MAX : ISA_RED_MIN);
			b.h.reduce_axes = 1u << 1;
			isa_insn_t in = fb_emit(&b, &t, o);
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
			for (uint64_t r = 0; r < rows; r++) {
				float w = max ? -INFINITY : INFINITY;
				for (uint64_t i = 0; i < L; i++) {
					float a = xv[r * L + i], c = yv[r * L + i];
					w = max ? t_fmax(w, t_fmin(a, c)) : t_fmin(w, t_fmax(a, c));
				}
				ck_assert_msg(ns_f32_bits(ov[r]) == ns_f32_bits(w), "%s rows of %llu, row %llu: %a, want %a",
					      max ? "max" : "min", (unsigned long long)L, (unsigned long long)r,
					      ov[r], w);
			}
			tmem_free(&t);
		}
}
END_TEST

/* Rows shorter than half a block, several per segment, with inputs of one
 * value per row: m's one after the other, which a one-pass tree over rows of
 * 10 or more reads in place (fused_tree.h, fz_rowin_t: a segment's count of
 * them goes up), v's transposed (filled into a lane, as are rows of 9), d's
 * one after the other too, and c one value for all. Every output is the
 * scalar reference's bits, and a NaN in a row's value of m is found at its
 * row's first element, blamed on the step that made it. _i 1: the AVX2 loop
 * (the cap a CPU without AVX-512 has). */
START_TEST(test_rows_per_segment)
{
	fwsim_set_max_isa(_i ? FWSIM_ISA_AVX2 : FWSIM_ISA_AUTO);
	const uint64_t lens[6] = { 9, 10, 16, 49, 50, 200 };
	for (int li = 0; li < 6; li++) {
		uint64_t rl = lens[li];
		tmem_t t;
		tmem_init(&t);
		uint64_t sh[3] = { 3, 37, rl }, rsh[2] = { 3, 37 };
		isa_ap_t x = tmk_ap(&t, 2, ISA_DT_F32, 3, sh, L_CONTIG);
		isa_ap_t m = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
		isa_ap_t v = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_TRANSPOSED);
		isa_ap_t c = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
		isa_ap_t d = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
		isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 3, sh, L_CONTIG);
		uint64_t seed = 5 + rl;
		fill_random(&t, &x, &seed);
		fill_random(&t, &m, &seed);
		fill_random(&t, &v, &seed);
		fill_random(&t, &c, &seed);
		fill_random(&t, &d, &seed);
		/* the [3, 37] operands seen as [3, 37, rl] (stride 0 along the
		 * rows), c as one value for every element */
		m.rank = v.rank = c.rank = d.rank = 3;
		m.shape[2] = v.shape[2] = c.shape[2] = d.shape[2] = rl;
		m.stride[2] = v.stride[2] = d.stride[2] = 0;
		c.shape[0] = 3;
		c.shape[1] = 37;
		c.stride[0] = c.stride[1] = c.stride[2] = 0;
		const float *xv = (const float *)(const void *)tmem_ptr(&t, 2, x.offset);
		float *mv = (float *)(void *)tmem_ptr(&t, 2, m.offset);
		const float *vv = (const float *)(const void *)tmem_ptr(&t, 2, v.offset);
		const float *cv = (const float *)(const void *)tmem_ptr(&t, 2, c.offset);
		const float *dv = (const float *)(const void *)tmem_ptr(&t, 2, d.offset);
		const float *ov = (const float *)(const void *)tmem_ptr(&t, 3, o.offset);
		fbuild_t b;
		fb_init(&b);
		fb_input(&b, x);
		fb_input(&b, m);
		fb_input(&b, v);
		fb_input(&b, c);
		fb_input(&b, d);
		/* max(((x - m) * v + c) - d, m) */
		fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 0, 1, -1, 0);
		fb_op(&b, ISA_ALU_MUL, 5, ISA_DT_F32, 5, 2, -1, 0);
		fb_op(&b, ISA_ALU_ADD, 5, ISA_DT_F32, 5, 3, -1, 0);
		fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 5, 4, -1, 0);
		fb_op(&b, ISA_ALU_MAX, 6, ISA_DT_F32, 5, 1, -1, 0);
		b.h.out_reg = 6;
		isa_insn_t in = fb_emit(&b, &t, o);
		in.param = ISA_FUSED_STEPS_DEBUG(40);
		for (int bad = 0; bad < 2; bad++) {
			if (bad)
				mv[1 * 37 + 20] = NAN;
			uint64_t segs0 = fwsim_fused_row_segments();
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
					 bad ? FWSIM_NUM_ERR : FWSIM_OK);
			uint64_t segs = fwsim_fused_row_segments() - segs0;
			T_CHECK((segs > 0) == (rl >= FZ_ROW_MIN && fwsim_cpu_avx2_fma()),
				"rows of %" PRIu64 ": %" PRIu64 " segments read rows in place", rl, segs);
			for (uint32_t a = 0; a < 3; a++)
				for (uint32_t r = 0; r < 37; r++)
					for (uint32_t e = 0; e < rl; e++) {
						uint64_t f = ((uint64_t)a * 37 + r) * rl + e;
						float mr = mv[a * 37 + r];
						float y = (xv[f] - mr) * vv[r * 3 + a] + cv[0] - dv[a * 37 + r];
						float want = isnan(y) ? y : isnan(mr) ? mr : y > mr ? y : mr;
						T_CHECK(memcmp(&ov[f], &want, 4) == 0 || (isnan(ov[f]) && isnan(want)),
							"rows of %" PRIu64 ", element [%u, %u, %u]: %a, want %a",
							rl, a, r, e, ov[f], want);
					}
			if (bad) {
				ck_assert_uint_eq(job.error.first_index, (1 * 37 + 20) * rl);
				ck_assert_uint_eq(job.error.count, rl);
				ck_assert_uint_eq(job.error.debug_id, 40);
			}
		}
		ck_assert(tmem_guards_intact(&t));
		tmem_free(&t);
	}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

/* A one-pass tree with a compare over rows of 49 with one threshold per row
 * (several rows per segment): a NaN late in a segment is blamed on the
 * select, which the step-by-step run finds in pred lanes of 8 bytes each, and
 * every output is the select's. */
START_TEST(test_tree_with_compares_blamed_over_short_rows)
{
	/* _i 1: with the AVX2 loop (the cap a CPU without AVX-512 has) */
	fwsim_set_max_isa(_i ? FWSIM_ISA_AVX2 : FWSIM_ISA_AUTO);
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[3] = { 2, 70, 49 }, rsh[2] = { 2, 70 };
	isa_ap_t xa = tmk_ap(&t, 2, ISA_DT_F32, 3, sh, L_CONTIG);
	isa_ap_t ga = tmk_ap(&t, 2, ISA_DT_F32, 3, sh, L_CONTIG);
	isa_ap_t ca = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
	ca.rank = 3;
	ca.shape[2] = 49;
	ca.stride[2] = 0;
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 3, sh, L_CONTIG);
	float *x = (float *)(void *)tmem_ptr(&t, 2, xa.offset);
	float *g = (float *)(void *)tmem_ptr(&t, 2, ga.offset);
	float *c = (float *)(void *)tmem_ptr(&t, 2, ca.offset);
	uint32_t n = 2 * 70 * 49;
	for (uint32_t i = 0; i < n; i++) {
		x[i] = (float)(i % 11) - 5;
		g[i] = 1.0f + (float)i;
	}
	for (uint32_t r = 0; r < 140; r++)
		c[r] = (float)(r % 3) - 1;
	/* row 19 (c = 0): flat 952 and 953 (x = 1, 2) picked, 950 (x = -1) not */
	g[950] = NAN;
	g[952] = NAN;
	g[953] = NAN;
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, xa);
	fb_input(&b, ga);
	fb_input(&b, ca);
	fb_op(&b, ISA_ALU_CMP_GT, 3, ISA_DT_PRED, 0, 2, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 4, ISA_DT_F32, -1, -1, -1, fimm(0.0));
	fb_op(&b, ISA_ALU_SELECT, 3, ISA_DT_F32, 3, 1, 4, 0);
	fb_op(&b, ISA_FUSED_CONST, 5, ISA_DT_F32, -1, -1, -1, fimm(-100.0));
	fb_op(&b, ISA_ALU_MAX, 3, ISA_DT_F32, 3, 5, -1, 0);
	b.h.out_reg = 3;
	bool live[8] = { true, true, true, true, true, true, true, true };
	uint8_t f3[3] = { ISA_DT_F32, ISA_DT_F32, ISA_DT_F32 };
	fz_tree_t tr;
	fz_tree_plan(b.code, b.h.n_code, live, f3, 3, 3, &tr);
	ck_assert(tr.n > 0 || !fwsim_cpu_avx2_fma());
	isa_insn_t in = fb_emit(&b, &t, o);
	in.param = ISA_FUSED_STEPS_DEBUG(500);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 952);
	ck_assert_uint_eq(job.error.count, 2);
	ck_assert_uint_eq(job.error.debug_id, 502);
	const float *ov = (const float *)(const void *)tmem_ptr(&t, 3, o.offset);
	for (uint32_t i = 0; i < n; i++) {
		float s = x[i] > c[i / 49] ? g[i] : 0.0f, want = s != s ? s : s > -100.0f ? s : -100.0f;
		ck_assert_msg(memcmp(&want, &ov[i], 4) == 0 || (isnan(want) && isnan(ov[i])),
			      "element %u: %a, want %a", i, ov[i], want);
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

START_TEST(test_mask_select_nan_blamed_on_select)
{
	/* _i 1: with the AVX2 loop (the cap a CPU without AVX-512 has) */
	fwsim_set_max_isa(_i ? FWSIM_ISA_AVX2 : FWSIM_ISA_AUTO);
	/* rows of 900 (one segment of a one-pass tree) and 20000 (segments of
	 * FZ_TREE_LONG); the blame runs the 512 around the NaN again */
	static const uint32_t ns[2] = { 900, 20000 };
	for (int c = 0; c < 2; c++) {
		uint32_t n = ns[c], at = n == 900 ? 600 : 17001;
		tmem_t t;
		tmem_init(&t);
		uint64_t sh[1] = { n };
		isa_ap_t xa = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
		isa_ap_t ga = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
		isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
		float *x = (float *)(void *)tmem_ptr(&t, 2, xa.offset);
		float *g = (float *)(void *)tmem_ptr(&t, 2, ga.offset);
		for (uint32_t i = 0; i < n; i++) {
			x[i] = (float)(i % 9) - 4;
			g[i] = 1.0f + (float)i;
		}
		/* x = 2 and 3 (> 0: picked) at the first two, -4 (not) at the third */
		uint32_t first = at - (at % 9) + 6, next = first + 1, skipped = first + 3;
		g[first] = NAN;
		g[next] = NAN;
		g[skipped] = NAN;
		g[first - 9 * 40 + 3] = NAN; /* x = -1: not picked, earlier */
		fbuild_t b;
		fb_init(&b);
		fb_input(&b, xa);
		fb_input(&b, ga);
		fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
		fb_op(&b, ISA_ALU_CMP_GT, 3, ISA_DT_PRED, 0, 2, -1, 0);
		fb_op(&b, ISA_ALU_SELECT, 3, ISA_DT_F32, 3, 1, 2, 0);
		/* a MAX after: a blame that ran the wrong block would find no
		 * NaN and name the output's last writer, the MAX */
		fb_op(&b, ISA_FUSED_CONST, 4, ISA_DT_F32, -1, -1, -1, fimm(-100.0));
		fb_op(&b, ISA_ALU_MAX, 3, ISA_DT_F32, 3, 4, -1, 0);
		b.h.out_reg = 3;
		isa_insn_t in = fb_emit(&b, &t, o);
		in.param = ISA_FUSED_STEPS_DEBUG(300);
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
				 FWSIM_NUM_ERR);
		ck_assert_uint_eq(job.error.first_index, first);
		ck_assert_uint_eq(job.error.count, 2);
		ck_assert_uint_eq(job.error.debug_id, 302);
		const float *ov = (const float *)(const void *)tmem_ptr(&t, 3, o.offset);
		for (uint32_t i = 0; i < n; i++) {
			float want = x[i] > 0 ? g[i] : 0.0f;
			ck_assert_msg(memcmp(&want, &ov[i], 4) == 0 || (isnan(want) && isnan(ov[i])),
				      "n %u element %u", n, i);
		}
		tmem_free(&t);
	}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

START_TEST(test_inf_from_narrowing_in_fused_output)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[1] = { 10 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F16, 1, sh, L_CONTIG);
	float *av = (float *)(void *)tmem_ptr(&t, 2, a.offset);
	for (int i = 0; i < 10; i++)
		av[i] = (float)i;
	av[6] = 70000.0f; /* * 1 fits f32, overflows f16 */
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_op(&b, ISA_FUSED_CONVERT, 0, ISA_DT_F16, 0, -1, -1, 0);
	b.h.out_reg = 0;
	isa_insn_t in = fb_emit(&b, &t, o);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_INF, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 6);
	ck_assert_uint_eq(job.error.is_inf, 1);
	tmem_free(&t);
}
END_TEST

/* ---- validation ---- */

static isa_insn_t good_fused(tmem_t *t, fbuild_t *b, isa_ap_t *out)
{
	uint64_t sh[2] = { 3, 4 };
	fb_init(b);
	for (int i = 0; i < 4; i++)
		fb_input(b, tmk_ap(t, 2, ISA_DT_F32, 2, sh, L_CONTIG));
	fb_op(b, ISA_ALU_ADD, 4, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(b, ISA_ALU_FMA, 4, ISA_DT_F32, 4, 2, 3, 0);
	b->h.out_reg = 4;
	*out = tmk_ap(t, 3, ISA_DT_F32, 2, sh, L_CONTIG);
	return fb_emit(b, t, *out);
}

static void expect_desc_bad(tmem_t *t, const isa_insn_t *in, const char *needle)
{
	char err[200];
	const uint8_t *d = tmem_ptr(t, 0, in->ap[1].offset);
	ck_assert_int_eq(t_fused_check(in, d, in->ap[1].shape[0], T_NREG, err,
						 sizeof(err)), -1);
	ck_assert_msg(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
	/* and at run time: INVALID naming the instruction, nothing written */
	fwsim_job_t job;
	uint8_t before[48];
	memcpy(before, tmem_ptr(t, 3, in->ap[0].offset), 48);
	ck_assert_int_eq(trun1(t, in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_INVALID);
	ck_assert_msg(strstr(job.error.message, "fused") && strstr(job.error.message, needle),
		      "%s", job.error.message);
	ck_assert_uint_eq(job.error.ap_index, 1);
	ck_assert_int_eq(memcmp(before, tmem_ptr(t, 3, in->ap[0].offset), 48), 0);
}

START_TEST(test_descriptor_garbage_rejected)
{
	tmem_t t;
	tmem_init(&t);
	fbuild_t b;
	isa_ap_t out;
	isa_insn_t in = good_fused(&t, &b, &out);
	char err[200];
	ck_assert_msg(t_insn_check(&in, T_NREG, 1, err, sizeof(err)) == 0, "%s", err);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);

	uint8_t *d = tmem_ptr(&t, 0, in.ap[1].offset);
	size_t len = in.ap[1].shape[0];
	uint8_t save[4096];
	memcpy(save, d, len);
	size_t code0 = sizeof(isa_fused_desc_t) + 2 * sizeof(isa_ap_t);
	struct { size_t off; uint8_t val; const char *needle; } cases[] = {
		{ 0, 0x00, "magic" },
		{ 4, 9, "n_ap" },                       /* n_inputs 9: size mismatch first? */
		{ 6, 0, "program of 0 steps" },
		{ 8, 2, "registers" },                  /* n_regs < n_inputs */
		{ 9, 40, "out_reg" },
		{ 10, 9, "names no combiner" },
		{ 12, 1, "without reduce" },
		{ sizeof(isa_fused_desc_t) + 4, 0, "unknown dtype" }, /* extra ap dtype */
		{ sizeof(isa_fused_desc_t), 9, "region" },            /* extra ap region */
		{ sizeof(isa_fused_desc_t) + 16, 5, "shape differs" },/* extra ap shape */
		{ code0 + 0, 200, "unknown op" },
		{ code0 + 2, 31, "dst r31" },
		{ code0 + 3, 0, "unknown dtype" },
		{ code0 + 3, ISA_DT_S32, "dtype" },
		{ code0 + 4, 20, "holds no value" },
		{ code0 + 6, 1, "unused src" },
		{ code0 + 7, 1, "pad" },
		{ code0 + 8, 1, "imm" },
		{ code0 + 16 + 3, ISA_DT_BF16, "dtype" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(d, save, len);
		d[cases[c].off] = cases[c].val;
		if (cases[c].off == 4) /* n_inputs 9 > 4: needs n_ap 4, has 4: then size */
			cases[c].needle = "bytes";
		expect_desc_bad(&t, &in, cases[c].needle);
	}
	/* out_reg naming a register of another dtype than ap0 */
	memcpy(d, save, len);
	fb_init(&b);
	uint64_t sh[2] = { 3, 4 };
	fb_input(&b, tmk_ap(&t, 2, ISA_DT_S32, 2, sh, L_CONTIG));
	fb_op(&b, ISA_ALU_NEG, 1, ISA_DT_S32, 0, -1, -1, 0);
	b.h.out_reg = 1;
	in = fb_emit(&b, &t, out);
	expect_desc_bad(&t, &in, "out_reg r1 holds s32, ap0 is f32");
	/* a pred constant other than 0/1 */
	fb_init(&b);
	fb_op(&b, ISA_FUSED_CONST, 0, ISA_DT_PRED, -1, -1, -1, 2);
	fb_op(&b, ISA_FUSED_CONVERT, 1, ISA_DT_F32, 0, -1, -1, 0);
	b.h.out_reg = 1;
	in = fb_emit(&b, &t, out);
	expect_desc_bad(&t, &in, "pred constant");
	tmem_free(&t);
}
END_TEST

/* ---- the reducing form and IOTA (ISA 1.3) ---- */

/* An access pattern of region r at off with explicit shape and strides. */
static isa_ap_t fz_ap(uint32_t r, uint64_t off, uint32_t dt, uint32_t rank, const uint64_t *sh,
		      const int64_t *st)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = r;
	ap.offset = off;
	ap.dtype = (uint8_t)dt;
	ap.rank = (uint8_t)rank;
	for (uint32_t k = 0; k < rank; k++) {
		ap.shape[k] = sh[k];
		ap.stride[k] = st[k];
	}
	return ap;
}

/* A transposed input (contiguous along an outer dim, strided along the inner
 * one) runs in staged bands: out[.., t, m, j] = 2 a + b + t, a laid out t
 * fastest, then m, then j, then the outer dim (so no two of its dims merge),
 * b and the output row-major. Case 0: f32, t outermost, two bands (40 values
 * of t, 3600 elements each: bands of 36 and 4), and two NaNs whose flat order
 * is not a's memory order. Case 1: bf16 everywhere, an outer dim before t (3
 * bands of all 24 values of t). */
START_TEST(test_transposed_input_in_bands)
{
	int c = _i;
	uint32_t dt = c == 0 ? ISA_DT_F32 : ISA_DT_BF16;
	uint64_t no = c == 0 ? 1 : 3, nt = c == 0 ? 40 : 24, nm = c == 0 ? 180 : 40, nj = 20;
	uint64_t sh[4] = { no, nt, nm, nj }, n = no * nt * nm * nj;
	size_t es = dt == ISA_DT_F32 ? 4 : 2;
	tmem_t t;
	tmem_init(&t);
	uint64_t aoff = tmem_alloc(&t, 1, n * es), boff = tmem_alloc(&t, 2, n * es);
	uint64_t ooff = tmem_alloc(&t, 3, n * es);
	int64_t ast[4] = { (int64_t)(nt * nm * nj), 1, (int64_t)nt, (int64_t)(nt * nm) };
	int64_t rst[4] = { (int64_t)(nt * nm * nj), (int64_t)(nm * nj), (int64_t)nj, 1 };
	isa_ap_t a = fz_ap(1, aoff, dt, 4, sh, ast), b = fz_ap(2, boff, dt, 4, sh, rst);
	isa_ap_t o = fz_ap(3, ooff, dt, 4, sh, rst);
	uint64_t seed = 15 + (uint64_t)c, idx[4];
	fill_random(&t, &a, &seed);
	fill_random(&t, &b, &seed);
	/* NaNs at flat f2 < f1, f1 in the second band and first in a's memory */
	uint64_t f1 = ((38 * nm) + 5) * nj + 3, f2 = ((2 * nm) + 100) * nj + 19;
	if (c == 0) {
		tunflat(f1, 4, sh, idx);
		tset(dt, telem(&t, &a, idx), NAN);
		tunflat(f2, 4, sh, idx);
		tset(dt, telem(&t, &a, idx), NAN);
	}
	fbuild_t fb;
	fb_init(&fb);
	fb_input(&fb, a);
	fb_input(&fb, b);
	fb_op(&fb, ISA_FUSED_CONVERT, 6, ISA_DT_F32, 0, -1, -1, 0);
	fb_op(&fb, ISA_FUSED_CONVERT, 7, ISA_DT_F32, 1, -1, -1, 0);
	fb_op(&fb, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(2.0));
	fb_op(&fb, ISA_ALU_MUL, 3, ISA_DT_F32, 6, 2, -1, 0);
	fb_op(&fb, ISA_ALU_ADD, 3, ISA_DT_F32, 3, 7, -1, 0);
	fb_op(&fb, ISA_FUSED_IOTA, 4, ISA_DT_S32, 1, -1, -1, 0);
	fb_op(&fb, ISA_FUSED_CONVERT, 5, ISA_DT_F32, 4, -1, -1, 0);
	fb_op(&fb, ISA_ALU_ADD, 3, ISA_DT_F32, 3, 5, -1, 0);
	fb_op(&fb, ISA_FUSED_CONVERT, 3, dt, 3, -1, -1, 0);
	fb.h.out_reg = 3;
	isa_insn_t in = fb_emit(&fb, &t, o);
	in.debug_id = 9;
	fwsim_job_t job;
	fwsim_status_t want = c == 0 ? FWSIM_NUM_ERR : FWSIM_OK;
	fwsim_status_t got_st = trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job);
	ck_assert_msg(got_st == want, "case %d: status %d: %s", c, got_st, job.error.message);
	if (c == 0) {
		ck_assert_uint_eq(job.error.first_index, f2);
		ck_assert_uint_eq(job.error.count, 2);
		ck_assert_uint_eq(job.error.debug_id, 9);
	}
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, 4, sh, idx);
		double av = tget(dt, telem(&t, &a, idx)), bv = tget(dt, telem(&t, &b, idx));
		float e = (float)(2.0f * (float)av + (float)bv) + (float)idx[1];
		double got = tget(dt, telem(&t, &o, idx));
		double w = dt == ISA_DT_BF16 ? ns_bf16_to_f32(ns_f32_to_bf16(e)) : e;
		ck_assert_msg((isnan(w) && isnan(got)) || got == w,
			      "case %d: element %llu (t %llu, a %g b %g): %g, want %g", c,
			      (unsigned long long)f, (unsigned long long)idx[1], av, bv, got, w);
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* The one-hot pattern: out[i,j] = init + sum_v (iota_v == label[i,j]) * w[v],
 * the compare, convert and multiply never stored. */
START_TEST(test_reduce_one_hot_with_iota)
{
	tmem_t t;
	tmem_init(&t);
	enum { A = 5, B = 7, V = 9 };
	uint64_t sh[3] = { A, B, V };
	uint64_t loff = tmem_alloc(&t, 2, A * B * 4), woff = tmem_alloc(&t, 2, V * 4);
	uint64_t ooff = tmem_alloc(&t, 3, A * B * 4);
	int32_t *lab = (int32_t *)(void *)tmem_ptr(&t, 2, loff);
	float *w = (float *)(void *)tmem_ptr(&t, 2, woff), *o = (float *)(void *)tmem_ptr(&t, 3, ooff);
	for (int i = 0; i < A * B; i++) {
		lab[i] = (i * 5) % (V + 2) - 1; /* -1 and V: no hit */
		o[i] = 0.5f;
	}
	for (int v = 0; v < V; v++)
		w[v] = (float)(v + 1) * 1.25f;
	int64_t lst[3] = { B, 1, 0 }, wst[3] = { 0, 0, 1 }, ost[3] = { B, 1, 0 };
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, fz_ap(2, loff, ISA_DT_S32, 3, sh, lst));
	fb_input(&b, fz_ap(2, woff, ISA_DT_F32, 3, sh, wst));
	fb_op(&b, ISA_FUSED_IOTA, 2, ISA_DT_S32, 2, -1, -1, 0);
	fb_op(&b, ISA_ALU_CMP_EQ, 3, ISA_DT_PRED, 2, 0, -1, 0);
	fb_op(&b, ISA_FUSED_CONVERT, 2, ISA_DT_F32, 3, -1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 4, ISA_DT_F32, 2, 1, -1, 0);
	b.h.out_reg = 4;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
	b.h.reduce_axes = 1u << 2;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, ooff, ISA_DT_F32, 3, sh, ost));
	in.flags = ISA_F_ACCUMULATE; /* combine with the 0.5 in the output */
	char err[200];
	ck_assert_msg(t_insn_check(&in, T_NREG, 1, err, sizeof(err)) == 0, "%s", err);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	for (int i = 0; i < A * B; i++) {
		float want = 0.5f + (lab[i] >= 0 && lab[i] < V ? w[lab[i]] : 0.0f);
		ck_assert_msg(o[i] == want, "output %d: %g, want %g", i, o[i], want);
	}
	/* without ACCUMULATE the sum starts from 0, whatever the output held */
	in.flags = 0;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	for (int i = 0; i < A * B; i++) {
		float want = lab[i] >= 0 && lab[i] < V ? w[lab[i]] : 0.0f;
		ck_assert_msg(o[i] == want, "output %d: %g, want %g", i, o[i], want);
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* Reduced outer dims, integer max, iota with a start, a transposed output;
 * and a float iota rounded to bf16. */
START_TEST(test_reduce_outer_axes_int_max_and_iota_start)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[3] = { 4, 6, 3 };
	uint64_t ooff = tmem_alloc(&t, 3, 6 * 3 * 8);
	int64_t *o = (int64_t *)(void *)tmem_ptr(&t, 3, ooff);
	for (int i = 0; i < 18; i++)
		o[i] = i == 5 ? 1000 : -1000;
	/* out[j, k] stored transposed: element (j, k) at k * 6 + j */
	int64_t ost[3] = { 0, 1, 6 };
	fbuild_t b;
	fb_init(&b);
	/* value = (i + 10) * 3 - 7 * j + k, max over i */
	fb_op(&b, ISA_FUSED_IOTA, 0, ISA_DT_S64, 0, -1, -1, (uint64_t)10);
	fb_op(&b, ISA_FUSED_CONST, 1, ISA_DT_S64, -1, -1, -1, 3);
	fb_op(&b, ISA_ALU_MUL, 0, ISA_DT_S64, 0, 1, -1, 0);
	fb_op(&b, ISA_FUSED_IOTA, 2, ISA_DT_S64, 1, -1, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 1, ISA_DT_S64, -1, -1, -1, 7);
	fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_S64, 2, 1, -1, 0);
	fb_op(&b, ISA_ALU_SUB, 0, ISA_DT_S64, 0, 2, -1, 0);
	fb_op(&b, ISA_FUSED_IOTA, 2, ISA_DT_S64, 2, -1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 0, ISA_DT_S64, 0, 2, -1, 0);
	b.h.out_reg = 0;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_MAX);
	b.h.reduce_axes = 1u;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, ooff, ISA_DT_S64, 3, sh, ost));
	in.flags = ISA_F_ACCUMULATE;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	for (int j = 0; j < 6; j++)
		for (int k = 0; k < 3; k++) {
			int64_t init = k * 6 + j == 5 ? 1000 : -1000;
			int64_t v = 13 * 3 - 7 * j + k;
			int64_t want = v > init ? v : init;
			ck_assert_int_eq(o[k * 6 + j], want);
		}
	/* bf16 iota: 257 rounds to 256 */
	uint64_t sh1[1] = { 300 };
	int64_t st1[1] = { 1 };
	uint64_t boff = tmem_alloc(&t, 3, 600);
	fb_init(&b);
	fb_op(&b, ISA_FUSED_IOTA, 0, ISA_DT_BF16, 0, -1, -1, 0);
	b.h.out_reg = 0;
	in = fb_emit(&b, &t, fz_ap(3, boff, ISA_DT_BF16, 1, sh1, st1));
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ck_assert(tget(ISA_DT_BF16, tmem_ptr(&t, 3, boff + 2 * 257)) == 256.0);
	ck_assert(tget(ISA_DT_BF16, tmem_ptr(&t, 3, boff + 2 * 100)) == 100.0);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* What the validator refuses in the new fields, at validation and at run time. */
/* The reducing form with more outputs than FWSIM_REDUCE_MAX_ACC (2^20)
 * accumulators runs in parts (fwsim_red_parts_t, shared with REDUCE): index
 * operands start where their part does, the NaN record counts over all
 * outputs, and ACCUMULATE with a reduced dim before the split dim. tmem's
 * regions are too small: one window of 9 MiB regions. */
START_TEST(test_reduce_in_parts_matches_reference)
{
	const uint64_t rsz = 9u << 20;
	tmem_t t;
	memset(&t, 0, sizeof(t));
	t.size = (uint64_t)T_NREG * rsz;
	t.mem = calloc(1, t.size);
	ck_assert_ptr_nonnull(t.mem);
	for (uint32_t r = 0; r < T_NREG; r++) {
		t.regions[r].addr = (uint64_t)r * rsz;
		t.regions[r].size = rsz;
	}
	float *x = (float *)(void *)tmem_ptr(&t, 2, 0), *o = (float *)(void *)tmem_ptr(&t, 3, 0);
	/* sum over dim 1 of i + x[j] + 0 * (1 / (i - 1500000)) for out[n, 2]: 2i + 3,
	 * NaN at output 1500000 (in the second of three parts) */
	const uint64_t n = 2100000;
	uint64_t sh[2] = { n, 2 };
	int64_t xst[2] = { 0, 1 }, ost[2] = { 1, 0 };
	x[0] = 1.0f;
	x[1] = 2.0f;
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, fz_ap(2, 0, ISA_DT_F32, 2, sh, xst));
	fb_op(&b, ISA_FUSED_IOTA, 1, ISA_DT_F32, 0, -1, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(1500000.0));
	fb_op(&b, ISA_ALU_SUB, 2, ISA_DT_F32, 1, 2, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 3, ISA_DT_F32, -1, -1, -1, fimm(1.0));
	fb_op(&b, ISA_ALU_DIV, 2, ISA_DT_F32, 3, 2, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 3, ISA_DT_F32, -1, -1, -1, fimm(0.0));
	fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_F32, 2, 3, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 1, ISA_DT_F32, 1, 0, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 1, ISA_DT_F32, 1, 2, -1, 0);
	b.h.out_reg = 1;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
	b.h.reduce_axes = 1u << 1;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, 0, ISA_DT_F32, 2, sh, ost));
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
			 FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 1500000);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert(isnan(o[1500000]));
	for (uint64_t i = 0; i < n; i++)
		if (i != 1500000)
			T_CHECK(o[i] == (float)(2 * i + 3), "o[%llu] = %g", (unsigned long long)i,
				o[i]);
	/* max over dim 0 of i * y[j] for out[2, m] with y = { 1, 0.5 }, ACCUMULATE:
	 * the reduced dim comes before the split dim */
	const uint64_t m = 1100000;
	uint64_t sh2[2] = { 2, m };
	int64_t yst[2] = { 1, 0 }, ost2[2] = { 0, 1 };
	x[0] = 1.0f;
	x[1] = 0.5f;
	for (uint64_t i = 0; i < m; i++)
		o[i] = (float)(i % 5) + 3;
	fb_init(&b);
	fb_input(&b, fz_ap(2, 0, ISA_DT_F32, 2, sh2, yst));
	fb_op(&b, ISA_FUSED_IOTA, 1, ISA_DT_F32, 1, -1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 1, ISA_DT_F32, 1, 0, -1, 0);
	b.h.out_reg = 1;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_MAX);
	b.h.reduce_axes = 1u;
	in = fb_emit(&b, &t, fz_ap(3, 0, ISA_DT_F32, 2, sh2, ost2));
	in.flags = ISA_F_ACCUMULATE;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	for (uint64_t i = 0; i < m; i++) {
		float w = fmaxf((float)i, (float)(i % 5) + 3);
		T_CHECK(o[i] == w, "o[%llu] = %g want %g", (unsigned long long)i, o[i], w);
	}
	free(t.mem);
}
END_TEST

/* The reducing form's rows shorter than half a block, several per segment,
 * each folded into its own accumulator (kernels_fused.c, fz_rowset): sum over
 * dims 0 and 2 of (x - m)^2 for x [3, 37, 16] and m one value per row of dim
 * 1 (a batch norm's variance over 4x4 images), 32 + 5 rows per index of dim
 * 0. Integer values, so every order gives the same exact sums; a NaN in row
 * 20 of m is reported at output 20, blamed on the SUB. */
START_TEST(test_reduce_rows_per_segment)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[3] = { 3, 37, 16 };
	int64_t xst[3] = { 37 * 16, 16, 1 }, mst[3] = { 0, 1, 0 };
	uint64_t xo = tmem_alloc(&t, 2, 3 * 37 * 16 * 4), mo = tmem_alloc(&t, 2, 37 * 4);
	uint64_t oo = tmem_alloc(&t, 3, 37 * 4);
	float *x = (float *)(void *)tmem_ptr(&t, 2, xo), *mv = (float *)(void *)tmem_ptr(&t, 2, mo);
	const float *o = (const float *)(const void *)tmem_ptr(&t, 3, oo);
	for (uint32_t e = 0; e < 3 * 37 * 16; e++)
		x[e] = (float)(e % 11) - 5.0f;
	for (uint32_t c = 0; c < 37; c++)
		mv[c] = (float)(c % 7) - 3.0f;
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, fz_ap(2, xo, ISA_DT_F32, 3, sh, xst));
	fb_input(&b, fz_ap(2, mo, ISA_DT_F32, 3, sh, mst));
	fb_op(&b, ISA_ALU_SUB, 2, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_F32, 2, 2, -1, 0);
	b.h.out_reg = 2;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
	b.h.reduce_axes = 1u << 0 | 1u << 2;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, oo, ISA_DT_F32, 3, sh, mst));
	in.param = ISA_FUSED_STEPS_DEBUG(60);
	for (int bad = 0; bad < 2; bad++) {
		if (bad)
			mv[20] = NAN;
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
				 bad ? FWSIM_NUM_ERR : FWSIM_OK);
		for (uint32_t c = 0; c < 37; c++) {
			double want = 0;
			for (uint32_t a = 0; a < 3; a++)
				for (uint32_t e = 0; e < 16; e++) {
					double d = (double)x[(a * 37 + c) * 16 + e] - (double)mv[c];
					want += d * d;
				}
			T_CHECK(o[c] == (float)want || (bad && c == 20 && isnan(o[c])),
				"output %u: %g, want %g", c, o[c], want);
		}
		if (bad) {
			ck_assert_uint_eq(job.error.first_index, 20);
			ck_assert_uint_eq(job.error.count, 1);
			ck_assert_uint_eq(job.error.debug_id, 60);
		}
	}
	tmem_free(&t);
}
END_TEST

START_TEST(test_reduce_and_iota_validation)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 3, 4 };
	int64_t red[2] = { 1, 0 }, full[2] = { 4, 1 };
	uint64_t ooff = tmem_alloc(&t, 3, 48);
	fbuild_t b;
	struct { uint16_t reduce; uint32_t axes; int64_t *ost; uint32_t odt; uint32_t iota_dim;
		 uint32_t iota_dt; const char *needle; } cases[] = {
		{ ISA_FUSED_REDUCE(ISA_RED_SUM), 2, full, ISA_DT_F32, 0, ISA_DT_F32, "needs stride 0" },
		{ ISA_FUSED_REDUCE(ISA_RED_SUM), 4, red, ISA_DT_F32, 0, ISA_DT_F32, "reduce_axes" },
		{ ISA_FUSED_REDUCE(ISA_RED_ASSIGN), 2, red, ISA_DT_F32, 0, ISA_DT_F32, "no combiner" },
		{ ISA_FUSED_REDUCE(ISA_RED_AND), 2, red, ISA_DT_F32, 0, ISA_DT_F32, "does not take" },
		{ 0, 2, full, ISA_DT_F32, 0, ISA_DT_F32, "without reduce" },
		{ 0, 0, full, ISA_DT_F32, 2, ISA_DT_F32, "iota dim 2" },
		{ 0, 0, full, ISA_DT_PRED, 1, ISA_DT_PRED, "iota of dtype pred" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		fb_init(&b);
		fb_op(&b, ISA_FUSED_IOTA, 0, cases[c].iota_dt, (int)cases[c].iota_dim, -1, -1, 0);
		b.h.out_reg = 0;
		b.h.reduce = cases[c].reduce;
		b.h.reduce_axes = cases[c].axes;
		isa_insn_t in = fb_emit(&b, &t, fz_ap(3, ooff, cases[c].odt, 2, sh, cases[c].ost));
		expect_desc_bad(&t, &in, cases[c].needle);
	}
	/* ACCUMULATE without the reducing form */
	fb_init(&b);
	fb_op(&b, ISA_FUSED_IOTA, 0, ISA_DT_F32, 0, -1, -1, 0);
	b.h.out_reg = 0;
	isa_insn_t ia = fb_emit(&b, &t, fz_ap(3, ooff, ISA_DT_F32, 2, sh, full));
	ia.flags = ISA_F_ACCUMULATE;
	expect_desc_bad(&t, &ia, "accumulate flag without reduce");
	/* iota's unused sources */
	fb_init(&b);
	fb_op(&b, ISA_FUSED_IOTA, 0, ISA_DT_F32, 0, 1, -1, 0);
	b.h.out_reg = 0;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, ooff, ISA_DT_F32, 2, sh, full));
	expect_desc_bad(&t, &in, "unused src");
	tmem_free(&t);
}
END_TEST

/* The reducing form's work is charged to the watchdog as the elementwise
 * form's is: 2^34 iteration elements (stride-0 input, iota, one output) stop
 * within a second of CPU of a 300 ms deadline instead of running for minutes;
 * the validation bound (elements x steps) holds for its iteration space. */
START_TEST(test_reduce_form_stops_at_the_deadline)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 1u << 18, 1u << 16 };
	int64_t st0[2] = { 0, 0 };
	uint64_t ioff = tmem_alloc(&t, 2, 4), ooff = tmem_alloc(&t, 3, 4);
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, fz_ap(2, ioff, ISA_DT_F32, 2, sh, st0));
	fb_op(&b, ISA_FUSED_IOTA, 1, ISA_DT_F32, 1, -1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 1, ISA_DT_F32, 0, 1, -1, 0);
	b.h.out_reg = 1;
	b.h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
	b.h.reduce_axes = 3;
	isa_insn_t in = fb_emit(&b, &t, fz_ap(3, ooff, ISA_DT_F32, 2, sh, st0));
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_job_t job;
	uint64_t t0 = tnow_ns(), c0 = tcpu_ns();
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, t0 + 300 * 1000000ull, &job), FWSIM_TIMEOUT);
	uint64_t took = (tnow_ns() - t0) / 1000000ull, cpu = (tcpu_ns() - c0) / 1000000ull;
	ck_assert_msg(took >= 300 && cpu < 1300, "took %llu ms (%llu ms of CPU) for a 300 ms deadline",
		      (unsigned long long)took, (unsigned long long)cpu);
	ck_assert_msg(strstr(job.error.message, "deadline passed during vector insn 0 (fused)"), "%s",
		      job.error.message);
	/* 2^40 + 1 iteration elements are refused when the program is created */
	fwsim_program_t *p = NULL;
	char err[200];
	in.ap[0].shape[0] = (1ull << 24) + 1;
	in.ap[2].shape[0] = (1ull << 24) + 1;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_null(p);
	tmem_free(&t);
}
END_TEST

START_TEST(test_static_validation_of_fused_insn)
{
	tmem_t t;
	tmem_init(&t);
	fbuild_t b;
	isa_ap_t out;
	isa_insn_t good = good_fused(&t, &b, &out), in;
	char err[200];
#define BAD(MUT, NEEDLE) do { in = good; MUT; \
	ck_assert_int_eq(t_insn_check(&in, T_NREG, 1, err, sizeof(err)), -1); \
	ck_assert_msg(strstr(err, NEEDLE), "'%s' lacks '%s'", err, NEEDLE); } while (0)
	BAD(in.ap[1].region = 1, "constants region");
	BAD(in.ap[1].dtype = ISA_DT_S8, "constants region");
	BAD(in.ap[1].stride[0] = 2, "constants region");
	BAD(in.ap[1].shape[0] = 8, "descriptor ap1 has 8 bytes");
	BAD(in.ap[1].shape[0] = 1 << 20, "descriptor ap1 has");
	BAD(in.ap[2].shape[0] = 5, "ap2 shape differs");
	BAD(in.n_ap = 1, "n_ap");
	BAD(in.sub = 3, "sub-op");
	BAD(in.imm[0] = 1, "imm");
	BAD(in.flags = ISA_F_INVERT, "invert");
#undef BAD
	/* ISA 1.3: ACCUMULATE is the reducing form's, checked with the descriptor
	 * (test_reduce_and_iota_validation) */
	in = good;
	in.flags = ISA_F_ACCUMULATE;
	ck_assert_int_eq(t_insn_check(&in, T_NREG, 1, err, sizeof(err)), 0);
	/* ISA 1.2: param names the steps' debug entries */
	in = good;
	in.param = ISA_FUSED_STEPS_DEBUG(7);
	ck_assert_int_eq(t_insn_check(&in, T_NREG, 1, err, sizeof(err)), 0);
	ck_assert_str_eq(isa_opcode_name(ISA_OP_FUSED), "fused");
	/* n_ap must match the input count: 4 inputs need ap2 and ap3 */
	in = good;
	in.n_ap = 3;
	memset(&in.ap[3], 0, sizeof(in.ap[3]));
	ck_assert_int_eq(t_insn_check(&in, T_NREG, 1, err, sizeof(err)), 0);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_INVALID);
	ck_assert_ptr_nonnull(strstr(job.error.message, "n_ap 3"));
	tmem_free(&t);
}
END_TEST

/* ---- OOB: descriptor operands are checked like instruction operands ---- */

START_TEST(test_oob_extra_input_stops_before_writing)
{
	tmem_t t;
	tmem_init(&t);
	fbuild_t b;
	isa_ap_t out;
	isa_insn_t in = good_fused(&t, &b, &out);
	uint8_t *d = tmem_ptr(&t, 0, in.ap[1].offset);
	/* input 3 (the second extra ap) starts past its region's end */
	size_t off = sizeof(isa_fused_desc_t) + sizeof(isa_ap_t) + offsetof(isa_ap_t, offset);
	uint64_t far = T_REGSZ - 8;
	memcpy(d + off, &far, 8);
	float *o = (float *)(void *)tmem_ptr(&t, 3, out.offset);
	for (int i = 0; i < 12; i++)
		o[i] = 5.0f;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OOB);
	ck_assert_uint_eq(job.error.ap_index, 5);
	ck_assert_uint_eq(job.error.region, 2);
	ck_assert_ptr_nonnull(strstr(job.error.message, "input 3"));
	for (int i = 0; i < 12; i++)
		ck_assert(o[i] == 5.0f);
	/* negative stride reaching below the region start */
	far = 0;
	memcpy(d + off, &far, 8);
	int64_t neg = -1;
	memcpy(d + sizeof(isa_fused_desc_t) + sizeof(isa_ap_t) + offsetof(isa_ap_t, stride) + 8,
	       &neg, 8);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OOB);
	/* a descriptor that itself runs past the constants region */
	isa_insn_t in2 = in;
	in2.ap[1].offset = T_REGSZ - 64;
	ck_assert_int_eq(trun1(&t, &in2, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OOB);
	ck_assert_uint_eq(job.error.ap_index, 1);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

/* One fused instruction replaces a chain: in cache it costs about what the
 * chain costs (memory-bound it is ~2x faster: docs/isa.md); a smoke check of
 * the blocked loop, not a benchmark. */
START_TEST(test_fused_faster_than_chain)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[1] = { 32768 };
	isa_ap_t a = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t c = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t t1 = tmk_ap(&t, 1, ISA_DT_F32, 1, sh, L_CONTIG);
	uint64_t seed = 3;
	fill_random(&t, &a, &seed);
	fill_random(&t, &c, &seed);
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, a);
	fb_input(&b, c);
	uint32_t ops[6] = { ISA_ALU_ADD, ISA_ALU_MUL, ISA_ALU_SUB, ISA_ALU_MAX, ISA_ALU_MUL, ISA_ALU_ADD };
	isa_insn_t chain[6];
	for (int i = 0; i < 6; i++) {
		fb_op(&b, ops[i], 2, ISA_DT_F32, i == 0 ? 0 : 2, 1, -1, 0);
		chain[i] = isa_insn_init(ISA_OP_ALU, ops[i]);
		chain[i].n_ap = 3;
		chain[i].ap[0] = i == 5 ? o : t1;
		chain[i].ap[1] = i == 0 ? a : t1;
		chain[i].ap[2] = c;
	}
	b.h.out_reg = 2;
	isa_insn_t fz = fb_emit(&b, &t, o);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
	uint32_t n[ISA_ENGINE_COUNT] = { 0 };
	fwsim_job_t job;
	uint64_t best_chain = UINT64_MAX, best_fused = UINT64_MAX;
	for (int rep = 0; rep < 5; rep++) {
		s[1] = chain;
		n[1] = 6;
		ck_assert_int_eq(trun_prog(&t, NULL, s, n, 0, 0, &job), FWSIM_OK);
		best_chain = job.engine_busy_ns[1] < best_chain ? job.engine_busy_ns[1] : best_chain;
		float want = ((float *)(void *)tmem_ptr(&t, 3, o.offset))[123];
		s[1] = &fz;
		n[1] = 1;
		ck_assert_int_eq(trun_prog(&t, NULL, s, n, 0, 0, &job), FWSIM_OK);
		best_fused = job.engine_busy_ns[1] < best_fused ? job.engine_busy_ns[1] : best_fused;
		ck_assert(((float *)(void *)tmem_ptr(&t, 3, o.offset))[123] == want);
	}
	fprintf(stderr, "fused 6-op chain over 32768 f32: chain %llu ns, fused %llu ns\n",
		(unsigned long long)best_chain, (unsigned long long)best_fused);
	ck_assert_uint_le(best_fused, best_chain * 3); /* loose: sanitizer builds, busy hosts */
	tmem_free(&t);
}
END_TEST

/* Over several blocks: a constant's lane is kept from block to block only
 * while nothing overwrites it (here an ADD into the constant's register, and a
 * second constant of another value in the same register), and a compare or
 * select writes its own register directly unless it also reads it: hardtanh's
 * backward select(x >= 0 and x <= 6, dy, 0), x * 2 + 2 + 3, and (x - m) * m
 * with m broadcast along the inner dim (a stride-0 input's lane is kept over
 * a row's blocks and refilled for the next row), against scalar references. */
START_TEST(test_constant_lanes_and_class_changes_across_blocks)
{
	tmem_t t;
	tmem_init(&t);
	enum { N = 3 * 700 };
	uint64_t sh[1] = { N };
	isa_ap_t x = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t dy = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	isa_ap_t o2 = tmk_ap(&t, 2, ISA_DT_F32, 1, sh, L_CONTIG);
	float *xv = (float *)tmem_ptr(&t, 2, x.offset), *dv = (float *)tmem_ptr(&t, 2, dy.offset);
	for (int i = 0; i < N; i++) {
		xv[i] = (float)((i * 37) % 17) - 5.5f; /* -5.5 .. 10.5 */
		dv[i] = (float)i + 0.25f;
	}
	/* hardtanh backward; the select's result lands in the compare's register */
	fbuild_t b;
	fb_init(&b);
	fb_input(&b, x);
	fb_input(&b, dy);
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(0.0));
	fb_op(&b, ISA_ALU_CMP_GE, 3, ISA_DT_PRED, 0, 2, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 4, ISA_DT_F32, -1, -1, -1, fimm(6.0));
	fb_op(&b, ISA_ALU_CMP_LE, 5, ISA_DT_PRED, 0, 4, -1, 0);
	fb_op(&b, ISA_ALU_AND, 3, ISA_DT_PRED, 3, 5, -1, 0);
	fb_op(&b, ISA_ALU_SELECT, 3, ISA_DT_F32, 3, 1, 2, 0);
	b.h.out_reg = 3;
	isa_insn_t in = fb_emit(&b, &t, o);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	const float *ov = (const float *)tmem_ptr(&t, 2, o.offset);
	for (int i = 0; i < N; i++)
		ck_assert_msg(ov[i] == (xv[i] >= 0 && xv[i] <= 6 ? dv[i] : 0.0f), "element %d: %g", i,
			      (double)ov[i]);
	/* r2 = 2; r3 = x * r2; r2 = r3 + r2 (overwrites the constant);
	 * r4 = 3; r4 = 3 again in r2 after its use: out = (x * 2 + 2) + 3 */
	fb_init(&b);
	fb_input(&b, x);
	fb_op(&b, ISA_FUSED_CONST, 1, ISA_DT_F32, -1, -1, -1, fimm(2.0));
	fb_op(&b, ISA_ALU_MUL, 2, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 1, ISA_DT_F32, 2, 1, -1, 0);
	fb_op(&b, ISA_FUSED_CONST, 2, ISA_DT_F32, -1, -1, -1, fimm(3.0));
	fb_op(&b, ISA_ALU_ADD, 1, ISA_DT_F32, 1, 2, -1, 0);
	b.h.out_reg = 1;
	in = fb_emit(&b, &t, o2);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ov = (const float *)tmem_ptr(&t, 2, o2.offset);
	for (int i = 0; i < N; i++)
		ck_assert_msg(ov[i] == xv[i] * 2.0f + 2.0f + 3.0f, "element %d: %g", i, (double)ov[i]);
	/* a [3] vector broadcast along the inner dim of [3, 700] (a batch norm's
	 * mean): its lane is kept over the blocks of a row, refilled for the
	 * next row, and its register is overwritten by a step in every block:
	 * r1 = x - m; r1 = r1 * m (into m's register); out = r1 */
	uint64_t sh2[2] = { 3, 700 };
	isa_ap_t x2 = tmk_ap(&t, 2, ISA_DT_F32, 2, sh2, L_CONTIG);
	isa_ap_t o3 = tmk_ap(&t, 2, ISA_DT_F32, 2, sh2, L_CONTIG);
	isa_ap_t mv = tmk_ap(&t, 2, ISA_DT_F32, 1, sh2, L_CONTIG);
	float *mp = (float *)tmem_ptr(&t, 2, mv.offset);
	mp[0] = 1.5f;
	mp[1] = -2.0f;
	mp[2] = 0.25f;
	isa_ap_t mb = mv;
	mb.rank = 2;
	mb.shape[0] = 3;
	mb.shape[1] = 700;
	mb.stride[0] = 1;
	mb.stride[1] = 0;
	memcpy(tmem_ptr(&t, 2, x2.offset), xv, sizeof(float) * N);
	fb_init(&b);
	fb_input(&b, x2);
	fb_input(&b, mb);
	fb_op(&b, ISA_ALU_SUB, 2, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 1, ISA_DT_F32, 2, 1, -1, 0);
	b.h.out_reg = 1;
	in = fb_emit(&b, &t, o3);
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ov = (const float *)tmem_ptr(&t, 2, o3.offset);
	for (int i = 0; i < N; i++) {
		float m = mp[i / 700];
		ck_assert_msg(ov[i] == (xv[i] - m) * m, "element %d: %g", i, (double)ov[i]);
	}
	tmem_free(&t);
}
END_TEST

/* Sanitizer builds run the first N_RANDOM_DEFAULT random programs by default and
 * the rest in meson's 'full' suite (Check tag "full", tests/meson.build): each
 * program is a forked test, and a fork of a sanitized process costs ~0.2 s, so the
 * 1000 took minutes there while a few hundred already reach every op, dtype class
 * and layout of the generator. Release builds run all 1000 (~15 s). */
#if defined(__SANITIZE_ADDRESS__)
#define N_RANDOM_DEFAULT 250
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define N_RANDOM_DEFAULT 250
#endif
#endif
#ifndef N_RANDOM_DEFAULT
#define N_RANDOM_DEFAULT N_RANDOM
#endif
#define N_RANDOM 1000

/* Signed zeros, infinities and NaN in about one element in 8. */
static void sprinkle_specials(tmem_t *t, const isa_ap_t *ap, uint64_t *seed)
{
	static const double special[5] = { 0.0, -0.0, NAN, INFINITY, -INFINITY };
	uint64_t n = tnumel(ap->rank, ap->shape), idx[ISA_MAX_RANK];
	for (uint64_t f = 0; f < n; f++) {
		uint64_t r = trand(seed);
		if (r % 8)
			continue;
		tunflat(f, ap->rank, ap->shape, idx);
		tset(ap->dtype, telem(t, ap, idx), special[(r >> 8) % 5]);
	}
}

/* One-pass trees (fused_tree.h): random trees of ADD, SUB, MUL, MAX, MIN, CLAMP and selects up to
 * depth 4 over inputs read in place, one value per row (rows of 16 and 49
 * run several per segment), one value for all, strided and bf16, CONSTs,
 * steps reading a value twice, registers reused; rows of 16 to 1100
 * (blocks and their tails, over 2 x 70 short rows or 2 x 5 long ones); the
 * output in place and strided. Each is
 * planned as a tree and matches the op-by-op ALU program bit for bit; in the
 * reducing form (sums over dims 0 and 2) it matches, bit for bit, the same
 * program made step by step by a last CLAMP(v, v, v) (bounds from a step),
 * which no tree takes. Inputs hold signed zeros, infinities and NaN. */
START_TEST(test_one_pass_trees)
{
	/* cases 24..47: the same with the AVX2 loop (the cap a CPU without
	 * AVX-512 has) */
	const int ci = _i % 24;
	fwsim_set_max_isa(_i >= 24 ? FWSIM_ISA_AVX2 : FWSIM_ISA_AUTO);
	static const uint64_t cols[6] = { 16, 49, 50, 300, 700, 1100 };
	uint64_t seed = 0x7ee5ull + (uint64_t)ci * 104729;
	tmem_t t;
	tmem_init(&t);
	/* short rows: 2 x 70 of them, blocks of 1008 elements (FZ_TREE_BLOCK) */
	uint64_t rows = cols[ci % 6] <= 50 ? 70 : 5;
	uint64_t sh[3] = { 2, rows, cols[ci % 6] }, rsh[2] = { 2, rows };
	fbuild_t b;
	fb_init(&b);
	tgen_t g = { .b = &b, .t = &t, .seed = &seed, .rank = 3, .shape = sh };
	g.nin = 2 + (uint32_t)(trand(&seed) % 4);
	uint8_t in_dt[6];
	for (uint32_t i = 0; i < g.nin; i++) {
		uint32_t kind = (i + (uint32_t)ci) % 5;
		isa_ap_t ap;
		if (kind == 1) { /* one value per row */
			ap = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, L_CONTIG);
			ap.rank = 3;
			ap.shape[2] = sh[2];
			ap.stride[2] = 0;
		} else if (kind == 2) { /* one value for all */
			ap = tmk_ap(&t, 2, ISA_DT_F32, 3, sh, L_CONTIG);
			ap.stride[0] = ap.stride[1] = ap.stride[2] = 0;
		} else {
			ap = tmk_ap(&t, 2, kind == 4 ? ISA_DT_BF16 : ISA_DT_F32, 3, sh,
				    kind == 3 ? L_TRANSPOSED : L_CONTIG);
		}
		fill_random(&t, &ap, &seed);
		sprinkle_specials(&t, &ap, &seed);
		fb_input(&b, ap);
		g.in_ap[i] = ap;
		in_dt[i] = ap.dtype;
		if (kind == 4) { /* the ALU reference reads an f32 copy */
			isa_insn_t cp = isa_insn_init(ISA_OP_COPY, 0);
			cp.n_ap = 2;
			cp.ap[0] = tmk_ap(&t, 1, ISA_DT_F32, 3, sh, L_CONTIG);
			cp.ap[1] = ap;
			g.ref[g.nref++] = cp;
			g.in_ap[i] = cp.ap[0];
			g.bf16[i] = true;
		}
	}
	g.next_reg = g.nin;
	isa_ap_t vap;
	uint32_t root = tg_tree(&g, 4, true, false, &vap);
	b.h.out_reg = (uint8_t)root;
	bool live[ISA_FUSED_MAX_CODE];
	for (uint32_t q = 0; q < ISA_FUSED_MAX_CODE; q++)
		live[q] = true;
	fz_tree_t tr;
	fz_tree_plan(b.code, b.h.n_code, live, in_dt, g.nin, root, &tr);
	if (getenv("FUSED_DEBUG"))
		for (uint32_t q = 0; q < b.h.n_code; q++)
			fprintf(stderr, "case %d step %u: r%u = op %u (r%u r%u) nin %u out %u\n", ci, q,
				b.code[q].dst, b.code[q].op, b.code[q].src[0], b.code[q].src[1], g.nin, root);
	ck_assert_msg(tr.n > 0 || !fwsim_cpu_avx2_fma(), "case %d: %u steps not planned as a tree",
		      ci, b.h.n_code);

	/* elementwise, against the op-by-op program */
	isa_ap_t o = tmk_ap(&t, 3, ISA_DT_F32, 3, sh, (ci & 1) ? L_STRIDED : L_CONTIG);
	isa_insn_t fz = fb_emit(&b, &t, o);
	fwsim_job_t job;
	const isa_insn_t *progs[ISA_ENGINE_COUNT] = { 0 };
	uint32_t nprog[ISA_ENGINE_COUNT] = { 0 };
	progs[ISA_ENGINE_VECTOR] = g.ref;
	nprog[ISA_ENGINE_VECTOR] = g.nref;
	ck_assert_int_eq(trun_prog(&t, NULL, progs, nprog, 0, 0, &job), FWSIM_OK);
	fwsim_status_t st = trun1(&t, &fz, ISA_ENGINE_VECTOR, 0, &job);
	ck_assert_msg(st == FWSIM_OK, "case %d: %d %s", ci, st, job.error.message);
	uint64_t idx[3];
	for (uint64_t f = 0; f < tnumel(3, sh); f++) {
		tunflat(f, 3, sh, idx);
		float want = (float)tget(ISA_DT_F32, telem(&t, &vap, idx));
		float got = (float)tget(ISA_DT_F32, telem(&t, &o, idx));
		T_CHECK(memcmp(&want, &got, 4) == 0 || (isnan(want) && isnan(got)),
			"case %d (%u steps, rows of %llu): element %llu: %a, op by op %a", ci,
			b.h.n_code, (unsigned long long)sh[2], (unsigned long long)f, got, want);
	}

	/* the reducing form, against the step-by-step program */
	int64_t rst[3] = { 0, 1, 0 };
	uint64_t ro[2] = { tmem_alloc(&t, 3, rows * 4), tmem_alloc(&t, 3, rows * 4) };
	fbuild_t bs = b;
	fb_op(&bs, ISA_ALU_CLAMP, root, ISA_DT_F32, (int)root, (int)root, (int)root, 0);
	fz_tree_plan(bs.code, bs.h.n_code, live, in_dt, g.nin, root, &tr);
	ck_assert(tr.n == 0);
	fbuild_t *rb[2] = { &b, &bs };
	for (int v = 0; v < 2; v++) {
		rb[v]->h.reduce = ISA_FUSED_REDUCE(ISA_RED_SUM);
		rb[v]->h.reduce_axes = 1u << 0 | 1u << 2;
		isa_insn_t in = fb_emit(rb[v], &t, fz_ap(3, ro[v], ISA_DT_F32, 3, sh, rst));
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	}
	const float *r0 = (const float *)(const void *)tmem_ptr(&t, 3, ro[0]);
	const float *r1 = (const float *)(const void *)tmem_ptr(&t, 3, ro[1]);
	for (uint32_t c = 0; c < rows; c++)
		/* a NaN's sign aside: the AVX2 loop's register pressure lets the
		 * compiler commute an ADD or MUL, whose NaN is then the other
		 * operand's when both are NaN (docs/isa.md) */
		T_CHECK(memcmp(&r0[c], &r1[c], 4) == 0 || (isnan(r0[c]) && isnan(r1[c])),
			"case %d: sum %u: %a, step by step %a", ci, c, r0[c], r1[c]);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

/* Trees fz_tree_plan does not take: a value read by two steps (a DAG), two
 * subtrees that each need the temporary, a DIV, a bf16 step, an integer
 * input; and the smallest one it does, with its ops. */
START_TEST(test_one_pass_tree_plans)
{
	if (!fwsim_cpu_avx2_fma())
		return;
	fbuild_t b;
	fz_tree_t tr;
	bool live[8] = { true, true, true, true, true, true, true, true };
	uint8_t f4[4] = { ISA_DT_F32, ISA_DT_F32, ISA_DT_F32, ISA_DT_F32 };
	uint8_t i4[4] = { ISA_DT_F32, ISA_DT_S32, ISA_DT_F32, ISA_DT_F32 };
	fb_init(&b); /* (x0 - x1) * x2: LOAD 0, SUB 1, MUL 2 */
	fb_op(&b, ISA_ALU_SUB, 4, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 4, ISA_DT_F32, 4, 2, -1, 0);
	fz_tree_plan(b.code, 2, live, f4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 3);
	ck_assert(tr.op[0] == FZT_LOAD && tr.src[0] == 0 && tr.op[1] == FZT_SUB && tr.src[1] == 1 &&
		  tr.op[2] == FZT_MUL && tr.src[2] == 2);
	fz_tree_plan(b.code, 2, live, i4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 0);
	fb_init(&b); /* x2 - (x0 * x1): the step's value, then x2 minus it */
	fb_op(&b, ISA_ALU_MUL, 4, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 2, 4, -1, 0);
	fz_tree_plan(b.code, 2, live, f4, 4, 5, &tr);
	ck_assert(tr.n == 3 && tr.op[2] == FZT_RSUB && tr.src[2] == 2);
	fb_init(&b); /* t = x0 * x1 read by two steps */
	fb_op(&b, ISA_ALU_MUL, 4, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 5, ISA_DT_F32, 4, 2, -1, 0);
	fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 5, 4, -1, 0);
	fz_tree_plan(b.code, 3, live, f4, 4, 5, &tr);
	ck_assert_uint_eq(tr.n, 0);
	fb_init(&b); /* ((x0 - x1) * (x2 - x3)) - ((x0 + x1) * (x2 + x3)): t twice */
	fb_op(&b, ISA_ALU_SUB, 4, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_SUB, 5, ISA_DT_F32, 2, 3, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 4, ISA_DT_F32, 4, 5, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 5, ISA_DT_F32, 0, 1, -1, 0);
	fb_op(&b, ISA_ALU_ADD, 6, ISA_DT_F32, 2, 3, -1, 0);
	fb_op(&b, ISA_ALU_MUL, 5, ISA_DT_F32, 5, 6, -1, 0);
	fb_op(&b, ISA_ALU_SUB, 4, ISA_DT_F32, 4, 5, -1, 0);
	fz_tree_plan(b.code, 7, live, f4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 0);
	b.code[3].op = ISA_ALU_MUL; /* ... but one side a leaf product: x0 * x1 ... */
	b.code[5].src[0] = 5; /* (x0 * x1) * (x2 + x3) still needs t */
	fz_tree_plan(b.code, 7, live, f4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 0);
	fb_init(&b); /* a DIV; a step rounding to bf16 */
	fb_op(&b, ISA_ALU_DIV, 4, ISA_DT_F32, 0, 1, -1, 0);
	fz_tree_plan(b.code, 1, live, f4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 0);
	b.code[0].op = ISA_ALU_ADD;
	b.code[0].dtype = ISA_DT_BF16;
	fz_tree_plan(b.code, 1, live, f4, 4, 4, &tr);
	ck_assert_uint_eq(tr.n, 0);
}
END_TEST

static Suite *fused_suite(void)
{
	Suite *s = suite_create("fwsim-fused");
	TCase *more = tcase_create("fused-random-more");
	tcase_set_tags(more, "full");
	tcase_set_timeout(more, 1800);
	tcase_add_loop_test(more, test_random_programs_match_op_by_op, N_RANDOM_DEFAULT, N_RANDOM);
	suite_add_tcase(s, more);
	TCase *tc = tcase_create("fused");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_random_programs_match_op_by_op, 0, N_RANDOM_DEFAULT);
	tcase_add_test(tc, test_scalar_reference_five_inputs);
	tcase_add_test(tc, test_integer_intermediates_wrap);
	tcase_add_test(tc, test_constant_lanes_and_class_changes_across_blocks);
	tcase_add_test(tc, test_flops_per_step_per_element);
	tcase_add_test(tc, test_no_inputs_rank0_and_empty);
	tcase_add_test(tc, test_nan_location_in_fused_output);
	tcase_add_test(tc, test_inf_from_narrowing_in_fused_output);
	tcase_add_test(tc, test_dead_steps_skipped_and_not_blamed);
	tcase_add_test(tc, test_mask_select_trees);
	tcase_add_loop_test(tc, test_mask_select_nan_blamed_on_select, 0, 2);
	tcase_add_loop_test(tc, test_tree_with_compares_blamed_over_short_rows, 0, 2);
	tcase_add_test(tc, test_op_pairs);
	tcase_add_loop_test(tc, test_one_pass_trees, 0, 48);
	tcase_add_test(tc, test_one_pass_tree_plans);
	tcase_add_test(tc, test_output_written_in_place);
	tcase_add_test(tc, test_fused_minmax_signed_zeros_ieee);
	tcase_add_loop_test(tc, test_rows_per_segment, 0, 2);
	tcase_add_test(tc, test_reduce_rows_per_segment);
	tcase_add_loop_test(tc, test_transposed_input_in_bands, 0, 2);
	tcase_add_test(tc, test_descriptor_garbage_rejected);
	tcase_add_test(tc, test_static_validation_of_fused_insn);
	tcase_add_test(tc, test_reduce_one_hot_with_iota);
	tcase_add_test(tc, test_reduce_outer_axes_int_max_and_iota_start);
	tcase_add_test(tc, test_reduce_in_parts_matches_reference);
	tcase_add_test(tc, test_reduce_and_iota_validation);
	tcase_add_test(tc, test_reduce_form_stops_at_the_deadline);
	tcase_add_test(tc, test_oob_extra_input_stops_before_writing);
	tcase_add_test(tc, test_fused_faster_than_chain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fused_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
