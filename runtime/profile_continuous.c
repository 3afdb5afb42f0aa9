/* nrt_profile_continuous_*: continuous device profiling's options and calls (the recording itself is profile.c's). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nrt/nrt_profile.h"
#include "observe.h"
#include "sys_trace.h"

struct nrt_profile_continuous_options {
	char output_dir[PATH_MAX - 128]; /* room for the file name */
};

static void options_set_defaults(nrt_profile_continuous_options_t *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->output_dir, sizeof(o->output_dir), "./output");
}

NRT_STATUS nrt_profile_continuous_options_allocate(nrt_profile_continuous_options_t **options)
{
	NRT_OPTIONS_ALLOCATE(options, nrt_profile_continuous_options_t, options_set_defaults);
}

NRT_STATUS nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options)
{
	free(options);
	return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_continuous_options_set_output_dir(nrt_profile_continuous_options_t *options,
							 const char *output_dir)
{
	if (!options || !output_dir || !*output_dir) {
		NRT_LOGE("%s: options is NULL or output_dir is NULL or empty", __func__);
		return NRT_INVALID;
	}
	if (strlen(output_dir) >= sizeof(options->output_dir)) {
		NRT_LOGE("%s: output_dir is too long (%zu bytes)", __func__, strlen(output_dir));
		return NRT_INVALID;
	}
	snprintf(options->output_dir, sizeof(options->output_dir), "%s", output_dir);
	return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_continuous_start(nrt_profile_continuous_options_t *options)
{
	(void)options; /* only save uses them (its output directory) */
	return nrt_status_report(__func__, nrt_profile_continuous_begin());
}

NRT_STATUS nrt_profile_continuous_save(uint32_t vnc, nrt_profile_continuous_options_t *options)
{
	char path[PATH_MAX];
	NRT_STATUS st = nrt_status_report(__func__, nrt_profile_continuous_write(vnc, options ? options->output_dir
										 : "./output", path, sizeof(path)));
	if (!st)
		NRT_LOGI("continuous profile of NeuronCore %u written to %s", vnc, path);
	return st;
}

NRT_STATUS nrt_profile_continuous_stop(void)
{
	return nrt_status_report(__func__, nrt_profile_continuous_end());
}
