/* ncc reference interpreter: elementwise ops (unary, binary, compare, select, clamp, convert, bitcast-convert). Map: interp_call.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

/* The elementwise ops of the interpreter: one table, two columns, for the two
 * questions asked of it.
 *   EW_EVAL  the interpreter evaluates the op (ncc_elementwise_supported):
 *            ncc_eval_elementwise does, map goes to ncc_eval_map.
 *   EW_FOLD  the fold pass may fold it (ncc_interp_folds_elementwise): evaluated
 *            alone by ncc_interp_eval_inst, and elementwise, so that
 *            op(broadcast(c), ...) = broadcast(op(c, ...)). That is every EW_EVAL
 *            op but map (it calls a computation, which ncc_interp_eval_inst does
 *            not run) and reduce-precision (not folded so far), plus convert
 *            (ncc_eval_convert evaluates it). */
enum { EW_EVAL = 1, EW_FOLD = 2, EW_BOTH = EW_EVAL | EW_FOLD };

static const uint8_t ew_ops[NCC_OP_COUNT] = {
	/* unary */
	[NCC_OP_ABS] = EW_BOTH, [NCC_OP_CBRT] = EW_BOTH, [NCC_OP_CEIL] = EW_BOTH,
	[NCC_OP_CLZ] = EW_BOTH, [NCC_OP_COS] = EW_BOTH, [NCC_OP_ERF] = EW_BOTH,
	[NCC_OP_EXP] = EW_BOTH, [NCC_OP_EXPM1] = EW_BOTH, [NCC_OP_FLOOR] = EW_BOTH,
	[NCC_OP_IS_FINITE] = EW_BOTH, [NCC_OP_LOG] = EW_BOTH, [NCC_OP_LOG1P] = EW_BOTH,
	[NCC_OP_LOGISTIC] = EW_BOTH, [NCC_OP_NEGATE] = EW_BOTH, [NCC_OP_NOT] = EW_BOTH,
	[NCC_OP_POPCNT] = EW_BOTH, [NCC_OP_ROUND_NEAREST_AFZ] = EW_BOTH,
	[NCC_OP_ROUND_NEAREST_EVEN] = EW_BOTH, [NCC_OP_RSQRT] = EW_BOTH, [NCC_OP_SIGN] = EW_BOTH,
	[NCC_OP_SIN] = EW_BOTH, [NCC_OP_SQRT] = EW_BOTH, [NCC_OP_TAN] = EW_BOTH,
	[NCC_OP_TANH] = EW_BOTH, [NCC_OP_REDUCE_PRECISION] = EW_EVAL, [NCC_OP_CONVERT] = EW_FOLD,
	/* binary */
	[NCC_OP_ADD] = EW_BOTH, [NCC_OP_ATAN2] = EW_BOTH, [NCC_OP_COMPARE] = EW_BOTH,
	[NCC_OP_DIVIDE] = EW_BOTH, [NCC_OP_MAXIMUM] = EW_BOTH, [NCC_OP_MINIMUM] = EW_BOTH,
	[NCC_OP_MULTIPLY] = EW_BOTH, [NCC_OP_POWER] = EW_BOTH, [NCC_OP_REMAINDER] = EW_BOTH,
	[NCC_OP_SUBTRACT] = EW_BOTH, [NCC_OP_AND] = EW_BOTH, [NCC_OP_OR] = EW_BOTH,
	[NCC_OP_XOR] = EW_BOTH, [NCC_OP_SHIFT_LEFT] = EW_BOTH,
	[NCC_OP_SHIFT_RIGHT_ARITHMETIC] = EW_BOTH, [NCC_OP_SHIFT_RIGHT_LOGICAL] = EW_BOTH,
	/* ternary; map applies a computation */
	[NCC_OP_SELECT] = EW_BOTH, [NCC_OP_CLAMP] = EW_BOTH, [NCC_OP_MAP] = EW_EVAL,
};

