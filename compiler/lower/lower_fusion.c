/* Lowers a fusion of elementwise ops (kLoop), or of a reduce of such an expression (kInput), to one ISA FUSED instruction: input views, a register program, a descriptor in the constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* ---------------------------------------------------------------- what a fused loop computes */

bool ncc_lower_isa_etype(ncc_etype_t t)
{
	switch (t) {
	case NCC_PRED: case NCC_S8: case NCC_S16: case NCC_S32: case NCC_S64:
	case NCC_U8: case NCC_U16: case NCC_U32: case NCC_U64:
	case NCC_F16: case NCC_BF16: case NCC_F32:
		return true;
	default:
		return false;
	}
}

static bool is_f(ncc_etype_t t) { return t == NCC_F16 || t == NCC_BF16 || t == NCC_F32; }
static bool is_i(ncc_etype_t t) { return ncc_etype_is_integral(t); }

int ncc_lower_fused_op(const ncc_inst_t *inst)
{
	if (!ncc_shape_is_array(&inst->shape) || !ncc_lower_isa_etype(inst->shape.etype))
		return -1;
	for (int32_t i = 0; i < inst->noperands; i++)
		if (!ncc_shape_is_array(&inst->operands[i]->shape) ||
		    !ncc_lower_isa_etype(inst->operands[i]->shape.etype))
			return -1;
	ncc_etype_t t = inst->shape.etype;
	ncc_etype_t a = inst->noperands ? inst->operands[0]->shape.etype : t;
	switch (inst->op) {
	/* numeric (not pred) */
	case NCC_OP_ADD: return t != NCC_PRED ? ISA_ALU_ADD : -1;
	case NCC_OP_SUBTRACT: return t != NCC_PRED ? ISA_ALU_SUB : -1;
	case NCC_OP_MULTIPLY: return t != NCC_PRED ? ISA_ALU_MUL : -1;
	case NCC_OP_DIVIDE: return t != NCC_PRED ? ISA_ALU_DIV : -1;
	case NCC_OP_REMAINDER: return t != NCC_PRED ? ISA_ALU_REM : -1;
	case NCC_OP_MAXIMUM: return t != NCC_PRED ? ISA_ALU_MAX : -1;
	case NCC_OP_MINIMUM: return t != NCC_PRED ? ISA_ALU_MIN : -1;
	case NCC_OP_NEGATE: return t != NCC_PRED ? ISA_ALU_NEG : -1;
	case NCC_OP_ABS: return t != NCC_PRED ? ISA_ALU_ABS : -1;
	case NCC_OP_SIGN: return t != NCC_PRED ? ISA_ALU_SIGN : -1;
	case NCC_OP_CLAMP:
		/* XLA allows scalar bounds; the fused loop broadcasts them */
		return t != NCC_PRED && inst->noperands == 3 &&
		       inst->operands[0]->shape.etype == t && inst->operands[2]->shape.etype == t
		       ? ISA_ALU_CLAMP : -1;
	/* logical / bitwise */
	case NCC_OP_AND: return is_i(t) || t == NCC_PRED ? ISA_ALU_AND : -1;
	case NCC_OP_OR: return is_i(t) || t == NCC_PRED ? ISA_ALU_OR : -1;
	case NCC_OP_XOR: return is_i(t) || t == NCC_PRED ? ISA_ALU_XOR : -1;
	case NCC_OP_NOT: return is_i(t) || t == NCC_PRED ? ISA_ALU_NOT : -1;
	case NCC_OP_POPCNT: return is_i(t) ? ISA_ALU_POPCNT : -1;
	case NCC_OP_CLZ: return is_i(t) ? ISA_ALU_CLZ : -1;
	case NCC_OP_SHIFT_LEFT: return is_i(t) ? ISA_ALU_SHL : -1;
	case NCC_OP_SHIFT_RIGHT_LOGICAL: return is_i(t) ? ISA_ALU_SHR_LOGICAL : -1;
	case NCC_OP_SHIFT_RIGHT_ARITHMETIC: return is_i(t) ? ISA_ALU_SHR_ARITH : -1;
	/* float only */
	case NCC_OP_FLOOR: return is_f(t) ? ISA_ALU_FLOOR : -1;
	case NCC_OP_CEIL: return is_f(t) ? ISA_ALU_CEIL : -1;
	case NCC_OP_ROUND_NEAREST_AFZ: return is_f(t) ? ISA_ALU_ROUND_AWAY : -1;
	case NCC_OP_ROUND_NEAREST_EVEN: return is_f(t) ? ISA_ALU_ROUND_EVEN : -1;
	case NCC_OP_EXP: return is_f(t) ? ISA_ALU_EXP : -1;
	case NCC_OP_EXPM1: return is_f(t) ? ISA_ALU_EXPM1 : -1;
	case NCC_OP_LOG: return is_f(t) ? ISA_ALU_LOG : -1;
	case NCC_OP_LOG1P: return is_f(t) ? ISA_ALU_LOG1P : -1;
	case NCC_OP_SQRT: return is_f(t) ? ISA_ALU_SQRT : -1;
	case NCC_OP_RSQRT: return is_f(t) ? ISA_ALU_RSQRT : -1;
	case NCC_OP_TANH: return is_f(t) ? ISA_ALU_TANH : -1;
	case NCC_OP_LOGISTIC: return is_f(t) ? ISA_ALU_LOGISTIC : -1;
	case NCC_OP_ERF: return is_f(t) ? ISA_ALU_ERF : -1;
	case NCC_OP_SIN: return is_f(t) ? ISA_ALU_SIN : -1;
	case NCC_OP_COS: return is_f(t) ? ISA_ALU_COS : -1;
	case NCC_OP_POWER: return is_f(t) ? ISA_ALU_POW : -1;
	case NCC_OP_ATAN2: return is_f(t) ? ISA_ALU_ATAN2 : -1;
	case NCC_OP_IS_FINITE: return is_f(a) && t == NCC_PRED ? ISA_ALU_IS_FINITE : -1;
	case NCC_OP_SELECT:
		return a == NCC_PRED && inst->operands[1]->shape.etype == t &&
		       inst->operands[2]->shape.etype == t ? ISA_ALU_SELECT : -1;
	case NCC_OP_CONVERT:
		return (int)ISA_FUSED_CONVERT;
	case NCC_OP_COMPARE: {
		if (t != NCC_PRED || inst->operands[1]->shape.etype != a)
			return -1;
		/* the ISA compares floats as IEEE and integers by their own
		 * signedness: refuse total order and mismatched explicit types */
		ncc_cmp_type_t ct = inst->cmp_type;
		if (ct == NCC_CMPT_TOTALORDER ||
		    (ct == NCC_CMPT_FLOAT && !is_f(a)) ||
		    (ct == NCC_CMPT_SIGNED && !ncc_etype_is_signed_int(a)) ||
		    (ct == NCC_CMPT_UNSIGNED && !(ncc_etype_is_unsigned_int(a) || a == NCC_PRED)))
			return -1;
		switch (inst->cmp_dir) {
		case NCC_CMP_EQ: return ISA_ALU_CMP_EQ;
		case NCC_CMP_NE: return ISA_ALU_CMP_NE;
		case NCC_CMP_LT: return ISA_ALU_CMP_LT;
		case NCC_CMP_LE: return ISA_ALU_CMP_LE;
		case NCC_CMP_GT: return ISA_ALU_CMP_GT;
		case NCC_CMP_GE: return ISA_ALU_CMP_GE;
		default: return -1;
		}
	}
	default:
		return -1;
	}
}

