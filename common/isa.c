/* The one definition of a valid ISA instruction, plus small constructors (isa.h). */
#include "neuronsim/isa.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "neuronsim/bytes.h"

const char *isa_dtype_name(uint32_t dt)
{
	switch (dt) {
	case ISA_DT_F32: return "f32";
	case ISA_DT_BF16: return "bf16";
	case ISA_DT_F16: return "f16";
	case ISA_DT_S32: return "s32";
	case ISA_DT_S64: return "s64";
	case ISA_DT_U32: return "u32";
	case ISA_DT_U64: return "u64";
	case ISA_DT_U8: return "u8";
	case ISA_DT_PRED: return "pred";
	case ISA_DT_S8: return "s8";
	case ISA_DT_S16: return "s16";
	case ISA_DT_U16: return "u16";
	default: return "invalid";
	}
}

const char *isa_opcode_name(uint32_t op)
{
	static const char *const names[ISA_OP_COUNT] = {
		"nop", "matmul", "alu", "activate", "reduce", "copy",
		"iota", "gather", "scatter", "rng", "jump", "fused", "conv", "selscat",
	};
	return op < ISA_OP_COUNT ? names[op] : "invalid";
}

const char *isa_engine_name(uint32_t e)
{
	static const char *const names[ISA_ENGINE_COUNT] = {
		"tensor", "vector", "scalar", "gpsimd", "dma",
	};
	return e < ISA_ENGINE_COUNT ? names[e] : "invalid";
}

int isa_dtype_is_int(uint32_t dt)
{
	switch (dt) {
	case ISA_DT_S32: case ISA_DT_S64: case ISA_DT_U32: case ISA_DT_U64:
	case ISA_DT_U8: case ISA_DT_S8: case ISA_DT_S16: case ISA_DT_U16:
		return 1;
	default:
		return 0;
	}
}

int isa_dtype_is_unsigned(uint32_t dt)
{
	return dt == ISA_DT_U32 || dt == ISA_DT_U64 || dt == ISA_DT_U8 ||
	       dt == ISA_DT_U16 || dt == ISA_DT_PRED;
}

uint64_t isa_ap_num_elements(const isa_ap_t *ap)
{
	uint64_t n = 1;
	for (uint32_t k = 0; k < ap->rank && k < ISA_MAX_RANK; k++) {
		if (ap->shape[k] == 0)
			return 0;
		if (__builtin_mul_overflow(n, ap->shape[k], &n))
			return UINT64_MAX;
	}
	return n;
}

isa_ap_t isa_ap_contig(uint32_t region, uint64_t offset, isa_dtype_t dtype,
		       uint32_t rank, const uint64_t *shape)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = region;
	ap.offset = offset;
	ap.dtype = (uint8_t)dtype;
	ap.rank = (uint8_t)(rank > ISA_MAX_RANK ? ISA_MAX_RANK : rank);
	int64_t stride = 1;
	for (int k = (int)ap.rank - 1; k >= 0; k--) {
		ap.shape[k] = shape[k];
		ap.stride[k] = stride;
		stride *= (int64_t)shape[k];
	}
	return ap;
}

isa_insn_t isa_insn_init(isa_opcode_t opcode, uint32_t sub)
{
	isa_insn_t insn;
	memset(&insn, 0, sizeof(insn));
	insn.opcode = (uint16_t)opcode;
	insn.sub = (uint16_t)sub;
	insn.wait_sem = ISA_SEM_NONE;
	insn.signal_sem = ISA_SEM_NONE;
	insn.debug_id = ISA_DEBUG_NONE;
	return insn;
}

/* ---- validation ---- */

typedef struct vctx {
	const isa_insn_t *insn;
	char *err;
	size_t err_len;
} vctx_t;