bool ncc_elementwise_supported(ncc_opcode_t op)
{
	return (unsigned)op < NCC_OP_COUNT && (ew_ops[op] & EW_EVAL);
}

bool ncc_interp_folds_elementwise(ncc_opcode_t op)
{
	return (unsigned)op < NCC_OP_COUNT && (ew_ops[op] & EW_FOLD);
}

/* ------------------------------------------------------------ floats */

static double un_f(ncc_opcode_t op, double x)
{
	switch (op) {
	case NCC_OP_ABS: return fabs(x);
	case NCC_OP_CBRT: return cbrt(x);
	case NCC_OP_CEIL: return ceil(x);
	case NCC_OP_COS: return cos(x);
	case NCC_OP_ERF: return erf(x);
	case NCC_OP_EXP: return exp(x);
	case NCC_OP_EXPM1: return expm1(x);
	case NCC_OP_FLOOR: return floor(x);
	case NCC_OP_LOG: return log(x);
	case NCC_OP_LOG1P: return log1p(x);
	case NCC_OP_LOGISTIC: return 1.0 / (1.0 + exp(-x));
	case NCC_OP_NEGATE: return -x;
	case NCC_OP_ROUND_NEAREST_AFZ: return round(x);
	case NCC_OP_ROUND_NEAREST_EVEN: return nearbyint(x); /* default mode: ties to even */
	case NCC_OP_RSQRT: return 1.0 / sqrt(x);
	case NCC_OP_SIGN: return isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : x));
	case NCC_OP_SIN: return sin(x);
	case NCC_OP_SQRT: return sqrt(x);
	case NCC_OP_TAN: return tan(x);
	case NCC_OP_TANH: return tanh(x);
	default: return NAN;
	}
}

static double bin_f(ncc_opcode_t op, double x, double y)
{
	switch (op) {
	case NCC_OP_ADD: return x + y;
	case NCC_OP_SUBTRACT: return x - y;
	case NCC_OP_MULTIPLY: return x * y;
	case NCC_OP_DIVIDE: return x / y;
	case NCC_OP_REMAINDER: return fmod(x, y);
	case NCC_OP_POWER: return pow(x, y);
	case NCC_OP_ATAN2: return atan2(x, y);
	/* NaN propagates through maximum/minimum, the operand's own (x's when
	 * it is one, else y's), as XLA:CPU and the device give it */
	case NCC_OP_MAXIMUM:
		return isnan(x) ? x : isnan(y) ? y : (x > y ? x : (x < y ? y : (signbit(x) ? y : x)));
	case NCC_OP_MINIMUM:
		return isnan(x) ? x : isnan(y) ? y : (x < y ? x : (x > y ? y : (signbit(x) ? x : y)));
	default: return NAN;
	}
}

/* ------------------------------------------------------------ integers */

/* Integers travel as uint64: signed values sign-extended, unsigned zero-extended. */
static uint64_t trunc_to(ncc_etype_t t, uint64_t x)
{
	int bits = ncc_etype_bits(t);
	if (t == NCC_PRED)
		return x & 1;
	if (bits >= 64)
		return x;
	uint64_t m = ((uint64_t)1 << bits) - 1;
	x &= m;
	if (ncc_etype_is_signed_int(t) && (x >> (bits - 1)) & 1)
		x |= ~m;
	return x;
}

static uint64_t ipow(ncc_etype_t t, uint64_t base, uint64_t e)
{
	bool sgn = ncc_etype_is_signed_int(t);
	if (sgn && (int64_t)e < 0) {
		/* b^-n: 1 for b == 1, +-1 for b == -1, else 0 (truncated quotient) */
		if ((int64_t)base == 1)
			return 1;
		if ((int64_t)base == -1)
			return (e & 1) ? (uint64_t)-1 : 1;
		return 0;
	}
	uint64_t r = 1;
	while (e) {
		if (e & 1)
			r *= base;
		base *= base;
		e >>= 1;
	}
	return r;
}

