/* nrt_inspect_begin / _begin_with_options / _stop and the nrt_inspect_config_* options: an inspection (NEURON_RT_INSPECT_* trace) over a window the program chooses. */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nrt/nrt_profile.h"
#include "observe.h"
#include "sys_trace.h"

/* The activity types, in nrt_inspect_config_get_all_activity_types' order
 * (the bit of each in struct nrt_inspect_config's activities). */
enum { ACT_SYSTEM = 0, ACT_DEVICE, ACT_HOST_MEMORY, ACT_CPU_UTIL, ACT_COUNT };
static const char *const activity_names[ACT_COUNT] = {
	"system_profile", "device_profile", "host_memory", "cpu_util",
};
#define ACT_ALL ((1u << ACT_COUNT) - 1)

struct nrt_inspect_config {
	int session_id;
	char output_dir[PATH_MAX - 128]; /* room for <host>_pid_<pid>/ntrace_session_<N>.json.gz */
	unsigned activities;             /* bit ACT_*: enabled */
	nrt_inspect_device_profile_mode_t dev_mode;
	bool enable_inspect;
	bool enable_inspect_on_fail;
	bool max_events_set;             /* sys_trace_max_events_per_nc was set */
	uint64_t max_events_per_nc;
	bool nc_filter;                  /* some core was disabled */
	uint8_t nc_off[NRT_INSPECT_MAX_NC / 8];
	bool type_off[NRT_SYS_TRACE_TYPE_COUNT];
};

NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options)
{
	if (!options) {
		NRT_LOGE("%s: options is NULL", __func__);
		return NRT_INVALID;
	}
	memset(options, 0, sizeof(*options));
	options->session_id = 1;
	snprintf(options->output_dir, sizeof(options->output_dir), "./output");
	options->activities = ACT_ALL;
	options->dev_mode = NRT_INSPECT_DEVICE_PROFILE_MODE_MODEL;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options)
{
	NRT_OPTIONS_ALLOCATE(options, nrt_inspect_config_t, nrt_inspect_config_set_defaults);
}

NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options)
{
	free(options);
	return NRT_SUCCESS;
}

#define REQUIRE_OPTIONS(o)                                          \
	do {                                                        \
		if (!(o)) {                                         \
			NRT_LOGE("%s: options is NULL", __func__);  \
			return NRT_INVALID;                         \
		}                                                   \
	} while (0)

NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options, int session_id)
{
	REQUIRE_OPTIONS(options);
	if (session_id < 0) {
		NRT_LOGE("%s: session_id %d is negative: use 0 or more (it numbers the file, "
			 "ntrace_session_<id>.json.gz)", __func__, session_id);
		return NRT_INVALID;
	}
	options->session_id = session_id;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options, const char *output_dir)
{
	REQUIRE_OPTIONS(options);
	if (!output_dir || !*output_dir) {
		NRT_LOGE("%s: output_dir is %s: name a directory", __func__, output_dir ? "empty" : "NULL");
		return NRT_INVALID;
	}
	if (strlen(output_dir) >= sizeof(options->output_dir)) {
		NRT_LOGE("%s: output_dir is too long (%zu bytes, at most %zu)", __func__, strlen(output_dir),
			 sizeof(options->output_dir) - 1);
		return NRT_INVALID;
	}
	snprintf(options->output_dir, sizeof(options->output_dir), "%s", output_dir);
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(nrt_inspect_config_t *options,
							      uint64_t sys_trace_max_events_per_nc)
{
	REQUIRE_OPTIONS(options);
	options->max_events_set = true;
	options->max_events_per_nc = sys_trace_max_events_per_nc;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options, uint32_t nc_idx,
							 bool enabled)
{
	REQUIRE_OPTIONS(options);
	if (nc_idx >= NRT_INSPECT_MAX_NC) {
		NRT_LOGE("%s: NeuronCore %u is beyond the last one neuronsim addresses (%u)", __func__, nc_idx,
			 NRT_INSPECT_MAX_NC - 1);
		return NRT_INVALID;
	}
	if (enabled) {
		options->nc_off[nc_idx / 8] &= (uint8_t)~(1u << (nc_idx % 8));
	} else {
		options->nc_off[nc_idx / 8] |= (uint8_t)(1u << (nc_idx % 8));
		options->nc_filter = true;
	}
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(nrt_inspect_config_t *options,
									const char *event_type, bool enabled)
{
	REQUIRE_OPTIONS(options);
	int i = nrt_sys_trace_type_index(event_type);
	if (i < 0) {
		NRT_LOGE("%s: unknown event type '%s' (nrt_sys_trace_get_event_types lists them)", __func__,
			 event_type ? event_type : "(null)");
		return NRT_INVALID;
	}
	options->type_off[i] = !enabled;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options, bool enable_inspect)
{
	REQUIRE_OPTIONS(options);
	options->enable_inspect = enable_inspect;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options,
							 bool enable_inspect_on_fail)
{
	REQUIRE_OPTIONS(options);
	options->enable_inspect_on_fail = enable_inspect_on_fail;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_inspect_device_profile_mode(nrt_inspect_config_t *options,
							      nrt_inspect_device_profile_mode_t device_profile_mode)
{
	REQUIRE_OPTIONS(options);
	switch (device_profile_mode) {
	case NRT_INSPECT_DEVICE_PROFILE_MODE_DISABLED:
	case NRT_INSPECT_DEVICE_PROFILE_MODE_MODEL:
	case NRT_INSPECT_DEVICE_PROFILE_MODE_SESSION:
		options->dev_mode = device_profile_mode;
		return NRT_SUCCESS;
	}
	NRT_LOGE("%s: device profile mode %d is not one of DISABLED (0), MODEL (1), SESSION (2)", __func__,
		 (int)device_profile_mode);
	return NRT_INVALID;
}

NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options, const char *activity_type,
					   bool enabled)
{
	REQUIRE_OPTIONS(options);
	unsigned bits = 0;
	if (activity_type && strcmp(activity_type, "all") == 0)
		bits = ACT_ALL;
	for (int i = 0; activity_type && !bits && i < ACT_COUNT; i++)
		if (strcmp(activity_type, activity_names[i]) == 0)
			bits = 1u << i;
	if (!bits) {
		NRT_LOGE("%s: unknown activity type '%s': use system_profile, device_profile, host_memory, "
			 "cpu_util or all", __func__, activity_type ? activity_type : "(null)");
		return NRT_INVALID;
	}
	if (enabled)
		options->activities |= bits;
	else
		options->activities &= ~bits;
	return NRT_SUCCESS;
}

static NRT_STATUS activity_list(const char *func, unsigned bits, const char ***activity_types, size_t *count)
{
	return nrt_status_report(func, nrt_name_list_dup("activity_types", activity_names, ACT_COUNT, bits,
							 activity_types, count));
}

NRT_STATUS nrt_inspect_config_get_all_activity_types(const char ***activity_types, size_t *count)
{
	return activity_list(__func__, ACT_ALL, activity_types, count);
}

NRT_STATUS nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options,
							 const char ***activity_types, size_t *count)
{
	REQUIRE_OPTIONS(options);
	return activity_list(__func__, options->activities, activity_types, count);
}

void nrt_inspect_config_free_activity_types(const char **activity_types, size_t count)
{
	nrt_name_list_free(activity_types, count);
}

/* Options neuronsim accepts with nothing behind them: one INFO line each per
 * process, the first time a begin is given them (as nrt_init reports the
 * documented variables it does not implement). */
static void report_unimplemented(const nrt_inspect_config_t *o)
{
	static atomic_bool said_host_memory, said_cpu_util, said_on_fail, said_max_events, said_types;
	if ((o->activities & (1u << ACT_HOST_MEMORY)) && !atomic_exchange(&said_host_memory, true))
		NRT_LOGI("nrt_inspect_begin_with_options: activity host_memory is not implemented by "
			 "neuronsim (no host memory samples are recorded); neuron-monitor reports the "
			 "process's memory");
	if ((o->activities & (1u << ACT_CPU_UTIL)) && !atomic_exchange(&said_cpu_util, true))
		NRT_LOGI("nrt_inspect_begin_with_options: activity cpu_util is not implemented by "
			 "neuronsim (no CPU utilisation samples are recorded); neuron-monitor reports vCPU usage");
	if (o->enable_inspect_on_fail && !atomic_exchange(&said_on_fail, true))
		NRT_LOGI("nrt_inspect_begin_with_options: enable_inspect_on_fail is not implemented by "
			 "neuronsim (no device profile of a failed execution is kept); "
			 "NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR keeps its inputs instead");
	if (o->max_events_set && !atomic_exchange(&said_max_events, true))
		NRT_LOGI("nrt_inspect_begin_with_options: sys_trace_max_events_per_nc is not implemented by "
			 "neuronsim (the inspection keeps its own bounds, docs/profiler.md)");
	bool type_off = false;
	for (int i = 0; i < NRT_SYS_TRACE_TYPE_COUNT; i++)
		type_off |= o->type_off[i];
	if (type_off && !atomic_exchange(&said_types, true))
		NRT_LOGI("nrt_inspect_begin_with_options: disabling system trace event types is not "
			 "implemented by neuronsim's inspection (every event is recorded); the nrt_sys_trace_* "
			 "capture filters them");
}

NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options)
{
	nrt_ctx_t *ctx;
	NRT_STATUS st = nrt_status_report(__func__, nrt_ctx_enter(&ctx));
	if (st)
		return st;
	nrt_inspect_config_t defaults;
	if (!options) {
		(void)nrt_inspect_config_set_defaults(&defaults);
		options = &defaults;
	}
	report_unimplemented(options);
	if (!options->enable_inspect)
		NRT_LOGI("%s: enable_inspect is off in the options: this inspection records nothing "
			 "(nrt_inspect_config_set_enable_inspect turns it on)", __func__);
	bool dev = (options->activities & (1u << ACT_DEVICE)) &&
		   options->dev_mode != NRT_INSPECT_DEVICE_PROFILE_MODE_DISABLED;
	nrt_inspect_settings_t s = {
		.record = options->enable_inspect,
		.sys = (options->activities & (1u << ACT_SYSTEM)) != 0,
		.dev_mode = dev ? (unsigned)options->dev_mode : 0,
		.first_session = (unsigned)options->session_id,
		.nc_off = options->nc_filter ? options->nc_off : NULL,
		.out_dir = options->output_dir,
	};
	return nrt_status_report(__func__, nrt_profile_inspect_begin_with(&s));
}

NRT_STATUS nrt_inspect_begin(void)
{
	return nrt_status_report(__func__, nrt_profile_inspect_begin(__func__));
}

NRT_STATUS nrt_inspect_stop(void)
{
	return nrt_status_report(__func__, nrt_profile_inspect_stop(__func__));
}