__attribute__((format(printf, 2, 3)))
static int fail(const vctx_t *v, const char *fmt, ...)
{
	if (v->err && v->err_len) {
		int n = snprintf(v->err, v->err_len, "%s: ",
				 isa_opcode_name(v->insn->opcode));
		if (n < 0)
			n = 0;
		if ((size_t)n < v->err_len) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(v->err + n, v->err_len - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

static int same_shape(const isa_ap_t *a, const isa_ap_t *b)
{
	if (a->rank != b->rank)
		return 0;
	for (uint32_t k = 0; k < a->rank; k++)
		if (a->shape[k] != b->shape[k])
			return 0;
	return 1;
}

static int check_ap_fields(const vctx_t *v, const isa_ap_t *ap, uint32_t i,
			   uint32_t n_regions, int allow_none);

/* Structural checks of one operand; allow_none: region may be ISA_REGION_NONE. */
static int check_ap(const vctx_t *v, uint32_t i, uint32_t n_regions, int allow_none)
{
	return check_ap_fields(v, &v->insn->ap[i], i, n_regions, allow_none);
}

/* i numbers the operand in messages (FUSED extra inputs continue after ap3). */
static int check_ap_fields(const vctx_t *v, const isa_ap_t *ap, uint32_t i,
			   uint32_t n_regions, int allow_none)
{
	if (ap->region == ISA_REGION_NONE && allow_none) {
		isa_ap_t z;
		memset(&z, 0, sizeof(z));
		z.region = ISA_REGION_NONE;
		if (memcmp(&z, ap, sizeof(z)))
			return fail(v, "ap%u: region none but other fields non-zero", i);
		return 0;
	}
	if (ap->region >= n_regions)
		return fail(v, "ap%u: region %u out of range (program has %u regions)",
			    i, ap->region, n_regions);
	if (ap->dtype == ISA_DT_INVALID || ap->dtype >= ISA_DT_COUNT)
		return fail(v, "ap%u: unknown dtype %u", i, ap->dtype);
	if (ap->rank > ISA_MAX_RANK)
		return fail(v, "ap%u: rank %u > %u", i, ap->rank, ISA_MAX_RANK);
	if (ap->pad)
		return fail(v, "ap%u: pad is not zero", i);
	for (uint32_t k = ap->rank; k < ISA_MAX_RANK; k++)
		if (ap->shape[k] || ap->stride[k])
			return fail(v, "ap%u: shape/stride[%u] beyond rank %u not zero",
				    i, k, ap->rank);
	if (isa_ap_num_elements(ap) > ISA_MAX_ELEMENTS)
		return fail(v, "ap%u: more than 2^40 elements", i);
	if (ap->offset % isa_dtype_size(ap->dtype))
		return fail(v, "ap%u: offset %llu not a multiple of the %s size", i,
			    (unsigned long long)ap->offset, isa_dtype_name(ap->dtype));
	/* Kernels form offset + sum(idx[k] * stride[k] * esize) and stride * esize *
	 * shape in int64, size-1 dims and empty operands included (whose strides
	 * the bounds check never sees). Bounding the sum of every term's magnitude
	 * here makes all of those products and partial sums exact. */
	__int128 es = (__int128)isa_dtype_size(ap->dtype), span = (__int128)ap->offset + es;
	for (uint32_t k = 0; k < ap->rank; k++) {
		__int128 st = ap->stride[k] < 0 ? -(__int128)ap->stride[k] : (__int128)ap->stride[k];
		span += st * es * (__int128)(ap->shape[k] ? ap->shape[k] : 1);
		if (span > (__int128)INT64_MAX)
			return fail(v, "ap%u: offset + |stride| x %s size x shape over the dims "
				    "exceeds 2^63 bytes (dim %u: stride %lld, shape %llu)", i,
				    isa_dtype_name(ap->dtype), k, (long long)ap->stride[k],
				    (unsigned long long)ap->shape[k]);
	}
	return 0;
}

static int dt_num(uint32_t dt) { return dt != ISA_DT_PRED; }
static int dt_intlike(uint32_t dt) { return isa_dtype_is_int(dt) || dt == ISA_DT_PRED; }

/* Dtype rules of one ALU operation (shared by ALU instructions and FUSED
 * program steps): od = result dtype, sd = operand dtypes; what names the place
 * in messages ("ap" for instruction operands, "step N src" for programs). */
static int alu_types(const vctx_t *v, uint32_t op, uint32_t od, const uint32_t *sd,
		     const char *what)
{
	int arity = isa_alu_arity(op);
	uint32_t ad = sd[0];
	if (op == ISA_ALU_IS_FINITE) {
		if (od != ISA_DT_PRED || !isa_dtype_is_float(ad))
			return fail(v, "%sis_finite needs float ap1 and pred ap0", what);
		return 0;
	}
	if (op >= ISA_ALU_CMP_EQ && op <= ISA_ALU_CMP_GE) {
		if (od != ISA_DT_PRED)
			return fail(v, "%scompare writes pred, ap0 is %s", what, isa_dtype_name(od));
		if (sd[1] != ad)
			return fail(v, "%scompare operands differ in dtype (%s, %s)", what,
				    isa_dtype_name(ad), isa_dtype_name(sd[1]));
		return 0;
	}
	if (op == ISA_ALU_SELECT) {
		if (ad != ISA_DT_PRED)
			return fail(v, "%sselect predicate ap1 is %s, not pred", what,
				    isa_dtype_name(ad));
		if (sd[1] != od || sd[2] != od)
			return fail(v, "%sselect ap2/ap3 dtype must equal ap0 (%s)", what,
				    isa_dtype_name(od));
		return 0;
	}
	for (int i = 1; i <= arity; i++)
		if (sd[i - 1] != od)
			return fail(v, "%sap%d dtype %s differs from ap0 dtype %s", what, i,
				    isa_dtype_name(sd[i - 1]), isa_dtype_name(od));
	int ok;
	switch (op) {
	case ISA_ALU_NEG: case ISA_ALU_ABS: case ISA_ALU_SIGN: case ISA_ALU_SQUARE:
	case ISA_ALU_ADD: case ISA_ALU_SUB: case ISA_ALU_MUL: case ISA_ALU_DIV:
	case ISA_ALU_REM: case ISA_ALU_MAX: case ISA_ALU_MIN: case ISA_ALU_CLAMP:
		ok = dt_num(od);
		break;
	case ISA_ALU_NOT: case ISA_ALU_AND: case ISA_ALU_OR: case ISA_ALU_XOR:
		ok = dt_intlike(od);
		break;
	case ISA_ALU_POPCNT: case ISA_ALU_CLZ: case ISA_ALU_SHL:
	case ISA_ALU_SHR_LOGICAL: case ISA_ALU_SHR_ARITH:
		ok = isa_dtype_is_int(od);
		break;
	default: /* transcendental and rounding functions, pow, atan2, fma, gelu_grad */
		ok = isa_dtype_is_float(od);
		break;
	}
	if (!ok)
		return fail(v, "%salu sub-op %u does not take dtype %s", what, op,
			    isa_dtype_name(od));
	return 0;
}

static int check_alu(const vctx_t *v)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *o = &in->ap[0], *a = &in->ap[1];
	uint32_t op = in->sub;
	int arity = isa_alu_arity(op);
	for (int i = 2; i <= arity; i++)
		if (!same_shape(o, &in->ap[i]))
			return fail(v, "ap%d shape differs from ap0 (broadcast with stride 0)", i);
	if (!same_shape(o, a))
		return fail(v, "ap1 shape differs from ap0 (broadcast with stride 0)");
	uint32_t sd[3] = { a->dtype, in->ap[2].dtype, in->ap[3].dtype };
	return alu_types(v, op, o->dtype, sd, "");
}

/* Static part of FUSED: the descriptor operand's form and the direct inputs'
 * shapes. The descriptor's content is checked where it is read
 * (isa_fused_desc_validate), because it lives in memory. */
static int check_fused(const vctx_t *v)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *d = &in->ap[1];
	if (d->region != ISA_REGION_CONST || d->dtype != ISA_DT_U8 || d->rank != 1 ||
	    d->stride[0] != 1)
		return fail(v, "descriptor ap1 must be contiguous u8[n] in the constants region");
	size_t min = isa_fused_desc_size(in->n_ap - 2u, 1);
	size_t max = isa_fused_desc_size(ISA_FUSED_MAX_INPUTS, ISA_FUSED_MAX_CODE);
	if (d->shape[0] < min || d->shape[0] > max)
		return fail(v, "descriptor ap1 has %llu bytes, expected %zu..%zu",
			    (unsigned long long)d->shape[0], min, max);
	for (uint32_t i = 2; i < in->n_ap; i++)
		if (!same_shape(&in->ap[0], &in->ap[i]))
			return fail(v, "ap%u shape differs from ap0 (broadcast with stride 0)", i);
	return 0;
}

static int check_reduce(const vctx_t *v)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *o = &in->ap[0], *a = &in->ap[1];
	if (in->sub >= ISA_RED_END || in->sub == ISA_RED_ASSIGN)
		return fail(v, "unknown reduce sub-op %u", in->sub);
	if (o->rank != a->rank)
		return fail(v, "ap0 rank %u != ap1 rank %u (reduced dims keep size 1)",
			    o->rank, a->rank);
	if (in->param >> a->rank)
		return fail(v, "axes mask 0x%x names dims >= rank %u", in->param, a->rank);
	for (uint32_t k = 0; k < a->rank; k++) {
		uint64_t want = (in->param >> k & 1) ? 1 : a->shape[k];
		if (o->shape[k] != want)
			return fail(v, "ap0 shape[%u] = %llu, expected %llu", k,
				    (unsigned long long)o->shape[k], (unsigned long long)want);
	}
	if (o->dtype != a->dtype)
		return fail(v, "ap0 dtype %s != ap1 dtype %s", isa_dtype_name(o->dtype),
			    isa_dtype_name(a->dtype));
	if ((in->sub == ISA_RED_AND || in->sub == ISA_RED_OR) ? !dt_intlike(o->dtype)
							      : !dt_num(o->dtype))
		return fail(v, "reduce sub-op %u does not take dtype %s", in->sub,
			    isa_dtype_name(o->dtype));
	return 0;
}

