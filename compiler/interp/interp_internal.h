/* ncc reference interpreter internals: element access, index arithmetic and the per-family evaluators. */
#ifndef NCC_INTERP_INTERNAL_H
#define NCC_INTERP_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "interp.h"
#include "neuronsim/half.h"

/* One evaluation of a module: options, the error sink, recursion depth. No global
 * state: everything an evaluation needs lives here. */
#define NCC_INTERP_POOL_SLOTS 16
#define NCC_INTERP_POOL_MIN (1u << 20)      /* smaller buffers go straight to free() */
#define NCC_INTERP_POOL_MAX ((size_t)2 << 30) /* bytes kept for reuse at most */

typedef struct ncc_interp ncc_interp_t;

/* Evaluates computation c on args (borrowed); *out owned by the caller. */
typedef ncc_status_t (*ncc_interp_call_fn)(ncc_interp_t *ip, const ncc_comp_t *c,
					   const ncc_value_t *const *args, int32_t nargs,
					   ncc_value_t **out);

struct ncc_interp {
	ncc_interp_options_t opts;
	ncc_error_t *err;
	int depth;
	/* freed large buffers kept for the next value of the same size: fresh pages cost
	 * more than the arithmetic of a big elementwise op */
	int32_t npool;
	size_t pool_bytes;
	void *pool_ptr[NCC_INTERP_POOL_SLOTS];
	size_t pool_size[NCC_INTERP_POOL_SLOTS];
	/* Monte Carlo arithmetic (opts.perturb_ulps): the random stream, and how deep we
	 * are in scalar computations run per element (reducers, map), which are not
	 * perturbed themselves: their instruction's result is */
	uint64_t perturb_state;
	int scalar_depth;
	/* The driver's evaluation of a called computation (ncc_interp_call, set by
	 * whoever sets up the evaluation): how an evaluator runs the computation it
	 * calls without naming the driver (interp.c), which calls the evaluators. */
	ncc_interp_call_fn call;
};

/* ncc_value_alloc/clone/free drawing data buffers from ip's pool (zero-filled). */
ncc_status_t ncc_ivalue_alloc(ncc_interp_t *ip, const ncc_shape_t *shape, ncc_value_t **out);
ncc_status_t ncc_ivalue_clone(ncc_interp_t *ip, const ncc_value_t *v, ncc_value_t **out);
void ncc_ivalue_free(ncc_interp_t *ip, ncc_value_t *v);
void ncc_interp_pool_drain(ncc_interp_t *ip);
/* Monte Carlo arithmetic: moves every nonzero finite float element of v (tuples
 * recursively) by a random whole number of ulps in [-opts.perturb_ulps,
 * opts.perturb_ulps]. No-op when perturb_ulps <= 0. */
void ncc_ivalue_perturb(ncc_interp_t *ip, ncc_value_t *v);
/* The same for one intermediate x that an instruction reduces internally before it
 * rounds its result (batch norm's per-feature statistics): x moved by a random
 * whole number of ulps of type t, so its error reaches every element it feeds
 * coherently, as a device's rounding does. x itself when perturbation is off. */
double ncc_interp_perturb_scalar(ncc_interp_t *ip, ncc_etype_t t, double x);

#define NCC_INTERP_MAX_DEPTH 64

