/* nrt_inspect_begin / nrt_inspect_stop: an inspection (NEURON_RT_INSPECT_* trace) over a window the program chooses. */
#include "internal.h"
#include "nrt/nrt_profile.h"
#include "observe.h"

NRT_STATUS nrt_inspect_begin(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	return nrt_profile_inspect_begin(ctx, __func__);
}

NRT_STATUS nrt_inspect_stop(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	return nrt_profile_inspect_stop(ctx, __func__);
}
