/* ncc public interpreter API: host values, the reference interpreter, comparison with tolerances and the non-finite trace. */
#ifndef NCC_NCC_INTERP_H
#define NCC_NCC_INTERP_H

/*
 * Values
 * ------
 * An ncc_value_t is a host tensor (or a tuple of them) that the interpreter, the
 * corpus tests and the tools pass around. Array elements are stored densely in their
 * own element type, in logical row-major order (dims as written in the HLO shape, the
 * layout {...} is ignored): f32 as float, bf16/f16 as their 16-bit patterns, pred as
 * one byte 0/1, s8..s64/u8..u64 in host byte order. These are the bytes the simulator
 * produces for a row-major output, so results compare element by element.
 *
 * Ownership: every ncc_value_t comes from ncc_value_alloc()/ncc_value_clone()/
 * ncc_value_tuple()/ncc_interp_run() (or the compiler's own constructors) and is
 * released with ncc_value_free(),
 * which frees its data and, for tuples, its elements. A value never points into a
 * module, so it outlives the module it was computed from.
 *
 * Interpreter semantics, tolerances and the random-fill recipe: docs/interp.md.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncc/ncc.h"
#include "ncc/ncc_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ values */

/* An array (shape.etype is a primitive) or a tuple (shape.etype == NCC_TUPLE).
 * Arrays: shape.rank/dims valid, shape.has_layout false, shape.elems NULL; data holds
 * nbytes = elements * ncc_etype_storage_bytes(etype) bytes (NULL when nbytes is 0).
 * Tuples: data NULL; nelems owned elements in elems[]; shape.nelems is 0 and
 * shape.elems NULL (the element shapes are elems[i]->shape). */
typedef struct ncc_value {
	ncc_shape_t shape;
	void *data;
	size_t nbytes;
	int32_t nelems;
	struct ncc_value **elems;
} ncc_value_t;

/* Allocates a zero-filled value of shape (array or tuple, recursively). The shape is
 * copied; it may live in any module. A token is an empty value. NCC_ERR_INVALID for
 * opaque, unbounded dims or element types without a storage size, NCC_ERR_NOMEM on
 * allocation failure. */
ncc_status_t ncc_value_alloc(const ncc_shape_t *shape, ncc_value_t **out_value);
/* Frees v, its data and its tuple elements. NULL is a no-op. */
void ncc_value_free(ncc_value_t *v);
/* Deep copy. */
ncc_status_t ncc_value_clone(const ncc_value_t *v, ncc_value_t **out_value);
/* A tuple value that takes ownership of elems[0..n) (the array is copied, the
 * values are not); on failure nothing is taken. */
ncc_status_t ncc_value_tuple(ncc_value_t *const *elems, int32_t n, ncc_value_t **out_value);

/* Layouts. Values are logical row-major; a device buffer of a shape with a layout
 * {minor_to_major} holds the same elements in physical order. These copy between the
 * two for an array value v and a shape `layout` with v's dims (a shape without a
 * layout, or with the default one, is a plain copy). dst/src hold v->nbytes bytes.
 * NCC_ERR_INVALID when the dims differ or the layout is not a permutation. */
ncc_status_t ncc_value_to_physical(const ncc_value_t *v, const ncc_shape_t *layout, void *dst);
ncc_status_t ncc_value_from_physical(ncc_value_t *v, const ncc_shape_t *layout, const void *src);

/* Number of elements of an array value (1 for rank 0, 0 for tuples). */
int64_t ncc_value_elements(const ncc_value_t *v);
/* Element i of an array value read as double (floats decoded, integers converted,
 * pred 0/1) / as int64 (floats truncated toward zero, u64 reinterpreted). */
double ncc_value_get_f64(const ncc_value_t *v, int64_t i);
int64_t ncc_value_get_i64(const ncc_value_t *v, int64_t i);
/* Sets element i from a double, converted like the HLO convert op (floats round to
 * nearest even, integers truncate toward zero and saturate, NaN -> 0, pred: != 0). */
void ncc_value_set_f64(ncc_value_t *v, int64_t i, double x);
/* Sets element i from an int64 (wraps to the element width like convert s64->T). */
void ncc_value_set_i64(ncc_value_t *v, int64_t i, int64_t x);

