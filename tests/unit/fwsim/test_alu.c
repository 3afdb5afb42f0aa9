/* ALU, ACTIVATE and COPY against scalar references, every dtype, many layouts. */
#include "fwsim_test.h"
#include "alu_ops.h"

/* ---- reference semantics ---- */
static int t_uns(uint32_t dt)
{
	return dt == ISA_DT_U8 || dt == ISA_DT_U16 || dt == ISA_DT_U32 || dt == ISA_DT_U64 ||
	       dt == ISA_DT_PRED;
}

static uint32_t t_bits(uint32_t dt) { return (uint32_t)isa_dtype_size(dt) * 8; }

/* Wraps v to dt's width (two's complement), sign- or zero-extended back. */
static int64_t t_wrap(uint32_t dt, unsigned __int128 v)
{
	uint32_t b = t_bits(dt);
	uint64_t u = (uint64_t)v;
	if (b < 64)
		u &= (1ull << b) - 1;
	if (!t_uns(dt) && b < 64 && (u >> (b - 1)) & 1)
		u |= ~((1ull << b) - 1);
	return (int64_t)u;
}

/* signed magnitude value as __int128 (u64 kept unsigned) */
static __int128 t_val(uint32_t dt, int64_t v)
{
	return t_uns(dt) ? (__int128)(uint64_t)v : (__int128)v;
}

static int64_t ref_int(uint32_t op, uint32_t dt, int64_t a, int64_t b, int64_t c)
{
	__int128 x = t_val(dt, a), y = t_val(dt, b), z = t_val(dt, c);
	uint32_t bits = t_bits(dt);
	uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	uint64_t s = (uint64_t)b & mask;
	switch (op) {
	case ISA_ALU_NEG: return t_wrap(dt, (unsigned __int128)-x);
	case ISA_ALU_ABS: return t_wrap(dt, (unsigned __int128)(x < 0 ? -x : x));
	case ISA_ALU_SIGN: return x > 0 ? 1 : x < 0 ? t_wrap(dt, (unsigned __int128)-1) : 0;
	case ISA_ALU_SQUARE: return t_wrap(dt, (unsigned __int128)x * (unsigned __int128)x);
	case ISA_ALU_NOT: return dt == ISA_DT_PRED ? !a : t_wrap(dt, ~(unsigned __int128)x);
	case ISA_ALU_POPCNT: return __builtin_popcountll((uint64_t)a & mask);
	case ISA_ALU_CLZ: {
		uint64_t v = (uint64_t)a & mask;
		int n = 0;
		for (int i = (int)bits - 1; i >= 0 && !((v >> i) & 1); i--)
			n++;
		return n;
	}
	case ISA_ALU_ADD: return t_wrap(dt, (unsigned __int128)(x + y));
	case ISA_ALU_SUB: return t_wrap(dt, (unsigned __int128)(x - y));
	case ISA_ALU_MUL: return t_wrap(dt, (unsigned __int128)x * (unsigned __int128)y);
	case ISA_ALU_DIV: return y == 0 ? t_wrap(dt, (unsigned __int128)-1) : t_wrap(dt, (unsigned __int128)(x / y));
	case ISA_ALU_REM: return y == 0 ? a : t_wrap(dt, (unsigned __int128)(x % y));
	case ISA_ALU_MAX: return x > y ? a : b;
	case ISA_ALU_MIN: return x < y ? a : b;
	case ISA_ALU_AND: return a & b;
	case ISA_ALU_OR: return a | b;
	case ISA_ALU_XOR: return t_wrap(dt, (unsigned __int128)(a ^ b));
	case ISA_ALU_SHL: return s >= bits ? 0 : t_wrap(dt, (unsigned __int128)((uint64_t)a << s));
	case ISA_ALU_SHR_LOGICAL: return s >= bits ? 0 : t_wrap(dt, ((uint64_t)a & mask) >> s);
	case ISA_ALU_SHR_ARITH: {
		/* the operand's bits as a signed number of its width */
		uint64_t u = (uint64_t)a & mask;
		__int128 sv = (bits < 64 && (u >> (bits - 1)) & 1) ? (__int128)u - ((__int128)1 << bits)
			      : (bits == 64 ? (__int128)(int64_t)u : (__int128)u);
		return t_wrap(dt, (unsigned __int128)(sv >> (s >= bits ? bits - 1 : s)));
	}
	case ISA_ALU_CMP_EQ: return x == y;
	case ISA_ALU_CMP_NE: return x != y;
	case ISA_ALU_CMP_LT: return x < y;
	case ISA_ALU_CMP_LE: return x <= y;
	case ISA_ALU_CMP_GT: return x > y;
	case ISA_ALU_CMP_GE: return x >= y;
	/* min(max(x, lo), hi): hi when lo > hi (XLA) */
	case ISA_ALU_CLAMP: return (y < x ? x : y) > z ? c : y < x ? a : b;
	}
	ck_abort_msg("no int reference for op %u", op);
	return 0;
}

