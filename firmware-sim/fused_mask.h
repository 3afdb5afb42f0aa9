/* FUSED's mask-selects: a SELECT over float lanes whose predicate is a tree of float compares joined by AND, OR, XOR and NOT runs on 4-byte masks, the tree's steps writing masks instead of pred registers. */
#ifndef FWSIM_FUSED_MASK_H
#define FWSIM_FUSED_MASK_H

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

typedef struct fz_mask_plan {
	uint32_t n_slots;                        /* masks of FZ_BLOCK elements needed */
	bool folded[ISA_FUSED_MAX_CODE];         /* a step of a tree: writes slot[s] */
	bool select[ISA_FUSED_MAX_CODE];         /* a SELECT by the mask in arg[s][0] */
	uint8_t slot[ISA_FUSED_MAX_CODE];
	uint8_t arg[ISA_FUSED_MAX_CODE][2];      /* slots a join, NOT or SELECT reads */
} fz_mask_plan_t;

/*
 * Finds the mask-selects of a validated program: a live SELECT whose value
 * operands are float and whose predicate is such a tree (at most
 * ISA_FUSED_MAX_CODE / 2 slots in all), no value of which any step outside it
 * reads, nor is the output. in_dt: the input registers' dtypes (registers
 * 0..n_in-1 hold the inputs before step 0). live: fz_liveness's.
 */
void fz_mask_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
		  const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_mask_plan_t *mp);

/* m[i] = all ones where a[i] op b[i] (ISA_ALU_CMP_*), else 0. */
void fz_mask_compare(uint32_t op, size_t n, uint32_t *m, const float *a, const float *b);
/* m[i] = x[i] op y[i] (ISA_ALU_AND, OR, XOR), or ~x[i] (ISA_ALU_NOT, y unused). */
void fz_mask_join(uint32_t op, size_t n, uint32_t *m, const uint32_t *x, const uint32_t *y);
/* dst[i] = m[i] ? a[i] : b[i] as raw bits; dst may be a or b (same element). */
void fz_mask_blend(size_t n, float *dst, const uint32_t *m, const float *a, const float *b);

#endif
