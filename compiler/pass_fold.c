/* Constant folding: evaluates constant subgraphs (elementwise, convert, reshape, transpose, slice, concatenate) at compile time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* Results bigger than this stay computed at run time: a folded constant
 * costs NEFF size and load time. */
#define FOLD_MAX_ELEMENTS 65536

static bool fold_type(ncc_etype_t t)
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

static bool is_f(ncc_etype_t t) { return ncc_etype_is_float(t); }
static bool is_u(ncc_etype_t t) { return ncc_etype_is_unsigned_int(t) || t == NCC_PRED; }

/* Stores an integer with wrap-around to the type's width. */
static void put_i(ncc_literal_t *l, int64_t i, int64_t v)
{
	size_t es = ncc_etype_storage_bytes(l->etype);
	uint8_t *p = l->data + (size_t)i * es;
	if (l->etype == NCC_PRED) {
		p[0] = v != 0;
		return;
	}
	uint64_t u = (uint64_t)v;
	memcpy(p, &u, es); /* little-endian: the low bytes */
}

static int64_t wrap(ncc_etype_t t, int64_t v)
{
	switch (t) {
	case NCC_S8: return (int8_t)v;
	case NCC_S16: return (int16_t)v;
	case NCC_S32: return (int32_t)v;
	case NCC_U8: return (uint8_t)v;
	case NCC_U16: return (uint16_t)v;
	case NCC_U32: return (uint32_t)v;
	case NCC_PRED: return v != 0;
	default: return v;
	}
}

/* float -> integer: truncate toward zero, saturate, NaN -> 0 (the ISA's COPY
 * rule, docs/isa.md). */
static int64_t f2i(ncc_etype_t t, double v)
{
	if (isnan(v))
		return 0;
	double lo, hi;
	switch (t) {
	case NCC_S8: lo = -128.0; hi = 127.0; break;
	case NCC_S16: lo = -32768.0; hi = 32767.0; break;
	case NCC_S32: lo = -2147483648.0; hi = 2147483647.0; break;
	case NCC_U8: lo = 0; hi = 255.0; break;
	case NCC_U16: lo = 0; hi = 65535.0; break;
	case NCC_U32: lo = 0; hi = 4294967295.0; break;
	case NCC_U64:
		if (v <= 0)
			return 0;
		if (v >= 18446744073709551616.0)
			return (int64_t)UINT64_MAX;
		return (int64_t)(uint64_t)v;
	default:
		if (v <= -9223372036854775808.0)
			return INT64_MIN;
		if (v >= 9223372036854775808.0)
			return INT64_MAX;
		return (int64_t)v;
	}
	if (v <= lo)
		return (int64_t)lo;
	if (v >= hi)
		return (int64_t)hi;
	return (int64_t)v;
}

static double fmax_nan(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a > b ? a : b; }
static double fmin_nan(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a < b ? a : b; }

static bool cmp_f(ncc_cmp_dir_t d, double x, double y)
{
	switch (d) {
	case NCC_CMP_EQ: return x == y;
	case NCC_CMP_NE: return x != y;
	case NCC_CMP_LT: return x < y;
	case NCC_CMP_LE: return x <= y;
	case NCC_CMP_GT: return x > y;
	case NCC_CMP_GE: return x >= y;
	default: return false;
	}
}