static double dmaxn(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double dminn(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

static double ref_flt(uint32_t op, double x, double y, double z)
{
	switch (op) {
	case ISA_ALU_NEG: return -x;
	case ISA_ALU_ABS: return fabs(x);
	case ISA_ALU_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
	case ISA_ALU_FLOOR: return floor(x);
	case ISA_ALU_CEIL: return ceil(x);
	case ISA_ALU_ROUND_AWAY: return round(x);
	case ISA_ALU_ROUND_EVEN: return nearbyint(x);
	case ISA_ALU_EXP: return exp(x);
	case ISA_ALU_EXPM1: return expm1(x);
	case ISA_ALU_LOG: return log(x);
	case ISA_ALU_LOG1P: return log1p(x);
	case ISA_ALU_SQRT: return sqrt(x);
	case ISA_ALU_RSQRT: return 1 / sqrt(x);
	case ISA_ALU_TANH: return tanh(x);
	case ISA_ALU_LOGISTIC: return 1 / (1 + exp(-x));
	case ISA_ALU_ERF: return erf(x);
	case ISA_ALU_SIN: return sin(x);
	case ISA_ALU_COS: return cos(x);
	case ISA_ALU_IS_FINITE: return isfinite(x);
	case ISA_ALU_RECIPROCAL: return 1 / x;
	case ISA_ALU_SQUARE: return x * x;
	case ISA_ALU_ADD: return x + y;
	case ISA_ALU_SUB: return x - y;
	case ISA_ALU_MUL: return x * y;
	case ISA_ALU_DIV: return x / y;
	case ISA_ALU_REM: return fmod(x, y);
	case ISA_ALU_POW: return pow(x, y);
	case ISA_ALU_MAX: return dmaxn(x, y);
	case ISA_ALU_MIN: return dminn(x, y);
	case ISA_ALU_ATAN2: return atan2(x, y);
	case ISA_ALU_CMP_EQ: return x == y;
	case ISA_ALU_CMP_NE: return x != y;
	case ISA_ALU_CMP_LT: return x < y;
	case ISA_ALU_CMP_LE: return x <= y;
	case ISA_ALU_CMP_GT: return x > y;
	case ISA_ALU_CMP_GE: return x >= y;
	case ISA_ALU_GELU_GRAD: {
		double cdf = 0.5 * (1 + erf(y / sqrt(2))), pdf = exp(-0.5 * y * y) / sqrt(2 * M_PI);
		return x * (cdf + y * pdf);
	}
	case ISA_ALU_SELECT: return x != 0 ? y : z;
	case ISA_ALU_CLAMP: return dminn(dmaxn(y, x), z);
	case ISA_ALU_FMA: return x * y + z;
	}
	ck_abort_msg("no float reference for op %u", op);
	return 0;
}

static double ref_act(uint32_t f, double t)
{
	switch (f) {
	case ISA_ACT_IDENTITY: return t;
	case ISA_ACT_RELU: return t > 0 ? t : 0;
	case ISA_ACT_GELU: return 0.5 * t * (1 + erf(t / sqrt(2)));
	case ISA_ACT_GELU_TANH: return 0.5 * t * (1 + tanh(sqrt(2 / M_PI) * (t + 0.044715 * t * t * t)));
	case ISA_ACT_TANH: return tanh(t);
	case ISA_ACT_LOGISTIC: return 1 / (1 + exp(-t));
	case ISA_ACT_EXP: return exp(t);
	case ISA_ACT_LOG: return log(t);
	case ISA_ACT_SQRT: return sqrt(t);
	case ISA_ACT_RSQRT: return 1 / sqrt(t);
	case ISA_ACT_SILU: return t / (1 + exp(-t));
	case ISA_ACT_SOFTPLUS: return log1p(exp(t));
	case ISA_ACT_RECIPROCAL: return 1 / t;
	case ISA_ACT_SQUARE: return t * t;
	}
	return NAN;
}

static double tol_of(uint32_t dt)
{
	return dt == ISA_DT_BF16 ? 1.0 / 128 : dt == ISA_DT_F16 ? 1.0 / 1024 : 2e-6;
}

static void expect_close(double got, double want, uint32_t dt, const char *what)
{
	if (isnan(want)) {
		T_CHECK(isnan(got), "%s: got %g, want NaN", what, got);
		return;
	}
	if (isinf(want)) {
		T_CHECK(got == want, "%s: got %g, want %g", what, got, want);
		return;
	}
	double tol = tol_of(dt) * fabs(want) + tol_of(dt) * 1e-1 + 1e-6;
	T_CHECK(fabs(got - want) <= tol, "%s: got %.9g, want %.9g", what, got, want);
}

/* Domain of float inputs per op so references stay in the interesting range. */
static double gen_float(uint32_t op, int operand, uint64_t *seed)
{
	double v = (double)((int64_t)(trand(seed) % 65) - 32) / 8.0; /* [-4, 4] step 1/8 */
	switch (op) {
	case ISA_ALU_LOG: case ISA_ALU_SQRT: case ISA_ALU_RSQRT: case ISA_ALU_LOG1P:
		return fabs(v) + 0.125;
	case ISA_ALU_POW:
		return operand == 1 ? fabs(v) + 0.125 : v;
	case ISA_ALU_SELECT:
		return operand == 1 ? (double)(trand(seed) & 1) : v;
	case ISA_ALU_CLAMP:
		return operand == 1 ? -fabs(v) : operand == 3 ? fabs(v) : v;
	default:
		return v;
	}
}

static int64_t gen_int(uint32_t op, int operand, uint32_t dt, uint64_t *seed)
{
	uint64_t r = trand(seed);
	uint32_t bits = t_bits(dt);
	if (dt == ISA_DT_PRED)
		return (int64_t)(r & 1);
	if ((op == ISA_ALU_SHL || op == ISA_ALU_SHR_LOGICAL || op == ISA_ALU_SHR_ARITH) && operand == 2)
		return t_wrap(dt, (r % (bits + 4)) - (t_uns(dt) ? 0 : 2));
	if (op == ISA_ALU_SELECT && operand == 1)
		return (int64_t)(r & 1);
	switch (r % 8) {
	case 0: return 0;
	case 1: return t_wrap(dt, (unsigned __int128)-1);
	case 2: return t_wrap(dt, (unsigned __int128)1 << (bits - 1)); /* min (signed) */
	case 3: return (int64_t)(r >> 60) - 7; /* small, wrapped below */
	default: break;
	}
	return t_wrap(dt, r >> (r % 3 == 0 ? 0 : 64 - bits / 2));
}

/* One elementwise run: op kind (ALU/ACTIVATE/COPY), dtypes, shape, layouts. */
typedef struct ewcase {
	uint32_t opcode, sub, n_in;
	uint32_t dt[ISA_MAX_AP];
	uint32_t rank;
	uint64_t shape[ISA_MAX_RANK];
	tlayout_t lay[ISA_MAX_AP];
	double imm0, imm1;
} ewcase_t;

static void run_ew(const ewcase_t *cs, uint64_t seed)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = isa_insn_init(cs->opcode, cs->sub);
	in.n_ap = (uint8_t)(cs->n_in + 1);
	in.imm[0] = cs->imm0;
	in.imm[1] = cs->imm1;
	for (uint32_t i = 0; i <= cs->n_in; i++)
		in.ap[i] = tmk_ap(&t, i, cs->dt[i], cs->rank, cs->shape, cs->lay[i]);
	uint64_t n = tnumel(cs->rank, cs->shape), idx[ISA_MAX_RANK];
	/* fill every input element through its own AP (broadcast dims get
	 * written repeatedly; the last write is what the kernel sees, so the
	 * reference reads back from memory) */
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, cs->rank, cs->shape, idx);
		for (uint32_t i = 1; i <= cs->n_in; i++) {
			uint32_t dt = cs->dt[i];
			uint8_t *p = telem(&t, &in.ap[i], idx);
			if (isa_dtype_is_float(dt))
				tset(dt, p, gen_float(cs->opcode == ISA_OP_ALU ? cs->sub : 999, (int)i, &seed));
			else
				tseti(dt, p, gen_int(cs->opcode == ISA_OP_ALU ? cs->sub : 999, (int)i, dt, &seed));
		}
	}
	fwsim_job_t job;
	char what[200];
	snprintf(what, sizeof(what), "op %u/%u %s<-%s,%s lay %s/%s", cs->opcode, cs->sub,
		 isa_dtype_name(cs->dt[0]), isa_dtype_name(cs->dt[1]),
		 cs->n_in > 1 ? isa_dtype_name(cs->dt[2]) : "-", tlayout_name[cs->lay[0]],
		 tlayout_name[cs->lay[1]]);
	/* always with NaN/Inf checking on: the count and first index reported
	 * must match what is actually in the output */
	fwsim_status_t st = trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, &job);
	ck_assert_msg(st == FWSIM_OK || st == FWSIM_NUM_ERR, "%s: %s", what, job.error.message);
	ck_assert_uint_eq(job.insns_executed, 1);
	uint32_t odt = cs->dt[0];
	{
		uint64_t bad = 0, first = UINT64_MAX;
		int first_inf = 0;
		for (uint64_t f = 0; f < n && isa_dtype_is_float(odt); f++) {
			tunflat(f, cs->rank, cs->shape, idx);
			double v = tget(odt, telem(&t, &in.ap[0], idx));
			if (!isfinite(v)) {
				if (!bad++) {
					first = f;
					first_inf = isinf(v) != 0;
				}
			}
		}
		if (!bad) {
			ck_assert_msg(st == FWSIM_OK, "%s: NUM_ERR but output is finite", what);
		} else {
			ck_assert_msg(st == FWSIM_NUM_ERR, "%s: %llu non-finite outputs not reported", what,
				      (unsigned long long)bad);
			ck_assert_uint_eq(job.error.count, bad);
			ck_assert_uint_eq(job.error.first_index, first);
			ck_assert_uint_eq(job.error.is_inf, (uint32_t)first_inf);
			ck_assert_uint_eq(job.error.num_err_insns, 1);
		}
	}
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, cs->rank, cs->shape, idx);
		const uint8_t *po = telem(&t, &in.ap[0], idx);
		const uint8_t *pa = telem(&t, &in.ap[1], idx);
		const uint8_t *pb = cs->n_in > 1 ? telem(&t, &in.ap[2], idx) : NULL;
		const uint8_t *pc = cs->n_in > 2 ? telem(&t, &in.ap[3], idx) : NULL;
		char w2[260];
		snprintf(w2, sizeof(w2), "%s elem %llu", what, (unsigned long long)f);
		if (cs->opcode == ISA_OP_ACTIVATE) {
			double x = tget(cs->dt[1], pa);
			expect_close(tget(odt, po), ref_act(cs->sub, x * cs->imm0 + cs->imm1), odt, w2);
			continue;
		}
		if (cs->opcode == ISA_OP_COPY)
			continue; /* checked by the conversion tests */
		uint32_t cdt = cs->sub == ISA_ALU_SELECT ? cs->dt[2] : cs->dt[1];
		if (isa_dtype_is_float(cdt)) {
			double r = ref_flt(cs->sub, tget(cs->dt[1], pa), pb ? tget(cs->dt[2], pb) : 0,
					   pc ? tget(cs->dt[3], pc) : 0);
			if (odt == ISA_DT_PRED)
				T_CHECK(tget(odt, po) == r, "%s: got %g want %g", w2, tget(odt, po), r);
			else
				expect_close(tget(odt, po), r, odt, w2);
		} else {
			int64_t r = cs->sub == ISA_ALU_SELECT
				? (tgeti(cs->dt[1], pa) ? tgeti(cs->dt[2], pb) : tgeti(cs->dt[3], pc))
				: ref_int(cs->sub, cdt, tgeti(cs->dt[1], pa), pb ? tgeti(cs->dt[2], pb) : 0,
					  pc ? tgeti(cs->dt[3], pc) : 0);
			T_CHECK(tgeti(odt, po) == r, "%s: a=%lld b=%lld got %lld want %lld", w2,
				      (long long)tgeti(cs->dt[1], pa), pb ? (long long)tgeti(cs->dt[2], pb) : 0,
				      (long long)tgeti(odt, po), (long long)r);
		}
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}

