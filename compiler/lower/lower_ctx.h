/* Internal lowering context API: what the back end's lower_*.c files and the fusion lowering (lower_fusion.c) use to turn one IR instruction into ISA instructions, and the back-end queries the fuser (passes/pass_fuse.c) asks. */
#ifndef NCC_LOWER_CTX_H
#define NCC_LOWER_CTX_H

/*
 * How lowering works (docs/compiler.md has the long version)
 * ----------------------------------------------------------
 * The driver (lower.c) walks the entry computation in program order and calls one
 * lowering function per instruction. Every array value the program computes lives in
 * device memory and is described by an ncc_view_t: a region (constants, scratch or an
 * I/O tensor), a byte offset and per-dimension element strides. Views may be strided,
 * broadcast (stride 0) or reversed (negative stride); that is how reshape, transpose,
 * broadcast, slice and reverse cost no instruction.
 *
 * A lowering function for instruction `inst`:
 *   1. reads its operands with ncc_lower_operand_view() (already lowered: the driver
 *      lowers operands first);
 *   2. gets its destination with ncc_lower_output_view() (a dense row-major buffer the
 *      memory planner placed in scratch or, for entry outputs, in the output tensor);
 *      it must write every element of it;
 *   3. converts views to isa_ap_t with ncc_lower_views_to_aps() (which merges
 *      dimensions so the rank fits ISA_MAX_RANK) and emits instructions with
 *      ncc_lower_emit(), which picks the stream, adds the semaphores that order it after
 *      everything emitted before (the dependency rule is documented in builder.c) and
 *      sets the debug id of `inst`;
 *   4. may use temporaries from ncc_lower_temp_alloc(), valid until the lowering
 *      function returns (the planner reuses them for later instructions).
 * Errors go through ncc_lower_fail(), which names the instruction, its type and its
 * source line.
 *
 * Ownership: the context belongs to ncc_lower_module(); lowering functions never free
 * anything they get from it. Nothing here is thread-safe (one context per compile).
 */

#include <stdbool.h>
#include <stdint.h>

#include "hlo/ir.h"
#include "neuronsim/isa.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncc_lower_ctx ncc_lower_ctx_t; /* opaque; defined in lower_internal.h */

/* One array value in device memory. Element [i0..i(rank-1)] is at byte
 * offset + sum(i_k * strides[k]) * isa_dtype_size(dtype) of region. Unlike isa_ap_t
 * the rank goes up to NCC_MAX_RANK; ncc_lower_views_to_aps() folds it. */
typedef struct ncc_view {
	uint32_t region;  /* ISA_REGION_CONST, ISA_REGION_SCRATCH or ISA_REGION_IO0 + i */
	isa_dtype_t dtype;
	int32_t rank;
	uint64_t offset;  /* bytes, of element [0,...,0] (the high end for reversed dims) */
	int64_t dims[NCC_MAX_RANK];
	int64_t strides[NCC_MAX_RANK]; /* in elements; 0 = broadcast, < 0 = reversed */
} ncc_view_t;

/* ---- types ------------------------------------------------------------ */

/* The ISA dtype of an IR element type. NCC_ERR_UNSUPPORTED (no message) for f64,
 * complex, sub-byte and f8 types, tokens and tuples. */
ncc_status_t ncc_lower_dtype(ncc_etype_t t, isa_dtype_t *out_dtype);

/* ---- views ------------------------------------------------------------ */

/* Number of array leaves of a shape (1 for an array, the flattened leaf count of a
 * tuple, depth-first left to right). */
int32_t ncc_lower_shape_leaves(const ncc_shape_t *s);
/* NULL when the array leaf s can be placed, else RESOURCE_EXHAUSTED when it is too
 * big (its byte size overflows, or is above NEFF_MAX_REGION_SIZE, the 2^48 bytes a
 * device can address), with a sentence naming the shape, its byte count and the
 * limit. */
ns_status_t ncc_lower_leaf_check(const ncc_shape_t *s);

/* The view of operand i of inst (an array value; leaf 0 for arrays). For a tuple
 * operand use ncc_lower_operand_leaf(). */
ncc_status_t ncc_lower_operand_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
				    ncc_view_t *out_view);
