/* isa_insn_validate rejects each malformed field; fwsim_program_create reports where. */
#include "fwsim_test.h"

static isa_insn_t good_add(void)
{
	uint64_t sh[2] = { 4, 8 };
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sh);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sh);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sh);
	return in;
}

static isa_insn_t good_matmul(void)
{
	uint64_t c[3] = { 2, 4, 5 }, a[3] = { 2, 4, 3 }, b[3] = { 2, 3, 5 };
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 3, c);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_BF16, 3, a);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_BF16, 3, b);
	return in;
}

static void expect_bad(const isa_insn_t *in, const char *needle)
{
	char err[200];
	ck_assert_int_eq(t_insn_check(in, 3, 4, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
}

/* The MATMUL work bound lives in isa_insn_validate (not only in
 * fwsim_program_create), so the NEFF reader refuses such a program at
 * nrt_load on the kernel backend too, which no longer links the simulator. */
START_TEST(test_matmul_work_bound_in_the_isa_check)
{
	/* stride-0 s32 [n,n] x [n,n]: n^3 multiply-adds over 64 bytes */
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	for (uint32_t i = 0; i < 3; i++) {
		uint64_t sh[2] = { 1u << 16, 1u << 12 };
		if (i == 0)
			sh[1] = 1u << 16;
		if (i == 2) {
			sh[0] = 1u << 12;
			sh[1] = 1u << 16;
		}
		in.ap[i] = isa_ap_contig(i, 0, ISA_DT_S32, 2, sh);
		in.ap[i].stride[0] = in.ap[i].stride[1] = 0;
	}
	char err[200];
	/* 2^16 x 2^16 outputs times K = 2^12: exactly 2^44, accepted */
	ck_assert_msg(t_insn_check(&in, 3, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(ISA_MAX_MATMUL_WORK, 1ull << 44);
	in.ap[1].shape[1] = in.ap[2].shape[0] = (1u << 12) + 1;
	expect_bad(&in, "matmul of 1.76e+13 multiply-adds, more than the simulator's bound of 2^44");
}
END_TEST

START_TEST(test_good_instructions_pass)
{
	isa_insn_t in = good_add();
	char err[200] = "x";
	ck_assert_int_eq(t_insn_check(&in, 3, 1, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	in = good_matmul();
	in.flags = ISA_F_ACCUMULATE;
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	in = isa_insn_init(ISA_OP_NOP, 0);
	in.wait_sem = 31;
	in.wait_value = 3;
	in.signal_sem = 0;
	ck_assert_int_eq(t_insn_check(&in, 0, 1, NULL, 0), 0);
	in = isa_insn_init(ISA_OP_JUMP, 0);
	in.param = 3;
	ck_assert_int_eq(t_insn_check(&in, 0, 4, NULL, 0), 0);
	ck_assert_str_eq(isa_dtype_name(ISA_DT_BF16), "bf16");
	ck_assert_str_eq(isa_dtype_name(ISA_DT_PRED), "pred");
	ck_assert_str_eq(isa_dtype_name(99), "invalid");
	uint64_t sh[3] = { 2, 3, 4 };
	isa_ap_t ap = isa_ap_contig(1, 64, ISA_DT_S16, 3, sh);
	ck_assert_uint_eq(ap.offset, 64);
	ck_assert_int_eq(ap.stride[0], 12);
	ck_assert_int_eq(ap.stride[1], 4);
	ck_assert_int_eq(ap.stride[2], 1);
	ck_assert_uint_eq(isa_ap_num_elements(&ap), 24);
}
END_TEST

START_TEST(test_header_fields_rejected)
{
	isa_insn_t in;
	in = good_add(); in.opcode = ISA_OP_COUNT; expect_bad(&in, "unknown opcode");
	in = good_add(); in.sub = 60; expect_bad(&in, "unknown alu sub-op");
	in = good_add(); in.sub = ISA_ALU_END; expect_bad(&in, "unknown alu sub-op");
	in = good_add(); in.flags = 1u << 5; expect_bad(&in, "unknown flags");
	in = good_add(); in.flags = ISA_F_ACCUMULATE; expect_bad(&in, "accumulate");
	in = good_add(); in.flags = ISA_F_INVERT; expect_bad(&in, "invert");
	in = good_add(); in.wait_sem = ISA_NUM_SEMS; expect_bad(&in, "wait_sem");
	in = good_add(); in.wait_value = 1; expect_bad(&in, "wait_value");
	in = good_add(); in.signal_sem = 40; expect_bad(&in, "signal_sem");
	in = good_add(); in.pad0[1] = 1; expect_bad(&in, "reserved");
	in = good_add(); in.reserved = 1; expect_bad(&in, "reserved");
	in = good_add(); in.param = 1; expect_bad(&in, "param");
	in = good_add(); in.imm[1] = 0.5; expect_bad(&in, "imm");
	in = good_add(); in.n_ap = 2; expect_bad(&in, "n_ap");
	in = good_add(); in.n_ap = 4; expect_bad(&in, "n_ap");
	in = good_add(); in.ap[3].offset = 8; expect_bad(&in, "unused ap3");
	in = isa_insn_init(ISA_OP_COPY, 3); expect_bad(&in, "sub-op");
	in = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_END); expect_bad(&in, "unknown activation");
}
END_TEST

START_TEST(test_operand_fields_rejected)
{
	isa_insn_t in;
	in = good_add(); in.ap[1].region = 3; expect_bad(&in, "region 3 out of range");
	in = good_add(); in.ap[0].region = ISA_REGION_NONE; expect_bad(&in, "region");
	in = good_add(); in.ap[2].dtype = 0; expect_bad(&in, "unknown dtype");
	in = good_add(); in.ap[2].dtype = ISA_DT_COUNT; expect_bad(&in, "unknown dtype");
	in = good_add(); in.ap[1].rank = 7; expect_bad(&in, "rank 7");
	in = good_add(); in.ap[1].pad = 1; expect_bad(&in, "pad");
	in = good_add(); in.ap[1].shape[3] = 1; expect_bad(&in, "beyond rank");
	in = good_add(); in.ap[1].stride[5] = 1; expect_bad(&in, "beyond rank");
	in = good_add(); in.ap[1].offset = 2; expect_bad(&in, "offset");
	in = good_add(); in.ap[0].shape[0] = 1ull << 38; in.ap[1].shape[0] = in.ap[2].shape[0] = 1ull << 38;
	expect_bad(&in, "2^40");
	/* elementwise: same shapes, same dtypes, dtype allowed */
	in = good_add(); in.ap[2].shape[1] = 1; expect_bad(&in, "shape differs");
	in = good_add(); in.ap[2].rank = 1; in.ap[2].shape[1] = 0; in.ap[2].stride[1] = 0; expect_bad(&in, "shape differs");
	in = good_add(); in.ap[2].dtype = ISA_DT_F16; expect_bad(&in, "dtype");
	in = good_add(); in.sub = ISA_ALU_EXP; in.n_ap = 2; memset(&in.ap[2], 0, sizeof(in.ap[2]));
	in.ap[0].dtype = in.ap[1].dtype = ISA_DT_S32; expect_bad(&in, "does not take dtype s32");
	in = good_add(); in.sub = ISA_ALU_SHL; expect_bad(&in, "does not take dtype f32");
	in = good_add(); in.ap[0].dtype = in.ap[1].dtype = in.ap[2].dtype = ISA_DT_PRED; expect_bad(&in, "pred");
	in = good_add(); in.sub = ISA_ALU_CMP_LT; expect_bad(&in, "compare writes pred");
	in = good_add(); in.sub = ISA_ALU_CMP_LT; in.ap[0].dtype = ISA_DT_PRED; in.ap[2].dtype = ISA_DT_S32;
	expect_bad(&in, "compare operands differ");
	in = good_add(); in.sub = ISA_ALU_SELECT; in.n_ap = 4; in.ap[3] = in.ap[2]; expect_bad(&in, "predicate");
	in = good_add(); in.sub = ISA_ALU_IS_FINITE; in.n_ap = 2; memset(&in.ap[2], 0, sizeof(in.ap[2]));
	expect_bad(&in, "is_finite");
}
END_TEST

START_TEST(test_opcode_specific_rules_rejected)
{
	isa_insn_t in;
	/* matmul */
	in = good_matmul(); in.ap[1].shape[2] = 4; expect_bad(&in, "shapes do not agree");
	in = good_matmul(); in.ap[2].shape[0] = 3; expect_bad(&in, "batch");
	in = good_matmul(); in.ap[2].dtype = ISA_DT_F16; expect_bad(&in, "ap1 dtype bf16 != ap2 dtype f16");
	in = good_matmul(); in.ap[0].dtype = ISA_DT_S32; expect_bad(&in, "need float inputs");
	in = good_matmul(); in.ap[1].dtype = in.ap[2].dtype = ISA_DT_PRED; expect_bad(&in, "need float");
	in = good_matmul(); in.ap[0].rank = 2; expect_bad(&in, "rank");
	/* reduce */
	uint64_t s3[3] = { 4, 5, 6 }, s3r[3] = { 4, 1, 6 };
	in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
	in.n_ap = 2;
	in.param = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 3, s3r);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 3, s3);
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	isa_insn_t r = in;
	r.param = 8; expect_bad(&r, "axes mask");
	r = in; r.param = 1; expect_bad(&r, "shape[0]");
	r = in; r.sub = ISA_RED_ASSIGN; expect_bad(&r, "unknown reduce");
	r = in; r.sub = ISA_RED_AND; expect_bad(&r, "does not take dtype f32");
	r = in; r.ap[0].dtype = ISA_DT_BF16; expect_bad(&r, "dtype");
	r = in; r.flags = ISA_F_ACCUMULATE; ck_assert_int_eq(t_insn_check(&r, 3, 1, NULL, 0), 0);
	/* gather / scatter */
	uint64_t so[2] = { 7, 3 }, st[2] = { 10, 3 }, si[1] = { 7 };
	in = isa_insn_init(ISA_OP_GATHER, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, so);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, st);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_S32, 1, si);
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	r = in; r.ap[2].dtype = ISA_DT_F32; expect_bad(&r, "indices ap2 must be an integer");
	r = in; r.ap[2].dtype = ISA_DT_PRED; expect_bad(&r, "indices");
	r = in; r.ap[1].shape[1] = 4; expect_bad(&r, "shapes do not agree");
	r = in; r.ap[1].shape[0] = 0; expect_bad(&r, "empty table");
	r = in; r.ap[0].dtype = ISA_DT_S32; expect_bad(&r, "dtype");
	r = in; r.sub = 1; expect_bad(&r, "sub-op");
	in.opcode = ISA_OP_SCATTER; /* ap0 [N,R] table, ap1 [M,R] updates */
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, st);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, so);
	in.sub = ISA_RED_ASSIGN;
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	r = in; r.sub = ISA_RED_END; expect_bad(&r, "unknown combiner");
	r = in; r.sub = ISA_RED_OR; expect_bad(&r, "combiner");
	/* rng */
	uint64_t s2[1] = { 2 }, s4[1] = { 3 };
	in = isa_insn_init(ISA_OP_RNG, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_U32, 1, s4);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_U64, 1, s2);
	in.ap[2] = isa_ap_contig(1, 0, ISA_DT_U64, 1, s2);
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	r = in; r.ap[0].dtype = ISA_DT_F32; expect_bad(&r, "u32 or u64");
	r = in; r.ap[1].dtype = ISA_DT_S64; expect_bad(&r, "state ap1");
	r = in; r.ap[2].shape[0] = 3; expect_bad(&r, "state ap2");
	/* iota */
	in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 3, s3);
	in.param = 2;
	in.imm[0] = 5;
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	r = in; r.param = 3; expect_bad(&r, "dimension 3 >= rank 3");
	r = in; r.imm[1] = 1; expect_bad(&r, "imm[1]");
	r = in; r.ap[0].dtype = ISA_DT_PRED; expect_bad(&r, "pred");
	/* activate */
	in = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_GELU);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_BF16, 3, s3);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 3, s3);
	ck_assert_int_eq(t_insn_check(&in, 3, 1, NULL, 0), 0);
	r = in; r.ap[1].dtype = ISA_DT_S32; expect_bad(&r, "float operands");
	r = in; r.ap[1].shape[0] = 1; expect_bad(&r, "shape");
	/* jump */
	in = isa_insn_init(ISA_OP_JUMP, 0);
	in.param = 4;
	expect_bad(&in, "target 4 >= stream length 4");
	in.param = 0;
	in.flags = ISA_F_INVERT;
	expect_bad(&in, "unconditional");
	in.n_ap = 1;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 1, s3);
	expect_bad(&in, "exactly one element");
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 0, NULL);
	ck_assert_int_eq(t_insn_check(&in, 3, 4, NULL, 0), 0);
	in.n_ap = 2;
	expect_bad(&in, "n_ap");
	/* nop with operands */
	in = isa_insn_init(ISA_OP_NOP, 0);
	in.n_ap = 1;
	expect_bad(&in, "n_ap");
}
END_TEST

