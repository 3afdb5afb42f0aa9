/* neuron-profile's per-instruction flops (runtime/trace_model.c) against the simulator's job counter (firmware-sim) for every opcode, every ALU sub-op and FUSED programs: one rule, isa_insn_flops (docs/isa.md, "FLOPs"). */
#include "../fwsim/fwsim_test.h"
#include "trace.h"

#define E 24 /* elements of every operand */

/* Runs one instruction in the simulator and checks that its job flops equal
 * the profiler's count for it (consts: region 0, where descriptors live).
 * Returns the count. */
static uint64_t agree(tmem_t *t, const isa_insn_t *in, const char *what)
{
	char err[200];
	ck_assert_msg(t_insn_check(in, T_NREG, 1, err, sizeof(err)) == 0, "%s: %s", what, err);
	fwsim_job_t job;
	fwsim_status_t st = trun1(t, in, ISA_ENGINE_VECTOR, 0, &job);
	ck_assert_msg(st == FWSIM_OK, "%s: %s", what, fwsim_status_str(st));
	uint64_t flops, bytes;
	nrt_trace_insn_cost(in, tmem_ptr(t, ISA_REGION_CONST, 0), T_REGSZ, &flops, &bytes);
	ck_assert_msg(flops == job.flops, "%s: profiler counts %llu flops, simulator %llu", what,
		      (unsigned long long)flops, (unsigned long long)job.flops);
	return flops;
}

static isa_ap_t vec(tmem_t *t, uint32_t dt)
{
	uint64_t sh[1] = { E };
	return tmk_ap(t, 2, dt, 1, sh, L_CONTIG);
}

/* Every ALU sub-op with every operand dtype it accepts (out f32/s32/pred):
 * float operands count (FMA two per element), integer and pred ones none. */
START_TEST(test_every_alu_sub_op)
{
	static const uint32_t dts[] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_S32, ISA_DT_U8, ISA_DT_PRED };
	uint32_t n_subs = 0, n_valid = 0, n_float = 0;
	/* one window for all (about 1 100 small operands): a fresh one per
	 * instruction made the test slow under the sanitizers */
	tmem_t t;
	tmem_init(&t);
	for (uint32_t op = 0; op < ISA_ALU_END; op++) {
		int arity = isa_alu_arity(op);
		if (!arity)
			continue;
		n_subs++;
		uint32_t ok_for_op = 0;
		for (size_t a = 0; a < sizeof(dts) / sizeof(dts[0]); a++) {
			for (size_t o = 0; o < sizeof(dts) / sizeof(dts[0]); o++) {
				isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
				in.n_ap = (uint8_t)(1 + arity);
				in.ap[0] = vec(&t, dts[o]);
				for (int k = 1; k <= arity; k++)
					in.ap[k] = vec(&t, dts[a]);
				if (op == ISA_ALU_SELECT) /* ap1 pred ? ap2 : ap3 */
					in.ap[1] = vec(&t, ISA_DT_PRED);
				if (op == ISA_ALU_SELECT && dts[a] == ISA_DT_PRED)
					continue;
				if (t_insn_check(&in, T_NREG, 1, NULL, 0) != 0)
					continue;
				char what[64];
				snprintf(what, sizeof(what), "alu %u, %s -> %s", op,
					 isa_dtype_name(in.ap[1].dtype), isa_dtype_name(dts[o]));
				uint64_t f = agree(&t, &in, what);
				uint64_t want = isa_dtype_is_float(in.ap[1].dtype)
							? (uint64_t)E * (op == ISA_ALU_FMA ? 2 : 1)
							: 0;
				ck_assert_msg(f == want, "%s: %llu flops, want %llu", what,
					      (unsigned long long)f, (unsigned long long)want);
				n_float += f != 0;
				ok_for_op++;
			}
		}
		ck_assert_msg(ok_for_op > 0, "alu %u: no operand dtype accepted", op);
		n_valid += ok_for_op;
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
	ck_assert_uint_ge(n_subs, 40);
	ck_assert_uint_gt(n_float, 20);
	ck_assert_uint_gt(n_valid, n_float);
}
END_TEST

