/* ncc reference interpreter: host values (allocation, literals, element access, seeded random fill, tolerant comparison) and the error of an instruction (ncc_interp_fail), which every other interpreter file uses. */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"
#include "neuronsim/splitmix64.h"

/* ------------------------------------------------------------ conversions */

uint64_t ncc_fp_to_int(ncc_etype_t t, double d)
{
	if (d != d)
		return 0;
	d = trunc(d);
	int bits = ncc_etype_bits(t);
	if (ncc_etype_is_unsigned_int(t)) {
		if (d <= 0)
			return 0;
		double hi = ldexp(1.0, bits); /* 2^bits, exact */
		if (d >= hi)
			return bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
		return (uint64_t)d;
	}
	double lim = ldexp(1.0, bits - 1);
	if (d >= lim)
		return bits == 64 ? (uint64_t)INT64_MAX : (uint64_t)(((int64_t)1 << (bits - 1)) - 1);
	if (d <= -lim)
		return bits == 64 ? (uint64_t)INT64_MIN : (uint64_t)(-((int64_t)1 << (bits - 1)));
	return (uint64_t)(int64_t)d;
}

double ncc_int_to_fp(ncc_etype_t from, uint64_t x)
{
	if (ncc_etype_is_unsigned_int(from) || from == NCC_PRED)
		return (double)x;
	return (double)(int64_t)x;
}

/* ------------------------------------------------------------ allocation */

static bool value_etype_storable(ncc_etype_t t)
{
	return t == NCC_TOKEN || (ncc_etype_is_array(t) && ncc_etype_storage_bytes(t) > 0);
}

ncc_status_t ncc_value_alloc(const ncc_shape_t *shape, ncc_value_t **out_value)
{
	*out_value = NULL;
	if (!shape)
		return NCC_ERR_INVALID;
	ncc_value_t *v = calloc(1, sizeof(*v));
	if (!v)
		return NCC_ERR_NOMEM;
	if (shape->etype == NCC_TUPLE) {
		v->shape.etype = NCC_TUPLE;
		v->nelems = shape->nelems;
		if (shape->nelems > 0) {
			v->elems = calloc((size_t)shape->nelems, sizeof(*v->elems));
			if (!v->elems) {
				free(v);
				return NCC_ERR_NOMEM;
			}
			for (int32_t k = 0; k < shape->nelems; k++) {
				ncc_status_t st = ncc_value_alloc(&shape->elems[k], &v->elems[k]);
				if (st != NCC_OK) {
					ncc_value_free(v);
					return st;
				}
			}
		}
		*out_value = v;
		return NCC_OK;
	}
	if (!value_etype_storable(shape->etype) || shape->rank < 0 || shape->rank > NCC_MAX_RANK) {
		free(v);
		return NCC_ERR_INVALID;
	}
	v->shape = ncc_shape_array(shape->etype, shape->rank, shape->dims);
	v->shape.has_layout = false;
	int64_t n = 1;
	for (int32_t d = 0; d < shape->rank; d++) {
		if (shape->dims[d] < 0 || (shape->dims[d] > 0 && n > INT64_MAX / 16 / shape->dims[d])) {
			free(v);
			return NCC_ERR_INVALID;
		}
		n *= shape->dims[d];
	}
	if (shape->etype == NCC_TOKEN)
		n = 0;
	v->nbytes = (size_t)n * ncc_etype_storage_bytes(shape->etype);
	if (v->nbytes) {
		v->data = calloc(1, v->nbytes);
		if (!v->data) {
			free(v);
			return NCC_ERR_NOMEM;
		}
	}
	*out_value = v;
	return NCC_OK;
}

void ncc_value_free(ncc_value_t *v)
{
	if (!v)
		return;
	for (int32_t k = 0; k < v->nelems; k++)
		ncc_value_free(v->elems[k]);
	free(v->elems);
	free(v->data);
	free(v);
}

