/* Private state of the ncc back end shared by the driver (lower.c), the builder (builder.c, builder_value.c), emit.c and the per-family lower_*.c files (not for the passes: they use lower_ctx.h). A family file calls the builder only, never another family: the driver (lower.c) picks the family of each instruction. */
#ifndef NCC_LOWER_INTERNAL_H
#define NCC_LOWER_INTERNAL_H

#include "hlo/ir.h"
#include "lower.h"
#include "lower_ctx.h"
#include "neuronsim/neff.h"
#include "plan.h"

/* The lowered value of one instruction: its array leaves (one for an array result). */
typedef struct ncc_lval {
	int32_t nleaves;
	ncc_view_t *views;  /* nleaves */
	int32_t *blocks;    /* scratch block each leaf holds a reference on, -1 for none */
	bool *set;          /* leaf has a value */
	int32_t *bind_out;  /* entry outputs: output tensor the leaf should be computed in, -1 */
	const ncc_inst_t *bind_tr; /* leaf 0 is bound through this transpose of it: the
				      output holds the transpose row-major (bind_outputs) */
	int32_t pending;    /* uses not lowered yet; the value is released at 0 */
	bool pinned;        /* a root: released by whoever consumes the computation's result */
	bool live;
} ncc_lval_t;

#define NCC_MAX_TEMPS 4096 /* per instruction; a loop state swap may stage every leaf */

/* One memory access of an emitted instruction (multi-engine dependency tracking). */
typedef struct ncc_access {
	uint32_t region;
	uint8_t engine;
	bool write;
	int64_t lo, hi; /* bytes [lo, hi) */
	uint32_t seq;   /* the instruction's index + 1 in its engine's stream */
} ncc_access_t;

struct ncc_lower_ctx {
	const ncc_module_t *m;
	ncc_compile_options_t opts;
	ncc_error_t *err;
	neff_builder_t *b;
	ncc_lval_t *vals;        /* by instruction id */
	uint32_t nvals;
	uint32_t *debug_ids;     /* by instruction id; ISA_DEBUG_NONE until first use */
	const ncc_inst_t *cur;   /* instruction being lowered */
	ncc_plan_t plan;
	int32_t temps[NCC_MAX_TEMPS];
	int32_t ntemps;
	/* scheduling: see the rule in builder.c */
	bool multi;
	uint32_t count[ISA_ENGINE_COUNT];           /* instructions emitted per stream */
	/* known[a][b]: instructions of engine b known complete before a's next one
	 * (directly waited for or implied through another engine's waits) */
	uint32_t known[ISA_ENGINE_COUNT][ISA_ENGINE_COUNT];
	/* per emitted instruction (engine e, index i): known[e] after it completes */
	uint32_t (*kv[ISA_ENGINE_COUNT])[ISA_ENGINE_COUNT];
	uint32_t kv_cap[ISA_ENGINE_COUNT];
	/* memory accesses of emitted instructions not yet known complete everywhere */
	struct ncc_access *acc;
	uint32_t nacc, cap_acc;
	/* host copy of the constants region (to read FUSED descriptors back) */
	uint8_t *consts;
	uint64_t consts_size, consts_cap;
	/* I/O */
	uint32_t n_inputs, n_outputs;
	int32_t *in_tensor;      /* region index - ISA_REGION_IO0 of parameter p, -1 when
				  * it has no tensor (zero elements) */
	uint32_t *out_tensor;    /* region index - ISA_REGION_IO0 of output k, or
				  * NCC_NO_TENSOR (zero elements) */
	int32_t *out_alias;      /* output k aliases input (param) n, else -1 */
	uint64_t total_insns;
	isa_insn_t last_insn;    /* as emitted last (for patching jumps) */
};

/* out_tensor of an output without a NEFF tensor (it has no elements). */
#define NCC_NO_TENSOR UINT32_MAX

