/* ncc IR: literals (element get/set as f64/i64) and the small float formats (f16, bf16, f8, f4: decode and round-to-nearest-even encode). */
#include "ir.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir_internal.h"

/* ---------------------------------------------------------------- literals */

/* Small float formats as (exponent bits, mantissa bits, bias, finite-only/nan
 * encoding): enough to decode every f8/f4 variant XLA knows and to encode
 * f16/bf16 exactly with round-to-nearest-even. */
typedef struct minifloat {
	int ebits, mbits, bias;
	bool ieee;      /* has inf and nan like IEEE (all-ones exponent) */
	bool fn;        /* no inf; nan is all-ones exponent and mantissa */
	bool fnuz;      /* no inf, no -0; nan is the 1000..0 pattern */
	bool unsigned_; /* e8m0: no sign, no mantissa */
} minifloat_t;

static bool minifloat_of(ncc_etype_t t, minifloat_t *f)
{
	static const struct {
		ncc_etype_t t;
		minifloat_t f;
	} tab[] = {
		{ NCC_F16, { 5, 10, 15, true, false, false, false } },
		{ NCC_BF16, { 8, 7, 127, true, false, false, false } },
		{ NCC_F8E5M2, { 5, 2, 15, true, false, false, false } },
		{ NCC_F8E4M3, { 4, 3, 7, true, false, false, false } },
		{ NCC_F8E3M4, { 3, 4, 3, true, false, false, false } },
		{ NCC_F8E4M3FN, { 4, 3, 7, false, true, false, false } },
		{ NCC_F8E4M3FNUZ, { 4, 3, 8, false, false, true, false } },
		{ NCC_F8E5M2FNUZ, { 5, 2, 16, false, false, true, false } },
		{ NCC_F8E4M3B11FNUZ, { 4, 3, 11, false, false, true, false } },
		{ NCC_F4E2M1FN, { 2, 1, 1, false, false, false, false } },
		{ NCC_F8E8M0FNU, { 8, 0, 127, false, false, false, true } },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].t == t) {
			*f = tab[i].f;
			return true;
		}
	return false;
}

static double minifloat_decode(const minifloat_t *f, uint32_t bits)
{
	if (f->unsigned_) {
		if (bits == 0xff)
			return NAN;
		return ldexp(1.0, (int)bits - f->bias);
	}
	int total = 1 + f->ebits + f->mbits;
	uint32_t sign = (bits >> (total - 1)) & 1;
	uint32_t e = (bits >> f->mbits) & ((1u << f->ebits) - 1);
	uint32_t mant = bits & ((1u << f->mbits) - 1);
	uint32_t emax = (1u << f->ebits) - 1;
	if (f->fnuz && sign && e == 0 && mant == 0)
		return NAN;
	if (f->ieee && e == emax)
		return mant ? NAN : (sign ? -INFINITY : INFINITY);
	if (f->fn && e == emax && mant == (1u << f->mbits) - 1)
		return NAN;
	double v;
	if (e == 0)
		v = ldexp((double)mant, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)(mant | (1u << f->mbits)), (int)e - f->bias - f->mbits);
	return sign ? -v : v;
}

/* Encodes by searching for the nearest representable value: formats are at most 16
 * bits, and only constants are converted, so exhaustive search over exponents
 * would be overkill; instead round the scaled mantissa with nearest-even. */
static uint32_t minifloat_encode(const minifloat_t *f, double v)
{
	int total = 1 + f->ebits + f->mbits;
	uint32_t emax = (1u << f->ebits) - 1;
	if (f->unsigned_) {
		if (isnan(v) || v <= 0)
			return 0xff;
		int e;
		frexp(v, &e);
		int be = e - 1 + f->bias;
		return be < 0 ? 0 : be > 254 ? 254 : (uint32_t)be;
	}
	uint32_t sign = signbit(v) ? 1u : 0u;
	uint32_t nan_bits, inf_bits;
	if (f->ieee) {
		nan_bits = (emax << f->mbits) | (1u << (f->mbits ? f->mbits - 1 : 0));
		inf_bits = emax << f->mbits;
	} else if (f->fn) {
		nan_bits = (emax << f->mbits) | ((1u << f->mbits) - 1);
		inf_bits = nan_bits; /* no inf: overflow saturates to nan like XLA's converts */
	} else if (f->fnuz) {
		nan_bits = 1u << (total - 1);
		inf_bits = nan_bits;
		sign = sign && v != 0 ? sign : 0;
	} else { /* f4e2m1fn: no inf, no nan: saturate */
		nan_bits = (emax << f->mbits) | ((1u << f->mbits) - 1);
		inf_bits = nan_bits;
	}
	if (isnan(v))
		return f->fnuz ? nan_bits : (sign << (total - 1)) | nan_bits;
	double a = fabs(v);
	/* largest finite */
	uint32_t maxbits;
	if (f->ieee)
		maxbits = ((emax - 1) << f->mbits) | ((1u << f->mbits) - 1);
	else if (f->fn)
		maxbits = (emax << f->mbits) | ((1u << f->mbits) - 2);
	else
		maxbits = (emax << f->mbits) | ((1u << f->mbits) - 1);
	double maxv = minifloat_decode(f, maxbits);
	if (isinf(a)) {
		if (f->fnuz)
			return inf_bits;
		return (sign << (total - 1)) | inf_bits;
	}
	/* round to nearest even at the target precision */
	int e;
	frexp(a, &e); /* a = m * 2^e, m in [0.5,1) */
	int exp_unb = e - 1;
	int min_exp = 1 - f->bias;
	if (exp_unb < min_exp)
		exp_unb = min_exp;
	double scale = ldexp(1.0, f->mbits - exp_unb);
	double q = nearbyint(a * scale); /* default rounding mode is nearest-even */
	double r = q / scale;
	if (r > maxv) {
		if (f->ieee)
			return (sign << (total - 1)) | inf_bits;
		return (f->fnuz ? 0 : sign << (total - 1)) | (f->fnuz || f->fn ? inf_bits : maxbits);
	}
	uint32_t bits;
	if (r == 0) {
		bits = 0;
	} else {
		int re;
		frexp(r, &re);
		int ru = re - 1;
		if (ru < min_exp) { /* subnormal */
			bits = (uint32_t)nearbyint(ldexp(r, f->bias - 1 + f->mbits));
		} else {
			uint32_t be = (uint32_t)(ru + f->bias);
			uint32_t mant = (uint32_t)nearbyint(ldexp(r, f->mbits - ru)) - (1u << f->mbits);
			bits = (be << f->mbits) | mant;
		}
	}
	if (f->fnuz && bits == 0)
		return 0;
	return (sign << (total - 1)) | bits;
}