ncc_status_t ncc_value_clone(const ncc_value_t *v, ncc_value_t **out_value)
{
	*out_value = NULL;
	if (!v)
		return NCC_ERR_INVALID;
	ncc_value_t *c = calloc(1, sizeof(*c));
	if (!c)
		return NCC_ERR_NOMEM;
	c->shape = v->shape;
	c->nbytes = v->nbytes;
	c->nelems = v->nelems;
	if (v->nbytes) {
		c->data = malloc(v->nbytes);
		if (!c->data) {
			free(c);
			return NCC_ERR_NOMEM;
		}
		memcpy(c->data, v->data, v->nbytes);
	}
	if (v->nelems) {
		c->elems = calloc((size_t)v->nelems, sizeof(*c->elems));
		if (!c->elems) {
			ncc_value_free(c);
			return NCC_ERR_NOMEM;
		}
		for (int32_t k = 0; k < v->nelems; k++) {
			ncc_status_t st = ncc_value_clone(v->elems[k], &c->elems[k]);
			if (st != NCC_OK) {
				ncc_value_free(c);
				return st;
			}
		}
	}
	*out_value = c;
	return NCC_OK;
}

ncc_status_t ncc_value_tuple(ncc_value_t *const *elems, int32_t n, ncc_value_t **out_value)
{
	*out_value = NULL;
	if (n < 0 || (n > 0 && !elems))
		return NCC_ERR_INVALID;
	ncc_value_t *v = calloc(1, sizeof(*v));
	if (!v)
		return NCC_ERR_NOMEM;
	v->shape.etype = NCC_TUPLE;
	if (n > 0) {
		v->elems = malloc((size_t)n * sizeof(*v->elems));
		if (!v->elems) {
			free(v);
			return NCC_ERR_NOMEM;
		}
		memcpy(v->elems, elems, (size_t)n * sizeof(*v->elems));
	}
	v->nelems = n;
	*out_value = v;
	return NCC_OK;
}

/* Copies the leaves of a (possibly tuple) literal, consuming them from *pos. */
static ncc_status_t literal_fill(ncc_value_t *v, const ncc_literal_t *lit, size_t *pos)
{
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++) {
			ncc_status_t st = literal_fill(v->elems[k], lit, pos);
			if (st != NCC_OK)
				return st;
		}
		return NCC_OK;
	}
	if (v->nbytes == 0)
		return NCC_OK;
	if (*pos + v->nbytes > lit->nbytes || !lit->data)
		return NCC_ERR_INVALID;
	if (lit->etype == v->shape.etype || lit->etype == NCC_TUPLE || lit->etype == NCC_INVALID) {
		memcpy(v->data, lit->data + *pos, v->nbytes);
		*pos += v->nbytes;
		return NCC_OK;
	}
	return NCC_ERR_INVALID;
}

ncc_status_t ncc_value_from_literal(const ncc_shape_t *shape, const ncc_literal_t *lit,
				    ncc_value_t **out_value)
{
	*out_value = NULL;
	if (!lit || !lit->present)
		return NCC_ERR_INVALID;
	if (lit->elided)
		return NCC_ERR_UNSUPPORTED;
	ncc_value_t *v;
	ncc_status_t st = ncc_value_alloc(shape, &v);
	if (st != NCC_OK)
		return st;
	size_t pos = 0;
	if (shape->etype != NCC_TUPLE && lit->etype != shape->etype && lit->count == ncc_value_elements(v)) {
		/* differently typed literal (should not happen after verify): convert */
		for (int64_t i = 0; i < lit->count; i++)
			ncc_value_set_f64(v, i, ncc_literal_get_f64(lit, i));
		*out_value = v;
		return NCC_OK;
	}
	st = literal_fill(v, lit, &pos);
	if (st != NCC_OK) {
		ncc_value_free(v);
		return st;
	}
	*out_value = v;
	return NCC_OK;
}

/* Physical strides (in elements) of each logical dim under layout's minor_to_major. */
static ncc_status_t physical_strides(const ncc_value_t *v, const ncc_shape_t *layout, int64_t *pst)
{
	int32_t r = v->shape.rank;
	if (!layout || layout->etype == NCC_TUPLE || layout->rank != r)
		return NCC_ERR_INVALID;
	for (int32_t d = 0; d < r; d++)
		if (layout->dims[d] != v->shape.dims[d])
			return NCC_ERR_INVALID;
	if (!layout->has_layout) {
		ncc_strides(r, v->shape.dims, pst);
		return NCC_OK;
	}
	bool seen[NCC_MAX_RANK] = {0};
	int64_t s = 1;
	for (int32_t k = 0; k < r; k++) {
		int32_t d = layout->minor_to_major[k];
		if (d < 0 || d >= r || seen[d])
			return NCC_ERR_INVALID;
		seen[d] = true;
		pst[d] = s;
		s *= v->shape.dims[d];
	}
	return NCC_OK;
}

