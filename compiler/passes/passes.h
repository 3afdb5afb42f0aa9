/* ncc passes over the IR (legalization: f64 demotion, buffer donors; optimisation: DCE, CSE, constant folding, algebraic simplification, batch-norm expansion, elementwise fusion) and the pass pipeline. */
#ifndef NCC_PASSES_H
#define NCC_PASSES_H

/*
 * Every pass rewrites a module in place and preserves what the reference
 * interpreter computes for the entry computation (bit-exact for integers and
 * pred; floats within rounding of the element type, see docs/passes.md), the
 * entry signature (parameters are never removed or renumbered), the entry
 * result shape and input_output_alias; the two legalization passes are the
 * exceptions, by design (f64 becomes f32 everywhere; donors become aliases).
 * Instructions a pass creates get the
 * metadata (op_type, source file/line) of the instruction they replace; a
 * fusion gets its root's. Removed instructions are only unlinked (the module's
 * arena owns them), so pointers held elsewhere stay valid but stale.
 *
 * Errors: NCC_ERR_NOMEM, or NCC_ERR_INTERNAL when the module no longer
 * verifies after a pass (a bug in that pass: the message names it).
 */

#include <stdbool.h>
#include <stdint.h>

#include "hlo/ir.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pipeline of the compile, ncc_run_passes(), is public: include/ncc/ncc.h. */

/* The passes one by one. out_changed (may be NULL) is set to whether the
 * module changed. Each works on every computation of the module. */

/* Legalization (every level; dumped only when it changed something). These two
 * change what the other passes keep: */
/* Every f64 value becomes f32 (the device has no f64): shapes of every
 * instruction and signature, constants (rounded to nearest f32), the entry
 * computation layout text; so f64 parameters and result leaves are f32 in the
 * NEFF. NCC_ERR_UNSUPPORTED (the module unchanged) for what has no f32 meaning:
 * bitcast-convert from or to f64, c128 values, tuple constants with f64 leaves. */
ncc_status_t ncc_pass_demote_f64(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Turns buffer_donor parameters into may-alias input_output_alias entries, each
 * with the unaliased output leaf of its shape computed from it in the fewest
 * operations, else the first unaliased one of its shape (docs/passes.md);
 * converted donors leave the donor list. */
ncc_status_t ncc_pass_buffer_donors(ncc_module_t *m, bool *out_changed, ncc_error_t *err);


/* Removes instructions whose value nothing uses (root, side effects and
 * parameters are kept) and computations nothing calls any more. */
ncc_status_t ncc_pass_dce(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Merges instructions with the same opcode, shape, operands and attributes
 * (not rng, side effects, parameters or control dependencies). */
ncc_status_t ncc_pass_cse(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Evaluates elementwise ops, convert, reshape, transpose, slice, broadcast,
 * iota and concatenate whose operands are constants (and elementwise ops over
 * broadcast scalars) into constants, within size limits. */
ncc_status_t ncc_pass_fold(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Local algebraic rewrites (x+0, x*1, x*0 for integers, reshape/transpose/
 * broadcast chains, identity converts/slices/pads, neg(neg x), select with a
 * constant predicate, get-tuple-element of tuple, splat constants). */
ncc_status_t ncc_pass_simplify(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Rewrites batch-norm-training, -inference and -grad of f32, bf16 and f16
 * operands into reduce, broadcast and elementwise ops (bf16/f16 computed in
 * f32), with the interpreter's two-pass moments; the new instructions carry the
 * batch norm's metadata and are named "<bn>.pN". Batch norms with control
 * dependencies or an empty dim are left to the back end's lowering. */
ncc_status_t ncc_pass_batch_norm_expand(ncc_module_t *m, bool *out_changed, ncc_error_t *err);
/* Groups DAGs of elementwise ops in the entry computation (with the broadcasts
 * and scalar constants feeding them) into fusion instructions (kind=kLoop,
 * calls=a new computation), each lowered to one ISA FUSED instruction. */
ncc_status_t ncc_pass_fuse(ncc_module_t *m, bool *out_changed, ncc_error_t *err);

/* What one fusion may hold: the ISA FUSED limits (isa.h), with one register
 * per value (inputs, constants, ops) so register allocation always fits. */
#define NCC_FUSE_MAX_INPUTS 16
#define NCC_FUSE_MAX_VALUES 32

/* ---- helpers shared by the pass files and lower_fusion.c ---- */

/* Appends to c a copy of src with the given operands (attributes, called
 * computations, literal and metadata shared; control dependencies dropped)
 * and a fresh unique name derived from src's. */
ncc_status_t ncc_pass_clone_inst(ncc_comp_t *c, const ncc_inst_t *src, ncc_inst_t *const *operands,
				 int32_t n, ncc_inst_t **out_inst);

/* A new instruction (fresh name, no attributes) that will replace `like`:
 * placed just before it in its computation, with its metadata and source
 * position. */
ncc_status_t ncc_pass_new_like(const ncc_inst_t *like, ncc_opcode_t op, const ncc_shape_t *shape,
			       ncc_inst_t *const *operands, int32_t n, ncc_inst_t **out_inst);

/* A fresh instruction name "<base>.p<id>" (arena string) that the parser's
 * names do not use. */
const char *ncc_pass_fresh_name(ncc_module_t *m, const char *base);

/* A rewrite of one instruction: *out_inst gets its replacement, or NULL. */
typedef ncc_status_t (*ncc_pass_rewrite_fn)(ncc_inst_t *inst, ncc_inst_t **out_inst);
/* Runs rewrite on every instruction of every computation of m, in program order
 * over each computation's instructions as they were before (rewrites append new
 * ones), so a rewritten operand is seen by its users in the same sweep; the uses
 * of an instruction move to its replacement. `what` names the pass in messages.
 * *out_changed (may be NULL): something was replaced. */
ncc_status_t ncc_pass_rewrite_each(ncc_module_t *m, const char *what, ncc_pass_rewrite_fn rewrite,
				   bool *out_changed, ncc_error_t *err);

/* true when x is a constant whose elements are all equal (and not elided), or a
 * broadcast of one; *out_lit (may be NULL) gets the literal, whose element 0 is
 * the value. */
bool ncc_pass_splat(const ncc_inst_t *x, const ncc_literal_t **out_lit);

#ifdef __cplusplus
}
#endif

#endif /* NCC_PASSES_H */