/* One float op; ok = false when the op is not folded. */
static double eval_f(ncc_opcode_t op, ncc_cmp_dir_t dir, double x, double y, double z, bool *ok)
{
	switch (op) {
	case NCC_OP_ADD: return x + y;
	case NCC_OP_SUBTRACT: return x - y;
	case NCC_OP_MULTIPLY: return x * y;
	case NCC_OP_DIVIDE: return x / y;
	case NCC_OP_REMAINDER: return fmod(x, y);
	case NCC_OP_POWER: return pow(x, y);
	case NCC_OP_ATAN2: return atan2(x, y);
	case NCC_OP_MAXIMUM: return fmax_nan(x, y);
	case NCC_OP_MINIMUM: return fmin_nan(x, y);
	case NCC_OP_NEGATE: return -x;
	case NCC_OP_ABS: return fabs(x);
	case NCC_OP_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
	case NCC_OP_FLOOR: return floor(x);
	case NCC_OP_CEIL: return ceil(x);
	case NCC_OP_ROUND_NEAREST_AFZ: return round(x);
	case NCC_OP_ROUND_NEAREST_EVEN: return nearbyint(x);
	case NCC_OP_EXP: return exp(x);
	case NCC_OP_EXPM1: return expm1(x);
	case NCC_OP_LOG: return log(x);
	case NCC_OP_LOG1P: return log1p(x);
	case NCC_OP_SQRT: return sqrt(x);
	case NCC_OP_RSQRT: return 1.0 / sqrt(x);
	case NCC_OP_CBRT: return cbrt(x);
	case NCC_OP_TANH: return tanh(x);
	case NCC_OP_LOGISTIC: return 1.0 / (1.0 + exp(-x));
	case NCC_OP_ERF: return erf(x);
	case NCC_OP_SIN: return sin(x);
	case NCC_OP_COS: return cos(x);
	case NCC_OP_TAN: return tan(x);
	case NCC_OP_IS_FINITE: return isfinite(x) ? 1 : 0;
	case NCC_OP_COMPARE: return cmp_f(dir, x, y) ? 1 : 0;
	case NCC_OP_CLAMP: return fmin_nan(fmax_nan(y, x), z); /* clamp(lo=x, v=y, hi=z) */
	default:
		*ok = false;
		return 0;
	}
}

/* One integer op on values of type t (sign- or zero-extended to 64 bits). */
static int64_t eval_i(ncc_opcode_t op, ncc_cmp_dir_t dir, ncc_etype_t t, int64_t x, int64_t y,
		      int64_t z, bool *ok)
{
	bool uns = is_u(t);
	uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
	int bits = t == NCC_PRED ? 8 : ncc_etype_bits(t);
	uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	uint64_t cnt = uy & mask;
	switch (op) {
	case NCC_OP_ADD: return (int64_t)(ux + uy);
	case NCC_OP_SUBTRACT: return (int64_t)(ux - uy);
	case NCC_OP_MULTIPLY: return (int64_t)(ux * uy);
	case NCC_OP_DIVIDE:
		/* XLA: x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN, no trap */
		if (y == 0)
			return -1;
		if (uns)
			return (int64_t)(ux / uy);
		if (x == INT64_MIN && y == -1)
			return x;
		return x / y;
	case NCC_OP_REMAINDER:
		if (y == 0)
			return x;
		if (uns)
			return (int64_t)(ux % uy);
		if (y == -1)
			return 0;
		return x % y;
	case NCC_OP_MAXIMUM: return uns ? (ux > uy ? x : y) : (x > y ? x : y);
	case NCC_OP_MINIMUM: return uns ? (ux < uy ? x : y) : (x < y ? x : y);
	case NCC_OP_NEGATE: return (int64_t)(0 - ux);
	case NCC_OP_ABS: return uns || x >= 0 ? x : (int64_t)(0 - ux);
	case NCC_OP_SIGN: return uns ? x != 0 : (x > 0) - (x < 0);
	case NCC_OP_AND: return x & y;
	case NCC_OP_OR: return x | y;
	case NCC_OP_XOR: return x ^ y;
	case NCC_OP_NOT: return t == NCC_PRED ? !x : ~x;
	case NCC_OP_POPCNT: return __builtin_popcountll(ux & mask);
	case NCC_OP_CLZ: return (ux & mask) ? __builtin_clzll(ux & mask) - (64 - bits) : bits;
	case NCC_OP_SHIFT_LEFT: return cnt >= (uint64_t)bits ? 0 : (int64_t)(ux << cnt);
	case NCC_OP_SHIFT_RIGHT_LOGICAL:
		return cnt >= (uint64_t)bits ? 0 : (int64_t)((ux & mask) >> cnt);
	case NCC_OP_SHIFT_RIGHT_ARITHMETIC: {
		/* x is already sign-extended when t is signed; as XLA, shift the
		 * bits of the type's width as a signed number */
		int64_t sv = uns ? (bits == 64 ? x : (int64_t)((ux & mask) ^ (1ull << (bits - 1))) -
					(int64_t)(1ull << (bits - 1)))
				 : x;
		return sv >> (cnt >= (uint64_t)bits ? (uint64_t)bits - 1 : cnt);
	}
	case NCC_OP_COMPARE:
		switch (dir) {
		case NCC_CMP_EQ: return x == y;
		case NCC_CMP_NE: return x != y;
		case NCC_CMP_LT: return uns ? ux < uy : x < y;
		case NCC_CMP_LE: return uns ? ux <= uy : x <= y;
		case NCC_CMP_GT: return uns ? ux > uy : x > y;
		case NCC_CMP_GE: return uns ? ux >= uy : x >= y;
		default: *ok = false; return 0;
		}
	case NCC_OP_CLAMP: /* clamp(lo=x, v=y, hi=z) */
		if (uns)
			return uy < ux ? x : uy > (uint64_t)z ? z : y;
		return y < x ? x : y > z ? z : y;
	default:
		*ok = false;
		return 0;
	}
}