static ncc_status_t relayout(ncc_value_t *v, const ncc_shape_t *layout, void *phys, bool to_phys)
{
	int64_t pst[NCC_MAX_RANK];
	if (!v || v->shape.etype == NCC_TUPLE || (v->nbytes && !phys))
		return NCC_ERR_INVALID;
	ncc_status_t st = physical_strides(v, layout, pst);
	if (st != NCC_OK)
		return st;
	size_t es = ncc_etype_storage_bytes(v->shape.etype);
	int64_t n = ncc_value_elements(v);
	int64_t idx[NCC_MAX_RANK] = {0};
	for (int64_t i = 0; i < n; i++) {
		int64_t off = 0;
		for (int32_t d = 0; d < v->shape.rank; d++)
			off += idx[d] * pst[d];
		char *p = (char *)phys + off * (int64_t)es, *l = (char *)v->data + i * (int64_t)es;
		if (to_phys)
			memcpy(p, l, es);
		else
			memcpy(l, p, es);
		ncc_next_index(v->shape.rank, v->shape.dims, idx);
	}
	return NCC_OK;
}

ncc_status_t ncc_value_to_physical(const ncc_value_t *v, const ncc_shape_t *layout, void *dst)
{
	return relayout((ncc_value_t *)v, layout, dst, true);
}

ncc_status_t ncc_value_from_physical(ncc_value_t *v, const ncc_shape_t *layout, const void *src)
{
	return relayout(v, layout, (void *)src, false);
}

int64_t ncc_value_elements(const ncc_value_t *v)
{
	if (!v || v->shape.etype == NCC_TUPLE || v->shape.etype == NCC_TOKEN)
		return 0;
	return ncc_shape_count(&v->shape);
}

double ncc_value_get_f64(const ncc_value_t *v, int64_t i)
{
	return ncc_ld_f(v->shape.etype, v->data, i);
}

int64_t ncc_value_get_i64(const ncc_value_t *v, int64_t i)
{
	return (int64_t)ncc_ld_u(v->shape.etype, v->data, i);
}

void ncc_value_set_f64(ncc_value_t *v, int64_t i, double x)
{
	ncc_st_f(v->shape.etype, v->data, i, x);
}

void ncc_value_set_i64(ncc_value_t *v, int64_t i, int64_t x)
{
	ncc_etype_t t = v->shape.etype;
	if (ncc_is_fp(t))
		ncc_st_fp(t, v->data, i, (double)x);
	else
		ncc_st_u(t, v->data, i, (uint64_t)x);
}

/* ------------------------------------------------------------ random fill */

/* Precision in bits of the uniform grid: every generated float is exactly
 * representable in its type, so no rounding can push it to +1. */
static int fill_bits(ncc_etype_t t)
{
	switch (t) {
	case NCC_BF16: return 8;
	case NCC_F16: return 11;
	case NCC_F32: return 24;
	default: return 53;
	}
}

void ncc_value_fill_random(ncc_value_t *v, uint64_t seed)
{
	if (!v)
		return;
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++) {
			uint64_t s = seed ^ (0xa0761d6478bd642full * (uint64_t)(k + 1));
			ncc_value_fill_random(v->elems[k], ns_splitmix64(&s));
		}
		return;
	}
	ncc_etype_t t = v->shape.etype;
	int64_t n = ncc_value_elements(v);
	uint64_t s = seed;
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = ns_splitmix64(&s);
		if (ncc_is_fp(t)) {
			int b = fill_bits(t);
			double x = ldexp((double)(r >> (64 - b)), 1 - b) - 1.0;
			ncc_st_fp(t, v->data, i, x);
		} else if (t == NCC_PRED) {
			((uint8_t *)v->data)[i] = (uint8_t)(r >> 63);
		} else if (ncc_interp_etype_ok(t)) {
			ncc_st_u(t, v->data, i, (r >> 32) % (NCC_RANDOM_INT_MAX + 1));
		}
	}
}