/* output, inputs, one index view per iota dim (folding only) */
#define LF_MAX_VIEWS (1 + ISA_FUSED_MAX_INPUTS + NCC_MAX_RANK)

typedef struct lf_input {
	const ncc_inst_t *src;   /* the parameter or broadcast it stands for */
	ncc_view_t view;         /* at the fusion's output dims */
} lf_input_t;

typedef struct lf {
	ncc_lower_ctx_t *ctx;
	const ncc_inst_t *inst;
	const ncc_shape_t *oshape;
	lf_input_t in[ISA_FUSED_MAX_INPUTS];
	int32_t nin;
	isa_fused_op_t code[ISA_FUSED_MAX_CODE];
	const ncc_inst_t *from[ISA_FUSED_MAX_CODE]; /* the fused instruction of each step */
	int32_t ncode;
	int32_t nregs;
	int32_t iota_dim[ISA_FUSED_MAX_CODE]; /* IOTA steps: the HLO dim; others -1 */
	const ncc_inst_t *red;   /* the root reduce of a kInput fusion, or NULL */
	uint32_t red_mask;       /* its reduced dims */
	int red_comb;            /* its isa_reduce_t */
	bool red_acc;            /* the output holds the init value (ACCUMULATE) */
	ncc_view_t red_out, red_init; /* the reduce's output and init views */
} lf_t;

