/* Host buffers of ISA dtypes (host_tensor.h): describe a dtype and shape, fill with splitmix64. */
#include "neuronsim/host_tensor.h"

#include <stdio.h>

#include "neuronsim/half.h"
#include "neuronsim/splitmix64.h"

const char *ns_host_describe(isa_dtype_t dt, uint32_t rank, const uint64_t *shape, char *buf,
			     size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s[", isa_dtype_name(dt));
	for (uint32_t i = 0; i < rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "",
				      (unsigned long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

void ns_host_fill_random(isa_dtype_t dt, void *dst, uint64_t count, uint64_t *state)
{
	for (uint64_t i = 0; i < count; i++) {
		uint64_t r = ns_splitmix64(state);
		float f = (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
		int64_t s = (int64_t)(r >> 60) - 8;
		uint64_t u = r >> 60;
		switch (dt) {
		case ISA_DT_F32: ((float *)dst)[i] = f; break;
		case ISA_DT_BF16: ((uint16_t *)dst)[i] = ns_f32_to_bf16(f); break;
		case ISA_DT_F16: ((uint16_t *)dst)[i] = ns_f32_to_f16(f); break;
		case ISA_DT_S8: ((int8_t *)dst)[i] = (int8_t)s; break;
		case ISA_DT_S16: ((int16_t *)dst)[i] = (int16_t)s; break;
		case ISA_DT_S32: ((int32_t *)dst)[i] = (int32_t)s; break;
		case ISA_DT_S64: ((int64_t *)dst)[i] = s; break;
		case ISA_DT_U8: ((uint8_t *)dst)[i] = (uint8_t)u; break;
		case ISA_DT_U16: ((uint16_t *)dst)[i] = (uint16_t)u; break;
		case ISA_DT_U32: ((uint32_t *)dst)[i] = (uint32_t)u; break;
		case ISA_DT_U64: ((uint64_t *)dst)[i] = u; break;
		case ISA_DT_PRED: ((uint8_t *)dst)[i] = (uint8_t)(u & 1); break;
		default: return;
		}
	}
}
