/* The runtime's lifecycle: nrt_init builds the context (devices, cores, observers) and publishes it, nrt_close unpublishes and tears it down. */
#include <stdlib.h>
#include <string.h>

#include "backend_kernel.h"
#include "internal.h"
#include "observe.h"

static void ctx_destroy(nrt_ctx_t *ctx)
{
	nrt_async_fini(ctx);
	nrt_profile_fini(ctx);
	nrt_stats_fini(ctx);
	nrt_snapshot_fini(ctx);
	for (uint32_t i = 0; i < ctx->n_cores; i++) {
		nrt_core_t *c = &ctx->cores[i];
		if (ctx->devices && ctx->devices[c->device].dev)
			ctx->ops->core_release(ctx->devices[c->device].dev, c->dev_core);
	}
	for (uint32_t d = 0; d < ctx->n_devices; d++)
		if (ctx->devices[d].dev)
			ctx->ops->close(ctx->devices[d].dev);
	nrt_handle_table_fini(&ctx->tensors);
	nrt_handle_table_fini(&ctx->models);
	pthread_mutex_destroy(&ctx->load_lock);
	free(ctx->devices);
	free(ctx->cores);
	free(ctx);
}

NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version)
{
	NRT_STATUS st;
	if (nrt_ctx_get(&st)) {
		NRT_LOGE("nrt_init: the runtime is already initialised; call nrt_close first");
		return NRT_INVALID;
	}
	if (framework < NRT_FRAMEWORK_TYPE_NO_FW || framework > NRT_FRAMEWORK_TYPE_PRECHECK) {
		NRT_LOGE("nrt_init: unknown framework type %d", (int)framework);
		return NRT_INVALID;
	}
	nrt_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NRT_RESOURCE;
	st = nrt_env_load(&ctx->config);
	if (st) {
		free(ctx);
		return st;
	}
	ctx->ops = strcmp(ctx->config.backend, "kernel") == 0 ? &nrt_backend_kernel_ops
							       : &nrt_backend_embedded_ops;
	/* Different generations per context make handles of an earlier runtime
	 * (before nrt_close) fail instead of naming new objects. */
	uint64_t now = ns_monotonic_ns();
	uint32_t gen_base = (uint32_t)(now ^ (now >> 20));
	nrt_handle_table_init(&ctx->tensors, NRT_HANDLE_TENSOR, gen_base);
	nrt_handle_table_init(&ctx->models, NRT_HANDLE_MODEL, gen_base * 7u + 1u);
	pthread_mutex_init(&ctx->load_lock, NULL);

	ctx->devices = calloc(ctx->config.num_devices, sizeof(*ctx->devices));
	ctx->cores = calloc(ctx->config.n_visible ? ctx->config.n_visible : 1, sizeof(*ctx->cores));
	if (!ctx->devices || !ctx->cores) {
		st = NRT_RESOURCE;
		goto err;
	}
	/* Counted only now, so ctx_destroy never walks a missing array. */
	ctx->n_devices = ctx->config.num_devices;
	nrt_backend_config_t bcfg = {
		.device_memory = ctx->config.device_memory,
		.cores_per_device = ctx->config.cores_per_device,
		.pin_threads = ctx->config.pin_threads,
		.threads = ctx->config.threads,
	};
	for (uint32_t d = 0; d < ctx->n_devices; d++) {
		st = nrt_status_report("nrt_init",
				       ns_status_annotate(ctx->ops->open(&bcfg, d, &ctx->devices[d].dev),
							  "%s backend", ctx->ops->name));
		if (st)
			goto err;
		nrt_backend_info_t info;
		ctx->ops->query(ctx->devices[d].dev, &info);
		if (info.abi_version != NRT_BACKEND_ABI_VERSION) {
			NRT_LOGE("nrt_init: device %u speaks backend ABI %u, this runtime %u", d,
				 info.abi_version, NRT_BACKEND_ABI_VERSION);
			st = NRT_FAILURE;
			goto err;
		}
		ctx->devices[d].index = d;
		ctx->devices[d].n_cores = info.n_cores;
		ctx->devices[d].mem_size = info.mem_size;
		ctx->devices[d].numa_node = info.numa_node;
		ctx->mem_total += info.mem_size;
	}
	for (uint32_t i = 0; i < ctx->config.n_visible; i++) {
		uint32_t g = ctx->config.visible[i];
		nrt_core_t *c = &ctx->cores[i];
		c->global = g;
		/* Physical ids number the cores device after device, with each
		 * device's core count as its backend reports it (a kernel backend
		 * learns it from the driver, not from our environment). */
		uint32_t d = 0, first = 0;
		while (d < ctx->n_devices && g >= first + ctx->devices[d].n_cores)
			first += ctx->devices[d++].n_cores;
		if (d == ctx->n_devices) {
			NRT_LOGE("nrt_init: NeuronCore %u does not exist: the devices have %u cores", g, first);
			st = NRT_INVALID;
			goto err;
		}
		c->device = d;
		c->dev_core = g - first;
		st = ctx->ops->core_reserve(ctx->devices[c->device].dev, c->dev_core);
		if (st) {
			NRT_LOGE("nrt_init: cannot reserve NeuronCore %u (device %u core %u): %s", g,
				 c->device, c->dev_core, nrt_get_status_as_str(st));
			goto err;
		}
		ctx->n_cores = i + 1;
	}
	if ((st = nrt_snapshot_init(ctx)) || (st = nrt_stats_init(ctx)) || (st = nrt_profile_init(ctx)) ||
	    (st = nrt_async_init(ctx)))
		goto err;
	if (!nrt_ctx_publish(ctx)) {
		NRT_LOGE("nrt_init: another thread initialised the runtime concurrently");
		st = NRT_INVALID;
		goto err;
	}
	nrt_env_report_unimplemented();
	NRT_LOGI("initialised: %s backend, %u device(s), %u visible core(s), framework %d %s %s",
		 ctx->ops->name, ctx->n_devices, ctx->n_cores, (int)framework,
		 fw_version ? fw_version : "", fal_version ? fal_version : "");
	return NRT_SUCCESS;
err:
	ctx_destroy(ctx);
	return st;
}

static void close_model(void *obj, uint64_t handle, void *arg)
{
	nrt_ctx_t *ctx = arg;
	NRT_LOGW("nrt_close: model %#llx was not unloaded; unloading it",
		 (unsigned long long)handle);
	nrt_model_obj_destroy(ctx, obj);
}

static void close_tensor(void *obj, uint64_t handle, void *arg)
{
	nrt_tensor_obj_destroy(arg, obj);
}

void nrt_close(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (!ctx)
		return;
	/* Queued async requests end first, while the runtime is still up for
	 * the one each worker is running. */
	nrt_async_fini(ctx);
	/* Unpublish first so that new calls fail with NRT_CLOSED. */
	nrt_ctx_unpublish();
	nrt_handle_foreach(&ctx->models, close_model, ctx);
	nrt_handle_foreach(&ctx->tensors, close_tensor, ctx);
	ctx_destroy(ctx);
}