/* The view of fusion operand `param` seen at the output dims: k-th operand
 * dim goes to output dim map[k] (identity when map is NULL), others
 * broadcast with stride 0; a rank-0 operand broadcasts everywhere. */
static ncc_status_t input_view(lf_t *f, const ncc_inst_t *param, const ncc_ilist_t *map,
			       ncc_view_t *out)
{
	ncc_view_t v;
	ncc_status_t st = ncc_lower_operand_view(f->ctx, f->inst, (int32_t)param->parameter_number,
						 &v);
	if (st)
		return st;
	ncc_view_t w = v;
	w.rank = f->oshape->rank;
	for (int32_t k = 0; k < w.rank; k++) {
		w.dims[k] = f->oshape->dims[k];
		w.strides[k] = 0;
	}
	if (map) {
		for (int32_t k = 0; k < map->n && k < v.rank; k++)
			w.strides[map->v[k]] = v.strides[k];
	} else if (v.rank == w.rank) {
		for (int32_t k = 0; k < w.rank; k++)
			w.strides[k] = v.strides[k];
	} else if (v.rank != 0) {
		return ncc_lower_fail(f->ctx, f->inst, NCC_ERR_UNSUPPORTED,
				      "unsupported fusion: operand of rank %d used at rank %d",
				      v.rank, w.rank);
	}
	*out = w;
	return NCC_OK;
}

/* Input register for fused value x (a parameter, or a broadcast of one); the
 * same source always gets the same input. */
static ncc_status_t get_input(lf_t *f, const ncc_inst_t *x, int32_t *out_reg)
{
	for (int32_t i = 0; i < f->nin; i++)
		if (f->in[i].src == x) {
			*out_reg = i;
			return NCC_OK;
		}
	if (f->nin >= ISA_FUSED_MAX_INPUTS)
		return ncc_lower_fail(f->ctx, f->inst, NCC_ERR_UNSUPPORTED,
				      "unsupported fusion: more than %d inputs", ISA_FUSED_MAX_INPUTS);
	const ncc_inst_t *param = x->op == NCC_OP_BROADCAST ? x->operands[0] : x;
	ncc_status_t st = input_view(f, param, x->op == NCC_OP_BROADCAST ? &x->dimensions : NULL,
				     &f->in[f->nin].view);
	if (st)
		return st;
	f->in[f->nin].src = x;
	*out_reg = f->nin++;
	return NCC_OK;
}

static bool is_scalar_const(const ncc_inst_t *x)
{
	return x->op == NCC_OP_CONSTANT && x->shape.rank == 0 && x->literal.present &&
	       !x->literal.elided && x->literal.data;
}

/* The program in SSA form first (one virtual value per fused instruction):
 * vreg = aux_i - 1. Inputs are virtual values 0..nin-1 as well. */
typedef struct vstep {
	uint32_t op;
	int32_t dst;          /* virtual value */
	int32_t src[3];
	int nsrc;
	isa_dtype_t dtype;
	uint64_t imm;
	int32_t iota_dim;       /* IOTA: the HLO dim */
	const ncc_inst_t *from; /* the fused instruction it computes */
} vstep_t;