/* Leaf `leaf` of operand i (tuple operands, flattened depth-first). */
ncc_status_t ncc_lower_operand_leaf(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
				    int32_t leaf, ncc_view_t *out_view);

/* The destination buffer of inst's result (leaf 0 for an array result; tuple
 * results, e.g. multi-output fusions, by flattened leaf index): dense, row-major, of
 * inst's shape; or, for a convolution bound through a transpose (bind_outputs in
 * lower.c), the transpose's row-major buffer seen through the inverse permutation.
 * Allocated on first call; the same view afterwards. */
ncc_status_t ncc_lower_output_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t leaf,
				   ncc_view_t *out_view);

/* Makes `view` the value of leaf `leaf` of inst without emitting anything (for view
 * ops: reshape of a dense value, transpose, broadcast, slice, reverse, get-tuple-element).
 * The memory the view points into stays live as long as inst is. */
ncc_status_t ncc_lower_set_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t leaf,
				const ncc_view_t *view);

/* A dense row-major view of the given dims at (region, offset). */
ncc_view_t ncc_view_dense(uint32_t region, uint64_t offset, isa_dtype_t dtype, int32_t rank,
			  const int64_t *dims);
/* true when the view is row-major contiguous (size-1 dims ignored). */
bool ncc_view_is_dense(const ncc_view_t *v);
/* Element count (1 for rank 0). */
int64_t ncc_view_elements(const ncc_view_t *v);

/* Converts n views of the same dims (a broadcast operand has stride 0 where needed)
 * into n access patterns with a common shape: size-1 dims are dropped and dims that
 * are contiguous in every view are merged, so that the rank fits ISA_MAX_RANK.
 * NCC_ERR_UNSUPPORTED (no message) when the folded rank still exceeds ISA_MAX_RANK;
 * ncc_lower_copy()/ncc_lower_alu() then split the outer dims. n <= ISA_MAX_AP. */
ncc_status_t ncc_lower_views_to_aps(int n, const ncc_view_t *views, isa_ap_t *out_aps);

/* ---- emission ---------------------------------------------------------- */

/* Emits insn on `engine` (the stream may differ at -O0, where the driver puts a
 * program on one stream) for inst: sets wait_sem/wait_value/signal_sem so that the
 * program behaves as if instructions ran one at a time in emission order (at -O1+ the
 * driver only waits on earlier instructions whose access patterns conflict with
 * insn's; an opcode whose memory accesses are not all described by its ap[] -- e.g.
 * FUSED with inputs in its descriptor -- is ordered after and before everything), and
 * debug_id to inst's debug map entry (inst may be NULL for compiler
 * glue: then the debug id of the instruction being lowered is used). The caller
 * leaves the semaphore and debug fields as isa_insn_init() set them. insn is copied.
 * out_index (may be NULL) receives the index in its stream. */
ncc_status_t ncc_lower_emit(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, isa_engine_t engine,
			    const isa_insn_t *insn, uint32_t *out_index);

/* Convenience: ap0 = convert(ap1) on the DMA engine, any views of the same dims;
 * split into several COPYs when the folded rank exceeds ISA_MAX_RANK. */
ncc_status_t ncc_lower_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *dst,
			    const ncc_view_t *src);

/* Copies src into dst spread out as XLA's pad places its operand: element i of
 * dim d goes to lo[d] + i step[d] (step >= 1: interior padding + 1; a negative
 * lo crops), the elements landing outside dst dropped. Copies nothing when none
 * lands inside. */
ncc_status_t ncc_lower_copy_spread(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   const ncc_view_t *dst, const ncc_view_t *src, const int64_t *lo,
				   const int64_t *step);

/* Emits one ALU instruction `sub` over views of the same dims (dst + arity inputs),
 * splitting along outer dims when the folded rank exceeds ISA_MAX_RANK. */
ncc_status_t ncc_lower_alu(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			   const ncc_view_t *dst, int n_in, const ncc_view_t *in);

/* ---- memory ------------------------------------------------------------ */

/* Scratch bytes (aligned to 64) for temporaries of the instruction being lowered;
 * valid until its lowering function returns. out_offset is a byte offset in
 * ISA_REGION_SCRATCH. */