void ncc_value_fill_random_range(ncc_value_t *v, uint64_t seed, double lo, double hi)
{
	if (!v)
		return;
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++) {
			uint64_t s = seed ^ (0xa0761d6478bd642full * (uint64_t)(k + 1));
			ncc_value_fill_random_range(v->elems[k], ns_splitmix64(&s), lo, hi);
		}
		return;
	}
	ncc_etype_t t = v->shape.etype;
	int64_t n = ncc_value_elements(v);
	uint64_t s = seed;
	double ilo = ceil(lo), ihi = floor(hi);
	if (ncc_etype_is_unsigned_int(t) && ilo < 0)
		ilo = 0;
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = ns_splitmix64(&s);
		if (ncc_is_fp(t)) {
			int b = fill_bits(t);
			double u = ldexp((double)(r >> (64 - b)), -b);
			ncc_st_fp(t, v->data, i, lo + (hi - lo) * u);
		} else if (t == NCC_PRED) {
			((uint8_t *)v->data)[i] = (uint8_t)(r >> 63);
		} else if (ncc_interp_etype_ok(t)) {
			double span = ihi >= ilo ? ihi - ilo + 1 : 1;
			double x = ilo + floor(ldexp((double)(r >> 11), -53) * span);
			ncc_st_u(t, v->data, i, ncc_fp_to_int(t, x));
		}
	}
}

/* ------------------------------------------------------------ Monte Carlo arithmetic */

/* Moves each nonzero finite element's magnitude bits by a random k in [-u, u]:
 * k ulps of its binade. An element that would cross zero or reach Inf keeps its
 * value. One random byte per element, eight per draw. */
#define NCC_PERTURB_LOOP(utype, mag_mask, inf_bits)                                      \
	do {                                                                             \
		utype *e = v->data;                                                      \
		uint64_t r = 0;                                                          \
		for (int64_t i = 0; i < n; i++) {                                        \
			if ((i & 7) == 0)                                                \
				r = ns_splitmix64(&ip->perturb_state);                   \
			int64_t k = (int64_t)((r >> (8 * (i & 7))) & 0xff) % span - u;   \
			utype m = e[i] & (mag_mask);                                     \
			if (m == 0 || m >= (inf_bits) || k == 0)                         \
				continue;                                                \
			int64_t nm = (int64_t)m + k;                                     \
			if (nm > 0 && nm < (int64_t)(inf_bits))                          \
				e[i] = (utype)((e[i] & ~(utype)(mag_mask)) | (utype)nm); \
		}                                                                        \
	} while (0)

void ncc_ivalue_perturb(ncc_interp_t *ip, ncc_value_t *v)
{
	int64_t u = ip->opts.perturb_ulps > 100 ? 100 : ip->opts.perturb_ulps;
	if (!v || u <= 0)
		return;
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++)
			ncc_ivalue_perturb(ip, v->elems[k]);
		return;
	}
	int64_t n = ncc_value_elements(v), span = 2 * u + 1;
	switch (v->shape.etype) {
	case NCC_F32: NCC_PERTURB_LOOP(uint32_t, 0x7fffffffu, 0x7f800000u); break;
	case NCC_F64: NCC_PERTURB_LOOP(uint64_t, 0x7fffffffffffffffull, 0x7ff0000000000000ull); break;
	case NCC_BF16: NCC_PERTURB_LOOP(uint16_t, 0x7fffu, 0x7f80u); break;
	case NCC_F16: NCC_PERTURB_LOOP(uint16_t, 0x7fffu, 0x7c00u); break;
	default: break;
	}
}
#undef NCC_PERTURB_LOOP

double ncc_interp_perturb_scalar(ncc_interp_t *ip, ncc_etype_t t, double x)
{
	int64_t u = ip->opts.perturb_ulps > 100 ? 100 : ip->opts.perturb_ulps;
	if (u <= 0 || ip->scalar_depth > 0 || !isfinite(x) || x == 0)
		return x;
	int k = (int)(ns_splitmix64(&ip->perturb_state) % (uint64_t)(2 * u + 1)) - (int)u;
	int e;
	frexp(x, &e); /* |x| in [2^(e-1), 2^e): one ulp of a p-bit type is 2^(e-p) */
	return x + k * ldexp(1.0, e - fill_bits(t));
}