static ncc_status_t const_imm(lf_t *f, const ncc_inst_t *c, isa_dtype_t dt, uint64_t *out)
{
	if (isa_dtype_is_float(dt)) {
		double d = ncc_literal_get_f64(&c->literal, 0);
		memcpy(out, &d, 8);
	} else {
		int64_t v = ncc_literal_get_i64(&c->literal, 0);
		*out = dt == ISA_DT_PRED ? (uint64_t)(v != 0) : (uint64_t)v;
	}
	(void)f;
	return NCC_OK;
}

/* Folds the views' common dims (drop size-1, merge dims contiguous in all of
 * them) like the simulator's iterator; returns the folded rank, -1 if empty. */
static int fold_views(int n, const ncc_view_t *v, uint64_t *shape, int64_t (*stride)[NCC_MAX_RANK])
{
	int r = 0;
	for (int32_t k = 0; k < v[0].rank; k++) {
		int64_t sz = v[0].dims[k];
		if (sz == 0)
			return -1;
		if (sz == 1)
			continue;
		bool merge = r > 0;
		for (int i = 0; i < n && merge; i++)
			merge = stride[i][r - 1] == v[i].strides[k] * sz;
		int d = merge ? r - 1 : r++;
		if (merge)
			shape[d] *= (uint64_t)sz;
		else
			shape[d] = (uint64_t)sz;
		for (int i = 0; i < n; i++)
			stride[i][d] = v[i].strides[k];
	}
	return r;
}

static isa_ap_t make_ap(const ncc_view_t *v, uint64_t off, int rank, const uint64_t *shape,
			const int64_t *stride)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = v->region;
	ap.dtype = (uint8_t)v->dtype;
	ap.rank = (uint8_t)rank;
	ap.offset = off;
	for (int k = 0; k < rank; k++) {
		ap.shape[k] = shape[k];
		ap.stride[k] = stride[k];
	}
	return ap;
}

isa_fused_op_t ncc_lower_fused_step(uint32_t op, uint32_t dst, isa_dtype_t dt, uint32_t a, uint32_t b,
				    uint32_t c, double imm)
{
	isa_fused_op_t o;
	memset(&o, 0, sizeof(o));
	o.op = (uint16_t)op;
	o.dst = (uint8_t)dst;
	o.dtype = (uint8_t)dt;
	o.src[0] = (uint8_t)a;
	o.src[1] = (uint8_t)b;
	o.src[2] = (uint8_t)c;
	if (op == ISA_FUSED_CONST)
		memcpy(&o.imm, &imm, sizeof(imm));
	return o;
}

ncc_status_t ncc_lower_fused_insn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const isa_ap_t *aps,
				  int32_t nin, const isa_fused_desc_t *h, const isa_fused_op_t *code,
				  uint32_t first_dbg, bool accumulate)
{
	size_t len = isa_fused_desc_size((uint32_t)nin, h->n_code);
	uint8_t *buf = calloc(1, len);
	if (!buf)
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	uint8_t *p = buf;
	memcpy(p, h, sizeof(*h));
	p += sizeof(*h);
	int ndir = nin < ISA_FUSED_DIRECT ? nin : ISA_FUSED_DIRECT;
	for (int i = ndir; i < nin; i++, p += sizeof(isa_ap_t))
		memcpy(p, &aps[1 + i], sizeof(isa_ap_t));
	memcpy(p, code, sizeof(isa_fused_op_t) * (size_t)h->n_code);
	uint64_t doff;
	ncc_status_t st = ncc_lower_add_const(ctx, buf, len, &doff);
	isa_insn_t insn = isa_insn_init(ISA_OP_FUSED, 0);
	insn.param = ISA_FUSED_STEPS_DEBUG(first_dbg);
	if (accumulate)
		insn.flags = ISA_F_ACCUMULATE;
	insn.n_ap = (uint8_t)(2 + ndir);
	insn.ap[0] = aps[0];
	uint64_t dl[1] = { len };
	insn.ap[1] = isa_ap_contig(ISA_REGION_CONST, doff, ISA_DT_U8, 1, dl);
	for (int i = 0; i < ndir; i++)
		insn.ap[2 + i] = aps[1 + i];
	/* the compiler checks what it emits with the simulator's own rules */
	ns_status_t vs = st ? NULL : isa_insn_validate(&insn, ISA_REGION_NONE, 1);
	if (!st && !vs)
		vs = isa_fused_desc_validate(&insn, buf, len, ISA_REGION_NONE);
	if (vs) {
		st = ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: invalid fused instruction: %s",
				    ns_status_message(vs));
		ns_status_free(vs);
	}
	free(buf);
	return st ? st : ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &insn, NULL);
}