/* -1 with "WHAT of N multiply-adds, more than the simulator's bound..." when work
 * (output elements times the products per element) is over ISA_MAX_MATMUL_WORK,
 * else 0. Not fail()'s "what: " prefix: the message reads as one phrase. */
static int check_work(const vctx_t *v, const char *what, unsigned __int128 work)
{
	if (work <= ISA_MAX_MATMUL_WORK)
		return 0;
	if (v->err && v->err_len)
		snprintf(v->err, v->err_len, "%s of %.3g multiply-adds, more than the simulator's "
			 "bound of 2^44 (%.3g) per instruction: split it", what, (double)work,
			 (double)ISA_MAX_MATMUL_WORK);
	return -1;
}

static int check_matmul(const vctx_t *v)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	if (c->rank != a->rank || c->rank != b->rank || (c->rank != 2 && c->rank != 3))
		return fail(v, "operands must all be rank 2 ([M,K]x[K,N]) or 3 ([B,M,K]x[B,K,N])");
	uint32_t o = c->rank == 3;
	if (o && (a->shape[0] != c->shape[0] || b->shape[0] != c->shape[0]))
		return fail(v, "batch sizes differ (broadcast with stride 0)");
	if (a->shape[o] != c->shape[o] || b->shape[o + 1] != c->shape[o + 1] ||
	    a->shape[o + 1] != b->shape[o])
		return fail(v, "shapes do not agree: [%llu,%llu]x[%llu,%llu]->[%llu,%llu]",
			    (unsigned long long)a->shape[o], (unsigned long long)a->shape[o + 1],
			    (unsigned long long)b->shape[o], (unsigned long long)b->shape[o + 1],
			    (unsigned long long)c->shape[o], (unsigned long long)c->shape[o + 1]);
	if (a->dtype != b->dtype)
		return fail(v, "ap1 dtype %s != ap2 dtype %s", isa_dtype_name(a->dtype),
			    isa_dtype_name(b->dtype));
	int fl = isa_dtype_is_float(a->dtype);
	if (fl ? !isa_dtype_is_float(c->dtype) : !(isa_dtype_is_int(a->dtype) &&
						    isa_dtype_is_int(c->dtype)))
		return fail(v, "dtypes %s x %s -> %s: need float inputs and output, or "
			    "integer inputs and output", isa_dtype_name(a->dtype),
			    isa_dtype_name(b->dtype), isa_dtype_name(c->dtype));
	/* Output elements (B * M * N) times K: both factors are at most
	 * ISA_MAX_ELEMENTS, so the product fits in 128 bits. */
	unsigned __int128 work = (unsigned __int128)isa_ap_num_elements(c) * a->shape[o + 1];
	return check_work(v, "matmul", work);
}

/* A window operand: field f of spatial dim s in shape[f * 2 + s], the low
 * padding in stride[s] (CONV's and SELSCAT's slots, isa.h). */
static isa_ap_t window_ap(const int64_t *f0, const int64_t *f1, const int64_t *f2,
			  const int64_t pad_lo[2])
{
	static_assert(ISA_CONV_STRIDE == 0 && ISA_CONV_RHS_DIL == 2 && ISA_CONV_LHS_DIL == 4 &&
		      ISA_SELSCAT_SIZE == 0 && ISA_SELSCAT_STRIDE == 2 && ISA_SELSCAT_DIL == 4,
		      "window fields are shape[field * 2 + dim]");
	isa_ap_t w;
	memset(&w, 0, sizeof(w));
	w.region = ISA_REGION_NONE;
	w.rank = ISA_CONV_NSPATIAL;
	for (uint32_t s = 0; s < ISA_CONV_NSPATIAL; s++) {
		w.shape[s] = (uint64_t)f0[s];
		w.shape[2 + s] = (uint64_t)f1[s];
		w.shape[4 + s] = (uint64_t)f2[s];
		w.stride[s] = pad_lo[s];
	}
	return w;
}