/* Element j of operand l for an elementwise op over count elements (scalar
 * operands, e.g. clamp bounds, broadcast). */
static int64_t elem(const ncc_literal_t *l, int64_t j) { return l->count == 1 ? 0 : j; }

static bool eval_elementwise(const ncc_inst_t *in, const ncc_literal_t *const *ops,
			     ncc_literal_t *out)
{
	ncc_etype_t ot = out->etype;
	ncc_etype_t ct = in->op == NCC_OP_SELECT ? ops[1]->etype : ops[0]->etype;
	bool ok = true;
	for (int64_t j = 0; j < out->count && ok; j++) {
		if (in->op == NCC_OP_SELECT) {
			bool p = ncc_literal_get_i64(ops[0], elem(ops[0], j)) != 0;
			const ncc_literal_t *s = p ? ops[1] : ops[2];
			size_t es = ncc_etype_storage_bytes(ot);
			memcpy(out->data + (size_t)j * es, s->data + (size_t)elem(s, j) * es, es);
			continue;
		}
		if (in->op == NCC_OP_CONVERT) {
			const ncc_literal_t *a = ops[0];
			if (is_f(a->etype)) {
				double v = ncc_literal_get_f64(a, elem(a, j));
				if (is_f(ot))
					ncc_literal_set_f64(out, j, v);
				else if (ot == NCC_PRED)
					put_i(out, j, v != 0); /* NaN -> true */
				else
					put_i(out, j, f2i(ot, v));
			} else {
				int64_t v = ncc_literal_get_i64(a, elem(a, j));
				if (is_f(ot))
					ncc_literal_set_f64(out, j, is_u(a->etype) ? (double)(uint64_t)v
										   : (double)v);
				else
					put_i(out, j, wrap(ot, v));
			}
			continue;
		}
		if (is_f(ct)) {
			double x = ncc_literal_get_f64(ops[0], elem(ops[0], j));
			double y = in->noperands > 1 ? ncc_literal_get_f64(ops[1], elem(ops[1], j)) : 0;
			double z = in->noperands > 2 ? ncc_literal_get_f64(ops[2], elem(ops[2], j)) : 0;
			double r = eval_f(in->op, in->cmp_dir, x, y, z, &ok);
			if (ot == NCC_PRED)
				put_i(out, j, r != 0);
			else
				ncc_literal_set_f64(out, j, r);
		} else {
			int64_t x = ncc_literal_get_i64(ops[0], elem(ops[0], j));
			int64_t y = in->noperands > 1 ? ncc_literal_get_i64(ops[1], elem(ops[1], j)) : 0;
			int64_t z = in->noperands > 2 ? ncc_literal_get_i64(ops[2], elem(ops[2], j)) : 0;
			put_i(out, j, wrap(ot, eval_i(in->op, in->cmp_dir, ct, x, y, z, &ok)));
		}
	}
	return ok;
}