static void store_uint(uint8_t *p, size_t n, uint64_t v)
{
	switch (n) {
	case 1: p[0] = (uint8_t)v; break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	case 8: memcpy(p, &v, 8); break;
	}
}

double ncc_literal_get_f64(const ncc_literal_t *lit, int64_t i)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return 0;
	const uint8_t *p = lit->data + (size_t)i * es;
	minifloat_t f;
	switch (lit->etype) {
	case NCC_F32: case NCC_C64: { float x; memcpy(&x, p, 4); return x; }
	case NCC_F64: case NCC_C128: { double x; memcpy(&x, p, 8); return x; }
	case NCC_PRED: return p[0] ? 1 : 0;
	default: break;
	}
	if (minifloat_of(lit->etype, &f))
		return minifloat_decode(&f, (uint32_t)ncc__load_uint(p, es));
	if (ncc_etype_is_signed_int(lit->etype))
		return (double)ncc_literal_get_i64(lit, i);
	return (double)ncc__load_uint(p, es);
}

int64_t ncc_literal_get_i64(const ncc_literal_t *lit, int64_t i)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return 0;
	const uint8_t *p = lit->data + (size_t)i * es;
	if (ncc_etype_is_signed_int(lit->etype)) {
		uint64_t u = ncc__load_uint(p, es);
		int bits = ncc_etype_bits(lit->etype);
		/* sign-extend from the logical width (s2/s4 are stored in a byte) */
		uint64_t sb = 1ull << (bits - 1);
		if (bits < 64)
			u &= (1ull << bits) - 1;
		return (int64_t)((u ^ sb) - sb);
	}
	if (ncc_etype_is_unsigned_int(lit->etype) || lit->etype == NCC_PRED)
		return (int64_t)ncc__load_uint(p, es);
	double d = ncc_literal_get_f64(lit, i);
	if (isnan(d))
		return 0;
	if (d >= 9.2e18)
		return INT64_MAX;
	if (d <= -9.2e18)
		return INT64_MIN;
	return (int64_t)d;
}

ncc_status_t ncc_literal_init(ncc_module_t *m, ncc_literal_t *lit, ncc_etype_t t, int64_t count)
{
	memset(lit, 0, sizeof(*lit));
	size_t es = ncc_etype_storage_bytes(t);
	if (!es || count < 0 || (count && (uint64_t)count > (1ull << 40) / es))
		return NCC_ERR_INVALID;
	lit->present = true;
	lit->etype = t;
	lit->count = count;
	lit->nbytes = (size_t)count * es;
	if (lit->nbytes) {
		lit->data = ncc_alloc(m, lit->nbytes);
		if (!lit->data)
			return NCC_ERR_NOMEM;
	}
	return NCC_OK;
}

void ncc_literal_set_f64(ncc_literal_t *lit, int64_t i, double v)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return;
	uint8_t *p = lit->data + (size_t)i * es;
	minifloat_t f;
	if (lit->etype == NCC_F32 || lit->etype == NCC_C64) {
		float x = (float)v;
		memcpy(p, &x, 4);
	} else if (lit->etype == NCC_F64 || lit->etype == NCC_C128) {
		memcpy(p, &v, 8);
	} else if (lit->etype == NCC_PRED) {
		p[0] = v != 0;
	} else if (minifloat_of(lit->etype, &f)) {
		store_uint(p, es, minifloat_encode(&f, v));
	} else if (ncc_etype_is_signed_int(lit->etype)) {
		int64_t x = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
		store_uint(p, es, (uint64_t)x);
	} else {
		uint64_t x = isnan(v) || v <= 0 ? 0 : v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
		store_uint(p, es, x);
	}
}

uint32_t ncc__minifloat_encode(ncc_etype_t t, double v)
{
	minifloat_t f;
	if (!minifloat_of(t, &f))
		return 0;
	return minifloat_encode(&f, v);
}

ncc_status_t ncc__literal_append(ncc_module_t *m, ncc_literal_t *acc, const ncc_literal_t *e)
{
	if (e->nbytes) {
		uint8_t *nd = ncc_alloc(m, acc->nbytes + e->nbytes);
		if (!nd)
			return NCC_ERR_NOMEM;
		if (acc->nbytes)
			memcpy(nd, acc->data, acc->nbytes);
		memcpy(nd + acc->nbytes, e->data, e->nbytes);
		acc->data = nd;
		acc->nbytes += e->nbytes;
	}
	acc->count += e->count;
	return NCC_OK;
}
