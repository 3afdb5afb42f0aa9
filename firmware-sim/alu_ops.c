/* The elementwise op tables (isa_alu over f32 and 64-bit integer lanes) that
 * the ALU and FUSED kernels share. */
#include "alu_ops.h"
#include "internal.h"

#define MAP1(EXPR) for (size_t i = 0; i < n; i++) { float x = a[i]; o[i] = (EXPR); } break
#define MAP2(EXPR) for (size_t i = 0; i < n; i++) { float x = a[i], y = b[i]; o[i] = (EXPR); } break
#define MAP3(EXPR) for (size_t i = 0; i < n; i++) { float x = a[i], y = b[i], z = c[i]; o[i] = (EXPR); } break

/* o may alias a, b or c element for element. AVX2 clone where the CPU has
 * it (ifunc-dispatched once at load time). */
FWSIM_TARGET_CLONES
static void alu_f32(uint32_t op, size_t n, float *o, const float *a, const float *b,
		    const float *c)
{
	switch (op) {
	case ISA_ALU_NEG: MAP1(-x);
	case ISA_ALU_ABS: MAP1(fabsf(x));
	case ISA_ALU_SIGN: MAP1(f_sign(x));
	case ISA_ALU_FLOOR: MAP1(floorf(x));
	case ISA_ALU_CEIL: MAP1(ceilf(x));
	case ISA_ALU_ROUND_AWAY: MAP1(roundf(x));
	case ISA_ALU_ROUND_EVEN: MAP1(roundevenf(x));
	case ISA_ALU_EXP: MAP1(expf(x));
	case ISA_ALU_EXPM1: MAP1(expm1f(x));
	case ISA_ALU_LOG: MAP1(logf(x));
	case ISA_ALU_LOG1P: MAP1(log1pf(x));
	case ISA_ALU_SQRT: MAP1(sqrtf(x));
	case ISA_ALU_RSQRT: MAP1(1.0f / sqrtf(x));
	case ISA_ALU_TANH: MAP1(tanhf(x));
	case ISA_ALU_LOGISTIC: MAP1(f_logistic(x));
	case ISA_ALU_ERF: MAP1(erff(x));
	case ISA_ALU_SIN: MAP1(sinf(x));
	case ISA_ALU_COS: MAP1(cosf(x));
	case ISA_ALU_IS_FINITE: MAP1(isfinite(x) ? 1.0f : 0.0f);
	case ISA_ALU_RECIPROCAL: MAP1(1.0f / x);
	case ISA_ALU_SQUARE: MAP1(x * x);
	case ISA_ALU_ADD: MAP2(x + y);
	case ISA_ALU_SUB: MAP2(x - y);
	case ISA_ALU_MUL: MAP2(x * y);
	case ISA_ALU_DIV: MAP2(x / y);
	case ISA_ALU_REM: MAP2(fmodf(x, y));
	case ISA_ALU_POW: MAP2(powf(x, y));
	case ISA_ALU_MAX: MAP2(f_max(x, y));
	case ISA_ALU_MIN: MAP2(f_min(x, y));
	case ISA_ALU_ATAN2: MAP2(atan2f(x, y));
	case ISA_ALU_CMP_EQ: MAP2(x == y ? 1.0f : 0.0f);
	case ISA_ALU_CMP_NE: MAP2(x != y ? 1.0f : 0.0f);
	case ISA_ALU_CMP_LT: MAP2(x < y ? 1.0f : 0.0f);
	case ISA_ALU_CMP_LE: MAP2(x <= y ? 1.0f : 0.0f);
	case ISA_ALU_CMP_GT: MAP2(x > y ? 1.0f : 0.0f);
	case ISA_ALU_CMP_GE: MAP2(x >= y ? 1.0f : 0.0f);
	case ISA_ALU_GELU_GRAD: MAP2(f_gelu_grad(x, y));
	case ISA_ALU_SELECT: MAP3(x != 0 ? y : z);
	case ISA_ALU_CLAMP: MAP3(f_min(f_max(y, x), z));
	case ISA_ALU_FMA: MAP3(fmaf(x, y, z));
	default: /* rejected by validation */
		for (size_t i = 0; i < n; i++)
			o[i] = 0;
	}
}



/* The cheap float ops with the NaN/Inf test fused into the same loop: each
 * result is tested in a register as it is produced (a running max of |x| as
 * bits; for non-negative floats the unsigned bit order is the numeric order,
 * NaN above Inf), so checking costs two integer ops per vector and no second
 * pass. Returns non-zero when some |result| >= lim (bias = 2^31 - lim, see
 * fwsim_numchk_bias); the caller then runs the exact count. Other ops are
 * dominated by their math and use the separate scan. */