static void unflat(int64_t f, const ncc_shape_t *s, int64_t *idx)
{
	for (int32_t k = s->rank - 1; k >= 0; k--) {
		idx[k] = s->dims[k] ? f % s->dims[k] : 0;
		f = s->dims[k] ? f / s->dims[k] : 0;
	}
}

static int64_t flat(const int64_t *idx, const ncc_shape_t *s)
{
	int64_t f = 0;
	for (int32_t k = 0; k < s->rank; k++)
		f = f * s->dims[k] + idx[k];
	return f;
}

/* Data movement ops: out element j copies operand element src(j). */
static bool eval_move(const ncc_inst_t *in, const ncc_literal_t *const *ops, ncc_literal_t *out)
{
	size_t es = ncc_etype_storage_bytes(out->etype);
	const ncc_shape_t *os = &in->shape;
	int64_t idx[NCC_MAX_RANK], sidx[NCC_MAX_RANK];
	for (int64_t j = 0; j < out->count; j++) {
		const ncc_literal_t *src = ops[0];
		const ncc_shape_t *ss = &in->operands[0]->shape;
		int64_t f;
		unflat(j, os, idx);
		switch (in->op) {
		case NCC_OP_RESHAPE:
			f = j;
			break;
		case NCC_OP_TRANSPOSE:
			/* out dim k is operand dim perm[k] */
			for (int32_t k = 0; k < os->rank; k++)
				sidx[in->dimensions.v[k]] = idx[k];
			f = flat(sidx, ss);
			break;
		case NCC_OP_SLICE:
			for (int32_t k = 0; k < os->rank; k++)
				sidx[k] = in->slice->dims[k].start + idx[k] * in->slice->dims[k].stride;
			f = flat(sidx, ss);
			break;
		case NCC_OP_CONCATENATE: {
			int64_t d = in->dimensions.v[0], at = idx[d];
			int32_t i = 0;
			while (i + 1 < in->noperands && at >= in->operands[i]->shape.dims[d]) {
				at -= in->operands[i]->shape.dims[d];
				i++;
			}
			src = ops[i];
			ss = &in->operands[i]->shape;
			memcpy(sidx, idx, sizeof(int64_t) * (size_t)os->rank);
			sidx[d] = at;
			f = flat(sidx, ss);
			break;
		}
		default:
			return false;
		}
		if (f < 0 || f >= src->count)
			return false;
		memcpy(out->data + (size_t)j * es, src->data + (size_t)f * es, es);
	}
	return true;
}

static bool move_op(const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_RESHAPE:
		return true;
	case NCC_OP_TRANSPOSE:
		return in->dimensions.present && in->dimensions.n == in->shape.rank;
	case NCC_OP_SLICE:
		return in->slice && in->slice->n == in->shape.rank;
	case NCC_OP_CONCATENATE:
		return in->dimensions.present && in->dimensions.n == 1 &&
		       in->dimensions.v[0] >= 0 && in->dimensions.v[0] < in->shape.rank;
	default:
		return false;
	}
}

static bool const_ok(const ncc_inst_t *x)
{
	return x->op == NCC_OP_CONSTANT && ncc_shape_is_array(&x->shape) && x->literal.present &&
	       !x->literal.elided && fold_type(x->shape.etype) &&
	       x->literal.count == ncc_shape_elements(&x->shape) &&
	       (x->literal.data || !x->literal.count);
}