static const uint32_t shapes_rank[] = { 3, 2, 0, 3 };
static const uint64_t shapes[][3] = { { 3, 5, 7 }, { 2, 700 }, { 0 }, { 1, 6, 1 } };
#define N_SHAPES 4

static uint32_t alu_ops[] = {
	ISA_ALU_NEG, ISA_ALU_ABS, ISA_ALU_SIGN, ISA_ALU_FLOOR, ISA_ALU_CEIL, ISA_ALU_ROUND_AWAY,
	ISA_ALU_ROUND_EVEN, ISA_ALU_EXP, ISA_ALU_EXPM1, ISA_ALU_LOG, ISA_ALU_LOG1P, ISA_ALU_SQRT,
	ISA_ALU_RSQRT, ISA_ALU_TANH, ISA_ALU_LOGISTIC, ISA_ALU_ERF, ISA_ALU_SIN, ISA_ALU_COS,
	ISA_ALU_NOT, ISA_ALU_IS_FINITE, ISA_ALU_RECIPROCAL, ISA_ALU_SQUARE, ISA_ALU_POPCNT,
	ISA_ALU_CLZ, ISA_ALU_ADD, ISA_ALU_SUB, ISA_ALU_MUL, ISA_ALU_DIV, ISA_ALU_REM, ISA_ALU_POW,
	ISA_ALU_MAX, ISA_ALU_MIN, ISA_ALU_AND, ISA_ALU_OR, ISA_ALU_XOR, ISA_ALU_SHL,
	ISA_ALU_SHR_LOGICAL, ISA_ALU_SHR_ARITH, ISA_ALU_ATAN2, ISA_ALU_CMP_EQ, ISA_ALU_CMP_NE,
	ISA_ALU_CMP_LT, ISA_ALU_CMP_LE, ISA_ALU_CMP_GT, ISA_ALU_CMP_GE, ISA_ALU_GELU_GRAD,
	ISA_ALU_SELECT, ISA_ALU_CLAMP, ISA_ALU_FMA,
};
#define N_ALU_OPS (sizeof(alu_ops) / sizeof(alu_ops[0]))

/* Builds the dtype tuple for (op, dtype); the validator decides support. */
static int alu_case(uint32_t op, uint32_t dt, ewcase_t *cs)
{
	memset(cs, 0, sizeof(*cs));
	cs->opcode = ISA_OP_ALU;
	cs->sub = op;
	cs->n_in = (uint32_t)isa_alu_arity(op);
	for (uint32_t i = 0; i <= cs->n_in; i++)
		cs->dt[i] = dt;
	if (op >= ISA_ALU_CMP_EQ && op <= ISA_ALU_CMP_GE)
		cs->dt[0] = ISA_DT_PRED;
	if (op == ISA_ALU_IS_FINITE)
		cs->dt[0] = ISA_DT_PRED;
	if (op == ISA_ALU_SELECT)
		cs->dt[1] = ISA_DT_PRED;
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
	in.n_ap = (uint8_t)(cs->n_in + 1);
	uint64_t sh[1] = { 4 };
	for (uint32_t i = 0; i <= cs->n_in; i++)
		in.ap[i] = isa_ap_contig(0, 0, cs->dt[i], 1, sh);
	return t_insn_check(&in, 1, 1, NULL, 0) == 0;
}

/* _i loops over ops: every supported dtype, several shapes and layouts. */
START_TEST(test_alu_all_ops_all_dtypes)
{
	uint32_t op = alu_ops[_i];
	int tested = 0;
	for (size_t d = 0; d < T_N_DTYPES; d++) {
		ewcase_t cs;
		if (!alu_case(op, t_all_dtypes[d], &cs))
			continue;
		tested++;
		for (int s = 0; s < N_SHAPES; s++) {
			cs.rank = shapes_rank[s];
			memcpy(cs.shape, shapes[s], sizeof(shapes[s]));
			for (uint32_t i = 0; i <= cs.n_in; i++)
				cs.lay[i] = (tlayout_t)((s + i + d) % L_COUNT);
			cs.lay[0] = (tlayout_t)((s + d) % 4); /* no broadcast output */
			run_ew(&cs, 0x1234567ull + op * 131 + d * 7 + (uint64_t)s);
		}
	}
	/* every op takes at least one dtype: a validator that rejects all would
	 * otherwise make this test vacuous */
	ck_assert_int_gt(tested, 0);
	if (op == ISA_ALU_ADD || op == ISA_ALU_MUL || op == ISA_ALU_MAX || op == ISA_ALU_CMP_LT)
		ck_assert_int_ge(tested, 11);
	if (op == ISA_ALU_EXP)
		ck_assert_int_eq(tested, 3);
}
END_TEST