/* The other opcodes, float and integer. */
START_TEST(test_every_opcode)
{
	for (int fl = 0; fl < 2; fl++) {
		uint32_t dt = fl ? ISA_DT_F32 : ISA_DT_S32;
		tmem_t t;
		tmem_init(&t);
		/* MATMUL [1,4,6] x [1,6,E/4]... shapes as the ISA wants them */
		uint64_t sa[3] = { 1, 4, 6 }, sb[3] = { 1, 6, 5 }, so[3] = { 1, 4, 5 };
		for (int acc = 0; acc < 2; acc++) {
			isa_insn_t mm = isa_insn_init(ISA_OP_MATMUL, 0);
			mm.n_ap = 3;
			mm.flags = acc ? ISA_F_ACCUMULATE : 0;
			mm.ap[0] = tmk_ap(&t, 2, dt, 3, so, L_CONTIG);
			mm.ap[1] = tmk_ap(&t, 2, dt, 3, sa, L_CONTIG);
			mm.ap[2] = tmk_ap(&t, 2, dt, 3, sb, L_CONTIG);
			uint64_t f = agree(&t, &mm, "matmul");
			ck_assert_uint_eq(f, fl ? 2 * 4 * 5 * 6 + (acc ? 4 * 5 : 0) : 0);
		}
		isa_insn_t act = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_RELU);
		act.n_ap = 2;
		act.imm[0] = 1;
		act.ap[0] = vec(&t, ISA_DT_F32);
		act.ap[1] = vec(&t, ISA_DT_F32);
		if (fl)
			ck_assert_uint_eq(agree(&t, &act, "activate"), 3 * E);
		uint64_t s1[1] = { 1 };
		isa_insn_t red = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
		red.n_ap = 2;
		red.param = 1;
		red.ap[0] = tmk_ap(&t, 2, dt, 1, s1, L_CONTIG);
		red.ap[1] = vec(&t, dt);
		ck_assert_uint_eq(agree(&t, &red, "reduce"), fl ? E : 0);
		isa_insn_t cp = isa_insn_init(ISA_OP_COPY, 0);
		cp.n_ap = 2;
		cp.ap[0] = vec(&t, dt);
		cp.ap[1] = vec(&t, dt);
		ck_assert_uint_eq(agree(&t, &cp, "copy"), 0);
		isa_insn_t io = isa_insn_init(ISA_OP_IOTA, 0);
		io.n_ap = 1;
		io.ap[0] = vec(&t, dt);
		ck_assert_uint_eq(agree(&t, &io, "iota"), 0);
		/* SCATTER ap0[8,3] <- ap1[4,3] by ap2[4] (indices 0: zeroed
		 * memory), every combiner; GATHER the other way round */
		uint64_t st[2] = { 8, 3 }, su[2] = { 4, 3 }, si[1] = { 4 };
		for (uint32_t c = 0; c < ISA_RED_END; c++) {
			isa_insn_t sc = isa_insn_init(ISA_OP_SCATTER, c);
			sc.n_ap = 3;
			sc.ap[0] = tmk_ap(&t, 2, dt, 2, st, L_CONTIG);
			sc.ap[1] = tmk_ap(&t, 2, dt, 2, su, L_CONTIG);
			sc.ap[2] = tmk_ap(&t, 2, ISA_DT_S32, 1, si, L_CONTIG);
			if (t_insn_check(&sc, T_NREG, 1, NULL, 0) != 0)
				continue; /* AND/OR of floats */
			ck_assert_uint_eq(agree(&t, &sc, "scatter"),
					  fl && c != ISA_RED_ASSIGN ? 4 * 3 : 0);
		}
		isa_insn_t ga = isa_insn_init(ISA_OP_GATHER, 0);
		ga.n_ap = 3;
		ga.ap[0] = tmk_ap(&t, 2, dt, 2, su, L_CONTIG);
		ga.ap[1] = tmk_ap(&t, 2, dt, 2, st, L_CONTIG);
		ga.ap[2] = tmk_ap(&t, 2, ISA_DT_S32, 1, si, L_CONTIG);
		ck_assert_uint_eq(agree(&t, &ga, "gather"), 0);
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		ck_assert_uint_eq(agree(&t, &nop, "nop"), 0);
		if (fl) {
			/* CONV (f32 only): out [1,2,3,4,4] from in [1,2,2,5,5] and a
			 * [2,3,2,2,2] kernel: 2 C K0 K1 per output, the window its ap3 */
			uint64_t co[5] = { 1, 2, 3, 4, 4 }, ci[5] = { 1, 2, 2, 5, 5 }, ck[5] = { 2, 3, 2, 2, 2 };
			const int64_t one[2] = { 1, 1 }, zero[2] = { 0, 0 };
			isa_insn_t cv = isa_insn_init(ISA_OP_CONV, 0);
			cv.n_ap = 4;
			cv.ap[0] = tmk_ap(&t, 2, ISA_DT_F32, 5, co, L_CONTIG);
			cv.ap[1] = tmk_ap(&t, 2, ISA_DT_F32, 5, ci, L_CONTIG);
			cv.ap[2] = tmk_ap(&t, 2, ISA_DT_F32, 5, ck, L_CONTIG);
			cv.ap[3] = isa_conv_window(one, one, one, zero);
			ck_assert_uint_eq(agree(&t, &cv, "conv"), 2 * (2 * 3 * 16) * (2 * 2 * 2));
		}
		tmem_free(&t);
	}
}
END_TEST

/* ---- FUSED: a descriptor in region 0 (the constants) ---- */

