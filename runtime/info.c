/* Instance, core count, version, per-core memory and per-model information: nrt_get_instance_info, nrt_get_*_nc_count, nrt_get_version, nrt_neuronsim_get_core_stats, nrt_get_vnc_memory_stats, nrt_get_model_info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"
#include "uapi/linux/neuronsim_version.h"

/* Devices of the runtime, or of the environment before nrt_init. */
static NRT_STATUS device_count(uint32_t *out)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (ctx) {
		*out = ctx->n_devices;
		return NRT_SUCCESS;
	}
	nrt_config_t *cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return NRT_RESOURCE;
	st = nrt_env_load(cfg);
	if (!st)
		*out = cfg->num_devices;
	free(cfg);
	return st;
}

NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len)
{
	if (!info || !instance_info_len) {
		NRT_LOGE("nrt_get_instance_info: info is NULL or instance_info_len is 0");
		return NRT_INVALID;
	}
	uint32_t n_devices;
	NRT_STATUS st = device_count(&n_devices);
	if (st)
		return st;
	nrt_instance_info_t v;
	memset(&v, 0, sizeof(v));
	/* The simulated NeuronCore is a v2, the trn1 family's; the size is the
	 * trn1 size with that many devices (trn1.2xlarge: 1, trn1.32xlarge: 16). */
	v.family = NRT_INSTANCE_TRN1;
	v.size = n_devices == 1 ? NRT_INSTANCE_SIZE_2XL
	       : n_devices == 16 ? NRT_INSTANCE_SIZE_32XL : NRT_INSTANCE_SIZE_UNKNOWN;
	strcpy(v.arch_name, "trn1");
	strcpy(v.device_revision, "sim");
	memcpy(info, &v, instance_info_len < sizeof(v) ? instance_info_len : sizeof(v));
	return NRT_SUCCESS;
}

NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in,
				    size_t *stats_size_out)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!stats || !stats_size_out || !stats_size_in) {
		NRT_LOGE("nrt_get_vnc_memory_stats: stats or stats_size_out is NULL, or stats_size_in is 0");
		return NRT_INVALID;
	}
	if (vnc >= ctx->n_cores) {
		NRT_LOGE("nrt_get_vnc_memory_stats: NeuronCore %u is not visible (%u visible)", vnc,
			 ctx->n_cores);
		return NRT_INVALID;
	}
	/* Used: what this core's allocations hold (nrt_devmem_alloc charges each
	 * block to its core); limit: its device's memory, which the device's cores
	 * share (any of them may allocate all of it). */
	const nrt_core_t *c = &ctx->cores[vnc];
	uint64_t used = 0;
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		used += atomic_load(&c->mem_by_cat[k]);
	nrt_vnc_memory_stats_t v = { .bytes_used = used, .bytes_limit = ctx->devices[c->device].mem_size };
	size_t n = stats_size_in < sizeof(v) ? stats_size_in : sizeof(v);
	memcpy(stats, &v, n);
	*stats_size_out = n;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in,
			      size_t *info_size_out)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!info || !info_size_out || !info_size_in) {
		NRT_LOGE("nrt_get_model_info: info or info_size_out is NULL, or info_size_in is 0");
		return NRT_INVALID;
	}
	if (!model) {
		NRT_LOGE("nrt_get_model_info: model is NULL");
		return NRT_INVALID;
	}
	void *obj;
	if ((st = nrt_handle_acquire(&ctx->models, nrt_handle_of(model), &obj))) {
		NRT_LOGE("nrt_get_model_info: %p is not a loaded model (unloaded, or not a model handle)",
			 (const void *)model);
		return st;
	}
	const nrt_model_obj_t *m = obj;
	nrt_model_info_t v = { .vnc = m->start_nc };
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
	size_t n = info_size_in < sizeof(v) ? info_size_in : sizeof(v);
	memcpy(info, &v, n);
	*info_size_out = n;
	return NRT_SUCCESS;
}

static NRT_STATUS count_cores(uint32_t *nc_count, int visible)
{
	if (!nc_count)
		return NRT_INVALID;
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (ctx) {
		uint32_t total = 0;
		for (uint32_t d = 0; d < ctx->n_devices; d++)
			total += ctx->devices[d].n_cores;
		*nc_count = visible ? ctx->n_cores : total;
		return NRT_SUCCESS;
	}
	/* Documented to work before nrt_init: answer from the environment. */
	nrt_config_t *cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return NRT_RESOURCE;
	st = nrt_env_load(cfg);
	if (st == NRT_SUCCESS)
		*nc_count = visible ? cfg->n_visible : cfg->num_devices * cfg->cores_per_device;
	free(cfg);
	return st;
}

NRT_STATUS nrt_get_total_nc_count(uint32_t *nc_count) { return count_cores(nc_count, 0); }
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count) { return count_cores(vnc_count, 0); }
NRT_STATUS nrt_get_visible_nc_count(uint32_t *nc_count) { return count_cores(nc_count, 1); }
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count) { return count_cores(vnc_count, 1); }

NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size)
{
	if (!ver || size == 0)
		return NRT_INVALID;
	nrt_version_t v;
	memset(&v, 0, sizeof(v));
	v.rt_major = NRT_MAJOR_VERSION;
	v.rt_minor = NRT_MINOR_VERSION;
	v.rt_patch = 0;
	v.rt_maintenance = 0;
	snprintf(v.rt_detail, sizeof(v.rt_detail),
		 "neuronsim %s libnrt %d.%d (NEFF %d.%d, ISA %d.%d)", NEURONSIM_VERSION,
		 NRT_MAJOR_VERSION, NRT_MINOR_VERSION, NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR,
		 ISA_VERSION_MAJOR, ISA_VERSION_MINOR);
	memcpy(ver, &v, size < sizeof(v) ? size : sizeof(v));
	return NRT_SUCCESS;
}

NRT_STATUS nrt_neuronsim_get_core_stats(uint32_t logical_nc, nrt_neuronsim_core_stats_t *out_stats)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!out_stats) {
		NRT_LOGE("nrt_neuronsim_get_core_stats: out_stats is NULL");
		return NRT_INVALID;
	}
	if (logical_nc >= ctx->n_cores) {
		NRT_LOGE("nrt_neuronsim_get_core_stats: NeuronCore %u is not visible (%u visible)",
			 logical_nc, ctx->n_cores);
		return NRT_INVALID;
	}
	nrt_core_t *c = &ctx->cores[logical_nc];
	*out_stats = (nrt_neuronsim_core_stats_t){
		.executions = atomic_load(&c->n_exec),
		.completed = atomic_load(&c->n_ok),
		.completed_with_err = atomic_load(&c->n_err),
		.completed_with_num_err = atomic_load(&c->n_num_err),
		.timed_out = atomic_load(&c->n_timeout),
		.incorrect_input = atomic_load(&c->n_bad_input),
		.busy_ns = nrt_core_busy_ns(c, ns_monotonic_ns()), /* running executions included */
	};
	return NRT_SUCCESS;
}