/* Fills every array leaf of v with deterministic pseudo-random data from seed (the
 * same seed and shape give the same bytes on every host):
 *   floats (f16/bf16/f32/f64): uniform in [-1, 1), rounded to the element type;
 *   signed and unsigned integers: uniform in [0, NCC_RANDOM_INT_MAX];
 *   pred: 0 or 1.
 * Tuple element k uses a seed derived from (seed, k). Index-like parameters stay
 * small so gathers and dynamic slices hit real rows; tests needing other ranges set
 * the elements themselves. */
#define NCC_RANDOM_INT_MAX 7
void ncc_value_fill_random(ncc_value_t *v, uint64_t seed);
/* The same with explicit ranges: floats uniform in [lo, hi) (lo + (hi - lo) * u, u on
 * the type's grid in [0, 1), then rounded to the type), integers uniform in
 * [ceil(lo), floor(hi)] clamped to the type (unsigned types from 0), pred 0 or 1.
 * E.g. (0, 1) keeps optimizer states such as Adam's second moment nonnegative. */
void ncc_value_fill_random_range(ncc_value_t *v, uint64_t seed, double lo, double hi);

/* ------------------------------------------------------------ comparison */

/* A float element matches when |actual - expected| <= atol * scale + rtol * |expected|
 * where scale = max(1, max |expected| over that tensor's finite elements) -- a sum that
 * cancels to ~0 carries the rounding error of its large terms -- or both are NaN, or
 * both are the same infinity. Integers and pred compare exactly, bit for bit. */
typedef struct ncc_tolerance {
	double rtol;
	double atol;
} ncc_tolerance_t;

/* The recommended tolerance (rtol/atol) for comparing one compiled op of element type t
 * against the interpreter (docs/interp.md): f32 1e-4/1e-5, bf16 2e-2/2e-2, f16
 * 2e-3/1e-3, f64 1e-9/1e-12, integers and pred exact. */
ncc_tolerance_t ncc_tolerance_for(ncc_etype_t t);
/* The looser tolerance for whole modules (a training step chains hundreds of ops and
 * divides by variances): f32 1e-3/1e-4, bf16 5e-2/5e-2, f16 1e-2/5e-3, f64 1e-7/1e-10,
 * integers and pred exact. */
ncc_tolerance_t ncc_tolerance_for_module(ncc_etype_t t);

#define NCC_COMPARE_MSG_MAX 512
typedef struct ncc_compare_result {
	bool equal;              /* shapes equal and every element within tolerance */
	int64_t mismatches;      /* number of elements out of tolerance (all leaves) */
	int64_t first_index;     /* flat row-major index of the first mismatch, -1 if none */
	int32_t first_leaf;      /* tuple leaf (depth-first order) of that mismatch, 0 for arrays */
	double max_abs_err;      /* over all compared float elements */
	double max_rel_err;
	char msg[NCC_COMPARE_MSG_MAX]; /* "" when equal, else what differs and where */
} ncc_compare_result_t;

/* Compares actual against expected (the oracle). tol NULL: ncc_tolerance_for() of
 * each leaf's element type; otherwise tol applies to the float leaves and integers
 * stay exact. A shape mismatch is reported as not equal with a message. out->msg
 * names the first mismatch: "leaf 1 (f32) element 5 [1,2]: expected 0.25, got 0.5
 * (abs err 0.25, allowed 1.0e-05)". Returns out->equal. */
bool ncc_value_compare(const ncc_value_t *expected, const ncc_value_t *actual,
		       const ncc_tolerance_t *tol, ncc_compare_result_t *out);

/* ------------------------------------------------------------ interpreter */

typedef struct ncc_interp_options {
	/* while loops stop with NCC_ERR_LIMIT after this many iterations (0: 1e7) */
	int64_t max_while_iterations;
	/* replica-id / partition-id results (single replica: 0) */
	int64_t replica_id;
	/* Monte Carlo arithmetic, to measure how sensitive a result is to rounding
	 * (docs/interp.md, "Numerical sensitivity"): when perturb_ulps > 0, every
	 * nonzero finite float element an arithmetic instruction computes is moved by
	 * a random whole number of units in the last place of its type, uniform in
	 * [-perturb_ulps, perturb_ulps] (at most 100), drawn from perturb_seed; so are
	 * the values batch norm rounds internally (its statistics, batch-norm-grad's
	 * terms). Instructions that only move, select or convert values are left exact.
	 * 0: exact (the default). */
	int32_t perturb_ulps;
	uint64_t perturb_seed;
	/* Absolute CLOCK_MONOTONIC time in ns after which evaluation stops with
	 * NCC_ERR_LIMIT and a message saying the deadline passed (checked before every
	 * instruction, so also between while iterations; one instruction is not
	 * interrupted). 0: no deadline. neuron-snapshot replay sets it from
	 * NEURON_RT_EXEC_TIMEOUT, the device's limit. */
	uint64_t deadline_ns;
} ncc_interp_options_t;