static uint64_t bin_i(ncc_opcode_t op, ncc_etype_t t, uint64_t a, uint64_t b)
{
	bool sgn = ncc_etype_is_signed_int(t);
	int bits = t == NCC_PRED ? 1 : ncc_etype_bits(t);
	switch (op) {
	case NCC_OP_ADD: return a + b;
	case NCC_OP_SUBTRACT: return a - b;
	case NCC_OP_MULTIPLY: return a * b;
	case NCC_OP_DIVIDE:
		if (b == 0)
			return UINT64_MAX;          /* x / 0 = -1 (all ones) */
		if (sgn)
			return (int64_t)b == -1 ? (uint64_t)0 - a /* INT_MIN / -1 wraps to INT_MIN */
						: (uint64_t)((int64_t)a / (int64_t)b);
		return a / b;
	case NCC_OP_REMAINDER:
		if (b == 0)
			return a;                   /* x % 0 = x */
		if (sgn)
			return (int64_t)b == -1 ? 0 : (uint64_t)((int64_t)a % (int64_t)b);
		return a % b;
	case NCC_OP_POWER: return ipow(t, a, b);
	case NCC_OP_MAXIMUM:
		return sgn ? ((int64_t)a > (int64_t)b ? a : b) : (a > b ? a : b);
	case NCC_OP_MINIMUM:
		return sgn ? ((int64_t)a < (int64_t)b ? a : b) : (a < b ? a : b);
	case NCC_OP_AND: return a & b;
	case NCC_OP_OR: return a | b;
	case NCC_OP_XOR: return a ^ b;
	case NCC_OP_SHIFT_LEFT: case NCC_OP_SHIFT_RIGHT_LOGICAL: case NCC_OP_SHIFT_RIGHT_ARITHMETIC: {
		/* the amount is read as unsigned of the element width: negative or >= width
		 * is out of range and gives 0 (logical/left) or the sign fill (arithmetic) */
		uint64_t mask = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
		uint64_t n = b & mask;
		if (op == NCC_OP_SHIFT_LEFT)
			return n >= (uint64_t)bits ? 0 : a << n;
		if (op == NCC_OP_SHIFT_RIGHT_LOGICAL)
			return n >= (uint64_t)bits ? 0 : (a & mask) >> n;
		if (n >= (uint64_t)bits)
			return ((int64_t)trunc_to(t, a) < 0 && sgn) ? UINT64_MAX
				: (sgn ? 0 : ((a >> (bits - 1)) & 1 ? UINT64_MAX : 0));
		if (!sgn) {
			/* arithmetic shift of an unsigned type: shift the width's sign bit in */
			uint64_t v = a & mask;
			bool neg = (v >> (bits - 1)) & 1;
			uint64_t r = v >> n;
			if (neg && n)
				r |= mask & ~(mask >> n);
			return r;
		}
		return (uint64_t)((int64_t)a >> n);
	}
	default: return 0;
	}
}

static uint64_t un_i(ncc_opcode_t op, ncc_etype_t t, uint64_t a)
{
	bool sgn = ncc_etype_is_signed_int(t);
	int bits = ncc_etype_bits(t);
	uint64_t mask = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
	switch (op) {
	case NCC_OP_ABS: return sgn && (int64_t)a < 0 ? (uint64_t)0 - a : a;
	case NCC_OP_NEGATE: return (uint64_t)0 - a;
	case NCC_OP_NOT: return t == NCC_PRED ? !a : ~a;
	case NCC_OP_SIGN:
		if (sgn)
			return (int64_t)a > 0 ? 1 : ((int64_t)a < 0 ? UINT64_MAX : 0);
		return a != 0;
	case NCC_OP_POPCNT: return (uint64_t)__builtin_popcountll(a & mask);
	case NCC_OP_CLZ: {
		uint64_t v = a & mask;
		if (!v)
			return (uint64_t)bits;
		return (uint64_t)(__builtin_clzll(v) - (64 - bits));
	}
	default: return 0;
	}
}