#define CMAP(EXPR)                                                  \
	for (size_t i = 0; i < n; i++) {                            \
		float x = a[i], y = b[i], z = c[i];                 \
		(void)y; (void)z;                                   \
		float r_ = (EXPR);                                  \
		uint32_t u_;                                        \
		memcpy(&u_, &r_, 4);                                \
		u_ &= 0x7fffffffu;                                  \
		acc = u_ > acc ? u_ : acc;                          \
		o[i] = r_;                                          \
	}                                                           \
	break

int fwsim_alu_f32_fusable(uint32_t op)
{
	switch (op) {
	case ISA_ALU_NEG: case ISA_ALU_ABS: case ISA_ALU_SQUARE: case ISA_ALU_ADD:
	case ISA_ALU_SUB: case ISA_ALU_MUL: case ISA_ALU_MAX: case ISA_ALU_MIN:
	case ISA_ALU_FMA: case ISA_ALU_SELECT: case ISA_ALU_CLAMP:
		return 1;
	default:
		return 0;
	}
}

FWSIM_TARGET_CLONES
static uint32_t alu_f32_checked(uint32_t op, size_t n, float *o, const float *a,
				const float *b, const float *c, uint32_t bias)
{
	uint32_t acc = 0;
	/* unused operands alias a so every load is unconditional (vectorises
	 * without masked loads) */
	b = b ? b : a;
	c = c ? c : a;
	switch (op) {
	case ISA_ALU_NEG: CMAP(-x);
	case ISA_ALU_ABS: CMAP(fabsf(x));
	case ISA_ALU_SQUARE: CMAP(x * x);
	case ISA_ALU_ADD: CMAP(x + y);
	case ISA_ALU_SUB: CMAP(x - y);
	case ISA_ALU_MUL: CMAP(x * y);
	case ISA_ALU_MAX: CMAP(f_max(x, y));
	case ISA_ALU_MIN: CMAP(f_min(x, y));
	case ISA_ALU_FMA: CMAP(fmaf(x, y, z));
	case ISA_ALU_SELECT: CMAP(x != 0 ? y : z);
	case ISA_ALU_CLAMP: CMAP(f_min(f_max(y, x), z));
	}
	return acc >= 0x80000000u - bias;
}

FWSIM_TARGET_CLONES
static uint32_t clamp_f32_bounds(size_t n, float *o, const float *x, float lo, float hi,
				 uint32_t bias)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		float r = f_min(f_max(x[i], lo), hi);
		uint32_t u;
		memcpy(&u, &r, 4);
		u &= 0x7fffffffu;
		acc = u > acc ? u : acc;
		o[i] = r;
	}
	return acc >= 0x80000000u - bias;
}

uint32_t fwsim_clamp_f32_bounds(size_t n, float *o, const float *x, float lo, float hi,
				uint32_t bias)
{
	return clamp_f32_bounds(n, o, x, lo, hi, bias);
}

/* A plain wrapper (as fwsim_alu_f32's). */
uint32_t fwsim_alu_f32_checked(uint32_t op, size_t n, float *o, const float *a, const float *b,
			       const float *c, uint32_t bias)
{
	return alu_f32_checked(op, n, o, a, b, c, bias);
}

/* A plain wrapper: clang 14 does not export a target_clones function under
 * its own name across translation units. */
void fwsim_alu_f32(uint32_t op, size_t n, float *o, const float *a, const float *b,
		   const float *c)
{
	if (op == ISA_ALU_EXP)
		fwsim_expf_block(n, o, a); /* expf's bits, vectorised (expf_block.c) */
	else
		alu_f32(op, n, o, a, b, c);
}

/* ---- integer math ---- */

#define IMAP1(EXPR) for (size_t i = 0; i < n; i++) { int64_t x = a[i]; o[i] = (EXPR); } break
#define IMAP2(EXPR) for (size_t i = 0; i < n; i++) { int64_t x = a[i], y = b[i]; o[i] = (EXPR); } break
#define IMAP3(EXPR) for (size_t i = 0; i < n; i++) { int64_t x = a[i], y = b[i], z = c[i]; o[i] = (EXPR); } break
#define U(v) ((uint64_t)(v))

/* Division by zero follows XLA: x / 0 = -1 (all ones for unsigned), x % 0 = x;
 * INT64_MIN / -1 = INT64_MIN and INT64_MIN % -1 = 0 instead of trapping. */
static inline int64_t i_div(int64_t x, int64_t y, int uns)
{
	if (y == 0)
		return -1;
	if (uns)
		return (int64_t)(U(x) / U(y));
	if (x == INT64_MIN && y == -1)
		return x;
	return x / y;
}