/* Evaluates the entry computation of m on args[0..nargs) (borrowed; each must have the
 * shape of the matching parameter, layouts ignored) and returns the root value, which
 * the caller owns. opts NULL: defaults. Unsupported instructions fail with
 * NCC_ERR_UNSUPPORTED naming the instruction, its opcode and its source line; shape
 * mismatches of the arguments fail with NCC_ERR_INVALID. m should have passed
 * ncc_verify(); the interpreter re-checks what it needs to index safely. */
ncc_status_t ncc_interp_run(const ncc_module_t *m, const ncc_value_t *const *args, int32_t nargs,
			    const ncc_interp_options_t *opts, ncc_value_t **out_result,
			    ncc_error_t *err);

/* Allocates one seeded random argument per parameter of m's entry computation
 * (parameter k gets ncc_value_fill_random(seed + k)). The caller frees each value and
 * the array with ncc_interp_free_args(). */
ncc_status_t ncc_interp_random_args(const ncc_module_t *m, uint64_t seed,
				    ncc_value_t ***out_args, int32_t *out_nargs);
void ncc_interp_free_args(ncc_value_t **args, int32_t nargs);

/* Like ncc_interp_random_args() (same seeds, same ownership), but a parameter whose
 * role the entry computation shows gets what a freshly initialised PyTorch model
 * feeds its training step, so that a network's activations are neither constant
 * nor saturated (docs/interp.md, "Model-like arguments"). The first use that shows
 * a role decides, looking through reshape, bitcast, broadcast, transpose, copy,
 * convert and reverse:
 *   - batch-norm scale: 1; offset: 0; inference/grad mean: 0; variance: 1
 *     (BatchNorm's weight, bias, running_mean, running_var);
 *   - convolution kernel: uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the
 *     kernel's input features times its window elements (Conv's default init);
 *   - a float scalar that bounds a clamp from above whose lower bound is the
 *     constant 0: 6 (ReLU6, hardtanh(0, 6), whose max_val torch-xla passes as a
 *     parameter);
 *   - a float scalar that an array is compared "less than" against: 0.8, a dropout
 *     keep probability (torch's dropout keeps uniform < 1 - p; a bound <= 0 would
 *     drop everything and zero the whole backward pass).
 * Every other parameter is filled as ncc_interp_random_args() fills it. */
ncc_status_t ncc_interp_model_args(const ncc_module_t *m, uint64_t seed,
				   ncc_value_t ***out_args, int32_t *out_nargs);

/* ------------------------------------------------------------ non-finite trace */

/* Where a NaN (or an Inf) first appears (compiler/interp/interp_trace.c). inst is opaque
 * outside the compiler: ncc_inst_describe() (include/ncc/ncc.h) names it. */
typedef struct ncc_interp_site {
	const ncc_inst_t *inst;  /* innermost instruction whose result first held one (inside
				  * fusions, calls, taken branches, while bodies); NULL: none */
	char path[512];          /* enclosing instructions from the entry, "while.7 (iteration 4)
				  * > fusion.3 > ", "" at the top level */
	int32_t leaf;            /* tuple leaf (depth-first) of inst's result */
	int64_t first_index;     /* flat row-major index in that leaf, -1: none */
	int64_t count;           /* elements of that kind in the whole result */
} ncc_interp_site_t;
typedef struct ncc_interp_trace {
	ncc_interp_site_t nan, inf;
	int64_t evaluated;       /* instructions evaluated */
} ncc_interp_trace_t;

/* Evaluates the entry computation of m on args (as ncc_interp_run()) one instruction at
 * a time, in program order, and fills out with the first instruction whose result holds
 * a NaN and the first whose result holds an Inf (a parameter when the argument already
 * does). Stops once both are found. The instructions point into m. */
ncc_status_t ncc_interp_trace_nonfinite(const ncc_module_t *m, const ncc_value_t *const *args,
					int32_t nargs, const ncc_interp_options_t *opts,
					ncc_interp_trace_t *out, ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_NCC_INTERP_H */
