/* bf16 and IEEE binary16 conversions shared by the simulator, the compiler and
 * the interpreter: portable bit manipulation (no _Float16, which clang 14 lacks
 * on x86-64), round to nearest even, NaN kept quiet. */
#ifndef NEURONSIM_HALF_H
#define NEURONSIM_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ns_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float ns_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline float ns_bf16_to_f32(uint16_t h)
{
	return ns_bits_f32((uint32_t)h << 16);
}

/* NaN stays NaN (quietened) instead of rounding up to Inf. */
static inline uint16_t ns_f32_to_bf16(float f)
{
	uint32_t u = ns_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float ns_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	if (exp == 0x1f)
		return ns_bits_f32(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 is exact in f32 */
		float v = (float)man * 0x1p-24f;
		return sign ? -v : v;
	}
	return ns_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t ns_f32_to_f16(float f)
{
	uint32_t u = ns_f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u) /* NaN: quiet, top payload bits kept */
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* rounds to >= 65520: Inf */
		return (uint16_t)(sign | 0x7c00u);
	if (a >= 0x38800000u) { /* normal in f16 */
		uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
		r += 0xfffu + ((r >> 13) & 1u);
		return (uint16_t)(sign | (r >> 13));
	}
	if (a < 0x33000000u) /* below half the smallest subnormal: +-0 */
		return sign;
	/* subnormal: shift the full mantissa, round to nearest even */
	uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
	uint32_t shift = 126u - e; /* 14..24 */
	uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++;
	return (uint16_t)(sign | q);
}

/* f64 -> f32 rounding to odd: an inexact result gets its last bit set. A
 * second rounding to a format at least two bits narrower (bf16, f16) is then
 * the same as one correct rounding from f64, so f64 -> f16 is exact RNE. */
static inline float ns_f64_to_f32_odd(double d)
{
	float f = (float)d;
	if ((double)f == d || f != f)
		return f;
	uint32_t u = ns_f32_bits(f);
	if ((u & 0x7fffffffu) == 0x7f800000u) /* overflowed: the largest finite */
		u -= 1;
	else if (d > 0 ? (double)f > d : (double)f < d)
		u -= 1; /* rounded away from zero: step back toward zero */
	return ns_bits_f32(u | 1u);
}

static inline uint16_t ns_f64_to_f16(double d)
{
	return ns_f32_to_f16(ns_f64_to_f32_odd(d));
}

static inline uint16_t ns_f64_to_bf16(double d)
{
	return ns_f32_to_bf16(ns_f64_to_f32_odd(d));
}

#endif /* NEURONSIM_HALF_H */