void ncc_binary_elem(ncc_opcode_t op, ncc_etype_t t, const void *a, int64_t ia, const void *b,
		     int64_t ib, void *out, int64_t io)
{
	if (ncc_is_fp(t)) {
		ncc_st_fp(t, out, io, bin_f(op, ncc_ld_f(t, a, ia), ncc_ld_f(t, b, ib)));
		return;
	}
	ncc_st_u(t, out, io, trunc_to(t, bin_i(op, t, ncc_ld_u(t, a, ia), ncc_ld_u(t, b, ib))));
}

/* ------------------------------------------------------------ compare */

/* Key that orders floats totally: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN. */
static int64_t total_order_key(ncc_etype_t t, const void *p, int64_t i)
{
	uint64_t bits, sign, mag;
	switch (t) {
	case NCC_F16: case NCC_BF16:
		bits = ((const uint16_t *)p)[i];
		sign = bits >> 15;
		mag = bits & 0x7fff;
		break;
	case NCC_F32:
		bits = ((const uint32_t *)p)[i];
		sign = bits >> 31;
		mag = bits & 0x7fffffffu;
		break;
	default:
		bits = ((const uint64_t *)p)[i];
		sign = bits >> 63;
		mag = bits & 0x7fffffffffffffffull;
		break;
	}
	return sign ? -(int64_t)mag - 1 : (int64_t)mag;
}

static bool cmp_result(ncc_cmp_dir_t dir, int c, bool unordered)
{
	if (unordered)
		return dir == NCC_CMP_NE;
	switch (dir) {
	case NCC_CMP_EQ: return c == 0;
	case NCC_CMP_NE: return c != 0;
	case NCC_CMP_LT: return c < 0;
	case NCC_CMP_LE: return c <= 0;
	case NCC_CMP_GT: return c > 0;
	case NCC_CMP_GE: return c >= 0;
	default: return false;
	}
}

static ncc_status_t eval_compare(ncc_interp_t *ip, const ncc_inst_t *inst,
				 const ncc_value_t *a, const ncc_value_t *b, ncc_value_t *out)
{
	ncc_etype_t t = a->shape.etype;
	int64_t n = ncc_value_elements(out);
	ncc_cmp_type_t ct = inst->cmp_type;
	if (ct == NCC_CMPT_DEFAULT)
		ct = ncc_is_fp(t) ? NCC_CMPT_FLOAT
				  : (ncc_etype_is_signed_int(t) ? NCC_CMPT_SIGNED : NCC_CMPT_UNSIGNED);
	if (inst->cmp_dir == NCC_CMP_NONE)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "compare without direction");
	if (b->shape.etype != t)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "compare of different element types");
	uint8_t *o = out->data;
	if (t == NCC_F32 && ct == NCC_CMPT_FLOAT) {
		/* IEEE comparisons are exactly C's on floats (NaN unordered, -0 == +0) */
		const float *A = a->data, *B = b->data;
		switch (inst->cmp_dir) {
		case NCC_CMP_EQ: for (int64_t i = 0; i < n; i++) o[i] = A[i] == B[i]; return NCC_OK;
		case NCC_CMP_NE: for (int64_t i = 0; i < n; i++) o[i] = A[i] != B[i]; return NCC_OK;
		case NCC_CMP_LT: for (int64_t i = 0; i < n; i++) o[i] = A[i] < B[i]; return NCC_OK;
		case NCC_CMP_LE: for (int64_t i = 0; i < n; i++) o[i] = A[i] <= B[i]; return NCC_OK;
		case NCC_CMP_GT: for (int64_t i = 0; i < n; i++) o[i] = A[i] > B[i]; return NCC_OK;
		case NCC_CMP_GE: for (int64_t i = 0; i < n; i++) o[i] = A[i] >= B[i]; return NCC_OK;
		default: break;
		}
	}
	for (int64_t i = 0; i < n; i++) {
		int c;
		bool unordered = false;
		if (ncc_is_fp(t) && ct != NCC_CMPT_TOTALORDER) {
			double x = ncc_ld_f(t, a->data, i), y = ncc_ld_f(t, b->data, i);
			unordered = isnan(x) || isnan(y);
			c = x < y ? -1 : (x > y ? 1 : 0);
		} else if (ncc_is_fp(t)) {
			int64_t x = total_order_key(t, a->data, i), y = total_order_key(t, b->data, i);
			c = x < y ? -1 : (x > y ? 1 : 0);
		} else if (ct == NCC_CMPT_SIGNED) {
			int64_t x = (int64_t)ncc_ld_u(t, a->data, i), y = (int64_t)ncc_ld_u(t, b->data, i);
			c = x < y ? -1 : (x > y ? 1 : 0);
		} else {
			int bits = t == NCC_PRED ? 8 : ncc_etype_bits(t);
			uint64_t m = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
			uint64_t x = ncc_ld_u(t, a->data, i) & m, y = ncc_ld_u(t, b->data, i) & m;
			c = x < y ? -1 : (x > y ? 1 : 0);
		}
		o[i] = cmp_result(inst->cmp_dir, c, unordered);
	}
	return NCC_OK;
}

