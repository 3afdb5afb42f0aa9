/* FUSED's one-pass trees: a program of f32 ADD, SUB and MUL steps whose values form a tree, planned into ops on two vector registers and run in one pass over a block. */
#ifndef FWSIM_FUSED_CHAIN_H
#define FWSIM_FUSED_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"

/*
 * A batch norm's FUSED programs are a third of a MobileNetV2 training step:
 * the input gradient ((g - c2) - (x - c0) * c1) * c3, the normalisation
 * (x - c0) * c1 + c2, the sums of (x - c0) * g and (x - c0)^2, the c's one
 * value per channel. Step by step (even in op pairs), each step is a pass
 * over the block that loads its operands' lanes and stores its result's: the
 * input gradient made three passes, a third of its time in the passes'
 * bookkeeping, and ran at a third of a loop written for it.
 *
 * A one-pass tree evaluates such a program in one pass. Its ops work on an accumulator
 * (acc) and one temporary (t), each 128 lanes held in vector registers: LOAD
 * sets acc to an operand, STASH copies acc to t, and ADD, SUB, RSUB, MUL
 * combine acc with an operand (acc op x; RSUB: x - acc). An operand is a
 * leaf (an input, read in place as a stream or, when it holds one value for
 * the block, as a scalar; or a CONST's value), t, or acc itself (a step
 * whose two operands are the same value: (x - c0)^2). A subtree whose both
 * operands are steps computes the one that needs t first, STASHes it and
 * computes the other, so a tree needs t at most once at a time: deeper ones
 * run step by step.
 *
 * The bits are the step-by-step program's: each step is the same IEEE f32
 * operation on the same operands, rounded to f32 (the library builds without
 * FMA contraction), in the same operand order for SUB; only NaN payloads may
 * differ where ADD or MUL commute, as between the interpreter's own clones.
 */

#define FZ_TREE_MAX 24 /* ops of a one-pass tree */

enum {
	FZT_LOAD,  /* acc = x */
	FZT_STASH, /* t = acc */
	FZT_ADD,   /* acc = acc + x */
	FZT_SUB,   /* acc = acc - x */
	FZT_RSUB,  /* acc = x - acc */
	FZT_MUL,   /* acc = acc * x */
};

/* operand of an op: a leaf index, or one of these */
#define FZT_T 0xfe
#define FZT_ACC 0xff

typedef struct fz_tree {
	uint32_t n;                  /* ops; 0: the program is not one */
	uint32_t n_leaves;           /* inputs, then the CONSTs' values */
	uint8_t op[FZ_TREE_MAX];
	uint8_t src[FZ_TREE_MAX];   /* leaf, FZT_T or FZT_ACC (STASH: unused) */
	float konst[ISA_FUSED_MAX_CODE]; /* leaf n_in + j: the j-th CONST's value */
	uint32_t n_in;
} fz_tree_t;

/*
 * Plans the validated program (live: fz_liveness's; in_dt: the inputs'
 * dtypes) as a one-pass tree when every live step is an f32 ADD, SUB or MUL of f32
 * registers, an f32 CONST or a CONVERT to f32, every input is a float, the output register's
 * last writer is such a step, each step's value is read once (twice by one
 * step reading it as both operands) and the tree needs t once at a time;
 * else tr->n = 0. Also 0 where the CPU lacks AVX-512F (the only
 * fz_tree_run there is).
 */
void fz_tree_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
		   const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_tree_t *tr);

/*
 * Runs the tree over n elements (n <= 512) into o: in[i] points at input
 * i's n f32 values, or is NULL when it holds the one value sc[i]. o may be
 * an input (each output element is written after its inputs' elements are
 * read). Returns the OR over the results of (their bits & 0x7fffffff) +
 * bias, as fz_pair_run.
 */
uint32_t fz_tree_run(const fz_tree_t *tr, size_t n, float *o, const float *const *in,
		      const float *sc, uint32_t bias);

#endif
