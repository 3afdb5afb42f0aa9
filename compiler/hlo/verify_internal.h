/* ncc verifier internals: the verification context, the CHECK/TRY macros, the checks shared by verify*.c and the per-opcode checkers. */
#ifndef NCC_VERIFY_INTERNAL_H
#define NCC_VERIFY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "verify.h"

/* computation pointer -> index in m->comps, sorted by pointer for bsearch: callee
 * lookups stay O(log n) even in modules with very many computations */
typedef struct comp_ref {
	const ncc_comp_t *c;
	int32_t index;
} comp_ref_t;

typedef struct vctx {
	const ncc_module_t *m;
	ncc_error_t *err;
	comp_ref_t *index; /* NULL: fall back to a linear search */
} vctx_t;

/* Fails instruction in (NULL: the module) with "FILE:LINE:COL: error: instruction
 * 'NAME' (OPCODE): MESSAGE" in v->err; returns NCC_ERR_VERIFY. */
ncc_status_t vf_fail(vctx_t *v, const ncc_inst_t *in, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Short shape spelling for messages (static buffers rotate so two fit in one call). */
const char *vf_sh(const ncc_shape_t *s);

#define CHECK(cond, ...)                                    \
	do {                                                \
		if (!(cond))                                \
			return vf_fail(v, in, __VA_ARGS__); \
	} while (0)
#define TRY(expr)                           \
	do {                                \
		ncc_status_t st_ = (expr);  \
		if (st_)                    \
			return st_;         \
	} while (0)

/* --------------------------------------------------------- shared checks */

static inline bool vf_same_dims(const ncc_shape_t *a, const ncc_shape_t *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

static inline bool vf_is_scalar(const ncc_shape_t *s) { return ncc_shape_is_array(s) && s->rank == 0; }

static inline bool vf_in_list(const ncc_ilist_t *l, int64_t d)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i] == d)
			return true;
	return false;
}

static inline bool vf_sorted(const ncc_ilist_t *l)
{
	for (int32_t i = 1; i < l->n; i++)
		if (l->v[i] <= l->v[i - 1])
			return false;
	return true;
}

/* elems[0] when n == 1, else the tuple of elems[0..n) (which must outlive it). */
static inline ncc_shape_t vf_one_or_tuple(int32_t n, ncc_shape_t *elems)
{
	if (n == 1)
		return elems[0];
	ncc_shape_t t;
	memset(&t, 0, sizeof(t));
	t.etype = NCC_TUPLE;
	t.nelems = n;
	t.elems = elems;
	return t;
}

ncc_status_t vf_need_operands(vctx_t *v, const ncc_inst_t *in, int32_t n);
ncc_status_t vf_need_array(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *s,
			      const char *what);
/* dims of a list must be unique and in [0, rank) */
ncc_status_t vf_check_dim_list(vctx_t *v, const ncc_inst_t *in, const ncc_ilist_t *l,
			          int32_t rank, const char *what);
/* result must equal an expected shape (dims and element type; layout ignored) */
ncc_status_t vf_expect_shape(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *want);
/* The result of an op over n operands that returns values of their shapes (sort,
 * scatter): operand 0's shape, or the tuple of the first n operands' shapes. */
ncc_status_t vf_expect_operand_shapes(vctx_t *v, const ncc_inst_t *in, int32_t n);
/* A called computation's signature: nparams parameters of the given shapes (NULL: not
 * checked), root shape want_root (NULL: not checked). */
ncc_status_t vf_check_called(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
			        const char *role, int32_t nparams, const ncc_shape_t *const *pshapes,
			        const ncc_shape_t *want_root);
/* Reducer of N values: 2N scalar params (accumulators then inputs) of the given
 * element types, returning N scalars (a tuple when N > 1). */
ncc_status_t vf_check_reducer(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
			         int32_t n, const ncc_etype_t *types);
/* Output size of one windowed dimension (XLA's InferWindowOutputShape). */
ncc_status_t vf_window_out(vctx_t *v, const ncc_inst_t *in, int64_t insz,
			      const ncc_window_dim_t *w, int i, int64_t *out);
/* Exactly n operands (1 or 2), each an array (named a_name, b_name), and an array
 * result: the preamble of the elementwise, shape and contraction checks. */
ncc_status_t vf_need_array_io(vctx_t *v, const ncc_inst_t *in, int32_t n, const char *a_name,
			         const char *b_name);

/* ------------------------------------------------ per opcode (one family each) */

/* verify_elementwise.c */
ncc_status_t vf_unary(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_binary(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_select(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_clamp(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_bitcast_convert(vctx_t *v, const ncc_inst_t *in);
/* verify_shape.c */
ncc_status_t vf_broadcast(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_reshape(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_transpose(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_reverse(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_slice(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_dynamic_slice(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_dynamic_update_slice(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_concatenate(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_pad(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_iota(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_gather(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_scatter(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_tuple(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_gte(vctx_t *v, const ncc_inst_t *in);
/* verify_reduce.c */
ncc_status_t vf_dot(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_convolution(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_reduce(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_reduce_window(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_select_and_scatter(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_batch_norm(vctx_t *v, const ncc_inst_t *in);
/* verify_misc.c */
ncc_status_t vf_while(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_conditional(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_call_like(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c, const char *role);
ncc_status_t vf_fusion(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_map(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_sort(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_constant(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_rng_bit_generator(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_rng(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_same_as_operand(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_all_reduce(vctx_t *v, const ncc_inst_t *in);
ncc_status_t vf_gather_scatter_collective(vctx_t *v, const ncc_inst_t *in);

#endif /* NCC_VERIFY_INTERNAL_H */