isa_ap_t isa_conv_window(const int64_t stride[2], const int64_t rhs_dil[2],
			 const int64_t lhs_dil[2], const int64_t pad_lo[2])
{
	return window_ap(stride, rhs_dil, lhs_dil, pad_lo);
}

isa_ap_t isa_selscat_window(const int64_t size[2], const int64_t stride[2], const int64_t dil[2],
			    const int64_t pad_lo[2])
{
	return window_ap(size, stride, dil, pad_lo);
}

/* CONV (ISA 1.4): ap0-ap2 are f32 rank 5 with agreeing dims, ap3 the window;
 * the work, every output times its window, is bounded like a MATMUL's. */
/* ap3 of CONV and SELSCAT, the window (no memory): region none, rank 2,
 * three shape fields per spatial dim (named by fields, each 1..2^32) and the
 * low padding in stride[s] (pad_min..2^32). */
static int check_window(const vctx_t *v, const char *const fields[3], int64_t pad_min)
{
	const isa_ap_t *w = &v->insn->ap[3];
	if (w->region != ISA_REGION_NONE || w->dtype || w->pad || w->offset ||
	    w->rank != ISA_CONV_NSPATIAL)
		return fail(v, "window ap3 must have region none, rank %u, no dtype and no offset",
			    ISA_CONV_NSPATIAL);
	for (uint32_t s = ISA_CONV_NSPATIAL; s < ISA_MAX_RANK; s++)
		if (w->stride[s])
			return fail(v, "window ap3 stride[%u] beyond the spatial dims not zero", s);
	for (uint32_t i = 0; i < ISA_MAX_RANK; i++)
		if (w->shape[i] < 1 || w->shape[i] > (uint64_t)ISA_CONV_MAX_WINDOW)
			return fail(v, "window ap3 %s of dim %u is %llu, expected 1..2^32",
				    fields[i / ISA_CONV_NSPATIAL], i % ISA_CONV_NSPATIAL,
				    (unsigned long long)w->shape[i]);
	for (uint32_t s = 0; s < ISA_CONV_NSPATIAL; s++)
		if (w->stride[s] < pad_min || w->stride[s] > ISA_CONV_MAX_WINDOW)
			return fail(v, "window ap3 padding of dim %u is %lld, expected %s..2^32", s,
				    (long long)w->stride[s], pad_min ? "-2^32" : "0");
	return 0;
}

static int check_conv(const vctx_t *v, uint32_t n_regions)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *o = &in->ap[0], *x = &in->ap[1], *k = &in->ap[2];
	for (uint32_t i = 0; i < 3; i++)
		if (check_ap(v, i, n_regions, 0))
			return -1;
	static const char *const fields[3] = { "stride", "rhs dilation", "lhs dilation" };
	if (check_window(v, fields, -ISA_CONV_MAX_WINDOW))
		return -1;
	if (o->rank != 5 || x->rank != 5 || k->rank != 5)
		return fail(v, "ap0, ap1, ap2 must be rank 5: [N,G,O,Y0,Y1], [N,G,C,X0,X1], "
			    "[G,O,C,K0,K1]");
	if (o->dtype != ISA_DT_F32 || x->dtype != ISA_DT_F32 || k->dtype != ISA_DT_F32)
		return fail(v, "operands must be f32 (ap0 %s, ap1 %s, ap2 %s)",
			    isa_dtype_name(o->dtype), isa_dtype_name(x->dtype),
			    isa_dtype_name(k->dtype));
	if (x->shape[0] != o->shape[0] || x->shape[1] != o->shape[1] ||
	    k->shape[0] != o->shape[1] || k->shape[1] != o->shape[2] ||
	    k->shape[2] != x->shape[2])
		return fail(v, "dims do not agree: out [%llu,%llu,%llu,..], in [%llu,%llu,%llu,..], "
			    "kernel [%llu,%llu,%llu,..]", (unsigned long long)o->shape[0],
			    (unsigned long long)o->shape[1], (unsigned long long)o->shape[2],
			    (unsigned long long)x->shape[0], (unsigned long long)x->shape[1],
			    (unsigned long long)x->shape[2], (unsigned long long)k->shape[0],
			    (unsigned long long)k->shape[1], (unsigned long long)k->shape[2]);
	/* output elements times C * K0 * K1: each at most 2^40, 128 bits hold it */
	uint64_t nk = isa_ap_num_elements(k);
	unsigned __int128 work = nk ? (unsigned __int128)isa_ap_num_elements(o) *
				      (nk / (k->shape[0] * k->shape[1])) : 0;
	return check_work(v, "conv", work);
}

/* SELSCAT (ISA 1.5): ap0 and ap1 [N,C,X0,X1], ap2 [N,C,Y0,Y1], one float dtype, a
 * float combiner, one of the four ordered compares as the select, ap3 the
 * window (isa.h, ISA_SELSCAT_*). */
