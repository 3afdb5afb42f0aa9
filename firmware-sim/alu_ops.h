/* Elementwise op tables shared by the ALU and FUSED kernels, so a fused
 * program computes bit for bit what the op-by-op instructions compute. */
#ifndef FWSIM_ALU_OPS_H
#define FWSIM_ALU_OPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "neuronsim/isa.h"

static inline float f_logistic(float x)
{
	if (x >= 0)
		return 1.0f / (1.0f + expf(-x));
	float e = expf(x);
	return e / (1.0f + e);
}

/*
 * IEEE 754-2019 maximum and minimum, which StableHLO's maximum and minimum
 * are and the interpreter computes (docs/interp.md): NaN when either operand
 * is NaN (a's bits when a is one, else b's), and -0 < +0 in either order:
 * max(-0, +0) = max(+0, -0) = +0, min of them -0. Without a NaN, `x > y ? x :
 * y` taken both ways round (a MAXPS each) differ only on a tie, where their
 * AND is +0 for zeros of both signs and the value itself otherwise; min ORs
 * (-0 unless both are +0). Commutative and associative on the values, zeros
 * included, so every order of a reduction gives the same bits. Written as two
 * selects in this order, GCC 12 vectorises each to 7 instructions (2 MAXPS,
 * AND, 2 compares, 2 blends), as many as the old `a > b ? a : b` form's; as
 * one nested select it made 17 (each blend twice, on the float and on the
 * NaN check's integer view) and a checked MAX over blocks in L1 took 1.9x as
 * long. f_ for floats, d_ for the reductions' double accumulators.
 */
#define ALU_IEEE_MINMAX(P, T, U)                                   \
	static inline T P##_and(T a, T b)                          \
	{                                                          \
		U x, y;                                            \
		memcpy(&x, &a, sizeof(T));                         \
		memcpy(&y, &b, sizeof(T));                         \
		x &= y;                                            \
		memcpy(&a, &x, sizeof(T));                         \
		return a;                                          \
	}                                                          \
	static inline T P##_or(T a, T b)                           \
	{                                                          \
		U x, y;                                            \
		memcpy(&x, &a, sizeof(T));                         \
		memcpy(&y, &b, sizeof(T));                         \
		x |= y;                                            \
		memcpy(&a, &x, sizeof(T));                         \
		return a;                                          \
	}                                                          \
	static inline T P##_max(T a, T b)                          \
	{                                                          \
		T m = P##_and(a > b ? a : b, b > a ? b : a);       \
		T t = b != b ? b : m;                              \
		return a != a ? a : t;                             \
	}                                                          \
	static inline T P##_min(T a, T b)                          \
	{                                                          \
		T m = P##_or(a < b ? a : b, b < a ? b : a);        \
		T t = b != b ? b : m;                              \
		return a != a ? a : t;                             \
	}

ALU_IEEE_MINMAX(f, float, uint32_t)
ALU_IEEE_MINMAX(d, double, uint64_t)

/* A float SCATTER's or SELSCAT's combiner (ISA_RED_SUM, PROD, MAX or MIN)
 * of x (the output's) and y (the update). */
static inline float f_red_combine(uint32_t op, float x, float y)
{
	return op == ISA_RED_SUM ? x + y : op == ISA_RED_PROD ? x * y
	     : op == ISA_RED_MAX ? f_max(x, y) : f_min(x, y);
}

static inline float f_sign(float a) { return a > 0 ? 1.0f : a < 0 ? -1.0f : a; }

static inline float f_gelu_grad(float dy, float x)
{
	const float inv_sqrt2 = 0.70710678118654752f, inv_sqrt2pi = 0.3989422804014327f;
	float cdf = 0.5f * (1.0f + erff(x * inv_sqrt2));
	float pdf = inv_sqrt2pi * expf(-0.5f * x * x);
	return dy * (cdf + x * pdf);
}

/* Integer math in 64 bits with the signedness and width of the operand dtype. */
typedef struct fwsim_ity {
	int uns;        /* unsigned (or pred) */
	int pred;
	uint32_t bits;  /* 8, 16, 32, 64 */
	uint64_t mask;  /* low `bits` ones */
} fwsim_ity_t;

static inline fwsim_ity_t fwsim_ity_of(uint32_t dt)
{
	fwsim_ity_t t;
	t.uns = isa_dtype_is_unsigned(dt);
	t.pred = dt == ISA_DT_PRED;
	t.bits = (uint32_t)isa_dtype_size(dt) * 8;
	t.mask = t.bits == 64 ? UINT64_MAX : (1ull << t.bits) - 1;
	return t;
}

static inline int64_t fwsim_sext(uint64_t v, uint32_t bits)
{
	if (bits == 64)
		return (int64_t)v;
	uint64_t m = 1ull << (bits - 1);
	v &= (m << 1) - 1;
	return (int64_t)((v ^ m) - m);
}

/* isa_alu op over n f32 lanes; compares and is_finite give 1.0/0.0. o may
 * alias a, b or c element for element; unused operands may be NULL. */
void fwsim_alu_f32(uint32_t op, size_t n, float *o, const float *a, const float *b,
		   const float *c);

/* The cheap f32 ops (NEG, ABS, SQUARE, ADD, SUB, MUL, MAX, MIN, FMA, SELECT
 * by a float, CLAMP) as fwsim_alu_f32, with the NaN/Inf test in the same
 * loop: non-zero when some |result| >= 2^31 - bias (fwsim_numchk_bias), when
 * the caller runs the exact scan. fwsim_alu_f32_fusable: whether op is one. */
int fwsim_alu_f32_fusable(uint32_t op);
uint32_t fwsim_alu_f32_checked(uint32_t op, size_t n, float *o, const float *a, const float *b,
			       const float *c, uint32_t bias);
/* CLAMP of x by one lower and one upper bound (a ReLU6's clamp(0, x, 6)):
 * fwsim_alu_f32_checked(ISA_ALU_CLAMP) with the bounds in registers instead
 * of two lanes filled per block. */
uint32_t fwsim_clamp_f32_bounds(size_t n, float *o, const float *x, float lo, float hi,
				uint32_t bias);

/* o[i] = expf(a[i]) for i < n, the C library's bits (expf_block.c); o may
 * alias a element for element. fwsim_expf_vector: whether the vector code
 * runs (it matched expf at first use). */
void fwsim_expf_block(size_t n, float *o, const float *a);
int fwsim_expf_vector(void);

/* isa_alu op over n integer lanes of type t; results are not yet wrapped to
 * the width of t. */
void fwsim_alu_i64(uint32_t op, fwsim_ity_t t, size_t n, int64_t *o, const int64_t *a,
		   const int64_t *b, const int64_t *c);

#endif /* FWSIM_ALU_OPS_H */