/* ------------------------------------------------------------ drivers */

/* Element i of an operand that may be a scalar broadcast (select/clamp allow it). */
static inline int64_t bidx(const ncc_value_t *v, int64_t i)
{
	return v->shape.rank == 0 ? 0 : i;
}

ncc_status_t ncc_eval_elementwise(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out)
{
	ncc_opcode_t op = inst->op;
	ncc_etype_t t = out->shape.etype;
	int64_t n = ncc_value_elements(out);
	int32_t want = op == NCC_OP_SELECT || op == NCC_OP_CLAMP ? 3
		       : (ncc_opcode_is_elementwise_binary(op) ? 2 : 1);
	if (inst->noperands != want)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "expected %d operands, got %d", want,
				       inst->noperands);
	for (int32_t k = 0; k < want; k++) {
		int64_t m = ncc_value_elements(ops[k]);
		bool scalar_ok = (op == NCC_OP_SELECT || op == NCC_OP_CLAMP) && ops[k]->shape.rank == 0;
		if (m != n && !scalar_ok)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
					       "operand %d has %lld elements, the result %lld", k,
					       (long long)m, (long long)n);
	}
	if (op == NCC_OP_COMPARE)
		return eval_compare(ip, inst, ops[0], ops[1], out);

	if (op == NCC_OP_SELECT) {
		const ncc_value_t *p = ops[0], *a = ops[1], *b = ops[2];
		size_t es = ncc_etype_storage_bytes(t);
		if (p->shape.etype != NCC_PRED || a->shape.etype != t || b->shape.etype != t)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "select operand types");
		const uint8_t *pd = p->data;
		if (es == 4 && p->shape.rank && a->shape.rank && b->shape.rank) {
			const uint32_t *A = a->data, *B = b->data;
			uint32_t *O = out->data;
			for (int64_t i = 0; i < n; i++)
				O[i] = pd[i] ? A[i] : B[i];
			return NCC_OK;
		}
		for (int64_t i = 0; i < n; i++) {
			const ncc_value_t *s = pd[bidx(p, i)] ? a : b;
			memcpy((char *)out->data + i * (int64_t)es, (const char *)s->data + bidx(s, i) * (int64_t)es, es);
		}
		return NCC_OK;
	}
	if (op == NCC_OP_CLAMP) {
		/* clamp(lo, x, hi) = min(max(x, lo), hi) */
		const ncc_value_t *lo = ops[0], *x = ops[1], *hi = ops[2];
		if (lo->shape.etype != t || x->shape.etype != t || hi->shape.etype != t)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "clamp operand types");
		if (t == NCC_F32) {
			const float *L = lo->data, *X = x->data, *H = hi->data;
			float *O = out->data;
			int64_t sl = lo->shape.rank ? 1 : 0, sh = hi->shape.rank ? 1 : 0;
			for (int64_t i = 0; i < n; i++) {
				float v = X[i], l = L[i * sl], h = H[i * sh];
				if (v != v || l != l || h != h) {
					O[i] = NAN;
					continue;
				}
				/* max(v, l) then min(., h), with max(-0, +0) = +0 and min = -0 */
				float m = v > l ? v : (v < l ? l : (signbit(v) ? l : v));
				O[i] = m < h ? m : (m > h ? h : (signbit(m) ? m : h));
			}
			return NCC_OK;
		}
		for (int64_t i = 0; i < n; i++) {
			ncc_binary_elem(NCC_OP_MAXIMUM, t, x->data, i, lo->data, bidx(lo, i), out->data, i);
			ncc_binary_elem(NCC_OP_MINIMUM, t, out->data, i, hi->data, bidx(hi, i), out->data, i);
		}
		return NCC_OK;
	}

	if (want == 2) {
		const ncc_value_t *a = ops[0], *b = ops[1];
		if (a->shape.etype != t || b->shape.etype != t)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand element types differ from the result's");
		if (t == NCC_F32) {
			const float *A = a->data, *B = b->data;
			float *O = out->data;
			switch (op) {
			case NCC_OP_ADD:
				for (int64_t i = 0; i < n; i++) O[i] = A[i] + B[i];
				return NCC_OK;
			case NCC_OP_SUBTRACT:
				for (int64_t i = 0; i < n; i++) O[i] = A[i] - B[i];
				return NCC_OK;
			case NCC_OP_MULTIPLY:
				for (int64_t i = 0; i < n; i++) O[i] = A[i] * B[i];
				return NCC_OK;
			case NCC_OP_DIVIDE:
				for (int64_t i = 0; i < n; i++) O[i] = A[i] / B[i];
				return NCC_OK;
			default:
				for (int64_t i = 0; i < n; i++) O[i] = (float)bin_f(op, A[i], B[i]);
				return NCC_OK;
			}
		}
		if (ncc_is_fp(t)) {
			for (int64_t i = 0; i < n; i++)
				ncc_st_fp(t, out->data, i, bin_f(op, ncc_ld_f(t, a->data, i), ncc_ld_f(t, b->data, i)));
			return NCC_OK;
		}
		switch (op) {
		case NCC_OP_ATAN2:
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s needs a float type", inst->opname);
		default: break;
		}
		if (t == NCC_PRED && (op == NCC_OP_AND || op == NCC_OP_OR || op == NCC_OP_XOR)) {
			const uint8_t *A = a->data, *B = b->data;
			uint8_t *O = out->data;
			for (int64_t i = 0; i < n; i++)
				O[i] = op == NCC_OP_AND ? (A[i] & B[i]) : (op == NCC_OP_OR ? (A[i] | B[i]) : (A[i] ^ B[i]));
			return NCC_OK;
		}
		for (int64_t i = 0; i < n; i++)
			ncc_st_u(t, out->data, i,
				 trunc_to(t, bin_i(op, t, ncc_ld_u(t, a->data, i), ncc_ld_u(t, b->data, i))));
		return NCC_OK;
	}

	/* unary */
	const ncc_value_t *a = ops[0];
	ncc_etype_t at = a->shape.etype;
	if (op == NCC_OP_IS_FINITE) {
		if (!ncc_is_fp(at))
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "is-finite needs a float operand");
		for (int64_t i = 0; i < n; i++)
			((uint8_t *)out->data)[i] = isfinite(ncc_ld_f(at, a->data, i)) ? 1 : 0;
		return NCC_OK;
	}
	if (at != t)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand element type differs from the result's");
	if (op == NCC_OP_REDUCE_PRECISION) {
		if (!ncc_is_fp(t))
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "reduce-precision needs a float type");
		int eb = (int)inst->exponent_bits, mb = (int)inst->mantissa_bits;
		for (int64_t i = 0; i < n; i++) {
			double x = ncc_ld_f(t, a->data, i);
			if (isfinite(x) && x != 0) {
				/* round the mantissa to mb bits (nearest even), then apply the
				 * exponent range of eb bits (overflow -> inf, underflow -> 0) */
				int e;
				double m = frexp(x, &e); /* x = m * 2^e, 0.5 <= |m| < 1 */
				double scaled = ldexp(m, mb + 1);
				x = ldexp(nearbyint(scaled), e - mb - 1);
				int emax = (1 << (eb - 1)) - 1;
				frexp(x, &e);
				if (e - 1 > emax)
					x = copysign(INFINITY, x);
				else if (e - 1 < 1 - emax)
					x = copysign(0.0, x);
			}
			ncc_st_fp(t, out->data, i, x);
		}
		return NCC_OK;
	}
	if (ncc_is_fp(t)) {
		if (op == NCC_OP_NOT || op == NCC_OP_POPCNT || op == NCC_OP_CLZ)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s needs an integer type", inst->opname);
		if (t == NCC_F32) {
			const float *A = a->data;
			float *O = out->data;
			for (int64_t i = 0; i < n; i++)
				O[i] = (float)un_f(op, A[i]);
			return NCC_OK;
		}
		for (int64_t i = 0; i < n; i++)
			ncc_st_fp(t, out->data, i, un_f(op, ncc_ld_f(t, a->data, i)));
		return NCC_OK;
	}
	switch (op) {
	case NCC_OP_ABS: case NCC_OP_NEGATE: case NCC_OP_NOT: case NCC_OP_SIGN:
	case NCC_OP_POPCNT: case NCC_OP_CLZ:
		break;
	default:
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s needs a float type", inst->opname);
	}
	for (int64_t i = 0; i < n; i++)
		ncc_st_u(t, out->data, i, trunc_to(t, un_i(op, t, ncc_ld_u(t, a->data, i))));
	return NCC_OK;
}