ncc_status_t ncc_lower_temp_alloc(ncc_lower_ctx_t *ctx, uint64_t size, uint64_t *out_offset);

/* Appends constant bytes (copied) to ISA_REGION_CONST, aligned to 64. */
ncc_status_t ncc_lower_add_const(ncc_lower_ctx_t *ctx, const void *data, uint64_t size,
				 uint64_t *out_offset);

/* ---- debug map ----------------------------------------------------------- */

/* Appends n debug map entries, one per insts[k], in order and consecutive (never
 * shared with another instruction's entry): each names insts[k] (its name with a
 * pass's ".pN" suffix removed, so a fused clone names the instruction it was made
 * from), op_type and source file:line. *out_first gets the id of the first. For the
 * steps of a FUSED instruction (ISA_FUSED_STEPS_DEBUG). */
ncc_status_t ncc_lower_debug_entries(ncc_lower_ctx_t *ctx, const ncc_inst_t *const *insts,
				     int32_t n, uint32_t *out_first);

/* ---- errors ------------------------------------------------------------ */

/* Records an error about inst (its name, result type and source line are added to
 * the message) and returns st. */
ncc_status_t ncc_lower_fail(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, ncc_status_t st,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* ncc_lower_fail for a failure reported as a status (the NEFF builder's,
 * ncc_lower_leaf_check's): the message is "FMT: <status message>", the code
 * ncc_status_from_ns(status, code). Consumes status; NULL returns NCC_OK. */
ncc_status_t ncc_lower_fail_status(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   ns_status_t status, ncc_status_t code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The compile options in effect (opt level etc.; compiler/options.h). */
const struct ncc_compile_options *ncc_lower_options(const ncc_lower_ctx_t *ctx);

/* ---- fusion ------------------------------------------------------------- */

/* What the back end computes, which the fuser (passes/pass_fuse.c) asks: */
/* Element types the ISA has (isa_dtype_t), as IR types. */
bool ncc_lower_isa_etype(ncc_etype_t t);
/* The isa_alu_t sub-op an elementwise instruction becomes inside a fused loop,
 * ISA_FUSED_CONVERT for convert, or -1 when the ISA cannot compute it for its
 * element types exactly as HLO defines it (e.g. integer power, total-order
 * compares, f64). */
int ncc_lower_fused_op(const ncc_inst_t *inst);
/* The REDUCE combiner of a to_apply computation `(a, b) -> op(a, b)`, or -1
 * (builder.c). */
int ncc_lower_combiner_of(const ncc_comp_t *c);

/* Lowers an NCC_OP_FUSION instruction (its fused computation is inst->calls) to the
 * fused-loop ISA instruction (lower_fusion.c, which also answers the first two queries above); the
 * driver calls it for every fusion instruction (fusions only exist at -O1 and above).
 * Operands and outputs come from the functions above. */
ncc_status_t ncc_lower_fusion(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst);

/* One FUSED step: op (an isa_alu_t or ISA_FUSED_*) into register dst of
 * dtype dt from registers a, b, c (IOTA: a is the dim); imm is a CONST's
 * value (converted to dt as the ISA does); other steps' imm is 0. */
isa_fused_op_t ncc_lower_fused_step(uint32_t op, uint32_t dst, isa_dtype_t dt, uint32_t a, uint32_t b,
				    uint32_t c, double imm);
/* Emits one FUSED instruction for inst: aps[0] the output, aps[1..nin] the
 * inputs (all of one shape), h the descriptor header (its n_inputs and n_code
 * set), code its h->n_code steps, whose debug entries start at first_dbg
 * (ncc_lower_debug_entries). The instruction and its descriptor are checked
 * with the simulator's own rules before they are emitted (NCC_ERR_INTERNAL). */
ncc_status_t ncc_lower_fused_insn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const isa_ap_t *aps,
				  int32_t nin, const isa_fused_desc_t *h, const isa_fused_op_t *code,
				  uint32_t first_dbg, bool accumulate);

#ifdef __cplusplus
}
#endif

#endif /* NCC_LOWER_CTX_H */