START_TEST(test_activate_all_funcs)
{
	static const uint32_t dts[3] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16 };
	for (uint32_t f = 0; f < ISA_ACT_END; f++)
		for (int d = 0; d < 3; d++) {
			ewcase_t cs;
			memset(&cs, 0, sizeof(cs));
			cs.opcode = ISA_OP_ACTIVATE;
			cs.sub = f;
			cs.n_in = 1;
			cs.dt[0] = dts[d];
			cs.dt[1] = dts[(d + f) % 3];
			cs.rank = 2;
			cs.shape[0] = 9;
			cs.shape[1] = 70;
			cs.lay[0] = (tlayout_t)(f % 4);
			cs.lay[1] = (tlayout_t)((f + d) % L_COUNT);
			/* log/sqrt/rsqrt need a positive argument: scale 0.5, bias 2.5 */
			int pos = f == ISA_ACT_LOG || f == ISA_ACT_SQRT || f == ISA_ACT_RSQRT;
			cs.imm0 = pos ? 0.5 : 0.75;
			cs.imm1 = pos ? 2.5 : -0.25;
			run_ew(&cs, 99 + f * 3 + (uint64_t)d);
		}
}
END_TEST

/* ---- dtype conversion (COPY) ---- */

static double conv_ref(uint32_t from, uint32_t to, const uint8_t *src, int64_t *out_i)
{
	double v = tget(from, src);
	int64_t iv = isa_dtype_is_float(from) ? 0 : tgeti(from, src);
	*out_i = 0;
	if (to == ISA_DT_PRED) {
		*out_i = isa_dtype_is_float(from) ? (v != 0 || isnan(v)) : iv != 0;
		return (double)*out_i;
	}
	if (isa_dtype_is_float(to))
		return isa_dtype_is_float(from) ? v : (from == ISA_DT_U64 ? (double)(float)(uint64_t)iv
							  : (double)(float)iv);
	if (isa_dtype_is_float(from)) {
		if (isnan(v)) {
			*out_i = 0;
			return 0;
		}
		double lo, hi;
		uint32_t b = t_bits(to);
		if (t_uns(to)) {
			lo = 0;
			hi = ldexp(1, (int)b) - 1;
		} else {
			lo = -ldexp(1, (int)b - 1);
			hi = ldexp(1, (int)b - 1) - 1;
		}
		double tv = trunc(v);
		if (tv <= lo)
			*out_i = t_uns(to) ? 0 : (b == 64 ? INT64_MIN : (int64_t)lo);
		else if (tv >= hi)
			*out_i = b == 64 ? (t_uns(to) ? -1 : INT64_MAX) : t_wrap(to, (unsigned __int128)(uint64_t)hi);
		else
			*out_i = t_wrap(to, (unsigned __int128)(__int128)tv);
		return 0;
	}
	*out_i = t_wrap(to, (unsigned __int128)(uint64_t)iv);
	return 0;
}

START_TEST(test_copy_converts_every_dtype_pair)
{
	for (size_t a = 0; a < T_N_DTYPES; a++)
		for (size_t b = 0; b < T_N_DTYPES; b++) {
			uint32_t from = t_all_dtypes[a], to = t_all_dtypes[b];
			tmem_t t;
			tmem_init(&t);
			uint64_t shape[2] = { 4, 33 };
			isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
			in.n_ap = 2;
			in.ap[0] = tmk_ap(&t, 0, to, 2, shape, (tlayout_t)((a + b) % 4));
			in.ap[1] = tmk_ap(&t, 1, from, 2, shape, (tlayout_t)((a + 2 * b) % 4));
			uint64_t seed = 77 + a * 13 + b, idx[2];
			static const double fvals[] = { 0, -0.0, 1.5, -2.75, 300.5, -300.5, 70000, -1e10, 1e30, NAN, INFINITY, -INFINITY, 0.125, 255.875, 65504 };
			for (uint64_t f = 0; f < 132; f++) {
				tunflat(f, 2, shape, idx);
				uint8_t *p = telem(&t, &in.ap[1], idx);
				if (isa_dtype_is_float(from)) {
					double v = fvals[trand(&seed) % (sizeof(fvals) / sizeof(fvals[0]))];
					if (from == ISA_DT_F16 && fabs(v) > 65504 && isfinite(v))
						v = v < 0 ? -INFINITY : INFINITY;
					if (from == ISA_DT_F16 && isnan(v)) {
						uint16_t h = 0x7e00;
						memcpy(p, &h, 2);
						continue;
					}
					if (from == ISA_DT_F16 && isinf(v)) {
						uint16_t h = v < 0 ? 0xfc00 : 0x7c00;
						memcpy(p, &h, 2);
						continue;
					}
					if (from == ISA_DT_F16 && fabs(v) == 300.5)
						v = v < 0 ? -300.5 : 300.5; /* exact in f16 */
					if (from == ISA_DT_F16 && fabs(v) == 255.875)
						v = 255.875;
					tset(from, p, v);
				} else {
					tseti(from, p, gen_int(999, 1, from, &seed));
				}
			}
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, 0, &job), FWSIM_OK);
			for (uint64_t f = 0; f < 132; f++) {
				tunflat(f, 2, shape, idx);
				const uint8_t *ps = telem(&t, &in.ap[1], idx), *pd = telem(&t, &in.ap[0], idx);
				int64_t wi;
				double wv = conv_ref(from, to, ps, &wi);
				if (from == to) {
					ck_assert_msg(!memcmp(ps, pd, isa_dtype_size(to)), "same-dtype copy %s not bit exact",
						      isa_dtype_name(to));
				} else if (isa_dtype_is_float(to)) {
					double got = tget(to, pd);
					/* narrowing: the f32 value rounded to the target type */
					double want = wv;
					if (to == ISA_DT_F16 && fabs(want) >= 65520)
						want = want < 0 ? -INFINITY : INFINITY;
					expect_close(got, want, to == ISA_DT_F32 && !isa_dtype_is_float(from) ? ISA_DT_F32 : to,
						     isa_dtype_name(to));
				} else {
					ck_assert_msg(tgeti(to, pd) == wi, "%s(%g / %lld) -> %s: got %lld want %lld",
						      isa_dtype_name(from), tget(from, ps), (long long)(isa_dtype_is_float(from) ? 0 : tgeti(from, ps)),
						      isa_dtype_name(to), (long long)tgeti(to, pd), (long long)wi);
				}
			}
			ck_assert(tmem_guards_intact(&t));
			tmem_free(&t);
		}
}
END_TEST

/* Rows shorter than half a block run several per block (kernels_alu.c,
 * ew_rowset) when an operand holds one value per row: x - m and x / v over
 * [3, 37, 50] (10 rows per block: 10, 10, 10, 7 per index of dim 0), m a
 * row-major [3, 37] and v a transposed [37, 3], both broadcast along the
 * rows; bit for bit, and a NaN in one row of m reported at that row's first
 * flat index, 50 of them. */