/* Fails the current instruction with a message that names it and its source line. */
ncc_status_t ncc_interp_fail(ncc_interp_t *ip, const ncc_inst_t *inst, ncc_status_t st,
			     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The driver's ncc_interp_call_fn (interp.c), for whoever sets up an evaluation
 * (interp.c, interp_trace.c). */
ncc_status_t ncc_interp_call(ncc_interp_t *ip, const ncc_comp_t *c, const ncc_value_t *const *args,
			     int32_t nargs, ncc_value_t **out);

/* ------------------------------------------------------------ element access */

/* Element types the interpreter computes on. */
static inline bool ncc_interp_etype_ok(ncc_etype_t t)
{
	switch (t) {
	case NCC_PRED: case NCC_S8: case NCC_S16: case NCC_S32: case NCC_S64:
	case NCC_U8: case NCC_U16: case NCC_U32: case NCC_U64:
	case NCC_F16: case NCC_BF16: case NCC_F32: case NCC_F64:
		return true;
	default:
		return false;
	}
}

static inline bool ncc_is_fp(ncc_etype_t t)
{
	return t == NCC_F16 || t == NCC_BF16 || t == NCC_F32 || t == NCC_F64;
}

/* Reads element i as double (exact for every supported type but 64-bit integers
 * beyond 2^53). */
static inline double ncc_ld_f(ncc_etype_t t, const void *p, int64_t i)
{
	switch (t) {
	case NCC_PRED: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
	case NCC_S8: return ((const int8_t *)p)[i];
	case NCC_S16: return ((const int16_t *)p)[i];
	case NCC_S32: return ((const int32_t *)p)[i];
	case NCC_S64: return (double)((const int64_t *)p)[i];
	case NCC_U8: return ((const uint8_t *)p)[i];
	case NCC_U16: return ((const uint16_t *)p)[i];
	case NCC_U32: return ((const uint32_t *)p)[i];
	case NCC_U64: return (double)((const uint64_t *)p)[i];
	case NCC_F16: return ns_f16_to_f32(((const uint16_t *)p)[i]);
	case NCC_BF16: return ns_bf16_to_f32(((const uint16_t *)p)[i]);
	case NCC_F32: return ((const float *)p)[i];
	case NCC_F64: return ((const double *)p)[i];
	default: return 0.0;
	}
}

/* Reads element i as its integer bits: signed types sign-extended, unsigned and pred
 * zero-extended, floats converted (truncate, saturate to int64, NaN 0). */
static inline uint64_t ncc_ld_u(ncc_etype_t t, const void *p, int64_t i)
{
	switch (t) {
	case NCC_PRED: return ((const uint8_t *)p)[i] ? 1 : 0;
	case NCC_S8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
	case NCC_S16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
	case NCC_S32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
	case NCC_S64: return (uint64_t)((const int64_t *)p)[i];
	case NCC_U8: return ((const uint8_t *)p)[i];
	case NCC_U16: return ((const uint16_t *)p)[i];
	case NCC_U32: return ((const uint32_t *)p)[i];
	case NCC_U64: return ((const uint64_t *)p)[i];
	default: {
		double d = ncc_ld_f(t, p, i);
		if (d != d)
			return 0;
		if (d >= 9223372036854775807.0)
			return (uint64_t)INT64_MAX;
		if (d <= -9223372036854775808.0)
			return (uint64_t)INT64_MIN;
		return (uint64_t)(int64_t)d;
	}
	}
}

/* Stores the low bits of x into an integer/pred element (pred: x != 0). */
static inline void ncc_st_u(ncc_etype_t t, void *p, int64_t i, uint64_t x)
{
	switch (t) {
	case NCC_PRED: ((uint8_t *)p)[i] = x != 0; break;
	case NCC_S8: case NCC_U8: ((uint8_t *)p)[i] = (uint8_t)x; break;
	case NCC_S16: case NCC_U16: ((uint16_t *)p)[i] = (uint16_t)x; break;
	case NCC_S32: case NCC_U32: ((uint32_t *)p)[i] = (uint32_t)x; break;
	case NCC_S64: case NCC_U64: ((uint64_t *)p)[i] = x; break;
	default: break;
	}
}

/* Stores a double into a float element, rounding once to nearest even (bf16 via f32,
 * as XLA computes bf16 ops in f32 and rounds the result). */
static inline void ncc_st_fp(ncc_etype_t t, void *p, int64_t i, double d)
{
	switch (t) {
	case NCC_F16: ((uint16_t *)p)[i] = ns_f64_to_f16(d); break;
	case NCC_BF16: ((uint16_t *)p)[i] = ns_f32_to_bf16((float)d); break;
	case NCC_F32: ((float *)p)[i] = (float)d; break;
	case NCC_F64: ((double *)p)[i] = d; break;
	default: break;
	}
}

/* The value of a float converted to integer type t: truncation toward zero, NaN -> 0,
 * saturation at the type's bounds (XLA's convert semantics). */
uint64_t ncc_fp_to_int(ncc_etype_t t, double d);
/* Integer bits (as returned by ncc_ld_u for type from) converted to double. */
double ncc_int_to_fp(ncc_etype_t from, uint64_t x);

/* Generic store of a double per convert rules (floats round, ints truncate+saturate,
 * pred != 0). */
static inline void ncc_st_f(ncc_etype_t t, void *p, int64_t i, double d)
{
	if (ncc_is_fp(t))
		ncc_st_fp(t, p, i, d);
	else if (t == NCC_PRED)
		((uint8_t *)p)[i] = d != 0.0;
	else
		ncc_st_u(t, p, i, ncc_fp_to_int(t, d));
}

/* ------------------------------------------------------------ index helpers */

/* Row-major strides of dims[0..rank) in elements. */
static inline void ncc_strides(int32_t rank, const int64_t *dims, int64_t *strides)
{
	int64_t s = 1;
	for (int32_t d = rank - 1; d >= 0; d--) {
		strides[d] = s;
		s *= dims[d];
	}
}

/* Advances the odometer idx over dims; returns false after the last index. */
static inline bool ncc_next_index(int32_t rank, const int64_t *dims, int64_t *idx)
{
	for (int32_t d = rank - 1; d >= 0; d--) {
		if (++idx[d] < dims[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

static inline int64_t ncc_shape_count(const ncc_shape_t *s)
{
	int64_t n = 1;
	for (int32_t d = 0; d < s->rank; d++)
		n *= s->dims[d];
	return n;
}

/* ------------------------------------------------------------ scalar functions */

/* A called scalar computation (reduce/scatter/reduce-window/select-and-scatter/sort
 * to_apply). When its root is one elementwise binary op of its two parameters
 * (add, multiply, maximum, minimum, and, or, ...) `op` names it and evaluation takes
 * a direct path; otherwise every call runs the general evaluator. */
typedef struct ncc_scalar_fn {
	ncc_interp_t *ip;
	const ncc_inst_t *user;
	const ncc_comp_t *comp;
	ncc_opcode_t op;   /* NCC_OP_UNKNOWN: general path */
	bool swapped;      /* root is op(param1, param0) */
	int32_t nargs;
	ncc_value_t *args[8];
} ncc_scalar_fn_t;

ncc_status_t ncc_scalar_fn_init(ncc_scalar_fn_t *fn, ncc_interp_t *ip, const ncc_inst_t *user,
				const ncc_comp_t *comp, int32_t nargs, const ncc_etype_t *arg_types);
void ncc_scalar_fn_fini(ncc_scalar_fn_t *fn);
/* Runs fn on scalar elements: in[k] points at an element of type arg_types[k]; the
 * results (one per output, nout = nargs/2 for reducers, 1 otherwise) are written to
 * out[k] (elements of the result types). */
ncc_status_t ncc_scalar_fn_call(ncc_scalar_fn_t *fn, const void *const *in, void *const *out,
				int32_t nout);

/* The elementwise binary op on one pair of elements of type t (operands and result of
 * type t; compare is not handled here). */
void ncc_binary_elem(ncc_opcode_t op, ncc_etype_t t, const void *a, int64_t ia, const void *b,
		     int64_t ib, void *out, int64_t io);

/* ------------------------------------------------------------ evaluators */

/* Every evaluator gets the instruction, its evaluated operands (borrowed) and a
 * zero-filled result value of inst->shape to fill. */
typedef ncc_status_t (*ncc_eval_fn)(ncc_interp_t *ip, const ncc_inst_t *inst,
				    const ncc_value_t *const *ops, ncc_value_t *out);

/* interp_elementwise.c */
ncc_status_t ncc_eval_elementwise(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out);
ncc_status_t ncc_eval_convert(ncc_interp_t *ip, const ncc_inst_t *inst,
			      const ncc_value_t *const *ops, ncc_value_t *out);
ncc_status_t ncc_eval_bitcast_convert(ncc_interp_t *ip, const ncc_inst_t *inst,
				      const ncc_value_t *const *ops, ncc_value_t *out);
bool ncc_elementwise_supported(ncc_opcode_t op);
/* interp_call.c */
ncc_status_t ncc_eval_map(ncc_interp_t *ip, const ncc_inst_t *inst,
			  const ncc_value_t *const *ops, ncc_value_t *out);

/* interp_shape.c */
ncc_status_t ncc_eval_broadcast(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
/* reshape and bitcast into a new value (the walk itself moves the operand's buffer
 * instead when it can: interp.c) */
ncc_status_t ncc_eval_reshape(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_transpose(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_slice(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_concatenate(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_pad(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_reverse(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_iota(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_dynamic_slice(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_dynamic_update_slice(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_gather(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_scatter(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);

/* interp_reduce.c */
ncc_status_t ncc_eval_reduce(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_reduce_window(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_select_and_scatter(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_dot(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_convolution(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);

/* interp_nn.c */
ncc_status_t ncc_eval_batch_norm_training(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_batch_norm_inference(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_batch_norm_grad(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_custom_call(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_rng_bit_generator(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
ncc_status_t ncc_eval_collective(ncc_interp_t *, const ncc_inst_t *, const ncc_value_t *const *, ncc_value_t *);
/* Custom-call targets the interpreter knows (NULL-safe). */
bool ncc_custom_call_supported(const char *target);

#endif /* NCC_INTERP_INTERNAL_H */