static int check_selscat(const vctx_t *v, uint32_t n_regions)
{
	const isa_insn_t *in = v->insn;
	const isa_ap_t *o = &in->ap[0], *x = &in->ap[1], *src = &in->ap[2], *w = &in->ap[3];
	for (uint32_t i = 0; i < 3; i++)
		if (check_ap(v, i, n_regions, 0))
			return -1;
	if (in->sub != ISA_RED_SUM && in->sub != ISA_RED_PROD && in->sub != ISA_RED_MAX &&
	    in->sub != ISA_RED_MIN)
		return fail(v, "combiner %u: selscat takes sum, prod, max or min", in->sub);
	if (in->param != ISA_ALU_CMP_GE && in->param != ISA_ALU_CMP_GT &&
	    in->param != ISA_ALU_CMP_LE && in->param != ISA_ALU_CMP_LT)
		return fail(v, "select compare %u: selscat takes cmp_ge, cmp_gt, cmp_le or cmp_lt",
			    in->param);
	static const char *const fields[3] = { "size", "stride", "dilation" };
	if (check_window(v, fields, 0))
		return -1;
	if (o->rank != 4 || x->rank != 4 || src->rank != 4)
		return fail(v, "ap0, ap1, ap2 must be rank 4: [N,C,X0,X1], [N,C,X0,X1], [N,C,Y0,Y1]");
	if (!isa_dtype_is_float(o->dtype) || x->dtype != o->dtype || src->dtype != o->dtype)
		return fail(v, "operands must be one float dtype, f32, bf16 or f16 (ap0 %s, ap1 %s, "
			    "ap2 %s)", isa_dtype_name(o->dtype), isa_dtype_name(x->dtype),
			    isa_dtype_name(src->dtype));
	if (!same_shape(o, x) || src->shape[0] != o->shape[0] || src->shape[1] != o->shape[1])
		return fail(v, "dims do not agree: out [%llu,%llu,%llu,%llu], operand [%llu,%llu,%llu,"
			    "%llu], source [%llu,%llu,..]", (unsigned long long)o->shape[0],
			    (unsigned long long)o->shape[1], (unsigned long long)o->shape[2],
			    (unsigned long long)o->shape[3], (unsigned long long)x->shape[0],
			    (unsigned long long)x->shape[1], (unsigned long long)x->shape[2],
			    (unsigned long long)x->shape[3], (unsigned long long)src->shape[0],
			    (unsigned long long)src->shape[1]);
	/* windows times K0 * K1: each at most 2^40 and 2^64, 128 bits hold it */
	unsigned __int128 work = (unsigned __int128)isa_ap_num_elements(src) *
				 ((unsigned __int128)w->shape[ISA_SELSCAT_SIZE] *
				  w->shape[ISA_SELSCAT_SIZE + 1]);
	return check_work(v, "selscat", work);
}

static int check_gather_scatter(const vctx_t *v, int scatter)
{
	const isa_insn_t *in = v->insn;
	/* gather: ap0[M,R] <- ap1[N,R] by ap2[M]; scatter: ap0[N,R] <- ap1[M,R] by ap2[M] */
	const isa_ap_t *tab = scatter ? &in->ap[0] : &in->ap[1];
	const isa_ap_t *rows = scatter ? &in->ap[1] : &in->ap[0];
	const isa_ap_t *idx = &in->ap[2];
	if (tab->rank != 2 || rows->rank != 2 || idx->rank != 1)
		return fail(v, "operands must be rank 2, 2 and 1 (indices)");
	if (tab->shape[1] != rows->shape[1] || rows->shape[0] != idx->shape[0])
		return fail(v, "shapes do not agree (rows %llu vs %llu, indices %llu)",
			    (unsigned long long)tab->shape[1], (unsigned long long)rows->shape[1],
			    (unsigned long long)idx->shape[0]);
	if (!isa_dtype_is_int(idx->dtype))
		return fail(v, "indices ap2 must be an integer dtype, not %s",
			    isa_dtype_name(idx->dtype));
	if (in->ap[0].dtype != in->ap[1].dtype)
		return fail(v, "ap0 dtype %s != ap1 dtype %s", isa_dtype_name(in->ap[0].dtype),
			    isa_dtype_name(in->ap[1].dtype));
	if (!scatter && tab->shape[0] == 0 && isa_ap_num_elements(rows) != 0)
		return fail(v, "gather from an empty table");
	if (scatter) {
		if (in->sub >= ISA_RED_END)
			return fail(v, "unknown combiner %u", in->sub);
		uint32_t dt = in->ap[0].dtype;
		if (in->sub == ISA_RED_AND || in->sub == ISA_RED_OR ? !dt_intlike(dt)
		    : (in->sub != ISA_RED_ASSIGN && !dt_num(dt)))
			return fail(v, "combiner %u does not take dtype %s", in->sub,
				    isa_dtype_name(dt));
	}
	return 0;
}

static int expected_n_ap(const isa_insn_t *in)
{
	switch (in->opcode) {
	case ISA_OP_NOP: return 0;
	case ISA_OP_MATMUL: return 3;
	case ISA_OP_ALU: return isa_alu_arity(in->sub) ? 1 + isa_alu_arity(in->sub) : -1;
	case ISA_OP_ACTIVATE: case ISA_OP_REDUCE: case ISA_OP_COPY: return 2;
	case ISA_OP_IOTA: return 1;
	case ISA_OP_GATHER: case ISA_OP_SCATTER: case ISA_OP_RNG: return 3;
	case ISA_OP_JUMP: return in->n_ap <= 1 ? (int)in->n_ap : 1;
	case ISA_OP_FUSED: return in->n_ap >= 2 && in->n_ap <= 4 ? (int)in->n_ap : 4;
	case ISA_OP_CONV: case ISA_OP_SELSCAT: return 4;
	default: return -1;
	}
}

