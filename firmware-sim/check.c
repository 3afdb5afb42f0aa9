/* Access-pattern extents for the bounds check, and the NaN/Inf scan of produced values. */
#include <math.h>
#include <string.h>

#include "convert.h"
#include "internal.h"

bool fwsim_ap_extent(const isa_ap_t *ap, __int128 *out_lo, __int128 *out_hi)
{
	/* Validation caps every dim at 2^40 elements and strides are 64-bit, so
	 * each term is below 2^104 and the sum of six terms plus the offset
	 * cannot overflow 128 bits: no wrap-around can hide an access. */
	__int128 es = (__int128)isa_dtype_size(ap->dtype);
	__int128 lo = 0, hi = 0;
	for (uint32_t k = 0; k < ap->rank; k++) {
		if (ap->shape[k] == 0)
			return false;
		__int128 span = (__int128)ap->stride[k] * (__int128)(ap->shape[k] - 1);
		if (span < 0)
			lo += span;
		else
			hi += span;
	}
	*out_lo = (__int128)ap->offset + lo * es;
	*out_hi = (__int128)ap->offset + hi * es + es;
	return true;
}

void fwsim_numchk_init(fwsim_numchk_t *c, uint32_t job_flags, uint32_t out_dtype)
{
	c->want_nan = !!(job_flags & FWSIM_JOB_CHECK_NAN);
	c->want_inf = !!(job_flags & FWSIM_JOB_CHECK_INF);
	/* Values are scanned as f32 before narrowing; this is the smallest
	 * magnitude that rounds to Inf in the stored dtype. */
	switch (out_dtype) {
	case ISA_DT_BF16: c->inf_limit = ns_bits_f32(0x7f7f8000u); break;
	case ISA_DT_F16: c->inf_limit = 65520.0f; break;
	default: c->inf_limit = INFINITY; break;
	}
	c->count = 0;
	c->first = UINT64_MAX;
	c->first_is_inf = 0;
	c->blame_debug = ISA_DEBUG_NONE;
}

static inline int is_bad(const fwsim_numchk_t *c, float x)
{
	float a = fabsf(x);
	if (c->want_nan && c->want_inf)
		return !(a < c->inf_limit);
	if (c->want_nan)
		return x != x;
	return a >= c->inf_limit;
}

/* Does the block hold any |x| >= lim (as bits)? For non-negative floats the
 * unsigned order of the bits is the numeric order, every NaN above +Inf.
 * Adding 2^31 - lim carries into bit 31 exactly when |x| >= lim, so an OR
 * reduction answers it: no compare, no loop-carried latency beyond one OR. */
/* AVX2 clone where the CPU has it: the scan must stay cheap next to the op. */
FWSIM_TARGET_CLONES
static uint32_t block_any_at_least(const float *v, size_t n, uint32_t lim)
{
	const uint32_t bias = 0x80000000u - lim;
	uint32_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		acc |= (u & 0x7fffffffu) + bias;
	}
	return acc >> 31;
}

bool fwsim_numchk_maybe_nonfinite(const fwsim_numchk_t *c, const float *v, size_t n)
{
	if (!c->want_nan && !c->want_inf)
		return false;
	return block_any_at_least(v, n, c->want_inf ? 0x7f800000u : 0x7f800001u) != 0;
}

bool fwsim_any_nonfinite(const float *v, size_t n)
{
	return block_any_at_least(v, n, 0x7f800000u) != 0;
}

/* static: clang emits no symbol under the plain name for a cloned function
 * with external linkage (the fuzz build's link failed) */
FWSIM_TARGET_CLONES
static uint32_t copy_f32_flag(float *restrict d, const float *restrict s, size_t n, uint32_t bias)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &s[i], 4);
		memcpy(&d[i], &u, 4);
		acc |= (u & 0x7fffffffu) + bias;
	}
	return acc >> 31;
}

bool fwsim_copy_f32_flag(float *restrict d, const float *restrict s, size_t n, uint32_t bias)
{
	return copy_f32_flag(d, s, n, bias) != 0;
}

void fwsim_numchk_block_scan(fwsim_numchk_t *c, const float *v, size_t n, uint64_t flat0)
{
	/* Fast path (the common case, nothing bad): one max-reduction over the
	 * block while it is still in L1. Only a suspicious block pays for the
	 * exact count and the search of the first index. */
	uint32_t lim = ns_f32_bits(c->inf_limit);
	if (!block_any_at_least(v, n, c->want_inf ? lim : 0x7f800000u))
		return;
	/* exact count on the bit patterns: integer compares vectorise */
	uint32_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		u &= 0x7fffffffu;
		if (c->want_nan && c->want_inf)
			bad += u >= lim;
		else if (c->want_nan)
			bad += u > 0x7f800000u;
		else
			bad += (u >= lim) & (u <= 0x7f800000u);
	}
	if (!bad)
		return;
	c->count += bad;
	if (c->first != UINT64_MAX)
		return;
	for (size_t i = 0; i < n; i++)
		if (is_bad(c, v[i])) {
			c->first = flat0 + i;
			c->first_is_inf = v[i] == v[i];
			return;
		}
}

fwsim_status_t fwsim_numchk_ap(const fwsim_kargs_t *k, fwsim_numchk_t *c, const isa_ap_t *ap,
			       const uint8_t *base)
{
	if (!base)
		return FWSIM_OK;
	fwsim_iter_t it;
	const isa_ap_t *aps[1] = { ap };
	fwsim_iter_init_aps(&it, ap, 1, aps);
	if (it.empty)
		return FWSIM_OK;
	float buf[FWSIM_BLOCK];
	uint64_t flat = 0;
	do {
		for (uint64_t j = 0; j < it.inner; j += FWSIM_BLOCK) {
			size_t m = it.inner - j < FWSIM_BLOCK ? it.inner - j : FWSIM_BLOCK;
			if (fwsim_tick(k, m))
				return FWSIM_TIMEOUT;
			fwsim_load_f32(ap->dtype, base + it.off[0] + (int64_t)j * it.inner_bs[0],
				       it.inner_bs[0], m, buf);
			fwsim_numchk_block(c, buf, m, flat);
			flat += m;
		}
	} while (fwsim_iter_next(&it));
	return FWSIM_OK;
}

void fwsim_numchk_merge(fwsim_numchk_t *into, const fwsim_numchk_t *part)
{
	if (!part->count)
		return;
	into->count += part->count;
	if (part->first < into->first) {
		into->first = part->first;
		into->first_is_inf = part->first_is_inf;
		into->blame_debug = part->blame_debug;
	}
}
