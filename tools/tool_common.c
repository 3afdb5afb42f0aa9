/* Helpers shared by neuron-run, neuron-ls and neuronsim-demo. */
#include "tool_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "neuronsim/half.h"
#include "neuronsim/splitmix64.h"

const char *tool_status_name(NRT_STATUS st)
{
	switch (st) {
#define N(x) case x: return #x;
	N(NRT_SUCCESS) N(NRT_FAILURE) N(NRT_INVALID) N(NRT_INVALID_HANDLE)
	N(NRT_RESOURCE) N(NRT_TIMEOUT) N(NRT_HW_ERROR) N(NRT_QUEUE_FULL)
	N(NRT_LOAD_NOT_ENOUGH_NC) N(NRT_UNSUPPORTED_NEFF_VERSION)
	N(NRT_FAIL_HOST_MEM_ALLOC) N(NRT_UNINITIALIZED) N(NRT_CLOSED)
	N(NRT_QUEUE_EMPTY) N(NRT_EXEC_UNIT_UNRECOVERABLE) N(NRT_EXEC_BAD_INPUT)
	N(NRT_EXEC_COMPLETED_WITH_NUM_ERR) N(NRT_EXEC_COMPLETED_WITH_ERR)
	N(NRT_EXEC_NC_BUSY) N(NRT_EXEC_OOB) N(NRT_COLL_PENDING)
	N(NRT_EXEC_HW_ERR_COLLECTIVES) N(NRT_EXEC_HW_ERR_HBM_UE)
	N(NRT_EXEC_HW_ERR_NC_UE) N(NRT_EXEC_HW_ERR_DMA_ABORT)
	N(NRT_EXEC_SW_NQ_OVERFLOW) N(NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE)
	N(NRT_NETWORK_PROXY_FAILURE)
#undef N
	}
	return NULL;
}

const char *tool_status_str(NRT_STATUS st, char *buf, size_t len)
{
	const char *name = tool_status_name(st);
	snprintf(buf, len, "%s (%d): %s", name ? name : "NRT_STATUS", (int)st,
		 nrt_get_status_as_str(st));
	return buf;
}

isa_dtype_t tool_dtype_from_nrt(nrt_dtype_t dt)
{
	switch (dt) {
	case NRT_DTYPE_FLOAT32: return ISA_DT_F32;
	case NRT_DTYPE_BFLOAT16: return ISA_DT_BF16;
	case NRT_DTYPE_FLOAT16: return ISA_DT_F16;
	case NRT_DTYPE_INT8: return ISA_DT_S8;
	case NRT_DTYPE_INT16: return ISA_DT_S16;
	case NRT_DTYPE_INT32: return ISA_DT_S32;
	case NRT_DTYPE_INT64: return ISA_DT_S64;
	case NRT_DTYPE_UINT8: return ISA_DT_U8;
	case NRT_DTYPE_UINT16: return ISA_DT_U16;
	case NRT_DTYPE_UINT32: return ISA_DT_U32;
	case NRT_DTYPE_UINT64: return ISA_DT_U64;
	default: return ISA_DT_INVALID;
	}
}

const char *tool_describe(isa_dtype_t dt, uint32_t rank, const uint64_t *shape,
			  char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s[", isa_dtype_name(dt));
	for (uint32_t i = 0; i < rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "",
				      (unsigned long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

void tool_fill_random(isa_dtype_t dt, void *dst, uint64_t count, uint64_t *state)
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double tool_quantile(double *v, size_t n, double q)
{
	if (!n)
		return 0.0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