/* Emits one FUSED instruction per slice of the folded outer dims (one when
 * the folded rank fits ISA_MAX_RANK). */
static ncc_status_t emit_all(lf_t *f, const ncc_view_t *out, uint8_t out_reg)
{
	int n = 1 + f->nin;
	ncc_view_t v[LF_MAX_VIEWS];
	v[0] = *out;
	for (int32_t i = 0; i < f->nin; i++)
		v[1 + i] = f->in[i].view;
	/* an index view per iota dim d (stride 1 along d): folding then never
	 * merges d with another dim, and its strides say where d went */
	int iota_view[NCC_MAX_RANK];
	int nv = n;
	for (int32_t d = 0; d < NCC_MAX_RANK; d++) {
		iota_view[d] = -1;
		for (int32_t s = 0; s < f->ncode && iota_view[d] < 0; s++)
			if (f->iota_dim[s] == d) {
				ncc_view_t w = *out;
				for (int32_t k = 0; k < w.rank; k++)
					w.strides[k] = k == d;
				iota_view[d] = nv;
				v[nv++] = w;
			}
	}
	uint64_t shape[NCC_MAX_RANK];
	int64_t stride[LF_MAX_VIEWS][NCC_MAX_RANK];
	int r = fold_views(nv, v, shape, stride);
	int outer = r > ISA_MAX_RANK ? r - ISA_MAX_RANK : 0;
	if (f->red && !f->red_acc && (r < 0 || outer > 0)) {
		/* an empty reduction gives the init value, and outer slices combine
		 * into the same outputs one instruction after the other: start
		 * from the init value in memory */
		ncc_view_t b = ncc_view_bcast_scalar(&f->red_init, f->red_out.rank, f->red_out.dims);
		ncc_status_t cst = ncc_lower_copy(f->ctx, f->inst, &f->red_out, &b);
		if (cst)
			return cst;
		f->red_acc = true;
	}
	if (r < 0)
		return NCC_OK; /* no elements */
	/* reduced dims: where the output does not move (its stride is 0) */
	uint32_t red_axes = 0;
	for (int k = outer; k < r && f->red; k++)
		if (stride[0][k] == 0)
			red_axes |= 1u << (k - outer);
	uint64_t nslices = 1;
	for (int k = 0; k < outer; k++)
		nslices *= shape[k];
	/* one debug entry per step, so a NaN the simulator finds names the fused
	 * instruction that produced it (ISA_FUSED_STEPS_DEBUG) */
	uint32_t first_dbg;
	ncc_status_t st = ncc_lower_debug_entries(f->ctx, f->from, f->ncode, &first_dbg);
	if (st)
		return st;
	for (uint64_t s = 0; s < nslices && !st; s++) {
		/* byte offset of this slice in every view */
		uint64_t off[LF_MAX_VIEWS];
		uint64_t rem = s;
		int64_t ibase[LF_MAX_VIEWS] = { 0 }; /* index views: the slice's index */
		for (int i = 0; i < n; i++)
			off[i] = v[i].offset;
		for (int k = outer - 1; k >= 0; k--) {
			uint64_t ik = rem % shape[k];
			rem /= shape[k];
			for (int i = 0; i < n; i++)
				off[i] += (uint64_t)((int64_t)ik * stride[i][k] *
						     (int64_t)isa_dtype_size(v[i].dtype));
			for (int i = n; i < nv; i++)
				ibase[i] += (int64_t)ik * stride[i][k];
		}
		isa_ap_t aps[LF_MAX_VIEWS];
		for (int i = 0; i < n; i++)
			aps[i] = make_ap(&v[i], off[i], r - outer, shape + outer, stride[i] + outer);
		isa_fused_desc_t h;
		memset(&h, 0, sizeof(h));
		h.magic = ISA_FUSED_MAGIC;
		h.n_inputs = (uint16_t)f->nin;
		h.n_code = (uint16_t)f->ncode;
		h.n_regs = (uint8_t)f->nregs;
		h.out_reg = out_reg;
		if (f->red) {
			h.reduce = ISA_FUSED_REDUCE((uint32_t)f->red_comb);
			h.reduce_axes = red_axes;
		}
		/* IOTA steps: the folded dim of this slice, or a constant when
		 * the dim is an outer slice's (or of size 1) */
		for (int32_t q = 0; q < f->ncode; q++) {
			if (f->iota_dim[q] < 0)
				continue;
			isa_fused_op_t *o = &f->code[q];
			int vi = iota_view[f->iota_dim[q]];
			int fd = -1;
			for (int k = 0; k < r; k++)
				if (stride[vi][k])
					fd = k;
			if (fd >= outer) {
				o->op = ISA_FUSED_IOTA;
				o->src[0] = (uint8_t)(fd - outer);
				o->imm = (uint64_t)ibase[vi];
			} else {
				o->op = ISA_FUSED_CONST;
				o->src[0] = 0;
				if (isa_dtype_is_float(o->dtype)) {
					double d = (double)ibase[vi];
					memcpy(&o->imm, &d, 8);
				} else {
					o->imm = (uint64_t)ibase[vi];
				}
			}
		}
		st = ncc_lower_fused_insn(f->ctx, f->inst, aps, f->nin, &h, f->code, first_dbg,
					  f->red_acc);
	}
	return st;
}