/* ------------------------------------------------------------ comparison */

/* The float tolerances, one row per type: per operation (ncc_tolerance_for) and for
 * a whole module's result (ncc_tolerance_for_module, looser: errors compound).
 * Other types compare exactly. */
static const struct {
	ncc_etype_t t;
	ncc_tolerance_t op, module;
} tolerances[] = {
	{ NCC_F32, { .rtol = 1e-4, .atol = 1e-5 }, { .rtol = 1e-3, .atol = 1e-4 } },
	{ NCC_BF16, { .rtol = 2e-2, .atol = 2e-2 }, { .rtol = 5e-2, .atol = 5e-2 } },
	{ NCC_F16, { .rtol = 2e-3, .atol = 1e-3 }, { .rtol = 1e-2, .atol = 5e-3 } },
	{ NCC_F64, { .rtol = 1e-9, .atol = 1e-12 }, { .rtol = 1e-7, .atol = 1e-10 } },
};

static ncc_tolerance_t tolerance(ncc_etype_t t, bool module)
{
	for (size_t i = 0; i < sizeof(tolerances) / sizeof(tolerances[0]); i++)
		if (tolerances[i].t == t)
			return module ? tolerances[i].module : tolerances[i].op;
	return (ncc_tolerance_t){ 0.0, 0.0 };
}

ncc_tolerance_t ncc_tolerance_for(ncc_etype_t t)
{
	return tolerance(t, false);
}

ncc_tolerance_t ncc_tolerance_for_module(ncc_etype_t t)
{
	return tolerance(t, true);
}

typedef struct cmp_state {
	const ncc_tolerance_t *tol;
	ncc_compare_result_t *res;
	int32_t leaf;
} cmp_state_t;

static void format_index(const ncc_shape_t *s, int64_t flat, char *buf, size_t size)
{
	int64_t idx[NCC_MAX_RANK];
	for (int32_t d = s->rank - 1; d >= 0; d--) {
		int64_t n = s->dims[d] ? s->dims[d] : 1;
		idx[d] = flat % n;
		flat /= n;
	}
	size_t pos = 0;
	pos += (size_t)snprintf(buf + pos, size - pos, "[");
	for (int32_t d = 0; d < s->rank && pos < size; d++)
		pos += (size_t)snprintf(buf + pos, size - pos, "%s%" PRId64, d ? "," : "", idx[d]);
	if (pos < size)
		snprintf(buf + pos, size - pos, "]");
}

static bool set_first(cmp_state_t *cs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool set_first(cmp_state_t *cs, const char *fmt, ...)
{
	if (cs->res->msg[0])
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cs->res->msg, sizeof(cs->res->msg), fmt, ap);
	va_end(ap);
	return true;
}

