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

/* Opens the devices of ctx->config and fills ctx->devices. */
static ns_status_t open_devices(nrt_ctx_t *ctx)
{
	nrt_backend_config_t bcfg = {
		.device_memory = ctx->config.device_memory,
		.cores_per_device = ctx->config.cores_per_device,
		.pin_threads = ctx->config.pin_threads,
		.threads = ctx->config.threads,
		.cpu_isa = ctx->config.cpu_isa,
	};
	for (uint32_t d = 0; d < ctx->n_devices; d++) {
		NS_RETURN_IF_ERROR_F(ctx->ops->open(&bcfg, d, &ctx->devices[d].dev), "%s backend", ctx->ops->name);
		nrt_backend_info_t info;
		ctx->ops->query(ctx->devices[d].dev, &info);
		if (info.abi_version != NRT_BACKEND_ABI_VERSION)
			return nrt_status_make(NRT_FAILURE, "device %u speaks backend ABI %u, this runtime %u", d,
					       info.abi_version, NRT_BACKEND_ABI_VERSION);
		ctx->devices[d].index = d;
		ctx->devices[d].n_cores = info.n_cores;
		ctx->devices[d].mem_size = info.mem_size;
		ctx->devices[d].numa_node = info.numa_node;
		ctx->mem_total += info.mem_size;
	}
	return NS_OK;
}

/* Maps the visible cores onto the devices' and reserves them. */
static ns_status_t reserve_cores(nrt_ctx_t *ctx)
{
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
		if (d == ctx->n_devices)
			return nrt_status_make(NRT_INVALID, "NeuronCore %u does not exist: the devices have %u cores",
					       g, first);
		c->device = d;
		c->dev_core = g - first;
		NRT_STATUS st = ctx->ops->core_reserve(ctx->devices[c->device].dev, c->dev_core);
		if (st)
			return nrt_status_make(st, "cannot reserve NeuronCore %u (device %u core %u): %s", g,
					       c->device, c->dev_core, nrt_get_status_as_str(st));
		ctx->n_cores = i + 1;
	}
	return NS_OK;
}

/* Everything of nrt_init after the environment: a runtime made live, or a
 * status and ctx destroyed. */
static ns_status_t init_with(nrt_ctx_t *ctx)
{
	ctx->ops = strcmp(ctx->config.backend, "kernel") == 0 ? &nrt_backend_kernel_ops
							       : &nrt_backend_embedded_ops;
	/* Different generations per context make handles of an earlier runtime
	 * (before nrt_close) fail instead of naming new objects. */
	uint64_t now = ns_monotonic_ns();
	uint32_t gen_base = (uint32_t)(now ^ (now >> 20));
	nrt_handle_table_init(&ctx->tensors, NRT_HANDLE_TENSOR, gen_base);
	nrt_handle_table_init(&ctx->models, NRT_HANDLE_MODEL, gen_base * 7u + 1u);
	pthread_mutex_init(&ctx->load_lock, NULL);

	ns_status_t st = NS_OK;
	ctx->devices = calloc(ctx->config.num_devices, sizeof(*ctx->devices));
	ctx->cores = calloc(ctx->config.n_visible ? ctx->config.n_visible : 1, sizeof(*ctx->cores));
	if (!ctx->devices || !ctx->cores) {
		st = nrt_status_make(NRT_RESOURCE, "out of host memory for %u devices and %u cores",
				     ctx->config.num_devices, ctx->config.n_visible);
		goto err;
	}
	/* Counted only now, so ctx_destroy never walks a missing array. */
	ctx->n_devices = ctx->config.num_devices;
	if ((st = open_devices(ctx)) || (st = reserve_cores(ctx)) || (st = nrt_snapshot_init(ctx)) ||
	    (st = nrt_stats_init(ctx)) || (st = nrt_profile_init(ctx)) || (st = nrt_async_init(ctx)))
		goto err;
	if (!nrt_ctx_publish(ctx)) {
		st = nrt_status_make(NRT_INVALID, "another thread initialised the runtime concurrently");
		goto err;
	}
	return NS_OK;
err:
	ctx_destroy(ctx);
	return st;
}

static ns_status_t init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version)
{
	NRT_STATUS cur;
	if (nrt_ctx_get(&cur))
		return nrt_status_make(NRT_INVALID, "the runtime is already initialised; call nrt_close first");
	if (framework < NRT_FRAMEWORK_TYPE_NO_FW || framework > NRT_FRAMEWORK_TYPE_PRECHECK)
		return nrt_status_make(NRT_INVALID, "unknown framework type %d", (int)framework);
	nrt_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the runtime");
	ns_status_t st = nrt_env_load(&ctx->config);
	if (st) {
		free(ctx);
		return st;
	}
	NS_RETURN_IF_ERROR(init_with(ctx));
	nrt_env_report_unimplemented();
	NRT_LOGI("initialised: %s backend, %u device(s), %u visible core(s), framework %d %s %s",
		 ctx->ops->name, ctx->n_devices, ctx->n_cores, (int)framework,
		 fw_version ? fw_version : "", fal_version ? fal_version : "");
	return NS_OK;
}

NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version)
{
	return nrt_status_report(__func__, init(framework, fw_version, fal_version));
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
