/* FUSED's one-pass trees: a program of f32 ADD, SUB, MUL, MAX, MIN and CLAMP steps and selects by compares whose values form a tree, planned into ops on vector registers and run in one pass over a block. */
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
 * MAX and MIN combine like ADD (RMAX, RMIN: x first, as the step has them);
 * CLAMP(lo, x, hi) with leaf bounds is MAX lo then MIN hi, as ALU CLAMP
 * computes it. A select by a compare of a value with a leaf, or by two such
 * compares of the same value joined by AND or OR (a ReLU's and a ReLU6's
 * backward: select(x >= 0 & x <= 6, g, 0)), leaves the value in acc, sets a
 * lane mask m from the compares (MASK, MASK_AND, MASK_OR) and blends: the
 * compares and their join are never stored as pred lanes. The selected
 * values are leaves or that value. Compares are IEEE (NaN unordered), as
 * ALU compares are, and a select copies bits.
 *
 * The bits are the step-by-step program's: each step is the same IEEE f32
 * operation on the same operands, rounded to f32 (the library builds without
 * FMA contraction), in the same operand order for SUB; only NaN payloads may
 * differ where ADD or MUL commute, as between the interpreter's own clones.
 */

#define FZ_TREE_MAX 32 /* ops of a one-pass tree */

enum {
	FZT_LOAD,     /* acc = x */
	FZT_STASH,    /* t = acc */
	FZT_ADD,      /* acc = acc + x */
	FZT_SUB,      /* acc = acc - x */
	FZT_RSUB,     /* acc = x - acc */
	FZT_MUL,      /* acc = acc * x */
	FZT_MAX,      /* acc = max(acc, x), as ALU MAX */
	FZT_RMAX,     /* acc = max(x, acc) */
	FZT_MIN,      /* acc = min(acc, x), as ALU MIN */
	FZT_RMIN,     /* acc = min(x, acc) */
	FZT_MASK,     /* m = acc arg x (arg an ALU compare) */
	FZT_MASK_AND, /* m &= acc arg x */
	FZT_MASK_OR,  /* m |= acc arg x */
	FZT_BLEND,    /* acc = m ? x : acc */
	FZT_BLENDN,   /* acc = m ? acc : x */
	/* MAX and MIN with a CONST x that makes them one vector op: */
	FZT_MAXC,     /* acc = max(acc, x), x neither NaN nor +0 */
	FZT_MAXC0,    /* acc = max(acc, +0) */
	FZT_MINC,     /* acc = min(acc, x), x neither NaN nor -0 */
};

/* operand of an op: a leaf index, or one of these */
#define FZT_T 0xfe
#define FZT_ACC 0xff
typedef struct fz_tree {
	uint32_t n;                  /* ops; 0: the program is not one */
	uint32_t n_leaves;           /* inputs, then the CONSTs' values */
	uint8_t op[FZ_TREE_MAX];
	uint8_t src[FZ_TREE_MAX];   /* leaf, FZT_T or FZT_ACC (STASH: unused) */
	uint8_t arg[FZ_TREE_MAX];   /* FZT_MASK*: the compare (ISA_ALU_CMP_*) */
	float konst[ISA_FUSED_MAX_CODE]; /* leaf n_in + j: the j-th CONST's value */
	uint32_t n_in;
	bool has_pred;               /* compares among the steps (a blame's
				      * step-by-step run writes 8-byte lanes) */
} fz_tree_t;

/*
 * Plans the validated program (live: fz_liveness's; in_dt: the inputs'
 * dtypes) as a one-pass tree when every live step is an f32 ADD, SUB, MUL,
 * MAX, MIN, CLAMP with leaf bounds or select (above), a pred compare or
 * AND/OR that only such a select reads, an f32 CONST or a CONVERT to f32,
 * every input is a float, the output register's last writer is an f32
 * step, each step's value is read once (twice by one step reading it as
 * both operands; a select's compares and values read its subject once) and
 * the tree needs t once at a time; else tr->n = 0. Also 0 where the CPU
 * lacks AVX2 or fwsim_set_max_isa() caps it below (fz_tree_run has an
 * AVX-512F loop and an AVX2 one).
 */
void fz_tree_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
		   const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_tree_t *tr);

/*
 * Inputs with one value per row, over rows of rlen elements several per
 * segment (a batch norm's per-channel operands over 7x7 or 14x14 planes),
 * read from the rows' values in place: each chunk of the loop loads the
 * values of the rows it spans into one vector and permutes them to its
 * lanes. Filling a lane with each row's value rlen times instead (the
 * registers' way) was a third of a batch norm's gradient over 8x960x7x7.
 * A chunk (128 lanes with AVX-512, 64 with AVX2) spans at most a vector's
 * lanes of rows when rlen >= FZ_ROW_MIN.
 */
#define FZ_ROW_MIN 10
/* Chunk lanes past a segment's end that rowof must cover */
#define FZ_ROW_SLACK 128
typedef struct fz_rowin {
	const float *v[ISA_FUSED_MAX_INPUTS]; /* input i's row values (f32, one per
					       * row, contiguous), or NULL */
	const int32_t *rowof; /* rowof[j] = j / rlen for j < n + FZ_ROW_SLACK */
	uint32_t nrows;       /* rows of the n elements: v[i][0..nrows) */
} fz_rowin_t;

/*
 * Runs the tree over n elements into o: in[i] points at input
 * i's n f32 values, or is NULL when it holds the one value sc[i] or, with
 * rows (may be NULL), one value per row (rows->v[i]). o may be
 * an input (each output element is written after its inputs' elements are
 * read). Returns the OR over the results of (their bits & 0x7fffffff) +
 * bias, as fz_pair_run.
 */
uint32_t fz_tree_run(const fz_tree_t *tr, size_t n, float *o, const float *const *in,
		      const float *sc, const fz_rowin_t *rows, uint32_t bias);

#endif