static int insn_check(const isa_insn_t *insn, uint32_t n_regions, uint32_t stream_len, char *err,
		      size_t err_len)
{
	vctx_t v = { insn, err, err_len };
	const isa_insn_t *in = insn;
	if (err && err_len)
		err[0] = 0;
	if (in->opcode >= ISA_OP_COUNT)
		return fail(&v, "unknown opcode %u", in->opcode);
	if (in->flags & ~ISA_F_ALL)
		return fail(&v, "unknown flags 0x%x", in->flags);
	if ((in->flags & ISA_F_ACCUMULATE) && in->opcode != ISA_OP_MATMUL &&
	    in->opcode != ISA_OP_REDUCE && in->opcode != ISA_OP_FUSED)
		return fail(&v, "accumulate flag only applies to matmul, reduce and fused");
	if ((in->flags & ISA_F_INVERT) && in->opcode != ISA_OP_JUMP)
		return fail(&v, "invert flag only applies to jump");
	if (in->wait_sem != ISA_SEM_NONE && in->wait_sem >= ISA_NUM_SEMS)
		return fail(&v, "wait_sem %u >= %u", in->wait_sem, ISA_NUM_SEMS);
	if (in->wait_sem == ISA_SEM_NONE && in->wait_value)
		return fail(&v, "wait_value %u without a wait_sem", in->wait_value);
	if (in->signal_sem != ISA_SEM_NONE && in->signal_sem >= ISA_NUM_SEMS)
		return fail(&v, "signal_sem %u >= %u", in->signal_sem, ISA_NUM_SEMS);
	if (!ns_all_zero(in->pad0, sizeof(in->pad0)) || in->reserved)
		return fail(&v, "pad0/reserved not zero");

	switch (in->opcode) {
	case ISA_OP_ALU:
		if (!isa_alu_arity(in->sub))
			return fail(&v, "unknown alu sub-op %u", in->sub);
		break;
	case ISA_OP_ACTIVATE:
		if (in->sub >= ISA_ACT_END)
			return fail(&v, "unknown activation %u", in->sub);
		break;
	case ISA_OP_REDUCE: case ISA_OP_SCATTER: case ISA_OP_SELSCAT:
		break; /* checked with the operands */
	default:
		if (in->sub)
			return fail(&v, "sub-op %u given to an opcode without sub-ops", in->sub);
	}
	if (in->opcode != ISA_OP_REDUCE && in->opcode != ISA_OP_IOTA &&
	    in->opcode != ISA_OP_JUMP && in->opcode != ISA_OP_FUSED &&
	    in->opcode != ISA_OP_SELSCAT && in->param)
		return fail(&v, "param %u given to an opcode without a parameter", in->param);
	if (in->opcode != ISA_OP_ACTIVATE && in->opcode != ISA_OP_IOTA &&
	    !ns_all_zero(in->imm, sizeof(in->imm)))
		return fail(&v, "imm given to an opcode without immediates");
	if (in->opcode == ISA_OP_IOTA && !ns_all_zero(&in->imm[1], sizeof(in->imm[1])))
		return fail(&v, "imm[1] unused by iota must be zero");

	int want = expected_n_ap(in);
	if (want < 0 || in->n_ap != (uint32_t)want)
		return fail(&v, "n_ap is %u, expected %d", in->n_ap, want);
	for (uint32_t i = in->n_ap; i < ISA_MAX_AP; i++)
		if (!ns_all_zero(&in->ap[i], sizeof(in->ap[i])))
			return fail(&v, "unused ap%u not zero", i);
	if (in->opcode == ISA_OP_CONV)
		return check_conv(&v, n_regions); /* ap3 is the window, not an operand */
	if (in->opcode == ISA_OP_SELSCAT)
		return check_selscat(&v, n_regions);
	for (uint32_t i = 0; i < in->n_ap; i++)
		if (check_ap(&v, i, n_regions, in->opcode == ISA_OP_JUMP))
			return -1;

	const isa_ap_t *ap = in->ap;
	switch (in->opcode) {
	case ISA_OP_NOP:
		return 0;
	case ISA_OP_MATMUL:
		return check_matmul(&v);
	case ISA_OP_ALU:
		return check_alu(&v);
	case ISA_OP_ACTIVATE:
		if (!same_shape(&ap[0], &ap[1]))
			return fail(&v, "ap1 shape differs from ap0");
		if (!isa_dtype_is_float(ap[0].dtype) || !isa_dtype_is_float(ap[1].dtype))
			return fail(&v, "activation takes float operands, not %s -> %s",
				    isa_dtype_name(ap[1].dtype), isa_dtype_name(ap[0].dtype));
		return 0;
	case ISA_OP_REDUCE:
		return check_reduce(&v);
	case ISA_OP_COPY:
		if (!same_shape(&ap[0], &ap[1]))
			return fail(&v, "ap1 shape differs from ap0");
		return 0;
	case ISA_OP_IOTA:
		if (in->param >= ap[0].rank)
			return fail(&v, "dimension %u >= rank %u", in->param, ap[0].rank);
		if (ap[0].dtype == ISA_DT_PRED)
			return fail(&v, "iota does not write pred");
		return 0;
	case ISA_OP_GATHER:
		return check_gather_scatter(&v, 0);
	case ISA_OP_SCATTER:
		return check_gather_scatter(&v, 1);
	case ISA_OP_RNG:
		if (ap[0].dtype != ISA_DT_U32 && ap[0].dtype != ISA_DT_U64)
			return fail(&v, "random bits ap0 must be u32 or u64, not %s",
				    isa_dtype_name(ap[0].dtype));
		for (int i = 1; i <= 2; i++)
			if (ap[i].dtype != ISA_DT_U64 || ap[i].rank != 1 || ap[i].shape[0] != 2)
				return fail(&v, "state ap%d must be u64[2]", i);
		return 0;
	case ISA_OP_FUSED:
		return check_fused(&v);
	case ISA_OP_JUMP:
		if (in->param >= stream_len)
			return fail(&v, "target %u >= stream length %u", in->param, stream_len);
		if (in->n_ap == 1 && ap[0].region != ISA_REGION_NONE &&
		    isa_ap_num_elements(&ap[0]) != 1)
			return fail(&v, "condition ap0 must have exactly one element");
		if (in->n_ap == 0 || ap[0].region == ISA_REGION_NONE) {
			if (in->flags & ISA_F_INVERT)
				return fail(&v, "invert flag on an unconditional jump");
		}
		return 0;
	}
	return fail(&v, "unknown opcode %u", in->opcode);
}

/* ---- FUSED descriptors ---- */