ncc_status_t ncc_eval_convert(ncc_interp_t *ip, const ncc_inst_t *inst,
			      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	ncc_etype_t from = a->shape.etype, to = out->shape.etype;
	int64_t n = ncc_value_elements(out);
	if (ncc_value_elements(a) != n)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand and result sizes differ");
	for (int64_t i = 0; i < n; i++) {
		if (to == NCC_PRED) {
			/* x != 0 (NaN is nonzero) */
			bool nz = ncc_is_fp(from) ? ncc_ld_f(from, a->data, i) != 0.0
						  : ncc_ld_u(from, a->data, i) != 0;
			((uint8_t *)out->data)[i] = nz;
		} else if (ncc_is_fp(from)) {
			double x = ncc_ld_f(from, a->data, i);
			if (ncc_is_fp(to))
				ncc_st_fp(to, out->data, i, x);
			else
				ncc_st_u(to, out->data, i, ncc_fp_to_int(to, x));
		} else {
			uint64_t x = ncc_ld_u(from, a->data, i);
			if (ncc_is_fp(to)) {
				/* integer -> float rounds once to nearest even: go through f64
				 * only when exact, else straight to f32 from the integer */
				if (to == NCC_F32 || to == NCC_BF16) {
					float f = ncc_etype_is_signed_int(from) ? (float)(int64_t)x : (float)x;
					if (to == NCC_F32)
						((float *)out->data)[i] = f;
					else
						ncc_st_fp(to, out->data, i, f);
				} else {
					ncc_st_fp(to, out->data, i, ncc_int_to_fp(from, x));
				}
			} else {
				ncc_st_u(to, out->data, i, trunc_to(to, x)); /* wraps to the width */
			}
		}
	}
	return NCC_OK;
}

ncc_status_t ncc_eval_bitcast_convert(ncc_interp_t *ip, const ncc_inst_t *inst,
				      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	if (a->nbytes != out->nbytes)
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED,
				       "bitcast-convert between different element widths (%zu vs %zu bytes)",
				       a->nbytes, out->nbytes);
	if (out->nbytes)
		memcpy(out->data, a->data, out->nbytes);
	if (out->shape.etype == NCC_PRED)
		for (size_t i = 0; i < out->nbytes; i++)
			((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
	return NCC_OK;
}