static void compare_leaf(cmp_state_t *cs, const ncc_value_t *e, const ncc_value_t *a)
{
	ncc_compare_result_t *res = cs->res;
	int32_t leaf = cs->leaf++;
	char se[128], sa[128];
	if (e->shape.etype == NCC_TUPLE || a->shape.etype == NCC_TUPLE) {
		if (e->shape.etype != a->shape.etype || e->nelems != a->nelems) {
			res->mismatches++;
			set_first(cs, "leaf %d: expected a tuple of %d elements, got %s", leaf,
				  e->nelems, a->shape.etype == NCC_TUPLE ? "another tuple" : "an array");
			return;
		}
		cs->leaf--;
		for (int32_t k = 0; k < e->nelems; k++)
			compare_leaf(cs, e->elems[k], a->elems[k]);
		return;
	}
	if (!ncc_shape_equal(&e->shape, &a->shape, false)) {
		ncc_shape_to_string(&e->shape, false, se, sizeof(se));
		ncc_shape_to_string(&a->shape, false, sa, sizeof(sa));
		res->mismatches++;
		if (set_first(cs, "leaf %d: expected shape %s, got %s", leaf, se, sa))
			res->first_leaf = leaf;
		return;
	}
	ncc_etype_t t = e->shape.etype;
	int64_t n = ncc_value_elements(e);
	if (!ncc_is_fp(t)) {
		size_t es = ncc_etype_storage_bytes(t);
		for (int64_t i = 0; i < n; i++) {
			uint64_t x = ncc_ld_u(t, e->data, i), y = ncc_ld_u(t, a->data, i);
			if (memcmp((const char *)e->data + i * es, (const char *)a->data + i * es, es) == 0)
				continue;
			res->mismatches++;
			format_index(&e->shape, i, se, sizeof(se));
			if (set_first(cs, "leaf %d (%s) element %" PRId64 " %s: expected %" PRId64
				      ", got %" PRId64, leaf, ncc_etype_name(t), i, se, (int64_t)x, (int64_t)y)) {
				res->first_leaf = leaf;
				res->first_index = i;
			}
		}
		return;
	}
	ncc_tolerance_t tol = cs->tol ? *cs->tol : ncc_tolerance_for(t);
	/* atol is relative to the scale of the tensor: a sum that cancels to ~0 carries
	 * the rounding error of its large terms */
	double scale = 1.0;
	for (int64_t i = 0; i < n; i++) {
		double x = fabs(ncc_ld_f(t, e->data, i));
		if (isfinite(x) && x > scale)
			scale = x;
	}
	for (int64_t i = 0; i < n; i++) {
		double x = ncc_ld_f(t, e->data, i), y = ncc_ld_f(t, a->data, i);
		bool ok;
		if (isnan(x) || isnan(y))
			ok = isnan(x) && isnan(y);
		else if (isinf(x) || isinf(y))
			ok = x == y;
		else {
			double ae = fabs(x - y);
			double re = x != 0 ? ae / fabs(x) : (ae ? INFINITY : 0);
			if (ae > res->max_abs_err)
				res->max_abs_err = ae;
			if (re > res->max_rel_err)
				res->max_rel_err = re;
			ok = ae <= tol.atol * scale + tol.rtol * fabs(x);
		}
		if (ok)
			continue;
		res->mismatches++;
		format_index(&e->shape, i, se, sizeof(se));
		if (set_first(cs, "leaf %d (%s) element %" PRId64 " %s: expected %.9g, got %.9g "
			      "(abs err %.3g, allowed %.3g)", leaf, ncc_etype_name(t), i, se, x, y,
			      fabs(x - y), tol.atol * scale + tol.rtol * fabs(x))) {
			res->first_leaf = leaf;
			res->first_index = i;
		}
	}
}

bool ncc_value_compare(const ncc_value_t *expected, const ncc_value_t *actual,
		       const ncc_tolerance_t *tol, ncc_compare_result_t *out)
{
	memset(out, 0, sizeof(*out));
	out->first_index = -1;
	if (!expected || !actual) {
		snprintf(out->msg, sizeof(out->msg), "missing value (%s is NULL)",
			 expected ? "actual" : "expected");
		out->mismatches = 1;
		return false;
	}
	cmp_state_t cs = {tol, out, 0};
	compare_leaf(&cs, expected, actual);
	out->equal = out->mismatches == 0;
	if (!out->equal && out->mismatches > 1) {
		size_t len = strlen(out->msg);
		snprintf(out->msg + len, sizeof(out->msg) - len, "; %" PRId64 " mismatches in all",
			 out->mismatches);
	}
	return out->equal;
}

/* ------------------------------------------------------------ buffer pool */

static void *pool_get(ncc_interp_t *ip, size_t n, bool zero)
{
	if (n >= NCC_INTERP_POOL_MIN) {
		for (int32_t k = 0; k < ip->npool; k++) {
			if (ip->pool_size[k] != n)
				continue;
			void *p = ip->pool_ptr[k];
			ip->pool_bytes -= n;
			ip->npool--;
			ip->pool_ptr[k] = ip->pool_ptr[ip->npool];
			ip->pool_size[k] = ip->pool_size[ip->npool];
			if (zero)
				memset(p, 0, n);
			return p;
		}
	}
	return zero ? calloc(1, n) : malloc(n);
}