static isa_insn_t good_conv(void)
{
	/* depthwise 3x3: out [2, 4, 1, 6, 6], in [2, 4, 1, 8, 8], kernel [4, 1, 1, 3, 3] */
	uint64_t o[5] = { 2, 4, 1, 6, 6 }, x[5] = { 2, 4, 1, 8, 8 }, k[5] = { 4, 1, 1, 3, 3 };
	const int64_t one[2] = { 1, 1 }, zero[2] = { 0, 0 };
	isa_insn_t in = isa_insn_init(ISA_OP_CONV, 0);
	in.n_ap = 4;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 5, o);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 5, x);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 5, k);
	in.ap[3] = isa_conv_window(one, one, one, zero);
	return in;
}

/* CONV (ISA 1.4): each field of its operands and window checked, its work bounded,
 * its FLOPs every output's whole window, and the NEFF version it needs. */
START_TEST(test_conv_rules)
{
	isa_insn_t in = good_conv();
	char err[200];
	ck_assert_msg(t_insn_check(&in, 3, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(isa_opcode_name(ISA_OP_CONV), "conv");
	ck_assert_uint_eq(isa_insn_flops(&in, 0), 2ull * 2 * 4 * 36 * 9);
	ck_assert_uint_eq(isa_insn_min_minor(ISA_OP_CONV), 4);
	ck_assert_uint_eq(isa_insn_min_minor(ISA_OP_MATMUL), 3);
	ck_assert_uint_le(isa_insn_min_minor(ISA_OP_CONV), ISA_VERSION_MINOR);

	in = good_conv(); in.n_ap = 3; memset(&in.ap[3], 0, sizeof(in.ap[3]));
	expect_bad(&in, "n_ap is 3, expected 4");
	in = good_conv(); in.ap[3].region = 0; expect_bad(&in, "window ap3 must have region none");
	in = good_conv(); in.ap[3].dtype = ISA_DT_F32; expect_bad(&in, "window ap3");
	in = good_conv(); in.ap[3].offset = 4; expect_bad(&in, "window ap3");
	in = good_conv(); in.ap[3].rank = 3; expect_bad(&in, "window ap3");
	in = good_conv(); in.ap[3].stride[2] = 1; expect_bad(&in, "beyond the spatial dims");
	in = good_conv(); in.ap[3].shape[ISA_CONV_STRIDE + 1] = 0; expect_bad(&in, "stride of dim 1 is 0");
	in = good_conv(); in.ap[3].shape[ISA_CONV_RHS_DIL] = 0; expect_bad(&in, "rhs dilation of dim 0");
	in = good_conv(); in.ap[3].shape[ISA_CONV_LHS_DIL + 1] = (1ull << 32) + 1;
	expect_bad(&in, "lhs dilation of dim 1");
	in = good_conv(); in.ap[3].stride[0] = -(1ll << 33); expect_bad(&in, "padding of dim 0");
	in = good_conv(); in.ap[1].dtype = ISA_DT_BF16; expect_bad(&in, "must be f32");
	in = good_conv(); in.ap[2].rank = 4; in.ap[2].shape[4] = 0; in.ap[2].stride[4] = 0;
	expect_bad(&in, "rank 5");
	in = good_conv(); in.ap[1].shape[1] = 3; expect_bad(&in, "dims do not agree");
	in = good_conv(); in.ap[2].shape[2] = 2; expect_bad(&in, "dims do not agree");
	in = good_conv(); in.ap[1].region = 7; expect_bad(&in, "ap1: region 7 out of range");
	in = good_conv(); in.flags = ISA_F_ACCUMULATE; expect_bad(&in, "accumulate flag");
	in = good_conv(); in.param = 1; expect_bad(&in, "param");
	/* stride-0 operands: 2^40 outputs x 2^20 taps */
	in = good_conv();
	for (int a = 0; a < 3; a++)
		for (int d = 0; d < 5; d++)
			in.ap[a].stride[d] = 0;
	in.ap[0].shape[3] = in.ap[0].shape[4] = 1ull << 18;
	in.ap[0].shape[0] = in.ap[1].shape[0] = 4;
	in.ap[2].shape[3] = in.ap[2].shape[4] = 1ull << 10;
	expect_bad(&in, "conv of");
}
END_TEST

static isa_insn_t good_selscat(void)
{
	/* a max-pool gradient: out and operand [2, 4, 9, 9], source [2, 4, 5, 5],
	 * 3x3 windows, stride 2, padding 1 */
	uint64_t o[4] = { 2, 4, 9, 9 }, s[4] = { 2, 4, 5, 5 };
	const int64_t three[2] = { 3, 3 }, two[2] = { 2, 2 }, one[2] = { 1, 1 };
	isa_insn_t in = isa_insn_init(ISA_OP_SELSCAT, ISA_RED_SUM);
	in.param = ISA_ALU_CMP_GE;
	in.n_ap = 4;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 4, o);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 4, o);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 4, s);
	in.ap[3] = isa_selscat_window(three, two, one, one);
	return in;
}