START_TEST(test_alu_rows_per_block)
{
	static const uint32_t ops[2] = { ISA_ALU_SUB, ISA_ALU_DIV };
	for (int oi = 0; oi < 2; oi++) {
		tmem_t t;
		tmem_init(&t);
		uint64_t sh[3] = { 3, 37, 50 }, rsh[2] = { 3, 37 };
		isa_ap_t x = tmk_ap(&t, 1, ISA_DT_F32, 3, sh, L_CONTIG);
		isa_ap_t m = tmk_ap(&t, 2, ISA_DT_F32, 2, rsh, oi ? L_TRANSPOSED : L_CONTIG);
		isa_ap_t o = tmk_ap(&t, 0, ISA_DT_F32, 3, sh, L_CONTIG);
		float *xv = (float *)(void *)tmem_ptr(&t, 1, x.offset);
		float *mv = (float *)(void *)tmem_ptr(&t, 2, m.offset);
		const float *ov = (const float *)(const void *)tmem_ptr(&t, 0, o.offset);
		for (uint32_t e = 0; e < 3 * 37 * 50; e++)
			xv[e] = (float)(e % 97) * 0.37f - 11.0f;
		for (uint32_t e = 0; e < 3 * 37; e++)
			mv[e] = (float)(e % 13) * 0.71f + 0.5f;
		m.rank = 3;
		m.shape[2] = 50;
		m.stride[2] = 0;
		isa_insn_t in = isa_insn_init(ISA_OP_ALU, ops[oi]);
		in.n_ap = 3;
		in.ap[0] = o;
		in.ap[1] = x;
		in.ap[2] = m;
		for (int bad = 0; bad < 2; bad++) {
			uint32_t row = oi ? 20 * 3 + 1 : 1 * 37 + 20; /* [1, 20] in m's layout */
			if (bad)
				mv[row] = NAN;
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
					 bad ? FWSIM_NUM_ERR : FWSIM_OK);
			for (uint32_t a = 0; a < 3; a++)
				for (uint32_t r = 0; r < 37; r++)
					for (uint32_t e = 0; e < 50; e++) {
						uint32_t f = (a * 37 + r) * 50 + e;
						float mm = mv[oi ? r * 3 + a : a * 37 + r];
						float want = oi ? xv[f] / mm : xv[f] - mm;
						T_CHECK(memcmp(&ov[f], &want, 4) == 0 || (isnan(ov[f]) && isnan(want)),
							"op %d, element [%u, %u, %u]: %a, want %a", oi, a, r, e, ov[f], want);
					}
			if (bad) {
				ck_assert_uint_eq(job.error.first_index, (1 * 37 + 20) * 50);
				ck_assert_uint_eq(job.error.count, 50);
			}
		}
		tmem_free(&t);
	}
}
END_TEST

/* A CLAMP by one lower and one upper bound (stride 0: kernels_alu.c keeps
 * them in registers) gives the bits and NaN record of the same CLAMP with
 * the bounds as full arrays: over NaN, infinities, signed zeros and values
 * at the bounds, bounds of (0, 6), (-0, +0), (+0, -0), lo > hi and a NaN
 * bound, data contiguous and strided into a strided output. */
START_TEST(test_alu_clamp_by_bounds)
{
	static const float bounds[6][2] = { { 0, 6 }, { -0.0f, 0.0f }, { 0.0f, -0.0f },
					    { 3, -1 }, { NAN, 6 }, { 0, NAN } };
	for (int bi = 0; bi < 6; bi++)
		for (int strided = 0; strided < 2; strided++) {
			tmem_t t;
			tmem_init(&t);
			const uint64_t n = 3000;
			uint64_t sh[1] = { n };
			uint32_t bdt = ISA_DT_F32;
			float lo = bounds[bi][0], hi = bounds[bi][1];
			isa_ap_t x = tmk_ap(&t, 1, ISA_DT_F32, 1, sh, strided ? L_STRIDED : L_CONTIG);
			isa_ap_t lof = tmk_ap(&t, 2, bdt, 1, sh, L_CONTIG);
			isa_ap_t hif = tmk_ap(&t, 2, bdt, 1, sh, L_CONTIG);
			isa_ap_t o1 = tmk_ap(&t, 0, ISA_DT_F32, 1, sh, strided ? L_STRIDED : L_CONTIG);
			isa_ap_t o2 = tmk_ap(&t, 3, ISA_DT_F32, 1, sh, strided ? L_STRIDED : L_CONTIG);
			static const float special[8] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 6.0f, -1.0f, 3.0f };
			for (uint64_t e = 0; e < n; e++) {
				uint64_t idx[1] = { e };
				float v = e % 7 == 0 ? special[(e / 7) % 8] : (float)(e % 41) * 0.25f - 4.0f;
				tset(ISA_DT_F32, telem(&t, &x, idx), v);
				tset(bdt, telem(&t, &lof, idx), lo);
				tset(bdt, telem(&t, &hif, idx), hi);
			}
			isa_ap_t los = lof, his = hif;
			los.stride[0] = his.stride[0] = 0;
			fwsim_job_t j1, j2;
			isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_CLAMP);
			in.n_ap = 4;
			in.ap[0] = o1;
			in.ap[1] = lof;
			in.ap[2] = x;
			in.ap[3] = hif;
			fwsim_status_t s1 = trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &j1);
			in.ap[0] = o2;
			in.ap[1] = los;
			in.ap[3] = his;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &j2), s1);
			ck_assert_int_eq(s1, FWSIM_NUM_ERR); /* the NaNs of x at least */
			ck_assert_uint_eq(j2.error.count, j1.error.count);
			ck_assert_uint_eq(j2.error.first_index, j1.error.first_index);
			for (uint64_t e = 0; e < n; e++) {
				uint64_t idx[1] = { e };
				T_CHECK(memcmp(telem(&t, &o1, idx), telem(&t, &o2, idx), 4) == 0,
					"bounds %d, strided %d, element %llu: %a, want %a", bi, strided,
					(unsigned long long)e, tget(ISA_DT_F32, telem(&t, &o2, idx)),
					tget(ISA_DT_F32, telem(&t, &o1, idx)));
			}
			ck_assert(tmem_guards_intact(&t));
			tmem_free(&t);
		}
}
END_TEST

/* ---- float MAX, MIN and CLAMP: IEEE 754-2019 maximum and minimum ---- */

/* The values of the signed-zero tests: +0, -0, 1, -1, two NaNs, 2, -Inf, as
 * f32 bits (the NaNs with payloads), bf16 and f16 bits. Half types carry no
 * payload: they see the NaNs as 0x7fc00000 and 0xffc00000. */
static const uint32_t mm_f32[8] = { 0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u,
				    0x7fc00011u, 0xffc00022u, 0x40000000u, 0xff800000u };
static const uint16_t mm_bf16[8] = { 0x0000, 0x8000, 0x3f80, 0xbf80, 0x7fc0, 0xffc0, 0x4000, 0xff80 };
static const uint16_t mm_f16[8] = { 0x0000, 0x8000, 0x3c00, 0xbc00, 0x7e00, 0xfe00, 0x4000, 0xfc00 };

/* Value k as dtype dt sees it, in f32. */
static float mm_val(uint32_t dt, int k)
{
	if (dt != ISA_DT_F32 && (k == 4 || k == 5))
		return ns_bits_f32(k == 4 ? 0x7fc00000u : 0xffc00000u);
	return ns_bits_f32(mm_f32[k]);
}