/* A constant of in's shape replacing in, or NULL. */
static ncc_status_t fold_one(ncc_inst_t *in, ncc_inst_t **out)
{
	*out = NULL;
	if (!ncc_shape_is_array(&in->shape) || !fold_type(in->shape.etype) || in->ncontrol_preds ||
	    in->noperands == 0)
		return NCC_OK;
	bool ew = ncc_pass_is_elementwise(in->op);
	if (!ew && !move_op(in))
		return NCC_OK;
	int64_t n = ncc_shape_elements(&in->shape);
	if (n < 0 || n > FOLD_MAX_ELEMENTS)
		return NCC_OK;
	ncc_module_t *m = in->parent->module;
	const ncc_literal_t *ops[8];
	ncc_literal_t views[8];
	if (in->noperands > 8)
		return NCC_OK;
	bool all_const = true, all_splat = ew;
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_inst_t *o = in->operands[i];
		all_const &= const_ok(o);
		const ncc_literal_t *l;
		if (ew && ncc_pass_splat(o, &l) && fold_type(l->etype)) {
			views[i] = *l;
			views[i].count = 1; /* element 0 stands for all */
		} else {
			all_splat = false;
		}
		ops[i] = &o->literal;
	}
	if (all_splat && !all_const) {
		/* op(broadcast(c1), broadcast(c2)) = broadcast(op(c1, c2)) */
		ncc_shape_t ss = ncc_shape_scalar(in->shape.etype);
		ncc_inst_t *c;
		ncc_status_t st = ncc_pass_new_like(in, NCC_OP_CONSTANT, &ss, NULL, 0, &c);
		if (st)
			return st;
		if ((st = ncc_literal_init(m, &c->literal, in->shape.etype, 1)))
			return st;
		const ncc_literal_t *vops[8];
		for (int32_t i = 0; i < in->noperands; i++)
			vops[i] = &views[i];
		if (!eval_elementwise(in, vops, &c->literal))
			return NCC_OK; /* c is dead; DCE drops it */
		if (in->shape.rank == 0) {
			*out = c;
			return NCC_OK;
		}
		ncc_inst_t *ops1[1] = { c }, *b;
		if ((st = ncc_pass_new_like(in, NCC_OP_BROADCAST, &in->shape, ops1, 1, &b)))
			return st;
		b->dimensions.present = true;
		*out = b;
		return NCC_OK;
	}
	if (!all_const)
		return NCC_OK;
	ncc_literal_t lit;
	ncc_status_t st = ncc_literal_init(m, &lit, in->shape.etype, n);
	if (st)
		return st;
	if (!(ew ? eval_elementwise(in, ops, &lit) : eval_move(in, ops, &lit)))
		return NCC_OK;
	ncc_inst_t *c;
	if ((st = ncc_pass_new_like(in, NCC_OP_CONSTANT, &in->shape, NULL, 0, &c)))
		return st;
	c->literal = lit;
	*out = c;
	return NCC_OK;
}

ncc_status_t ncc_pass_fold(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	bool changed = false;
	if (out_changed)
		*out_changed = false;
	for (int32_t ci = 0; ci < m->ncomps; ci++) {
		ncc_comp_t *c = m->comps[ci];
		int32_t n = c->ninsts;
		ncc_inst_t **snap = malloc(sizeof(*snap) * (size_t)(n ? n : 1));
		if (!snap)
			return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "fold: out of memory");
		memcpy(snap, c->insts, sizeof(*snap) * (size_t)n);
		/* program order: a folded operand is a constant by the time its
		 * users are looked at, so whole constant subgraphs fold in one sweep */
		for (int32_t i = 0; i < n; i++) {
			ncc_inst_t *in = snap[i], *r;
			ncc_status_t st = fold_one(in, &r);
			if (st) {
				free(snap);
				return ncc_error_set(err, st, 0, 0, "fold: %s at '%s'",
						     ncc_status_name(st), in->name);
			}
			if (r) {
				ncc_inst_replace_uses(in, r);
				changed = true;
			}
		}
		free(snap);
	}
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