static void pool_put(ncc_interp_t *ip, void *p, size_t n)
{
	if (!p)
		return;
	if (n < NCC_INTERP_POOL_MIN || n > NCC_INTERP_POOL_MAX) {
		free(p);
		return;
	}
	/* make room: drop the oldest entries until it fits */
	while (ip->npool > 0 && (ip->npool == NCC_INTERP_POOL_SLOTS || ip->pool_bytes + n > NCC_INTERP_POOL_MAX)) {
		free(ip->pool_ptr[0]);
		ip->pool_bytes -= ip->pool_size[0];
		ip->npool--;
		memmove(ip->pool_ptr, ip->pool_ptr + 1, sizeof(void *) * (size_t)ip->npool);
		memmove(ip->pool_size, ip->pool_size + 1, sizeof(size_t) * (size_t)ip->npool);
	}
	ip->pool_ptr[ip->npool] = p;
	ip->pool_size[ip->npool] = n;
	ip->npool++;
	ip->pool_bytes += n;
}

void ncc_interp_pool_drain(ncc_interp_t *ip)
{
	for (int32_t k = 0; k < ip->npool; k++)
		free(ip->pool_ptr[k]);
	ip->npool = 0;
	ip->pool_bytes = 0;
}

ncc_status_t ncc_ivalue_alloc(ncc_interp_t *ip, const ncc_shape_t *shape, ncc_value_t **out)
{
	ncc_shape_t probe = *shape;
	if (shape->etype == NCC_TUPLE || ncc_shape_bytes(shape) < (int64_t)NCC_INTERP_POOL_MIN)
		return ncc_value_alloc(shape, out);
	/* allocate the header without data, then attach a pooled buffer */
	probe.rank = 0;
	ncc_status_t st = ncc_value_alloc(&probe, out);
	if (st != NCC_OK)
		return st;
	ncc_value_t *v = *out;
	free(v->data);
	v->shape = ncc_shape_array(shape->etype, shape->rank, shape->dims);
	v->shape.has_layout = false;
	v->nbytes = (size_t)ncc_shape_bytes(shape);
	v->data = pool_get(ip, v->nbytes, true);
	if (!v->data) {
		free(v);
		*out = NULL;
		return NCC_ERR_NOMEM;
	}
	return NCC_OK;
}

ncc_status_t ncc_ivalue_clone(ncc_interp_t *ip, const ncc_value_t *v, ncc_value_t **out)
{
	if (v->shape.etype == NCC_TUPLE || v->nbytes < NCC_INTERP_POOL_MIN)
		return ncc_value_clone(v, out);
	ncc_value_t *c = calloc(1, sizeof(*c));
	if (!c)
		return NCC_ERR_NOMEM;
	*c = *v;
	c->data = pool_get(ip, v->nbytes, false);
	if (!c->data) {
		free(c);
		return NCC_ERR_NOMEM;
	}
	memcpy(c->data, v->data, v->nbytes);
	*out = c;
	return NCC_OK;
}

void ncc_ivalue_free(ncc_interp_t *ip, ncc_value_t *v)
{
	if (!v)
		return;
	for (int32_t k = 0; k < v->nelems; k++)
		ncc_ivalue_free(ip, v->elems[k]);
	free(v->elems);
	pool_put(ip, v->data, v->nbytes);
	free(v);
}

ncc_status_t ncc_interp_fail(ncc_interp_t *ip, const ncc_inst_t *inst, ncc_status_t st,
			     const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!ip->err || ip->err->status != NCC_OK)
		return st; /* keep the innermost message */
	const char *file = inst && inst->parent && inst->parent->module && inst->parent->module->filename
				   ? inst->parent->module->filename : "<input>";
	if (inst && inst->metadata.source_file)
		ncc_error_set(ip->err, st, inst->line, inst->col,
			      "%s:%d: error: instruction '%s' (%s, %s:%" PRId64 "): %s", file,
			      inst->line, inst->name, inst->opname ? inst->opname : ncc_opcode_name(inst->op),
			      inst->metadata.source_file, inst->metadata.source_line, what);
	else
		ncc_error_set(ip->err, st, inst ? inst->line : 0, inst ? inst->col : 0,
			      "%s:%d: error: instruction '%s' (%s): %s", file, inst ? inst->line : 0,
			      inst ? inst->name : "?",
			      inst ? (inst->opname ? inst->opname : ncc_opcode_name(inst->op)) : "?", what);
	return st;
}