/* SELSCAT (ISA 1.5): its combiner, select, operands and window checked, its
 * work bounded, its FLOPs a compare per window position, the NEFF version it
 * needs. */
START_TEST(test_selscat_rules)
{
	isa_insn_t in = good_selscat();
	char err[200];
	ck_assert_msg(t_insn_check(&in, 3, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(isa_opcode_name(ISA_OP_SELSCAT), "selscat");
	ck_assert_uint_eq(isa_insn_flops(&in, 0), 2ull * 4 * 25 * 9);
	ck_assert_uint_eq(isa_insn_min_minor(ISA_OP_SELSCAT), 5);
	ck_assert_uint_le(isa_insn_min_minor(ISA_OP_SELSCAT), ISA_VERSION_MINOR);
	static const uint32_t selects[] = { ISA_ALU_CMP_LT, ISA_ALU_CMP_LE, ISA_ALU_CMP_GT };
	for (size_t c = 0; c < sizeof(selects) / sizeof(selects[0]); c++) {
		in = good_selscat();
		in.param = selects[c];
		ck_assert_msg(t_insn_check(&in, 3, 1, err, sizeof(err)) == 0, "%s", err);
	}
	in = good_selscat(); in.param = ISA_ALU_CMP_EQ; expect_bad(&in, "select compare");
	in = good_selscat(); in.param = ISA_ALU_ADD; expect_bad(&in, "select compare");
	in = good_selscat(); in.sub = ISA_RED_AND; expect_bad(&in, "combiner");
	in = good_selscat(); in.sub = ISA_RED_ASSIGN; expect_bad(&in, "combiner");
	in = good_selscat(); in.n_ap = 3; memset(&in.ap[3], 0, sizeof(in.ap[3]));
	expect_bad(&in, "n_ap is 3, expected 4");
	in = good_selscat(); in.ap[3].region = 0; expect_bad(&in, "window ap3 must have region none");
	in = good_selscat(); in.ap[3].stride[3] = 1; expect_bad(&in, "beyond the spatial dims");
	in = good_selscat(); in.ap[3].shape[ISA_SELSCAT_SIZE + 1] = 0; expect_bad(&in, "size of dim 1");
	in = good_selscat(); in.ap[3].shape[ISA_SELSCAT_STRIDE] = 0; expect_bad(&in, "stride of dim 0");
	in = good_selscat(); in.ap[3].shape[ISA_SELSCAT_DIL + 1] = (1ull << 32) + 1;
	expect_bad(&in, "dilation of dim 1");
	in = good_selscat(); in.ap[3].stride[0] = -1; expect_bad(&in, "padding of dim 0");
	in = good_selscat(); in.ap[1].dtype = ISA_DT_BF16; expect_bad(&in, "one float dtype");
	in = good_selscat();
	for (int a = 0; a < 3; a++)
		in.ap[a].dtype = ISA_DT_S32;
	expect_bad(&in, "one float dtype");
	in = good_selscat();
	for (int a = 0; a < 3; a++)
		in.ap[a].dtype = ISA_DT_BF16;
	ck_assert_msg(t_insn_check(&in, 3, 1, err, sizeof(err)) == 0, "%s", err);
	in = good_selscat(); in.ap[2].rank = 3; in.ap[2].shape[3] = 0; in.ap[2].stride[3] = 0;
	expect_bad(&in, "rank 4");
	in = good_selscat(); in.ap[1].shape[2] = 8; expect_bad(&in, "dims do not agree");
	in = good_selscat(); in.ap[2].shape[1] = 3; expect_bad(&in, "dims do not agree");
	in = good_selscat(); in.ap[2].region = 7; expect_bad(&in, "ap2: region 7 out of range");
	in = good_selscat(); in.flags = ISA_F_ACCUMULATE; expect_bad(&in, "accumulate flag");
	/* stride-0 operands: 2^34 windows of 2^11 positions */
	in = good_selscat();
	for (int a = 0; a < 3; a++)
		for (int d = 0; d < 4; d++)
			in.ap[a].stride[d] = 0;
	in.ap[2].shape[2] = in.ap[2].shape[3] = 1ull << 15;
	in.ap[2].shape[0] = in.ap[0].shape[0] = in.ap[1].shape[0] = 4;
	in.ap[3].shape[ISA_SELSCAT_SIZE] = 1ull << 6;
	in.ap[3].shape[ISA_SELSCAT_SIZE + 1] = 1ull << 5;
	expect_bad(&in, "selscat of");
}
END_TEST

START_TEST(test_program_create_names_engine_and_insn)
{
	isa_insn_t v[3] = { good_add(), good_add(), good_add() };
	v[2].ap[0].region = 7;
	v[2].debug_id = 55;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = v };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 3 };
	fwsim_program_t *p = (fwsim_program_t *)0x1;
	char err[200];
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, 3, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(err, "vector engine insn 2 (debug_id 55)") && strstr(err, "region 7"), "%s", err);
	c[ISA_ENGINE_VECTOR] = 2;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, 3, &p),
						   err, sizeof(err)), NS_STATUS_OK);
	fwsim_program_destroy(p);
	/* count without a stream */
	c[ISA_ENGINE_DMA] = 1;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, 3, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "dma"));
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(NULL, c, 3, &p),
						   NULL, 0), NS_STATUS_INVALID_ARGUMENT);
	/* the program is a copy: changing the caller's stream after create is harmless */
	c[ISA_ENGINE_DMA] = 0;
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, 3, &p),
						   NULL, 0), NS_STATUS_OK);
	v[0].opcode = 999;
	tmem_t t;
	tmem_init(&t);
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_job_t job = { .program = p, .mem = t.mem, .mem_size = t.size, .regions = t.regions, .n_regions = 3 };
	ck_assert_int_eq(fwsim_core_execute(core, &job), FWSIM_OK);
	ck_assert_uint_eq(job.insns_executed, 2);
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	fwsim_program_destroy(NULL);
	tmem_free(&t);
}
END_TEST