typedef struct fprog {
	isa_fused_desc_t h;
	isa_fused_op_t code[8];
} fprog_t;

static void fp_op(fprog_t *p, uint32_t op, uint32_t dst, uint32_t dt, uint32_t s0, uint32_t s1,
		  uint32_t s2, uint64_t imm)
{
	isa_fused_op_t *o = &p->code[p->h.n_code++];
	memset(o, 0, sizeof(*o));
	o->op = (uint16_t)op;
	o->dst = (uint8_t)dst;
	o->dtype = (uint8_t)dt;
	int ar = op < ISA_ALU_END ? isa_alu_arity(op) : op == ISA_FUSED_CONVERT ? 1 : 0;
	o->src[0] = (uint8_t)(ar > 0 ? s0 : 0);
	o->src[1] = (uint8_t)(ar > 1 ? s1 : 0);
	o->src[2] = (uint8_t)(ar > 2 ? s2 : 0);
	o->imm = imm;
	if (dst + 1u > p->h.n_regs)
		p->h.n_regs = (uint8_t)(dst + 1);
}

/* A FUSED instruction with two inputs of dtype in_dt writing out_dt. */
static isa_insn_t fp_emit(fprog_t *p, tmem_t *t, uint32_t in_dt, uint32_t out_dt,
			  uint32_t out_reg)
{
	p->h.out_reg = (uint8_t)out_reg;
	p->h.magic = ISA_FUSED_MAGIC;
	p->h.n_inputs = 2;
	if (p->h.n_regs < 2)
		p->h.n_regs = 2;
	size_t len = isa_fused_desc_size(2, p->h.n_code);
	uint64_t off = tmem_alloc(t, ISA_REGION_CONST, len);
	memcpy(tmem_ptr(t, ISA_REGION_CONST, off), &p->h, sizeof(p->h));
	memcpy(tmem_ptr(t, ISA_REGION_CONST, off + sizeof(p->h)), p->code,
	       p->h.n_code * sizeof(isa_fused_op_t));
	isa_insn_t in = isa_insn_init(ISA_OP_FUSED, 0);
	in.n_ap = 4;
	in.ap[0] = vec(t, out_dt);
	uint64_t sh[1] = { len };
	in.ap[1] = isa_ap_contig(ISA_REGION_CONST, off, ISA_DT_U8, 1, sh);
	in.ap[2] = vec(t, in_dt);
	in.ap[3] = vec(t, in_dt);
	return in;
}

/* A fused FMA is two FLOPs per element in both counts (neuron-profile
 * counted one); MUL, a float compare one, CONVERT, CONST and SELECT none;
 * an integer program none. */
START_TEST(test_fused_programs)
{
	tmem_t t;
	tmem_init(&t);
	fprog_t p;
	memset(&p, 0, sizeof(p));
	fp_op(&p, ISA_ALU_FMA, 2, ISA_DT_F32, 0, 1, 0, 0);
	isa_insn_t in = fp_emit(&p, &t, ISA_DT_F32, ISA_DT_F32, 2);
	ck_assert_uint_eq(agree(&t, &in, "fused fma"), 2 * E);

	memset(&p, 0, sizeof(p));
	fp_op(&p, ISA_ALU_FMA, 2, ISA_DT_F32, 0, 1, 0, 0);
	fp_op(&p, ISA_FUSED_CONST, 3, ISA_DT_F32, 0, 0, 0, 0);
	fp_op(&p, ISA_ALU_MUL, 4, ISA_DT_F32, 2, 3, 0, 0);
	fp_op(&p, ISA_ALU_CMP_LT, 5, ISA_DT_PRED, 4, 0, 0, 0);
	fp_op(&p, ISA_ALU_SELECT, 6, ISA_DT_F32, 5, 4, 0, 0);
	fp_op(&p, ISA_FUSED_CONVERT, 7, ISA_DT_BF16, 6, 0, 0, 0);
	in = fp_emit(&p, &t, ISA_DT_F32, ISA_DT_BF16, 7);
	ck_assert_uint_eq(agree(&t, &in, "fused mixed"), E * (2 + 1 + 1));

	memset(&p, 0, sizeof(p));
	fp_op(&p, ISA_ALU_MUL, 2, ISA_DT_S32, 0, 1, 0, 0);
	fp_op(&p, ISA_FUSED_CONVERT, 3, ISA_DT_F32, 2, 0, 0, 0);
	fp_op(&p, ISA_ALU_ADD, 3, ISA_DT_F32, 3, 3, 0, 0);
	in = fp_emit(&p, &t, ISA_DT_S32, ISA_DT_F32, 3);
	ck_assert_uint_eq(agree(&t, &in, "fused int then float"), E);
	tmem_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flops_rule");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_every_alu_sub_op);
	tcase_add_test(tc, test_every_opcode);
	tcase_add_test(tc, test_fused_programs);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