ncc_status_t ncc_lower_fusion(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	const ncc_comp_t *fc = inst->calls;
	if (!fc || !fc->root || !ncc_shape_is_array(&fc->root->shape))
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				      "unsupported fusion: no computation or a tuple result");
	lf_t *f = calloc(1, sizeof(*f));
	if (!f)
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	f->ctx = ctx;
	f->inst = inst;
	f->oshape = &inst->shape;
	ncc_status_t st = NCC_OK;
	const ncc_inst_t *expr = fc->root; /* what the program computes */
	if (fc->root->op == NCC_OP_REDUCE) {
		/* kInput: the program computes the reduce's operand, element by
		 * element, and FUSED's reducing form combines it into the output */
		f->red = fc->root;
		f->red_comb = f->red->noperands == 2 ? ncc_lower_combiner_of(f->red->to_apply) : -1;
		if (f->red_comb < 0 || !ncc_shape_is_array(&f->red->operands[0]->shape) ||
		    f->red->operands[1]->op != NCC_OP_PARAMETER) {
			free(f);
			return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					      "unsupported fusion: a reduce root that is not one "
					      "array with a parameter init and add, multiply, maximum, "
					      "minimum, and, or");
		}
		expr = f->red->operands[0];
		f->oshape = &expr->shape;
		for (int32_t i = 0; i < f->red->dimensions.n; i++)
			f->red_mask |= 1u << f->red->dimensions.v[i];
	}
	int32_t nv = fc->ninsts;
	vstep_t *vs = calloc((size_t)nv + 1, sizeof(*vs));
	int32_t *val = calloc((size_t)nv + 1, sizeof(int32_t)); /* fused inst -> value, -1 none */
	int32_t *last = calloc((size_t)nv + ISA_FUSED_MAX_INPUTS + 2, sizeof(int32_t));
	int32_t nvs = 0;
	if (!vs || !val || !last) {
		st = ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int32_t i = 0; i < nv; i++)
		fc->insts[i]->aux_i = i;

	/* pass 1: inputs (they must take registers 0..nin-1) */
	for (int32_t i = 0; i < nv && !st; i++) {
		const ncc_inst_t *x = fc->insts[i];
		val[i] = -1;
		if (f->red && x == f->red->operands[1])
			continue; /* the init: copied into the output below */
		if (x->op == NCC_OP_BROADCAST && x->noperands == 1 &&
		    x->operands[0]->op == NCC_OP_PARAMETER) {
			st = get_input(f, x, &val[i]);
		} else if (x->op == NCC_OP_PARAMETER) {
			/* used directly by an op (or as the root): at output dims, or
			 * a scalar broadcast everywhere */
			bool direct = x == fc->root;
			for (int32_t j = i + 1; j < nv && !direct; j++)
				for (int32_t k = 0; k < fc->insts[j]->noperands; k++)
					direct |= fc->insts[j]->operands[k] == x &&
						  fc->insts[j]->op != NCC_OP_BROADCAST;
			if (direct)
				st = get_input(f, x, &val[i]);
		}
	}
	if (st)
		goto out;
	int32_t nvals = f->nin;

	/* pass 2: the steps, on virtual values */
	for (int32_t i = 0; i < nv && !st; i++) {
		const ncc_inst_t *x = fc->insts[i];
		if (val[i] >= 0 || x->op == NCC_OP_PARAMETER || x == f->red)
			continue;
		isa_dtype_t dt;
		if (!ncc_shape_is_array(&x->shape) || ncc_lower_dtype(x->shape.etype, &dt)) {
			st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					    "unsupported fusion: '%s' has type %s", x->name,
					    ncc_etype_name(x->shape.etype));
			break;
		}
		vstep_t *s = &vs[nvs];
		s->dtype = dt;
		s->from = x;
		s->iota_dim = -1;
		const ncc_inst_t *cst = NULL;
		if (is_scalar_const(x))
			cst = x;
		else if (x->op == NCC_OP_BROADCAST && x->noperands == 1 &&
			 is_scalar_const(x->operands[0]))
			cst = x->operands[0];
		if (cst) {
			s->op = ISA_FUSED_CONST;
			const_imm(f, cst, dt, &s->imm);
		} else if (x->op == NCC_OP_IOTA) {
			if (dt == ISA_DT_PRED || x->iota_dimension < 0 ||
			    x->iota_dimension >= x->shape.rank) {
				st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
						    "unsupported fusion: iota '%s'", x->name);
				break;
			}
			s->op = ISA_FUSED_IOTA; /* emit_all places its dim */
			s->iota_dim = (int32_t)x->iota_dimension;
		} else if (x->op == NCC_OP_CONSTANT && x->noperands == 0) {
			st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					    "unsupported fusion: non-scalar constant '%s'", x->name);
			break;
		} else {
			int op = ncc_lower_fused_op(x);
			if (op < 0 || x->noperands > 3) {
				st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
						    "unsupported fusion: '%s' (%s) cannot be fused",
						    x->name, ncc_opcode_name(x->op));
				break;
			}
			s->op = (uint32_t)op;
			s->nsrc = x->noperands;
			for (int32_t k = 0; k < x->noperands; k++) {
				int32_t oi = (int32_t)x->operands[k]->aux_i;
				if (val[oi] < 0) {
					st = ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
							    "internal: fusion operand '%s' has no value",
							    x->operands[k]->name);
					break;
				}
				s->src[k] = val[oi];
			}
			if (st)
				break;
		}
		s->dst = nvals;
		val[i] = nvals++;
		nvs++;
	}
	if (st)
		goto out;
	int32_t root_val = val[expr->aux_i];
	if (root_val < f->nin) {
		/* the root is an input (a parameter or a broadcast): copy it */
		isa_dtype_t dt;
		ncc_lower_dtype(expr->shape.etype, &dt);
		vs[nvs] = (vstep_t){ .op = ISA_FUSED_CONVERT, .dst = nvals, .src = { root_val },
				     .nsrc = 1, .dtype = dt, .iota_dim = -1, .from = expr };
		root_val = nvals++;
		nvs++;
	}
	if (nvs > ISA_FUSED_MAX_CODE) {
		st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				    "unsupported fusion: %d steps (at most %d)", nvs, ISA_FUSED_MAX_CODE);
		goto out;
	}

	/* register allocation: a value's register is free after its last use
	 * (a step may write a register it reads: the simulator's loops are
	 * element by element) */
	for (int32_t v = 0; v < nvals; v++)
		last[v] = -1;
	for (int32_t s = 0; s < nvs; s++)
		for (int k = 0; k < vs[s].nsrc; k++)
			last[vs[s].src[k]] = s;
	last[root_val] = nvs; /* live to the end */
	int32_t reg_of[ISA_FUSED_MAX_CODE + ISA_FUSED_MAX_INPUTS + 2];
	int32_t owner[ISA_FUSED_MAX_REGS];
	for (int32_t r = 0; r < ISA_FUSED_MAX_REGS; r++)
		owner[r] = -1;
	for (int32_t v = 0; v < f->nin; v++) {
		reg_of[v] = v;
		owner[v] = v;
	}
	f->nregs = f->nin;
	for (int32_t s = 0; s < nvs; s++) {
		isa_fused_op_t *o = &f->code[s];
		memset(o, 0, sizeof(*o));
		o->op = (uint16_t)vs[s].op;
		o->dtype = (uint8_t)vs[s].dtype;
		f->from[s] = vs[s].from;
		f->iota_dim[s] = vs[s].iota_dim;
		o->imm = vs[s].imm;
		for (int k = 0; k < vs[s].nsrc; k++)
			o->src[k] = (uint8_t)reg_of[vs[s].src[k]];
		for (int32_t r = 0; r < ISA_FUSED_MAX_REGS; r++)
			if (owner[r] >= 0 && last[owner[r]] <= s)
				owner[r] = -1;
		int32_t r = 0;
		while (r < ISA_FUSED_MAX_REGS && owner[r] >= 0)
			r++;
		if (r == ISA_FUSED_MAX_REGS) {
			st = ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					    "unsupported fusion: needs more than %d registers",
					    ISA_FUSED_MAX_REGS);
			goto out;
		}
		owner[r] = vs[s].dst;
		reg_of[vs[s].dst] = r;
		o->dst = (uint8_t)r;
		if (r + 1 > f->nregs)
			f->nregs = r + 1;
	}
	f->ncode = nvs;

	ncc_view_t outv;
	if ((st = ncc_lower_output_view(ctx, inst, 0, &outv)))
		goto out;
	if (f->red) {
		/* the output starts as the init value unless that is the
		 * combiner's identity (FUSED starts from it without ACCUMULATE),
		 * then every element of the expression is combined into it: the
		 * output seen at the expression's dims, stride 0 along the
		 * reduced ones */
		int32_t ip = (int32_t)f->red->operands[1]->parameter_number;
		if ((st = ncc_lower_operand_view(ctx, inst, ip, &f->red_init)))
			goto out;
		f->red_out = outv;
		if ((st = ncc_lower_reduce_start(ctx, inst, inst->operands[ip], f->red_comb,
						 &f->red_init, &outv, &f->red_acc)))
			goto out;
		ncc_view_t it = outv;
		it.rank = f->oshape->rank;
		for (int32_t d = 0, j = 0; d < it.rank; d++) {
			if (f->red_mask >> d & 1) {
				it.dims[d] = f->oshape->dims[d];
				it.strides[d] = 0;
			} else {
				it.dims[d] = outv.dims[j];
				it.strides[d] = outv.strides[j++];
			}
		}
		outv = it;
	}
	st = emit_all(f, &outv, (uint8_t)reg_of[root_val]);
out:
	for (int32_t i = 0; i < nv; i++)
		fc->insts[i]->aux_i = 0;
	free(vs);
	free(val);
	free(last);
	free(f);
	return st;
}
