/* Instance, core count, version, per-core memory and per-model information: nrt_get_instance_info, nrt_get_*_nc_count, nrt_get_version, nrt_neuronsim_get_core_stats, nrt_get_vnc_memory_stats, nrt_get_model_info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"
#include "uapi/linux/neuronsim_version.h"

/* The devices, all their cores and the visible cores of the runtime, or of
 * the environment before nrt_init (these calls are documented to work then).
 * A failure (a bad environment, out of memory) is reported as func's. */
static NRT_STATUS topology(const char *func, uint32_t *out_devices, uint32_t *out_total, uint32_t *out_visible)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (ctx) {
		uint32_t total = 0;
		for (uint32_t d = 0; d < ctx->n_devices; d++)
			total += ctx->devices[d].n_cores;
		*out_devices = ctx->n_devices;
		*out_total = total;
		*out_visible = ctx->n_cores;
		return NRT_SUCCESS;
	}
	nrt_config_t *cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return nrt_status_report(func, nrt_status_make(NRT_RESOURCE, "out of host memory reading the "
								   "environment"));
	st = nrt_status_report(func, nrt_env_load(cfg));
	if (!st) {
		*out_devices = cfg->num_devices;
		*out_total = cfg->num_devices * cfg->cores_per_device;
		*out_visible = cfg->n_visible;
	}
	free(cfg);
	return st;
}

NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len)
{
	if (!info || !instance_info_len)
		return nrt_status_report(__func__, nrt_status_make(NRT_INVALID, "info is NULL or "
								   "instance_info_len is 0"));
	uint32_t n_devices = 0, total = 0, visible = 0;
	NRT_STATUS st = topology(__func__, &n_devices, &total, &visible);
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

static ns_status_t get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in,
					size_t *stats_size_out)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!stats || !stats_size_out || !stats_size_in)
		return nrt_status_make(NRT_INVALID, "stats or stats_size_out is NULL, or stats_size_in is 0");
	NS_RETURN_IF_ERROR(nrt_ctx_check_core(ctx, vnc));
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
	return NS_OK;
}

NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in,
				    size_t *stats_size_out)
{
	return nrt_status_report(__func__, get_vnc_memory_stats(vnc, stats, stats_size_in, stats_size_out));
}

static ns_status_t get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in,
				  size_t *info_size_out)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!info || !info_size_out || !info_size_in)
		return nrt_status_make(NRT_INVALID, "info or info_size_out is NULL, or info_size_in is 0");
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(nrt_model_acquire(ctx, model, &m));
	nrt_model_info_t v = { .vnc = m->start_nc };
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
	size_t n = info_size_in < sizeof(v) ? info_size_in : sizeof(v);
	memcpy(info, &v, n);
	*info_size_out = n;
	return NS_OK;
}

NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in,
			      size_t *info_size_out)
{
	return nrt_status_report(__func__, get_model_info(model, info, info_size_in, info_size_out));
}

static NRT_STATUS count_cores(const char *func, uint32_t *nc_count, int visible)
{
	if (!nc_count)
		return nrt_status_report(func, nrt_status_make(NRT_INVALID, "the count (out) is NULL"));
	uint32_t devices = 0, total = 0, n_visible = 0;
	NRT_STATUS st = topology(func, &devices, &total, &n_visible);
	if (!st)
		*nc_count = visible ? n_visible : total;
	return st;
}

NRT_STATUS nrt_get_total_nc_count(uint32_t *nc_count) { return count_cores(__func__, nc_count, 0); }
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count) { return count_cores(__func__, vnc_count, 0); }
NRT_STATUS nrt_get_visible_nc_count(uint32_t *nc_count) { return count_cores(__func__, nc_count, 1); }
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count) { return count_cores(__func__, vnc_count, 1); }

NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size)
{
	if (!ver || size == 0)
		return nrt_status_report(__func__, nrt_status_make(NRT_INVALID, "ver is NULL or size is 0"));
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

static ns_status_t get_core_stats(uint32_t logical_nc, nrt_neuronsim_core_stats_t *out_stats)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!out_stats)
		return nrt_status_make(NRT_INVALID, "out_stats is NULL");
	NS_RETURN_IF_ERROR(nrt_ctx_check_core(ctx, logical_nc));
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
	return NS_OK;
}

NRT_STATUS nrt_neuronsim_get_core_stats(uint32_t logical_nc, nrt_neuronsim_core_stats_t *out_stats)
{
	return nrt_status_report(__func__, get_core_stats(logical_nc, out_stats));
}