static inline int64_t i_rem(int64_t x, int64_t y, int uns)
{
	if (y == 0)
		return x;
	if (uns)
		return (int64_t)(U(x) % U(y));
	if (y == -1)
		return 0;
	return x % y;
}

/* clamp(lo, x, hi) = min(max(x, lo), hi): when lo > hi the result is hi, as
 * in XLA and the interpreter. */
static inline int64_t i_clamp(int64_t lo, int64_t x, int64_t hi, int uns)
{
	int64_t m = (uns ? U(x) < U(lo) : x < lo) ? lo : x;
	return (uns ? U(m) > U(hi) : m > hi) ? hi : m;
}

void fwsim_alu_i64(uint32_t op, fwsim_ity_t t, size_t n, int64_t *o, const int64_t *a,
		   const int64_t *b, const int64_t *c)
{
	const int uns = t.uns;
	const uint32_t bits = t.bits;
	const uint64_t mask = t.mask;
	switch (op) {
	case ISA_ALU_NEG: IMAP1((int64_t)(0 - U(x)));
	case ISA_ALU_ABS: IMAP1(uns || x >= 0 ? x : (int64_t)(0 - U(x)));
	case ISA_ALU_SIGN: IMAP1(uns ? (x != 0) : (x > 0) - (x < 0));
	case ISA_ALU_SQUARE: IMAP1((int64_t)(U(x) * U(x)));
	case ISA_ALU_NOT: IMAP1(t.pred ? !x : ~x);
	case ISA_ALU_POPCNT: IMAP1(__builtin_popcountll(U(x) & mask));
	case ISA_ALU_CLZ: IMAP1((U(x) & mask) ? __builtin_clzll(U(x) & mask) - (int)(64 - bits)
					      : (int)bits);
	case ISA_ALU_ADD: IMAP2((int64_t)(U(x) + U(y)));
	case ISA_ALU_SUB: IMAP2((int64_t)(U(x) - U(y)));
	case ISA_ALU_MUL: IMAP2((int64_t)(U(x) * U(y)));
	case ISA_ALU_DIV: IMAP2(i_div(x, y, uns));
	case ISA_ALU_REM: IMAP2(i_rem(x, y, uns));
	case ISA_ALU_MAX:
		if (uns) {
			IMAP2(U(x) > U(y) ? x : y);
		}
		IMAP2(x > y ? x : y);
	case ISA_ALU_MIN:
		if (uns) {
			IMAP2(U(x) < U(y) ? x : y);
		}
		IMAP2(x < y ? x : y);
	case ISA_ALU_AND: IMAP2(x & y);
	case ISA_ALU_OR: IMAP2(x | y);
	case ISA_ALU_XOR: IMAP2(x ^ y);
	/* Shift counts are taken as unsigned of the operand width; counts >= width
	 * give 0 (logical) or the sign fill (arithmetic), as XLA defines them. */
	case ISA_ALU_SHL: IMAP2((U(y) & mask) >= bits ? 0 : (int64_t)(U(x) << (U(y) & mask)));
	case ISA_ALU_SHR_LOGICAL:
		IMAP2((U(y) & mask) >= bits ? 0 : (int64_t)((U(x) & mask) >> (U(y) & mask)));
	case ISA_ALU_SHR_ARITH:
		IMAP2(fwsim_sext(U(x), bits) >> ((U(y) & mask) >= bits ? bits - 1 : (U(y) & mask)));
	case ISA_ALU_CMP_EQ: IMAP2(x == y);
	case ISA_ALU_CMP_NE: IMAP2(x != y);
	case ISA_ALU_CMP_LT:
		if (uns) {
			IMAP2(U(x) < U(y));
		}
		IMAP2(x < y);
	case ISA_ALU_CMP_LE:
		if (uns) {
			IMAP2(U(x) <= U(y));
		}
		IMAP2(x <= y);
	case ISA_ALU_CMP_GT:
		if (uns) {
			IMAP2(U(x) > U(y));
		}
		IMAP2(x > y);
	case ISA_ALU_CMP_GE:
		if (uns) {
			IMAP2(U(x) >= U(y));
		}
		IMAP2(x >= y);
	case ISA_ALU_SELECT: IMAP3(x ? y : z);
	case ISA_ALU_CLAMP:
		if (uns) {
			IMAP3(i_clamp(x, y, z, 1));
		}
		IMAP3(i_clamp(x, y, z, 0));
	default:
		for (size_t i = 0; i < n; i++)
			o[i] = 0;
	}
}