static int fused_desc_check(const isa_insn_t *insn, const uint8_t *desc, size_t len,
			    uint32_t n_regions, char *err, size_t err_len)
{
	vctx_t v = { insn, err, err_len };
	if (err && err_len)
		err[0] = 0;
	if (insn->opcode != ISA_OP_FUSED || insn->n_ap < 2 || insn->n_ap > ISA_MAX_AP)
		return fail(&v, "not a fused instruction");
	if (!desc || len < sizeof(isa_fused_desc_t))
		return fail(&v, "descriptor of %zu bytes is shorter than its header", len);
	isa_fused_desc_t h;
	memcpy(&h, desc, sizeof(h));
	if (h.magic != ISA_FUSED_MAGIC)
		return fail(&v, "descriptor magic 0x%08x, expected 0x%08x", h.magic,
			    ISA_FUSED_MAGIC);
	const isa_ap_t *o = &insn->ap[0];
	if (h.reduce) {
		/* ISA 1.3: the reducing form */
		uint32_t op = h.reduce - 1u;
		if (op >= ISA_RED_END || op == ISA_RED_ASSIGN)
			return fail(&v, "descriptor reduce %u names no combiner", h.reduce);
		if (h.reduce_axes >> o->rank)
			return fail(&v, "descriptor reduce_axes 0x%x must name dims of ap0 (rank %u)",
				    h.reduce_axes, o->rank);
		for (uint32_t k = 0; k < o->rank; k++)
			if ((h.reduce_axes >> k & 1) && o->stride[k] != 0)
				return fail(&v, "ap0 stride[%u] is %lld, a reduced dim needs stride 0", k,
					    (long long)o->stride[k]);
		if ((op == ISA_RED_AND || op == ISA_RED_OR) ? !dt_intlike(o->dtype) : !dt_num(o->dtype))
			return fail(&v, "descriptor reduce %u does not take dtype %s", h.reduce,
				    isa_dtype_name(o->dtype));
	} else if (h.reduce_axes) {
		return fail(&v, "descriptor reduce_axes 0x%x without reduce", h.reduce_axes);
	} else if (insn->flags & ISA_F_ACCUMULATE) {
		return fail(&v, "accumulate flag without reduce in the descriptor");
	}
	if (h.n_inputs > ISA_FUSED_MAX_INPUTS)
		return fail(&v, "descriptor has %u inputs, at most %u", h.n_inputs,
			    ISA_FUSED_MAX_INPUTS);
	uint32_t n_direct = h.n_inputs < ISA_FUSED_DIRECT ? h.n_inputs : ISA_FUSED_DIRECT;
	if (insn->n_ap != 2 + n_direct)
		return fail(&v, "n_ap %u, but %u inputs need %u (ap2, ap3 carry the first two)",
			    insn->n_ap, h.n_inputs, 2 + n_direct);
	if (h.n_code == 0 || h.n_code > ISA_FUSED_MAX_CODE)
		return fail(&v, "program of %u steps, expected 1..%u", h.n_code,
			    ISA_FUSED_MAX_CODE);
	if (len != isa_fused_desc_size(h.n_inputs, h.n_code))
		return fail(&v, "descriptor is %zu bytes, %u inputs and %u steps need %zu", len,
			    h.n_inputs, h.n_code, isa_fused_desc_size(h.n_inputs, h.n_code));
	if (h.n_regs < h.n_inputs || h.n_regs > ISA_FUSED_MAX_REGS || h.n_regs == 0)
		return fail(&v, "%u registers for %u inputs (at most %u)", h.n_regs, h.n_inputs,
			    ISA_FUSED_MAX_REGS);
	if (h.out_reg >= h.n_regs)
		return fail(&v, "out_reg %u >= n_regs %u", h.out_reg, h.n_regs);

	/* dtype of each register as the program runs; 0 = not yet written */
	uint8_t rdt[ISA_FUSED_MAX_REGS] = { 0 };
	for (uint32_t i = 0; i < n_direct; i++)
		rdt[i] = insn->ap[2 + i].dtype;
	const uint8_t *p = desc + sizeof(h);
	for (uint32_t i = n_direct; i < h.n_inputs; i++, p += sizeof(isa_ap_t)) {
		isa_ap_t ap;
		memcpy(&ap, p, sizeof(ap));
		if (check_ap_fields(&v, &ap, 2 + i, n_regions, 0))
			return -1;
		if (!same_shape(&ap, &insn->ap[0]))
			return fail(&v, "input %u (ap%u) shape differs from ap0 (broadcast with "
				    "stride 0)", i, 2 + i);
		rdt[i] = ap.dtype;
	}
	for (uint32_t s = 0; s < h.n_code; s++, p += sizeof(isa_fused_op_t)) {
		isa_fused_op_t op;
		memcpy(&op, p, sizeof(op));
		char what[40];
		snprintf(what, sizeof(what), "step %u: ", s);
		if (op.pad)
			return fail(&v, "%spad not zero", what);
		if (op.dst >= h.n_regs)
			return fail(&v, "%sdst r%u >= n_regs %u", what, op.dst, h.n_regs);
		if (op.dtype == ISA_DT_INVALID || op.dtype >= ISA_DT_COUNT)
			return fail(&v, "%sunknown dtype %u", what, op.dtype);
		int arity;
		if (op.op == ISA_FUSED_IOTA) {
			/* src[0] is a dim of the iteration space, imm the start */
			if (op.src[0] >= o->rank)
				return fail(&v, "%siota dim %u >= ap0 rank %u", what, op.src[0], o->rank);
			if (op.src[1] || op.src[2])
				return fail(&v, "%sunused src not zero", what);
			if (op.dtype == ISA_DT_PRED)
				return fail(&v, "%siota of dtype pred", what);
			rdt[op.dst] = op.dtype;
			continue;
		}
		if (op.op == ISA_FUSED_CONVERT)
			arity = 1;
		else if (op.op == ISA_FUSED_CONST)
			arity = 0;
		else if (op.op < ISA_ALU_END && isa_alu_arity(op.op))
			arity = isa_alu_arity(op.op);
		else
			return fail(&v, "%sunknown op %u", what, op.op);
		uint32_t sd[3] = { 0, 0, 0 };
		for (int k = 0; k < 3; k++) {
			if (k >= arity) {
				if (op.src[k])
					return fail(&v, "%sunused src[%d] not zero", what, k);
				continue;
			}
			if (op.src[k] >= h.n_regs || !rdt[op.src[k]])
				return fail(&v, "%ssrc[%d] reads r%u, which holds no value", what, k,
					    op.src[k]);
			sd[k] = rdt[op.src[k]];
		}
		if (op.op == ISA_FUSED_CONST) {
			if (op.dtype == ISA_DT_PRED && op.imm > 1)
				return fail(&v, "%spred constant %llu is not 0 or 1", what,
					    (unsigned long long)op.imm);
		} else {
			if (op.imm)
				return fail(&v, "%simm given to an op without immediate", what);
			if (op.op != ISA_FUSED_CONVERT && alu_types(&v, op.op, op.dtype, sd, what))
				return -1;
		}
		rdt[op.dst] = op.dtype;
	}
	if (rdt[h.out_reg] != insn->ap[0].dtype)
		return fail(&v, "out_reg r%u holds %s, ap0 is %s", h.out_reg,
			    rdt[h.out_reg] ? isa_dtype_name(rdt[h.out_reg]) : "nothing",
			    isa_dtype_name(insn->ap[0].dtype));
	return 0;
}