static void mm_set(uint32_t dt, uint8_t *p, int k)
{
	if (dt == ISA_DT_F32)
		memcpy(p, &mm_f32[k], 4);
	else
		memcpy(p, dt == ISA_DT_BF16 ? &mm_bf16[k] : &mm_f16[k], 2);
}

/* The value k whose f32 form has the bits of r (every result is one of the
 * values), -1 when none has. */
static int mm_index(uint32_t dt, float r)
{
	for (int k = 0; k < 8; k++)
		if (ns_f32_bits(mm_val(dt, k)) == ns_f32_bits(r))
			return k;
	return -1;
}

/* Value index of operand i (0: ap1) of element e: every combination of
 * three over 512 elements, and first the elements a short instruction runs
 * alone, zero ties both ways round and NaN pairs. */
static const uint8_t mm_first[12][3] = {
	{ 0, 1, 1 }, { 1, 0, 1 }, { 1, 1, 0 }, { 0, 0, 1 }, { 4, 5, 0 }, { 5, 4, 1 },
	{ 1, 4, 0 }, { 4, 1, 1 }, { 2, 1, 0 }, { 3, 0, 1 }, { 1, 0, 0 }, { 0, 1, 0 },
};

/* CLAMP's register-held bounds (lo, hi) as value indices. */
static const int mm_bounds[8][2] = { { 1, 0 }, { 0, 1 }, { 1, 1 }, { 0, 0 },
				     { 0, 6 }, { 1, 6 }, { 3, 1 }, { 4, 1 } };

/* Test kind: 0 MAX, 1 MIN, 2 CLAMP, 3 + b CLAMP by mm_bounds[b]. */
static int mm_k(int kind, uint64_t e, int i)
{
	if (kind >= 3 && i != 1)
		return mm_bounds[kind - 3][i / 2];
	return e < 12 ? mm_first[e][i] : (int)((e >> (3 * i)) & 7);
}

/* Float MAX, MIN and CLAMP (bounds as arrays, and as one lower and one upper
 * value held in registers: a ReLU6's) of f32, bf16 and f16 bit for bit
 * t_fmax/t_fmin: +0 above -0 whichever operand each is, NaN from either with
 * the first NaN's bits; over 3 elements (scalar code), 12 and 3003 (vector
 * code and its tails), with and without the NaN check (two loops). */
START_TEST(test_alu_minmax_signed_zeros_ieee)
{
	static const uint32_t dts[3] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16 };
	static const uint64_t lens[3] = { 3, 12, 3003 };
	for (int kind = 0; kind < 3 + 8; kind++)
		for (int d = 0; d < 3; d++)
			for (int li = 0; li < 3; li++)
				for (int chk = 0; chk < 2; chk++) {
					uint32_t dt = dts[d];
					uint64_t n = lens[li], sh[1] = { n };
					int nin = kind == 0 || kind == 1 ? 2 : 3;
					tmem_t t;
					tmem_init(&t);
					isa_insn_t in = isa_insn_init(ISA_OP_ALU, kind == 0 ? ISA_ALU_MAX
								      : kind == 1 ? ISA_ALU_MIN : ISA_ALU_CLAMP);
					in.n_ap = (uint8_t)(1 + nin);
					in.ap[0] = tmk_ap(&t, 0, dt, 1, sh, L_CONTIG);
					for (int i = 0; i < nin; i++)
						in.ap[1 + i] = tmk_ap(&t, (uint32_t)(1 + i), dt, 1, sh, L_CONTIG);
					if (kind >= 3)
						in.ap[1].stride[0] = in.ap[3].stride[0] = 0;
					for (uint64_t e = 0; e < n; e++)
						for (int i = 0; i < nin; i++) {
							uint64_t at = kind >= 3 && i != 1 ? 0 : e;
							mm_set(dt, telem(&t, &in.ap[1 + i], &at), mm_k(kind, e, i));
						}
					fwsim_job_t job;
					fwsim_status_t st = trun1(&t, &in, ISA_ENGINE_VECTOR,
								  chk ? FWSIM_JOB_CHECK_NAN : 0, &job);
					ck_assert(st == FWSIM_OK || (chk && st == FWSIM_NUM_ERR));
					for (uint64_t e = 0; e < n; e++) {
						int ka = mm_k(kind, e, 0), kx = mm_k(kind, e, 1);
						int kh = nin > 2 ? mm_k(kind, e, 2) : 0;
						float a = mm_val(dt, ka), x = mm_val(dt, kx);
						float w = kind == 0 ? t_fmax(a, x) : kind == 1 ? t_fmin(a, x)
							: t_fmin(t_fmax(x, a), mm_val(dt, kh));
						int wk = mm_index(dt, w);
						ck_assert_int_ge(wk, 0);
						uint8_t want[4];
						mm_set(dt, want, wk);
						T_CHECK(memcmp(telem(&t, &in.ap[0], &e), want, isa_dtype_size(dt)) == 0,
							"kind %d %s n %llu check %d element %llu (values %d %d %d): "
							"%a, want %a", kind, isa_dtype_name(dt), (unsigned long long)n,
							chk, (unsigned long long)e, ka, kx, kh,
							tget(dt, telem(&t, &in.ap[0], &e)), (double)w);
					}
					tmem_free(&t);
				}
}
END_TEST

/* The same with rows that do not run on from one to the next (gathered and
 * scattered row by row: a max-pool gradient's window-offset views): over
 * [3, 37, 20], the output at row pitch 23, input a at element stride 2 and
 * row pitch 41, input b one value per row; f32 SUB (a NaN at [2, 30, 7]
 * reported there) and s32 ADD through the integer path; the gaps between the
 * output's rows are left alone. */