/* Per-op lowering entry points (one family per file), called by the driver only. */
ncc_status_t ncc_lower_elementwise(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_shape_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_reduce_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_dot(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_conv(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
/* Dense f32 convolutions (no groups) as few large GEMMs over an im2col buffer,
 * strided input gradients by col2im and pointwise convolutions of small
 * images with the batch folded into one GEMM (lower_conv_dense.c); *out_done false
 * (nothing emitted) when the form does not apply. */
ncc_status_t ncc_lower_conv_dense_gemm(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				       const ncc_view_t *kv, const ncc_view_t *out, bool *out_done);
ncc_status_t ncc_lower_conv_dense_col2im(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
					 const ncc_view_t *x, const ncc_view_t *kv, const ncc_view_t *out,
					 bool *out_done);
ncc_status_t ncc_lower_conv_dense_folded(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
					 const ncc_view_t *x, const ncc_view_t *kv, const ncc_view_t *out,
					 bool *out_done);
/* Depthwise and grouped f32 convolutions with one or two spatial dims as one CONV
 * instruction (lower_conv_grouped.c); *out_done false (and nothing emitted) for
 * the others, which ncc_lower_conv lowers to MATMULs. */
ncc_status_t ncc_lower_conv_grouped(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				    const ncc_view_t *k, const ncc_view_t *out, bool *out_done);
ncc_status_t ncc_lower_misc(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_control(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);

/* Which family handles op (NULL when none); the support checks per family. */
typedef ncc_status_t (*ncc_lower_fn)(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
bool ncc_lower_elementwise_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_shape_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_reduce_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_dot_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_conv_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_misc_supports(const ncc_inst_t *inst, const char **out_reason);
bool ncc_lower_control_supports(const ncc_inst_t *inst, const char **out_reason);

/* The driver's walk, which its control flow (while, conditional, call) uses for
 * the called computations: lower every instruction of c with its
 * parameters bound to param_views (nleaves of c's parameters flattened in order);
 * on return the root's value is pinned (release it with ncc_lower_release_root). */
ncc_status_t ncc_lower_computation(ncc_lower_ctx_t *ctx, const ncc_comp_t *c,
				   const ncc_view_t *param_views, int32_t nparam_views);
void ncc_lower_release_root(ncc_lower_ctx_t *ctx, const ncc_comp_t *c);
ncc_lval_t *ncc_lower_val(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
/* Leaf k of a shape, depth-first (NULL past the last). */
const ncc_shape_t *ncc_lower_shape_leaf(const ncc_shape_t *s, int32_t k);
/* Index the next instruction on the control stream will get (single-stream mode). */
uint32_t ncc_lower_next_index(ncc_lower_ctx_t *ctx);
isa_engine_t ncc_lower_control_engine(ncc_lower_ctx_t *ctx);
ncc_status_t ncc_lower_patch_jump(ncc_lower_ctx_t *ctx, uint32_t index, const isa_insn_t *insn,
				  uint32_t target);
/* Emits a JUMP to target (patched later when UINT32_MAX): unconditional when cond is
 * NULL, else on the pred scalar cond (inverted with invert). */
ncc_status_t ncc_lower_jump(ncc_lower_ctx_t *ctx, const ncc_view_t *cond, bool invert,
			    uint32_t target, uint32_t *out_index, isa_insn_t *out_insn);

/* ---- the builder's helpers shared by the op files (builder.c, builder_value.c) */
ncc_status_t ncc_lower_const_scalar(ncc_lower_ctx_t *ctx, isa_dtype_t dt, double v,
				    ncc_view_t *out_view);
/* Broadcast view of a scalar view to rank/dims (all strides 0). */
ncc_view_t ncc_view_bcast_scalar(const ncc_view_t *scalar, int32_t rank, const int64_t *dims);
/* A dense temporary of the given dtype and dims. */
ncc_status_t ncc_lower_temp_view(ncc_lower_ctx_t *ctx, isa_dtype_t dt, int32_t rank,
				 const int64_t *dims, ncc_view_t *out_view);
/* The view of src materialised densely (src itself when it already is dense). */
ncc_status_t ncc_lower_make_dense(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				  const ncc_view_t *src, ncc_view_t *out_view);
ncc_status_t ncc_lower_reduce_emit(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t comb,
				   const ncc_view_t *dst_keep, const ncc_view_t *src,
				   uint32_t mask, bool accumulate);
ncc_status_t ncc_lower_act(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t func,
			   double scale, double bias, const ncc_view_t *dst, const ncc_view_t *src);
/* Moves dim d of v to the front (a view). */
ncc_view_t ncc_view_dim_to_front(const ncc_view_t *v, int32_t d);
/* GATHER (scatter_op < 0: rows[m, r] = table[idx[m], r]) or SCATTER with combiner
 * scatter_op (table[idx[m], r] op= rows[m, r]) of whole rows: table [N, rest...],
 * rows [M, rest...], idx [M]; rest dims that do not fold are split. */
ncc_status_t ncc_lower_rows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int scatter_op,
			    const ncc_view_t *table, const ncc_view_t *rows, const ncc_view_t *idx);
/* Reshape of a view without copying when the strides allow it (numpy's rule). */
bool ncc_view_reshape(const ncc_view_t *src, int32_t rank, const int64_t *dims,
		      ncc_view_t *out_view);

/* The result leaves of inst are its operands' leaves, in order (tuple, and
 * collectives over one replica). */
ncc_status_t ncc_lower_tuple(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);

/* The debug map entry of inst, added on its first instruction (builder.c). */
ncc_status_t ncc_emit_debug_id(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t *out_id);

/* Shared by the reduction files (lower_reduce.c, lower_reduce_variadic.c,
 * lower_select_scatter.c, lower_batch_norm.c, lower_fusion.c; builder.c). */
/* The REDUCE combiner of r = op(a, b) on the scalars a and b (either order), or -1. */
int ncc_lower_binary_combiner(const ncc_inst_t *r, const ncc_inst_t *a, const ncc_inst_t *b);
/* out (the operand's rank minus the dims in mask) seen at in's rank with the
 * reduced dims of size 1 and stride 0: the keep-dims REDUCE destination. */
ncc_view_t ncc_view_keep_dims(const ncc_view_t *out, const ncc_view_t *in, uint32_t mask);
/* keep (reduced dims of size 1, stride 0) widened to in's dims: every input
 * element sees its window's result. */
ncc_view_t ncc_view_expand_keep(const ncc_view_t *keep, const ncc_view_t *in);
/* Unless init_inst is comb's identity, copies init into every element of out;
 * *out_acc then says REDUCE must accumulate into it. */
ncc_status_t ncc_lower_reduce_start(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_inst_t *init_inst, int comb, const ncc_view_t *init,
				    const ncc_view_t *out, bool *out_acc);
/* One reduce of in over inst's dimensions with combiner comb, from init, into out. */
ncc_status_t ncc_lower_reduce_dims(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   const ncc_inst_t *init_inst, int comb, ncc_view_t in,
				   ncc_view_t init, ncc_view_t out);
/* in's windows as [o0, w0, o1, w1, ...] and out as their keep-dims destination;
 * returns the mask of the w dims. */
uint32_t ncc_lower_window_views(const ncc_window_t *win, const ncc_view_t *in,
				const ncc_view_t *out, ncc_view_t *out_windows, ncc_view_t *out_keep);
/* One COPY (an im2col) of the windows of in (rank r) that start at the
 * elements of dims odims (from in's first element: the caller offsets in for
 * a part) into xc's place, dense [o0..o(r-ninner-1), w0..w(r-1),
 * o(r-ninner)..o(r-1)]: each window element's values over the windows of
 * one index of the outer dims one dense run (ninner = r: [w..., o...]), for
 * the dense-windows forms of reduce-window and select-and-scatter, whose
 * window views step by the window stride. With the window elements inside
 * the outer dims (a max-pool's [N][C][3x3][OH][OW]) the copy takes all the
 * windows of a plane while it is in L1: with them outermost it read the
 * input once per window element. */
ncc_status_t ncc_lower_window_im2col(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				     const ncc_window_t *win, const ncc_view_t *in, const int64_t *odims,
				     int32_t ninner, const ncc_view_t *xc);
/* In ncc_lower_window_im2col's buffer over odims (rank r, nk window
 * elements), the element stride of output dim d of one window element's
 * values, and (d = r) the distance between two window elements' values. */
int64_t ncc_lower_window_col_stride(const int64_t *odims, int32_t r, int32_t ninner, int64_t nk,
				    int32_t d);
/* The elements of one window (the product of its sizes). */
int64_t ncc_lower_window_elements(const ncc_window_t *win);
/* How many of `outer` indices of a dense-windows form's outer dim one part
 * takes (1..outer), each index holding per windows of nk elements of es
 * bytes: the part's im2col buffer stays within a few MiB. */
int64_t ncc_lower_window_part(int64_t nk, int64_t es, int64_t outer, int64_t per);

/* ---- the reductions' other families (lower.c picks them) */
bool ncc_lower_variadic_reduce_supports(const ncc_inst_t *inst, const char **out_reason);
ncc_status_t ncc_lower_variadic_reduce(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
bool ncc_lower_select_and_scatter_supports(const ncc_inst_t *inst, const char **out_reason);
ncc_status_t ncc_lower_select_and_scatter(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);
ncc_status_t ncc_lower_batch_norm(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);

/* ---- emit.c, called by the driver: I/O tensor table, scratch size, HLO text */
ncc_status_t ncc_emit_io(ncc_lower_ctx_t *ctx);
ncc_status_t ncc_emit_finish(ncc_lower_ctx_t *ctx, void **out_neff, size_t *out_size);

#endif /* NCC_LOWER_INTERNAL_H */
