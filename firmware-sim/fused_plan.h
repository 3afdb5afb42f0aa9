/* FUSED's step plans: mask-selects (a SELECT by a tree of float compares runs on 4-byte masks) and op pairs (two f32 arithmetic steps in one pass), found once per program. */
#ifndef FWSIM_FUSED_PLAN_H
#define FWSIM_FUSED_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"

/* A ReLU backward is select(compare(x, 0), g, 0), a hardtanh backward
 * select(or(x <= 0, x >= 6), 0, g). Run step by step, each compare writes
 * 8-byte pred lanes, the OR goes through the generic integer ALU and the
 * narrowing to pred, and the select reads the lanes back: 70% of a hardtanh
 * backward's time, which MobileNetV2's step spends 0.6 s in. As a mask-select
 * each step of the tree writes 4-byte all-ones/zero masks into a slot of its
 * own, at its own place in the program (so it reads its operands where the
 * program has them), and the SELECT blends by its predicate's slot. The bits
 * are the step-by-step program's: the same compares (C's, NaN unequal) pick
 * the same operand. */

/* Op pairs: a batch-norm gradient's (x - mean) * rstd or an SGD update's
 * w + lr * g is two ALU steps, each a pass over the block that loads two
 * registers and stores one: the batch-norm gradient's FUSED programs spent
 * half their time in those passes, at the L1's load and store rate. When an
 * f32 ADD, SUB or MUL's only reader is another one, the pair runs as one pass
 * (the first result kept in a vector register, rounded to f32 as its own step
 * would: the library builds without FMA contraction), the first step skipped. */

typedef struct fz_plan {
	uint32_t n_slots;                        /* masks of FZ_BLOCK elements needed */
	bool folded[ISA_FUSED_MAX_CODE];         /* a step of a tree: writes slot[s] */
	bool select[ISA_FUSED_MAX_CODE];         /* a SELECT by the mask in arg[s][0] */
	uint8_t slot[ISA_FUSED_MAX_CODE];
	uint8_t arg[ISA_FUSED_MAX_CODE][2];      /* slots a join, NOT or SELECT reads */
	bool paired[ISA_FUSED_MAX_CODE];         /* the first step of a pair: skipped */
	int16_t pair_first[ISA_FUSED_MAX_CODE];  /* the second: its first step, else -1 */
	uint8_t pair_side[ISA_FUSED_MAX_CODE];   /* which operand of the second it is */
	/* one-pass mask-selects: a SELECT whose tree is one ordered float
	 * compare (LT, LE, GT, GE), or an AND or OR of two, evaluates the tree
	 * and blends in one pass (its tree's
	 * steps skipped) when no step between a compare and the SELECT writes
	 * the compare's operand registers; tree[s] = { compare, compare or -1,
	 * join or -1 }, else tree[s][0] = -1 */
	bool fast_skip[ISA_FUSED_MAX_CODE];
	int16_t tree[ISA_FUSED_MAX_CODE][3];
} fz_plan_t;

/*
 * Finds the mask-selects and the op pairs of a validated program. A
 * mask-select: a live SELECT whose value operands are float and whose
 * predicate is such a tree (at most ISA_FUSED_MAX_CODE / 2 slots in all), no
 * value of which any step outside it reads, nor is the output. A pair: two
 * live f32 ADD/SUB/MUL steps t and u, u the only reader of t's value, no step
 * after t and before u writing t's operand registers (so they still hold them
 * when u runs: t itself, skipped, writes nothing); neither step in another pair. in_dt: the input registers' dtypes
 * (registers 0..n_in-1 hold the inputs before step 0). live: fz_liveness's.
 */
void fz_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
	     const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_plan_t *mp);

/* o[i] = second(first(a[i], b[i]), c[i]) (side 0) or second(c[i], first(a[i],
 * b[i])) (side 1), first and second ISA_ALU_ADD, SUB or MUL, each rounded to
 * f32. o is none of a, b, c. Returns the OR over the results of (their bits
 * & 0x7fffffff) + bias: with bias fwsim_numchk_bias's, bit 31 is clear only
 * when no result can be bad for that check (the one-pass loops scan what
 * they write while it is in registers). */
uint32_t fz_pair_run(uint32_t first, uint32_t second, int side, size_t n, float *o, const float *a,
		     const float *b, const float *c, uint32_t bias);

/* m[i] = all ones where a[i] op b[i] (ISA_ALU_CMP_*), else 0. */
void fz_mask_compare(uint32_t op, size_t n, uint32_t *m, const float *a, const float *b);
/* m[i] = x[i] op y[i] (ISA_ALU_AND, OR, XOR), or ~x[i] (ISA_ALU_NOT, y unused). */
void fz_mask_join(uint32_t op, size_t n, uint32_t *m, const uint32_t *x, const uint32_t *y);
/* dst[i] = m[i] ? a[i] : b[i] as raw bits; dst may be a or b (same element). */
void fz_mask_blend(size_t n, float *dst, const uint32_t *m, const float *a, const float *b);
/* dst[i] = (a1[i] op1 b1[i]) join (a2[i] op2 b2[i]) ? x[i] : y[i] as raw bits,
 * op1 and op2 ISA_ALU_CMP_LT, LE, GT or GE, join ISA_ALU_AND or OR, or 0 for
 * the first compare alone (a2, b2 unused): a one-pass mask-select, the bits
 * of fz_mask_compare, fz_mask_join and fz_mask_blend in turn. dst is none of
 * the operands. Returns the results' scan flag as fz_pair_run does. */
uint32_t fz_mask_select_fast(uint32_t op1, uint32_t op2, uint32_t join, size_t n, float *dst,
			     const float *a1, const float *b1, const float *a2, const float *b2,
			     const float *x, const float *y, uint32_t bias);

#endif