/* Issue #11: stride INT64_MIN on a size-1 dim made the iota kernel overflow a
 * signed product (UBSan). Validation bounds every stride product instead, so
 * the program is refused; a large but representable stride on a size-1 dim
 * still runs and is ignored, as a size-1 dim never moves. */
START_TEST(test_stride_products_checked)
{
	uint64_t sh[2] = { 1, 4 };
	isa_insn_t in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	in.param = 1;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_S32, 2, sh);
	in.ap[0].stride[0] = INT64_MIN;
	expect_bad(&in, "exceeds 2^63 bytes (dim 0: stride -9223372036854775808");
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = &in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_GPSIMD] = 1 };
	fwsim_program_t *p = NULL;
	char err[200];
	ck_assert_int_eq(ns_status_consume_message(fwsim_program_create(s, c, T_NREG, &p),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strstr(err, "gpsimd engine insn 0") && strstr(err, "2^63"), "%s", err);
	/* the same products elsewhere: INT64_MAX * 4 bytes, an empty operand's
	 * stride, an offset at the top of the address space */
	in.ap[0].stride[0] = INT64_MAX;
	expect_bad(&in, "2^63");
	in.ap[0].stride[0] = 4;
	in.ap[0].shape[0] = 0;
	in.ap[0].stride[1] = INT64_MIN / 2;
	expect_bad(&in, "2^63");
	in.ap[0] = isa_ap_contig(0, UINT64_MAX - 3, ISA_DT_S32, 2, sh);
	expect_bad(&in, "2^63");
	in = good_matmul();
	in.ap[1].stride[0] = -(INT64_MAX / 2); /* batch stride of a bf16 operand: 2^63 bytes */
	expect_bad(&in, "ap1");

	/* representable: runs, and the size-1 dim's stride does not matter */
	tmem_t t;
	tmem_init(&t);
	in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	in.param = 1;
	in.ap[0] = isa_ap_contig(0, 64, ISA_DT_S32, 2, sh);
	in.ap[0].stride[0] = (int64_t)1 << 60;
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tgeti(ISA_DT_S32, tmem_ptr(&t, 0, 64 + 4 * (uint64_t)i)), i);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

static Suite *isa_suite(void)
{
	Suite *s = suite_create("fwsim-isa");
	TCase *tc = tcase_create("validate");
	tcase_add_test(tc, test_good_instructions_pass);
	tcase_add_test(tc, test_matmul_work_bound_in_the_isa_check);
	tcase_add_test(tc, test_header_fields_rejected);
	tcase_add_test(tc, test_operand_fields_rejected);
	tcase_add_test(tc, test_opcode_specific_rules_rejected);
	tcase_add_test(tc, test_program_create_names_engine_and_insn);
	tcase_add_test(tc, test_stride_products_checked);
	tcase_add_test(tc, test_conv_rules);
	tcase_add_test(tc, test_selscat_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(isa_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
