/* Scalar dtype conversions shared by the kernels (rules in docs/isa.md, "Conversions"). */
#ifndef FWSIM_CONVERT_H
#define FWSIM_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "neuronsim/half.h"
#include "neuronsim/isa.h"

/* float -> integer of dtype dt: truncation toward zero, saturating at the
 * type's limits, NaN -> 0 (what XLA's CPU backend does). pred is v != 0, so
 * NaN -> 1 (XLA's convert to pred; docs/isa.md, "Conversions"). */
static inline int64_t fw_f32_to_int(uint32_t dt, float v)
{
	if (dt == ISA_DT_PRED)
		return v != 0;
	if (v != v)
		return 0;
	double lo, hi;
	switch (dt) {
	case ISA_DT_S8: lo = -128.0; hi = 127.0; break;
	case ISA_DT_S16: lo = -32768.0; hi = 32767.0; break;
	case ISA_DT_S32: lo = -2147483648.0; hi = 2147483647.0; break;
	case ISA_DT_U8: lo = 0; hi = 255.0; break;
	case ISA_DT_U16: lo = 0; hi = 65535.0; break;
	case ISA_DT_U32: lo = 0; hi = 4294967295.0; break;
	case ISA_DT_U64:
		if (v <= 0)
			return 0;
		if (v >= 18446744073709551616.0f)
			return (int64_t)UINT64_MAX;
		return (int64_t)(uint64_t)v;
	default: /* s64 */
		if (v <= -9223372036854775808.0f)
			return INT64_MIN;
		if (v >= 9223372036854775808.0f)
			return INT64_MAX;
		return (int64_t)v;
	}
	double d = v;
	if (d <= lo)
		return (int64_t)lo;
	if (d >= hi)
		return (int64_t)hi;
	return (int64_t)d;
}

/* One element of any dtype as f32 (integers converted, pred 0/1). */
static inline float fw_ld_f32(uint32_t dt, const uint8_t *p)
{
	switch (dt) {
	case ISA_DT_F32: { float v; memcpy(&v, p, 4); return v; }
	case ISA_DT_BF16: { uint16_t v; memcpy(&v, p, 2); return ns_bf16_to_f32(v); }
	case ISA_DT_F16: { uint16_t v; memcpy(&v, p, 2); return ns_f16_to_f32(v); }
	case ISA_DT_S32: { int32_t v; memcpy(&v, p, 4); return (float)v; }
	case ISA_DT_S64: { int64_t v; memcpy(&v, p, 8); return (float)v; }
	case ISA_DT_U32: { uint32_t v; memcpy(&v, p, 4); return (float)v; }
	case ISA_DT_U64: { uint64_t v; memcpy(&v, p, 8); return (float)v; }
	case ISA_DT_U8: return (float)*p;
	case ISA_DT_PRED: return *p != 0;
	case ISA_DT_S8: return (float)(int8_t)*p;
	case ISA_DT_S16: { int16_t v; memcpy(&v, p, 2); return (float)v; }
	case ISA_DT_U16: { uint16_t v; memcpy(&v, p, 2); return (float)v; }
	default: return 0;
	}
}

/* One element of any dtype as a 64-bit integer: signed types sign-extended,
 * unsigned and pred zero-extended (u64 keeps its bits), floats saturated to s64. */
static inline int64_t fw_ld_i64(uint32_t dt, const uint8_t *p)
{
	switch (dt) {
	case ISA_DT_F32: case ISA_DT_BF16: case ISA_DT_F16:
		return fw_f32_to_int(ISA_DT_S64, fw_ld_f32(dt, p));
	case ISA_DT_S32: { int32_t v; memcpy(&v, p, 4); return v; }
	case ISA_DT_S64: case ISA_DT_U64: { int64_t v; memcpy(&v, p, 8); return v; }
	case ISA_DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case ISA_DT_U8: return *p;
	case ISA_DT_PRED: return *p != 0;
	case ISA_DT_S8: return (int8_t)*p;
	case ISA_DT_S16: { int16_t v; memcpy(&v, p, 2); return v; }
	case ISA_DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	default: return 0;
	}
}

/* Stores an f32 value as dtype dt (floats rounded to nearest even, integers
 * saturated with NaN -> 0, pred = v != 0). */
static inline void fw_st_f32(uint32_t dt, uint8_t *p, float v)
{
	switch (dt) {
	case ISA_DT_F32: memcpy(p, &v, 4); return;
	case ISA_DT_BF16: { uint16_t h = ns_f32_to_bf16(v); memcpy(p, &h, 2); return; }
	case ISA_DT_F16: { uint16_t h = ns_f32_to_f16(v); memcpy(p, &h, 2); return; }
	case ISA_DT_PRED: *p = v != 0; return;
	default: break;
	}
	int64_t i = fw_f32_to_int(dt, v);
	switch (isa_dtype_size(dt)) {
	case 1: *p = (uint8_t)i; return;
	case 2: { uint16_t x = (uint16_t)i; memcpy(p, &x, 2); return; }
	case 4: { uint32_t x = (uint32_t)i; memcpy(p, &x, 4); return; }
	case 8: memcpy(p, &i, 8); return;
	}
}

/* Stores a 64-bit integer as dtype dt: integers wrap (keep the low bits),
 * floats are converted (src_unsigned: v holds a u64), pred = v != 0. */
static inline void fw_st_i64(uint32_t dt, uint8_t *p, int64_t v, int src_unsigned)
{
	switch (dt) {
	case ISA_DT_F32: case ISA_DT_BF16: case ISA_DT_F16:
		fw_st_f32(dt, p, src_unsigned ? (float)(uint64_t)v : (float)v);
		return;
	case ISA_DT_PRED: *p = v != 0; return;
	default: break;
	}
	switch (isa_dtype_size(dt)) {
	case 1: *p = (uint8_t)v; return;
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
	case 8: memcpy(p, &v, 8); return;
	}
}

#endif /* FWSIM_CONVERT_H */