START_TEST(test_alu_strided_rows_per_block)
{
	static const uint32_t dts[2] = { ISA_DT_F32, ISA_DT_S32 };
	for (int di = 0; di < 2; di++) {
		uint32_t dt = dts[di];
		tmem_t t;
		tmem_init(&t);
		const uint64_t A = 3, R = 37, L = 20;
		isa_ap_t o, a, b;
		memset(&o, 0, sizeof(o));
		o.dtype = (uint8_t)dt;
		o.rank = 3;
		o.shape[0] = A;
		o.shape[1] = R;
		o.shape[2] = L;
		a = b = o;
		o.region = 0;
		o.stride[2] = 1;
		o.stride[1] = 23;
		o.stride[0] = 23 * (int64_t)R;
		o.offset = tmem_alloc(&t, 0, A * R * 23 * 4);
		a.region = 1;
		a.stride[2] = 2;
		a.stride[1] = 41;
		a.stride[0] = 41 * (int64_t)R;
		a.offset = tmem_alloc(&t, 1, A * R * 41 * 4);
		b.region = 2;
		b.stride[2] = 0;
		b.stride[1] = 1;
		b.stride[0] = (int64_t)R;
		b.offset = tmem_alloc(&t, 2, A * R * 4);
		uint32_t *ov = (uint32_t *)(void *)tmem_ptr(&t, 0, o.offset);
		uint32_t *av = (uint32_t *)(void *)tmem_ptr(&t, 1, a.offset);
		uint32_t *bv = (uint32_t *)(void *)tmem_ptr(&t, 2, b.offset);
		for (uint64_t e = 0; e < A * R * 41; e++) {
			float f = (float)(e % 89) * 0.25f - 9.0f;
			av[e] = dt == ISA_DT_F32 ? 0 : (uint32_t)(int32_t)(e % 89) - 40u;
			if (dt == ISA_DT_F32)
				memcpy(&av[e], &f, 4);
		}
		for (uint64_t e = 0; e < A * R; e++) {
			float f = (float)(e % 7) + 0.5f;
			bv[e] = dt == ISA_DT_F32 ? 0 : (uint32_t)(e % 7) * 1000u;
			if (dt == ISA_DT_F32)
				memcpy(&bv[e], &f, 4);
		}
		for (uint64_t e = 0; e < A * R * 23; e++)
			ov[e] = 0xdeadbeefu;
		if (dt == ISA_DT_F32) {
			float nan = NAN;
			memcpy(&av[(2 * R + 30) * 41 + 7 * 2], &nan, 4);
		}
		isa_insn_t in = isa_insn_init(ISA_OP_ALU, dt == ISA_DT_F32 ? ISA_ALU_SUB : ISA_ALU_ADD);
		in.n_ap = 3;
		in.ap[0] = o;
		in.ap[1] = a;
		in.ap[2] = b;
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job),
				 dt == ISA_DT_F32 ? FWSIM_NUM_ERR : FWSIM_OK);
		if (dt == ISA_DT_F32) {
			ck_assert_uint_eq(job.error.first_index, (2 * R + 30) * L + 7);
			ck_assert_uint_eq(job.error.count, 1);
		}
		for (uint64_t x = 0; x < A; x++)
			for (uint64_t r = 0; r < R; r++)
				for (uint64_t e = 0; e < 23; e++) {
					uint32_t got = ov[(x * R + r) * 23 + e], want = 0xdeadbeefu;
					uint32_t va = av[(x * R + r) * 41 + e * 2], vb = bv[x * R + r];
					if (e < L && dt == ISA_DT_F32) {
						float fa, fb2, fw;
						memcpy(&fa, &va, 4);
						memcpy(&fb2, &vb, 4);
						fw = fa - fb2;
						memcpy(&want, &fw, 4);
					} else if (e < L) {
						want = (uint32_t)((int32_t)va + (int32_t)vb);
					}
					T_CHECK(got == want || (dt == ISA_DT_F32 && e < L && got != 0xdeadbeefu &&
								(got & 0x7fffffffu) > 0x7f800000u &&
								(want & 0x7fffffffu) > 0x7f800000u),
						"dtype %u [%llu, %llu, %llu]: 0x%08x, want 0x%08x", dt,
						(unsigned long long)x, (unsigned long long)r, (unsigned long long)e,
						got, want);
				}
		tmem_free(&t);
	}
}
END_TEST

/* A COPY of every other f32 of each row into dense rows (the im2col of a
 * stride-2 window), the rows' lengths around the block size and odd: exact
 * values, nothing written past the rows, a NaN counted where it lands. */
START_TEST(test_copy_stride2_rows)
{
	static const uint64_t lens[] = { 1, 7, 63, 64, 65, 1000, 1025 };
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		uint64_t len = lens[li], rows = 3;
		tmem_t t;
		tmem_init(&t);
		float *src = (float *)(void *)tmem_ptr(&t, 1, 4);
		for (uint64_t i = 0; i < rows * (2 * len + 3); i++)
			src[i] = (float)i * 0.5f - 7.0f;
		src[(2 * len + 3) + 2 * (len - 1)] = NAN; /* row 1, its last element */
		isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
		in.n_ap = 2;
		isa_ap_t *d = &in.ap[0], *s = &in.ap[1];
		d->region = 0;
		d->dtype = ISA_DT_F32;
		d->rank = 2;
		d->shape[0] = rows;
		d->shape[1] = len;
		d->stride[0] = (int64_t)len;
		d->stride[1] = 1;
		*s = *d;
		s->region = 1;
		s->offset = 4; /* not 8-aligned */
		s->stride[0] = (int64_t)(2 * len + 3);
		s->stride[1] = 2;
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
		const float *out = (const float *)(const void *)tmem_ptr(&t, 0, 0);
		for (uint64_t r = 0; r < rows; r++)
			for (uint64_t i = 0; i < len; i++) {
				float want = src[r * (2 * len + 3) + 2 * i];
				ck_assert_msg(memcmp(&out[r * len + i], &want, 4) == 0, "len %llu row %llu elem %llu",
					      (unsigned long long)len, (unsigned long long)r, (unsigned long long)i);
			}
		ck_assert_uint_eq(job.error.count, 1);
		ck_assert_uint_eq(job.error.first_index, len + len - 1);
		ck_assert(tmem_guards_intact(&t));
		tmem_free(&t);
	}
}
END_TEST

static uint16_t copy_f32_to(uint32_t dt, float v)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 0, dt, 0, NULL);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 0, NULL);
	memcpy(tmem_ptr(&t, 1, 0), &v, 4);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, 0, &job), FWSIM_OK);
	uint16_t h;
	memcpy(&h, tmem_ptr(&t, 0, 0), 2);
	tmem_free(&t);
	return h;
}

static float fbits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

START_TEST(test_narrowing_rounds_to_nearest_even_and_keeps_nan)
{
	/* bf16: ties to even, NaN stays NaN (not Inf), overflow to Inf */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_BF16, fbits(0x3f808000u)), 0x3f80); /* tie, even down */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_BF16, fbits(0x3f818000u)), 0x3f82); /* tie, even up */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_BF16, fbits(0x3f808001u)), 0x3f81);
	uint16_t n = copy_f32_to(ISA_DT_BF16, fbits(0x7f800001u));
	ck_assert((n & 0x7f80) == 0x7f80 && (n & 0x7f));
	ck_assert_uint_eq(copy_f32_to(ISA_DT_BF16, fbits(0x7f7fffffu)), 0x7f80);
	/* f16 */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 1.0f), 0x3c00);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 65504.0f), 0x7bff);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 65519.0f), 0x7bff);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 65520.0f), 0x7c00);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, -1e9f), 0xfc00);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 1.0f + 0x1p-11f), 0x3c00);       /* tie to even */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 1.0f + 3 * 0x1p-11f), 0x3c02);   /* tie to even up */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 0x1p-24f), 0x0001);              /* smallest subnormal */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 0x1p-25f), 0x0000);              /* tie to even: 0 */
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 0x1.8p-25f), 0x0001);
	ck_assert_uint_eq(copy_f32_to(ISA_DT_F16, 0x1p-14f), 0x0400);              /* smallest normal */
	n = copy_f32_to(ISA_DT_F16, NAN);
	ck_assert((n & 0x7c00) == 0x7c00 && (n & 0x3ff));
}
END_TEST


/* EXP is the C library's expf bit for bit, also where it runs vectorised
 * (expf_block.c): a stride-61 sample of all 2^32 float patterns (70M,
 * every exponent, both signs, NaN payloads, the +-88 edges) through the
 * block function, and an ALU EXP and an ACTIVATE EXP (scale 0.5, bias 0.25)
 * job over 128K of them. On a CPU with AVX2 and FMA (and AVX-512F) the
 * vector code for it must be the one running (it is switched off only when
 * it disagrees with expf). */