/* Elements of an operand for counting: none without a region, none when the
 * shape overflows (isa_insn_validate refuses such an operand anyway). */
static uint64_t count_elems(const isa_ap_t *ap)
{
	if (ap->region == ISA_REGION_NONE)
		return 0;
	uint64_t n = isa_ap_num_elements(ap);
	return n == UINT64_MAX ? 0 : n;
}

uint64_t isa_insn_flops(const isa_insn_t *insn, uint64_t fused_per_elem)
{
	if (insn->n_ap < 1)
		return 0;
	uint64_t out = count_elems(&insn->ap[0]);
	/* ap1 of FUSED is the descriptor (u8): its program decides */
	if (insn->opcode == ISA_OP_FUSED)
		return out * fused_per_elem;
	if (insn->n_ap < 2 || !isa_dtype_is_float(insn->ap[1].dtype))
		return 0;
	switch (insn->opcode) {
	case ISA_OP_MATMUL: {
		/* ap0[b,m,n] (+)= sum_k ap1[b,m,k] * ap2[b,k,n]: a multiply and
		 * an add per product, and an add per output to accumulate */
		const isa_ap_t *a = &insn->ap[1];
		uint64_t k = a->rank && a->rank <= ISA_MAX_RANK ? a->shape[a->rank - 1] : 0;
		return 2 * out * k + (insn->flags & ISA_F_ACCUMULATE ? out : 0);
	}
	case ISA_OP_ALU:
		/* compares write pred: the operands' dtype decided above */
		return out * (insn->sub == ISA_ALU_FMA ? 2 : 1);
	case ISA_OP_ACTIVATE:
		return 3 * out; /* scale, bias, function */
	case ISA_OP_REDUCE:
		return count_elems(&insn->ap[1]);
	case ISA_OP_CONV: {
		/* every output takes C * K0 * K1 products and sums, padding and
		 * dilation holes included (the nominal count, as for MATMUL) */
		const isa_ap_t *k = &insn->ap[2];
		if (k->rank != 5 || !count_elems(k))
			return 0;
		return 2 * out * (count_elems(k) / (k->shape[0] * k->shape[1]));
	}
	case ISA_OP_SELSCAT: {
		/* a compare per window position after the first, and the combine */
		const isa_ap_t *w = &insn->ap[3];
		if (insn->n_ap < 4 || !count_elems(&insn->ap[2]))
			return 0;
		return count_elems(&insn->ap[2]) *
		       (w->shape[ISA_SELSCAT_SIZE] * w->shape[ISA_SELSCAT_SIZE + 1]);
	}
	case ISA_OP_SCATTER:
		/* ap1 holds the updates; ASSIGN only moves data */
		return insn->sub != ISA_RED_ASSIGN ? count_elems(&insn->ap[1]) : 0;
	default:
		return 0; /* NOP, COPY, IOTA, GATHER, RNG, JUMP */
	}
}

uint64_t isa_fused_flops_per_elem(const isa_fused_op_t *code, uint32_t n_code,
				  const uint8_t *in_dtype, uint32_t n_inputs)
{
	uint8_t dt[ISA_FUSED_MAX_REGS] = { 0 };
	uint64_t per_elem = 0;
	for (uint32_t i = 0; i < n_inputs && i < ISA_FUSED_MAX_REGS; i++)
		dt[i] = in_dtype[i];
	for (uint32_t s = 0; s < n_code; s++) {
		const isa_fused_op_t *op = &code[s];
		if (op->op < ISA_ALU_END && isa_dtype_is_float(dt[op->src[0] % ISA_FUSED_MAX_REGS]))
			per_elem += op->op == ISA_ALU_FMA ? 2 : 1;
		dt[op->dst % ISA_FUSED_MAX_REGS] = op->dtype;
	}
	return per_elem;
}

/* ---- the public validators: a status with the one-line message ---- */

/* The checkers write their message into a stack buffer as they go (one
 * message, made where the check fails); the status is only made on failure,
 * so a valid instruction costs no allocation (the FUSED descriptor is
 * checked on every execution). */
#define ISA_MSG_LEN 256

ns_status_t isa_insn_validate(const isa_insn_t *insn, uint32_t n_regions, uint32_t stream_len)
{
	char msg[ISA_MSG_LEN];
	if (insn_check(insn, n_regions, stream_len, msg, sizeof(msg)) == 0)
		return NS_OK;
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s", msg);
}

ns_status_t isa_fused_desc_validate(const isa_insn_t *insn, const uint8_t *desc, size_t len,
				    uint32_t n_regions)
{
	char msg[ISA_MSG_LEN];
	if (fused_desc_check(insn, desc, len, n_regions, msg, sizeof(msg)) == 0)
		return NS_OK;
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s", msg);
}
