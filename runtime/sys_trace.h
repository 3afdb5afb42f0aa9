/* The system trace capture (sys_trace.c): what the runtime records into it. */
#ifndef NRT_SYS_TRACE_INTERNAL_H
#define NRT_SYS_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"
#include "rt_status.h"

/* nrt_sys_trace.h's event types, in nrt_sys_trace_get_event_types' order. */
typedef enum nrt_sys_trace_type {
	NRT_SYS_TRACE_EXECUTE = 0,   /* "nrt_execute" */
	NRT_SYS_TRACE_TENSOR_OP,     /* "nrta_tensor_op" */
	NRT_SYS_TRACE_COMPUTE,       /* "nrta_compute" */
	NRT_SYS_TRACE_COLLECTIVES,   /* "nrta_collectives" */
	NRT_SYS_TRACE_TYPE_COUNT
} nrt_sys_trace_type_t;

/* A caller-owned copy of names[i] for each bit i of keep (n <= 32), as the
 * SDK's *_get_*_types calls return their lists (nrt_sys_trace_get_event_types,
 * nrt_inspect_config_get_*_activity_types); what names the list parameter
 * in the message when out or count is NULL. Freed with nrt_name_list_free. */
ns_status_t nrt_name_list_dup(const char *what, const char *const *names, unsigned n, uint32_t keep,
			      const char ***out, size_t *count);
void nrt_name_list_free(const char **list, size_t count);

/* The SDK's *_allocate calls of an options struct (nrt_inspect_config_allocate,
 * nrt_sys_trace_config_allocate, nrt_sys_trace_fetch_options_allocate):
 * NRT_INVALID when out, the caller's out parameter, is NULL, NRT_RESOURCE
 * when malloc fails; else size bytes in *out_mem for the caller to set to its
 * defaults. */
ns_status_t nrt_options_alloc(const void *out, size_t size, void **out_mem);
/* The whole body of such an *_allocate call: a T set up by set_defaults(T *)
 * in *options, or the failure reported under the calling function's name. */
#define NRT_OPTIONS_ALLOCATE(options, T, set_defaults)                                              \
	do {                                                                                        \
		void *nrt_o_;                                                                       \
		NRT_STATUS nrt_st_ = nrt_status_report(__func__,                                    \
						       nrt_options_alloc((options), sizeof(T), &nrt_o_)); \
		if (nrt_st_)                                                                        \
			return nrt_st_;                                                             \
		(void)set_defaults((T *)nrt_o_);                                                    \
		*(options) = nrt_o_;                                                                \
		return NRT_SUCCESS;                                                                 \
	} while (0)

/* The type named name (nrt_sys_trace_get_event_types' names), or -1. */
int nrt_sys_trace_type_index(const char *name);

/* True while a capture runs (one relaxed atomic load). */
bool nrt_sys_trace_capturing(void);
/* Records one event of core nc if a capture runs and takes it (strings are
 * copied, truncated). */
void nrt_sys_trace_record(uint32_t nc, nrt_sys_trace_type_t type, const char *name, const char *label,
			  uint64_t start_ns, uint64_t end_ns, NRT_STATUS status, uint64_t value);

#endif /* NRT_SYS_TRACE_INTERNAL_H */