START_TEST(test_exp_is_libm_expf_bit_for_bit)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		ck_assert_int_eq(fwsim_expf_vector(), __builtin_cpu_supports("avx512f") ? 2 : 1);
#endif
	enum { B = 1 << 16 };
	static float in[B], got[B];
	uint64_t n = 0, bad = 0;
	for (uint64_t u0 = 0; u0 < (1ull << 32); u0 += 61ull * B) {
		size_t m = 0;
		for (uint64_t u = u0; m < B && u < (1ull << 32); u += 61, m++) {
			uint32_t b = (uint32_t)u;
			memcpy(&in[m], &b, 4);
		}
		fwsim_expf_block(m, got, in);
		for (size_t i = 0; i < m; i++) {
			float want = expf(in[i]);
			bad += memcmp(&want, &got[i], 4) != 0;
		}
		n += m;
	}
	ck_assert_msg(bad == 0, "%llu of %llu expf values differ", (unsigned long long)bad,
		      (unsigned long long)n);

	uint64_t shape[1] = { T_REGSZ / 8 };
	for (int act = 0; act < 2; act++) {
		tmem_t t;
		tmem_init(&t);
		isa_insn_t ins = act ? isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_EXP)
				     : isa_insn_init(ISA_OP_ALU, ISA_ALU_EXP);
		ins.n_ap = 2;
		if (act) {
			ins.imm[0] = 0.5;
			ins.imm[1] = 0.25;
		}
		ins.ap[0] = tmk_ap(&t, 0, ISA_DT_F32, 1, shape, L_CONTIG);
		ins.ap[1] = tmk_ap(&t, 1, ISA_DT_F32, 1, shape, L_CONTIG);
		float *x = (float *)(void *)tmem_ptr(&t, 1, ins.ap[1].offset);
		float *y = (float *)(void *)tmem_ptr(&t, 0, ins.ap[0].offset);
		for (uint64_t i = 0; i < shape[0]; i++) {
			uint32_t b = (uint32_t)(i * 16411u + (act ? 7u : 0u));
			memcpy(&x[i], &b, 4);
		}
		fwsim_job_t job;
		fwsim_status_t st = trun1(&t, &ins, act ? ISA_ENGINE_SCALAR : ISA_ENGINE_VECTOR, 0, &job);
		ck_assert_msg(st == FWSIM_OK, "%s", job.error.message);
		for (uint64_t i = 0; i < shape[0]; i++) {
			float want = act ? expf(x[i] * 0.5f + 0.25f) : expf(x[i]);
			T_CHECK(memcmp(&want, &y[i], 4) == 0, "%s element %llu: exp(%a) = %a, want %a",
				act ? "ACTIVATE" : "ALU", (unsigned long long)i, x[i], y[i], want);
		}
		tmem_free(&t);
	}
}
END_TEST

/* The vectorised (contiguous) and scalar (strided) conversion paths must agree
 * bit for bit: all 65536 f16 patterns to f32 and back, plus random f32. */
START_TEST(test_f16_vector_and_scalar_paths_agree)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t n = 65536, sh[1] = { n };
	uint16_t *src = (uint16_t *)(void *)tmem_ptr(&t, 0, 0);
	for (uint64_t i = 0; i < n; i++)
		src[i] = (uint16_t)i;
	isa_insn_t in[4];
	for (int q = 0; q < 4; q++) {
		in[q] = isa_insn_init(ISA_OP_COPY, 0);
		in[q].n_ap = 2;
	}
	/* f16 -> f32 contiguous (region 1) and strided (region 2, stride 2) */
	in[0].ap[1] = isa_ap_contig(0, 0, ISA_DT_F16, 1, sh);
	in[0].ap[0] = isa_ap_contig(1, 0, ISA_DT_F32, 1, sh);
	in[1].ap[1] = in[0].ap[1];
	in[1].ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 1, sh);
	in[1].ap[0].stride[0] = 2;
	/* and back to f16, from random f32 bit patterns in region 3 */
	uint32_t *r = (uint32_t *)(void *)tmem_ptr(&t, 3, 0);
	uint64_t seed = 4242;
	for (uint64_t i = 0; i < n; i++)
		r[i] = (uint32_t)trand(&seed);
	r[0] = 0x7f800001u; r[1] = 0x33000000u; r[2] = 0x477ff000u; r[3] = 0x3f801000u;
	in[2].ap[1] = isa_ap_contig(3, 0, ISA_DT_F32, 1, sh);
	in[2].ap[0] = isa_ap_contig(3, 4 * n, ISA_DT_F16, 1, sh);
	in[3].ap[1] = in[2].ap[1];
	in[3].ap[0] = isa_ap_contig(3, 6 * n, ISA_DT_F16, 1, sh);
	in[3].ap[0].stride[0] = 2;
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_DMA] = in };
	uint32_t c[ISA_ENGINE_COUNT] = { [ISA_ENGINE_DMA] = 4 };
	fwsim_job_t job;
	ck_assert_int_eq(trun_prog(&t, NULL, s, c, 0, 0, &job), FWSIM_OK);
	const uint32_t *a = (const uint32_t *)(const void *)tmem_ptr(&t, 1, 0);
	const uint32_t *b = (const uint32_t *)(const void *)tmem_ptr(&t, 2, 0);
	for (uint64_t i = 0; i < n; i++) {
		T_CHECK(a[i] == b[2 * i], "f16 0x%04llx: 0x%08x vs 0x%08x", (unsigned long long)i, a[i], b[2 * i]);
		double want = tf16_dec((uint16_t)i);
		float got;
		memcpy(&got, &a[i], 4);
		T_CHECK(isnan(want) ? isnan(got) : got == want, "f16 0x%04llx: %g, want %g",
			(unsigned long long)i, got, want);
	}
	const uint16_t *h1 = (const uint16_t *)(const void *)tmem_ptr(&t, 3, 4 * n);
	const uint16_t *h2 = (const uint16_t *)(const void *)tmem_ptr(&t, 3, 6 * n);
	for (uint64_t i = 0; i < n; i++)
		T_CHECK(h1[i] == h2[2 * i], "f32 0x%08x: 0x%04x vs 0x%04x", r[i], h1[i], h2[2 * i]);
	tmem_free(&t);
}
END_TEST

Suite *alu_suite(void);
Suite *alu_suite(void)
{
	Suite *s = suite_create("fwsim-alu");
	TCase *tc = tcase_create("alu");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_alu_all_ops_all_dtypes, 0, (int)N_ALU_OPS);
	tcase_add_test(tc, test_activate_all_funcs);
	tcase_add_test(tc, test_copy_converts_every_dtype_pair);
	tcase_add_test(tc, test_copy_stride2_rows);
	tcase_add_test(tc, test_alu_rows_per_block);
	tcase_add_test(tc, test_alu_clamp_by_bounds);
	tcase_add_test(tc, test_alu_minmax_signed_zeros_ieee);
	tcase_add_test(tc, test_alu_strided_rows_per_block);
	tcase_add_test(tc, test_narrowing_rounds_to_nearest_even_and_keeps_nan);
	tcase_add_test(tc, test_f16_vector_and_scalar_paths_agree);
	tcase_add_test(tc, test_exp_is_libm_expf_bit_for_bit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(alu_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
