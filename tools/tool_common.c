/* Helpers shared by neuron-run, neuron-ls and neuronsim-demo. */
#include "tool_common.h"

#include <stdio.h>
#include <stdlib.h>

#include "neuronsim/fs.h"
#include "neuronsim/status.h"

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

int tool_open_neff(const char *prog, const char *path, void **out_neff, size_t *out_size)
{
	ns_status_t rst = ns_read_file(path, 0, 64, out_neff, out_size);
	if (rst) {
		fprintf(stderr, "%s: %s\n", prog, ns_status_message(rst));
		ns_status_free(rst);
		return TOOL_EXIT_INPUT;
	}
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		char sbuf[256];
		fprintf(stderr, "%s: nrt_init failed: %s\n", prog, tool_status_str(st, sbuf, sizeof(sbuf)));
		free(*out_neff);
		*out_neff = NULL;
		return TOOL_EXIT_RUNTIME;
	}
	return TOOL_EXIT_OK;
}
